# Max-product (Viterbi) decoding for a batch of linear-chain CRF sequences.
#
# Max-product needs no exponentials: it runs in the log (score) domain with
# additions and comparisons only, so it is stable for any finite potentials.
# Ties are broken towards the smallest label index, so results are
# deterministic. -inf transitions (decode-time constraints) are allowed.

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY


cdef void _viterbi_sequence(
    const double[:, ::1] unary, const double[:, ::1] transition,
    const double[::1] start, const double[::1] end,
    Py_ssize_t s, Py_ssize_t e,
    int[:, ::1] backpointers, Py_ssize_t[::1] path, double* scratch,
    double* score_out,
) noexcept nogil:
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, i, j, best_j
    cdef double cand, best
    cdef double* prev = scratch
    cdef double* cur = scratch + L
    cdef double* tmp
    for j in range(L):
        prev[j] = start[j] + unary[s, j]
    for t in range(s + 1, e):
        for j in range(L):
            cur[j] = -INFINITY
            backpointers[t, j] = 0
        for i in range(L):
            for j in range(L):
                cand = prev[i] + transition[i, j]
                if cand > cur[j]:
                    cur[j] = cand
                    backpointers[t, j] = <int>i
        for j in range(L):
            cur[j] += unary[t, j]
        tmp = prev
        prev = cur
        cur = tmp
    best = -INFINITY
    best_j = 0
    for j in range(L):
        cand = prev[j] + end[j]
        if cand > best:
            best = cand
            best_j = j
    score_out[0] = best
    path[e - 1] = best_j
    for t in range(e - 1, s, -1):
        best_j = backpointers[t, best_j]
        path[t - 1] = best_j


def viterbi_batch(
    const double[:, ::1] unary,
    const double[:, ::1] transition,
    const double[::1] start,
    const double[::1] end,
    const Py_ssize_t[::1] offsets,
    Py_ssize_t[::1] path,
    double[::1] score,
    int[:, ::1] backpointers,
    double[:, ::1] scratch,
    int n_threads,
):
    """Viterbi path and score for a batch of sequences (low level).

    Use :func:`sklearn_crfloss.inference.viterbi`, which allocates the
    outputs. Shapes: unary (n_tokens, L); transition (L, L); start, end (L,);
    offsets (n_sequences + 1,) intp; path (n_tokens,) intp; score
    (n_sequences,); backpointers (n_tokens, L) int32; scratch
    (n_threads, 2 * L). Empty sequences are skipped (score left untouched).
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t k, s, e, tid
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            tid = threadid()
            s = offsets[k]
            e = offsets[k + 1]
            if e > s:
                _viterbi_sequence(unary, transition, start, end, s, e,
                                  backpointers, path, &scratch[tid, 0],
                                  &score[k])
