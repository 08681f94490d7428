# The chunk queries of MCE-F with segment_match='chunks' (Suzuki et al.
# 2006, section 4.2, with segments compared as chunks): best scores with and
# without chunk constraints on spans, read through the max-marginal tables of
# _max_marginals, and their gradients.
#
# Design notes
# ------------
# A query asks for the best score of a sequence that satisfies constraints on
# a span a..b-1, and the best score of one that violates them: every span
# token has a label of a given type, and the (previous, current) label pair
# at each boundary a..b is allowed by a mask of shape (L + 1, L) (row L: the
# sequence start), the boundary b only when b is inside the sequence. A
# Viterbi pass over the span's allowed labels, entered through alpha and left
# through beta (Suzuki et al. 2006, section 4.2), gives the first; the second
# is the best over the first violation: at some boundary the path leaves the
# constraints (a label of another type, or a forbidden pair), after which the
# best suffix is beta's. The values pass keeps both best paths' span labels;
# the gradient pass counts them, their prefixes and suffixes swept as in mode
# 2 of _max_marginals.segment_margins_batch. The candidates over all L labels
# (a token's max-marginals, the labels after the span) are kept per label with
# their argument, elementwise (vectorised), then reduced once.
# prange runs over sequences as in _max_marginals; the values pass can also
# read a sequence's maximum incorrect output off the tables just before its
# queries, while its rows of the tables are in the cache.
# chunk_segments decodes the chunks of label sequences from the same event
# tables (ChunkDecoder): MCE-F's gold segments and those of the maximum
# incorrect output, at every evaluation (thousands of minibatches an SGD epoch).

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY

from _chunk_decoder cimport chunks_of_sequence
from _max_product cimport (_block, _first_max, _index_ptr, _matrix, _max_incorrect_sequence,
                          _off_reference_ptrs, _span_weights, _sweep)


cdef extern from *:
    """
    /* acc[c] = max(acc[c], (x[c] + y[c]) + add[c]), arg[c] = k where it
       grows: one token's max-marginals, off the labels add[] excludes (-inf),
       elementwise so that the loop vectorises. */
    static inline void crf_acc_node(const double* restrict x, const double* restrict y,
                                    const double* restrict add, double* restrict acc,
                                    int* restrict arg, int k, ptrdiff_t L) {
        for (ptrdiff_t c = 0; c < L; c++) {
            const double v = (x[c] + y[c]) + add[c];
            const int up = v > acc[c];
            acc[c] = up ? v : acc[c];
            arg[c] = up ? k : arg[c];
        }
    }
    /* The candidates (row[c] + x) + (un[c] + be[c]) of one previous label p,
       into acc_in where mask[c] and acc_out elsewhere, arg_* = p where they
       grow. */
    static inline void crf_acc_split(const double* restrict row, double x,
                                     const double* restrict un, const double* restrict be,
                                     const unsigned char* restrict mask,
                                     double* restrict acc_in, double* restrict acc_out,
                                     int* restrict arg_in, int* restrict arg_out, int p,
                                     ptrdiff_t L) {
        for (ptrdiff_t c = 0; c < L; c++) {
            const double v = (row[c] + x) + (un[c] + be[c]);
            const int k = mask[c] != 0;
            const int up_in = k && v > acc_in[c];
            const int up_out = !k && v > acc_out[c];
            acc_in[c] = up_in ? v : acc_in[c];
            arg_in[c] = up_in ? p : arg_in[c];
            acc_out[c] = up_out ? v : acc_out[c];
            arg_out[c] = up_out ? p : arg_out[c];
        }
    }
    """
    void acc_node "crf_acc_node"(const double* x, const double* y, const double* add,
                                 double* acc, int* arg, int k, Py_ssize_t L) noexcept nogil
    void acc_split "crf_acc_split"(const double* row, double x, const double* un,
                                   const double* be, const unsigned char* mask, double* acc_in,
                                   double* acc_out, int* arg_in, int* arg_out, int p,
                                   Py_ssize_t L) noexcept nogil


cdef inline Py_ssize_t _arg_max(const double* x, Py_ssize_t L) noexcept nogil:
    # The first index of the largest entry (0 if all are -inf).
    return _first_max(x, L, 0)


