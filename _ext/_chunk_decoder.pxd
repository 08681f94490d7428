# The chunk decoder of MCE-F, cimported as `from _chunk_decoder cimport
# chunks_of_sequence` by _chunk_queries (chunk_segments: the segments of
# label-index sequences, for segments_from_codes and ChunkDecoder) and by
# _max_marginals (the one-call MCE-F kernel, which decodes the gold
# segments and those of the maximum incorrect output sequence by sequence).
# `cdef inline`: it compiles into each user.
#
# A chunk starts at a start event and ends at the first end event after its
# start, at the latest where its sequence ends (every chunk still open is
# closed there). The events of a (previous, current) label pair come from
# the tables of sklearn_crfloss.segments._event_tables: start, end of shape
# (L + 1, L) uint8, C order, row L the sequence start.


cdef inline Py_ssize_t chunks_of_sequence(
    const unsigned char* start, const unsigned char* end, const Py_ssize_t* label_type,
    Py_ssize_t L, const Py_ssize_t* path, Py_ssize_t n, Py_ssize_t* begin, Py_ssize_t* stop,
    Py_ssize_t* type_code,
) noexcept nogil:
    # The chunks of the labels path[0 .. n-1] (in [0, L), not checked), in
    # the order of their starts: begin, stop (positions in the sequence, stop
    # exclusive) and type_code (label_type of the label that starts it) of
    # each, at most n of them. Returns their number.
    cdef Py_ssize_t t, lab, prev = L, count = 0, first_open = 0
    for t in range(n):
        lab = path[t]
        if end[prev * L + lab]:  # closes every chunk started before t
            while first_open < count:
                stop[first_open] = t
                first_open += 1
        if start[prev * L + lab]:
            begin[count] = t
            type_code[count] = label_type[lab]
            count += 1
        prev = lab
    while first_open < count:
        stop[first_open] = n
        first_open += 1
    return count