cdef inline void _candidate(
    double v, bint allowed, double tail, Py_ssize_t p, Py_ssize_t c, Py_ssize_t j,
    bint need_without, double* cur, int* bp, double* bv, Py_ssize_t* how,
) noexcept nogil:
    # The edge p -> c into span token j with score v (the unary of c not
    # added): into the Viterbi's ok state c where the constraints allow it,
    # else (+ tail, the rest of the best path) a candidate violation.
    if allowed:
        if v > cur[c]:
            cur[c] = v
            bp[c] = <int>p
    elif need_without and v + tail > bv[0]:
        bv[0] = v + tail
        how[0] = 1
        how[1] = j
        how[2] = p
        how[3] = c


cdef void _chunk_query(
    const double[:, ::1] unary, const double* table, const Py_ssize_t* index,
    const double[::1] start, const double[:, ::1] alpha, const double[:, ::1] beta,
    const int[:, ::1] bp_fwd, const unsigned char[:, :, ::1] masks,
    const unsigned char[:, ::1] columns, const Py_ssize_t[::1] label_type,
    const double[:, ::1] off_type,
    const Py_ssize_t[::1] type_offsets, const Py_ssize_t[::1] type_labels,
    Py_ssize_t s, Py_ssize_t e, Py_ssize_t a, Py_ssize_t b, const Py_ssize_t* tok_type,
    const Py_ssize_t* inner, Py_ssize_t first, Py_ssize_t exit_mask, bint need_without,
    double* ok, int* bp, int* iarg, double* out_with, double* out_without, Py_ssize_t* how,
    Py_ssize_t* path_with, Py_ssize_t* path_without,
) noexcept nogil:
    # how = (kind, j, p, c) of the best violation (kind 0: a label c of another
    # type at a + j, through the max-marginal; 1: the edge p -> c into token
    # a + j leaves the constraints, p the ok state at a + j - 1, or the
    # previous label / L (start) for j = 0), (state, next) of the best
    # satisfying path (next = -1 at the sequence's end), then the label before
    # a (or L) of the satisfying and of the violating path. path_with[0 .. n-1]
    # and path_without[0 .. j-1] get their span labels. bp[j * L + c]: the ok
    # state before (label, or L at j = 0). A violating path either has a label
    # of another type somewhere on the span (the best through each such node
    # is its max-marginal) or keeps the types and breaks a mask first at some
    # boundary (a Viterbi over the allowed labels finds the best such).
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t n = b - a
    cdef Py_ssize_t j, t, p, c, m, q, mp, ty, col
    cdef double val, best_with = -INFINITY, bv = -INFINITY
    cdef double* prev = ok
    cdef double* cur = ok + L
    cdef double* acc = ok + 2 * L
    cdef double* acc_out = ok + 3 * L
    cdef int* arg_out = iarg + L
    cdef double* tmp
    cdef const double* M
    cdef const unsigned char* mk
    for j in range(8):
        how[j] = -1
    if need_without:  # another type somewhere on the span
        for c in range(L):
            acc[c] = -INFINITY
            iarg[c] = 0
        for j in range(n):
            acc_node(&alpha[a + j, 0], &beta[a + j, 0], &off_type[tok_type[j], 0], acc, iarg,
                     <int>j, L)
        c = _arg_max(acc, L)
        if acc[c] > bv:
            bv = acc[c]
            how[0] = 0; how[1] = iarg[c]; how[3] = c
    ty = tok_type[0]
    for c in range(L):
        cur[c] = -INFINITY
    mk = &masks[first, 0, 0]
    M = _matrix(table, index, a, L)
    for m in range(type_offsets[ty], type_offsets[ty + 1]):
        c = type_labels[m]
        if a == s:  # from the sequence start
            _candidate(start[c], mk[L * L + c], unary[a, c] + beta[a, c], L, c, 0, need_without,
                       cur, bp, &bv, how)
            cur[c] += unary[a, c]
            continue
        col = columns[first, c]
        if col == 1:  # every previous label allowed: the forward table's
            cur[c] = alpha[a, c]
            bp[c] = bp_fwd[a, c]
            continue
        if col == 2:  # none allowed: the best is the max-marginal's
            if need_without and alpha[a, c] + beta[a, c] > bv:
                bv = alpha[a, c] + beta[a, c]
                how[0] = 1; how[1] = 0; how[2] = bp_fwd[a, c]; how[3] = c
            continue
        for p in range(L):
            _candidate(alpha[a - 1, p] + M[p * L + c], mk[p * L + c], unary[a, c] + beta[a, c],
                       p, c, 0, need_without, cur, bp, &bv, how)
        cur[c] += unary[a, c]
    for j in range(1, n):
        t = a + j
        tmp = prev
        prev = cur
        cur = tmp
        for c in range(L):
            cur[c] = -INFINITY
        mp = tok_type[j - 1]
        ty = tok_type[j]
        M = _matrix(table, index, t, L)
        mk = &masks[inner[j], 0, 0]
        for m in range(type_offsets[mp], type_offsets[mp + 1]):
            p = type_labels[m]
            for q in range(type_offsets[ty], type_offsets[ty + 1]):
                c = type_labels[q]
                _candidate(prev[p] + M[p * L + c], mk[p * L + c], unary[t, c] + beta[t, c], p,
                           c, j, need_without, cur, &bp[j * L], &bv, how)
        for m in range(type_offsets[ty], type_offsets[ty + 1]):
            cur[type_labels[m]] += unary[t, type_labels[m]]
    ty = tok_type[n - 1]
    if b < e:  # leaving the span through the boundary b
        M = _matrix(table, index, b, L)
        mk = &masks[exit_mask, 0, 0]
        for c in range(L):
            acc[c] = -INFINITY
            acc_out[c] = -INFINITY
            iarg[c] = 0
            arg_out[c] = 0
        for m in range(type_offsets[ty], type_offsets[ty + 1]):
            p = type_labels[m]
            if cur[p] > -INFINITY:
                acc_split(M + p * L, cur[p], &unary[b, 0], &beta[b, 0], mk + p * L, acc,
                          acc_out, iarg, arg_out, <int>p, L)
        c = _arg_max(acc, L)
        if acc[c] > -INFINITY:
            best_with = acc[c]
            how[4] = iarg[c]
            how[5] = c
        c = _arg_max(acc_out, L)
        if need_without and acc_out[c] > bv:
            bv = acc_out[c]
            how[0] = 1; how[1] = n; how[2] = arg_out[c]; how[3] = c
    else:  # the sequence ends with the span
        for m in range(type_offsets[ty], type_offsets[ty + 1]):
            p = type_labels[m]
            val = cur[p] + beta[b - 1, p]
            if val > best_with:
                best_with = val
                how[4] = p
    out_with[0] = best_with
    out_without[0] = bv if need_without else -INFINITY
    if how[4] >= 0:  # the span labels of the two paths, through the backpointers
        p = how[4]
        for j in range(n - 1, -1, -1):
            path_with[j] = p
            p = bp[j * L + p]
        how[6] = p
    if need_without and how[0] == 1 and how[1] > 0:
        p = how[2]
        for j in range(how[1] - 1, -1, -1):
            path_without[j] = p
            p = bp[j * L + p]
        how[7] = p


cdef void _count_span(
    const Py_ssize_t* lab, Py_ssize_t p0, const Py_ssize_t* index, Py_ssize_t s,
    Py_ssize_t a, Py_ssize_t n, double w, Py_ssize_t L, double* pre,
    double[:, ::1] d_unary, double* acc_trans, double* acc_start,
) noexcept nogil:
    # w times the counts of the labels lab[0 .. n-1] on tokens a .. a+n-1
    # entered from p0 at a - 1 (L: the sequence start), whose best prefix
    # becomes a node weight before a.
    cdef Py_ssize_t j
    for j in range(n):
        d_unary[a + j, lab[j]] += w
        if j > 0:
            acc_trans[_block(index, a + j, L) + lab[j - 1] * L + lab[j]] += w
    if p0 == L:
        acc_start[lab[0]] += w
    else:
        acc_trans[_block(index, a, L) + p0 * L + lab[0]] += w
        pre[(a - 1 - s) * L + p0] += w


def chunk_queries_batch(
    const double[:, ::1] unary, const double[:, :, ::1] table, const Py_ssize_t[::1] index,
    const double[::1] start, const double[:, ::1] alpha, const double[:, ::1] beta,
    const int[:, ::1] bp_fwd, const int[:, ::1] bp_bwd, const Py_ssize_t[::1] offsets,
    const unsigned char[:, :, ::1] masks, const unsigned char[:, ::1] columns,
    const Py_ssize_t[::1] label_type, const double[:, ::1] off_type,
    const Py_ssize_t[::1] type_offsets, const Py_ssize_t[::1] type_labels,
    const Py_ssize_t[:, ::1] q_offsets, const Py_ssize_t[::1] q_begin,
    const Py_ssize_t[::1] q_end, const Py_ssize_t[::1] q_tokens,
    const Py_ssize_t[::1] tok_type, const Py_ssize_t[::1] inner,
    const Py_ssize_t[::1] first, const Py_ssize_t[::1] exit_mask,
    const unsigned char[::1] need_without, double[::1] with_, double[::1] without,
    Py_ssize_t[:, ::1] how, Py_ssize_t[::1] path_with, Py_ssize_t[::1] path_without,
    const double[::1] coef_with, const double[::1] coef_without, bint do_grad,
    double[:, ::1] d_unary, double[:, ::1] acc_trans, double[:, ::1] acc_boundary,
    double[:, ::1] work, int[:, ::1] span_bp, const Py_ssize_t[::1] ref, bint exclude,
    Py_ssize_t[::1] mi_path, double[::1] mi_score, int n_threads,
    const double[::1] off_best=None, const Py_ssize_t[::1] off_arg=None,
):
    """Chunk constraints on spans: best scores with and without them, and gradients (low level).

    Use :func:`sklearn_crfloss.losses._chunks.chunk_margins`. Query m of
    sequence k (``q_offsets[i, k] <= m < q_offsets[i, k + 1]`` for some row
    i, the queries of one part) spans the tokens
    ``q_begin[m]:q_end[m]`` (absolute, end exclusive); its token j must have
    a label of type ``tok_type[q_tokens[m] + j]`` (labels of type t:
    ``type_labels[type_offsets[t]:type_offsets[t + 1]]``, increasing), the
    label pair (p, c) at the boundary before token j must have
    ``masks[inner[q_tokens[m] + j], p, c]`` (j >= 1), ``masks[first[m], p,
    c]`` at the span's first token (p = L: the sequence start) and
    ``masks[exit_mask[m], p, c]`` into the token after the span, if any;
    ``columns[i, c]`` is 1 where ``masks[i, :L, c]`` is all true, 2 where it
    is all false, else 0; ``off_type[t, c]`` is 0 for the labels c of other
    types than t, -inf for those of type t.

    Without ``do_grad``: ``with_[m]``, ``without[m]`` get the best scores of
    the sequences that satisfy (violate) them, -inf where there is none
    (``without`` only where ``need_without[m]``), and how (n_queries, 8),
    path_with and path_without (n_query_tokens,) what the gradient needs.
    With ``do_grad`` (after a pass without, its outputs unchanged): adds
    ``coef_with[m]`` times the counts of the best satisfying path minus
    ``coef_without[m]`` times those of the best violating one (zero
    coefficients where the score is -inf) to d_unary, acc_trans and
    acc_boundary as ``_max_marginals.span_gradients_batch`` does. ``table``,
    ``index``, the tables and the accumulators as there; work (n_threads, 5
    L, plus 2 max_length L with ``do_grad``) and span_bp (n_threads,
    (max_span + 2) L) are scratch. With a non-empty ``mi_path`` (n_tokens)
    the values pass also writes ``_max_marginals.max_incorrect_from_tables`` of
    ``ref`` and ``exclude`` into ``mi_path`` and ``mi_score`` (n_sequences),
    each sequence just before its queries, while its rows of the tables are
    in the cache (reading ``off_best`` and ``off_arg`` of
    ``_max_marginals.max_marginals_batch`` for ``ref`` if given).
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t n_acc = acc_trans.shape[0]
    cdef const double* ob
    cdef const Py_ssize_t* oa
    _off_reference_ptrs(off_best, off_arg, &ob, &oa)
    cdef const Py_ssize_t* idx = _index_ptr(index)
    cdef Py_ssize_t k, m, tid, acc, s, e, j, a, part
    cdef Py_ssize_t n_parts = q_offsets.shape[0]
    cdef Py_ssize_t* hw
    cdef double* pre
    cdef double* suf
    cdef double w
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            tid = threadid()
            s = offsets[k]
            e = offsets[k + 1]
            if e == s:
                continue
            if not do_grad:
                if mi_path.shape[0]:
                    _max_incorrect_sequence(alpha, beta, bp_fwd, bp_bwd, ref, exclude, s, e,
                                            mi_path, &mi_score[k], ob, oa)
                for part in range(n_parts):
                    for m in range(q_offsets[part, k], q_offsets[part, k + 1]):
                        _chunk_query(unary, &table[0, 0, 0], idx, start, alpha, beta, bp_fwd,
                                     masks, columns, label_type, off_type, type_offsets,
                                     type_labels, s, e, q_begin[m], q_end[m],
                                     &tok_type[q_tokens[m]], &inner[q_tokens[m]], first[m],
                                     exit_mask[m], need_without[m] != 0, &work[tid, 0],
                                     &span_bp[tid, 0], &span_bp[tid, span_bp.shape[1] - 2 * L],
                                     &with_[m], &without[m], &how[m, 0],
                                     &path_with[q_tokens[m]], &path_without[q_tokens[m]])
                continue
            acc = (k // 8) % n_acc
            pre = &work[tid, 5 * L]
            suf = pre + (e - s) * L
            for j in range(2 * (e - s) * L):
                pre[j] = 0.0
            for part in range(n_parts):
                for m in range(q_offsets[part, k], q_offsets[part, k + 1]):
                    hw = &how[m, 0]
                    a = q_begin[m]
                    w = coef_with[m]
                    if w != 0.0 and hw[4] >= 0:
                        _count_span(&path_with[q_tokens[m]], hw[6], idx, s, a, q_end[m] - a, w,
                                    L, pre, d_unary, &acc_trans[acc, 0], &acc_boundary[acc, 0])
                        if hw[5] >= 0:
                            acc_trans[acc, _block(idx, q_end[m], L) + hw[4] * L + hw[5]] += w
                            suf[(q_end[m] - s) * L + hw[5]] += w
                        else:
                            acc_boundary[acc, L + hw[4]] += w
                    w = -coef_without[m]
                    if w == 0.0 or hw[0] < 0:
                        continue
                    if hw[0] == 0:  # the best path through (a + j, c)
                        _span_weights(&hw[3], s, e, a + hw[1], a + hw[1] + 1, w, idx, bp_fwd,
                                      bp_bwd, L, pre, suf, d_unary, &acc_trans[acc, 0],
                                      &acc_boundary[acc, 0], &acc_boundary[acc, L])
                        continue
                    j = hw[1]
                    if j > 0:  # the ok path up to a + j - 1, then the edge out
                        _count_span(&path_without[q_tokens[m]], hw[7], idx, s, a, j, w, L, pre,
                                    d_unary, &acc_trans[acc, 0], &acc_boundary[acc, 0])
                        acc_trans[acc, _block(idx, a + j, L) + hw[2] * L + hw[3]] += w
                    elif hw[2] == L:
                        acc_boundary[acc, hw[3]] += w
                    else:
                        acc_trans[acc, _block(idx, a, L) + hw[2] * L + hw[3]] += w
                        pre[(a - 1 - s) * L + hw[2]] += w
                    suf[(a + j - s) * L + hw[3]] += w
            _sweep(s, e, idx, bp_fwd, bp_bwd, L, pre, suf, d_unary, &acc_trans[acc, 0],
                   &acc_boundary[acc, 0], &acc_boundary[acc, L])


def chunk_segments(const unsigned char[:, ::1] start, const unsigned char[:, ::1] end,
                   const Py_ssize_t[::1] label_type, const Py_ssize_t[::1] path,
                   const Py_ssize_t[::1] offsets, Py_ssize_t[:, ::1] out):
    """The chunks of label-index sequences from the chunk event tables (low level).

    Used by segments_from_codes and ChunkDecoder.segments (MCE-F).
    start, end (L + 1, L) uint8: a chunk starts (ends) between a token
    labelled p (row L: the sequence start) and the next labelled c;
    label_type (L,); path (n_tokens,) labels in [0, L) and offsets
    (n_sequences + 1,), not checked. A chunk starts at a start event and
    ends at the first end event after its start, at the latest where its
    sequence ends (every chunk still open is closed there). Writes the
    sequence, begin, stop (inside the sequence, exclusive) and type of the
    chunks, in the order of their starts, into out[0], out[1], out[2],
    out[3] (out of shape (4, n_tokens)); returns their number. The decoding of
    one sequence is _chunk_decoder.pxd's, which the one-call MCE-F kernel
    (_max_marginals.mce_f_labels_batch) shares.
    """
    cdef Py_ssize_t L = start.shape[1], i, j, m, n = 0
    with nogil:
        for i in range(offsets.shape[0] - 1):
            m = chunks_of_sequence(&start[0, 0], &end[0, 0], &label_type[0], L,
                                   &path[offsets[i]], offsets[i + 1] - offsets[i], &out[1, n],
                                   &out[2, n], &out[3, n])
            for j in range(n, n + m):
                out[0, j] = i
            n += m
    return n
