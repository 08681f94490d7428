# Max-product decoding for a batch of linear-chain CRF sequences: the
# Viterbi path, the exact n-best lists (list Viterbi) and the best
# path different from a reference (the maximum incorrect output of Suzuki et
# al. 2006, Eq. 5).
#
# Design notes
# ------------
# * Max-product needs no exponentials: it runs in the log (score) domain
#   with additions and comparisons only, so it is stable for any finite
#   potentials. -inf transitions (decode-time constraints) are allowed.
# * Ties are broken towards the smallest label (resp. (label, rank)) index,
#   so results are deterministic.
# * The max-plus step, the backtrace and the Viterbi over (label, deviated)
#   states are the inline helpers of _chain.pxd, shared with the
#   max-marginal kernels (_max_marginals.pyx).
# * Sequences run in parallel (prange, static schedule); each thread owns
#   its scratch rows; backpointers are per token, so no sharing.

import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY

from _chain cimport argmax_sum, backtrace, deviated_backtrace, deviated_viterbi_at, max_plus_step


cdef void _viterbi_sequence(
    const double[:, ::1] unary, const double* transition, const Py_ssize_t* index,
    const double[::1] start, const double[::1] end,
    Py_ssize_t s, Py_ssize_t e,
    int[:, ::1] backpointers, Py_ssize_t[::1] path, double* scratch,
    double* score_out,
) noexcept nogil:
    # transition: one (L, L) matrix (index NULL), or a table of them whose
    # matrix index[t] scores the edge into token t (position-dependent).
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, j, best_j
    cdef double* prev = scratch
    cdef double* cur = scratch + L
    cdef double* tmp
    for j in range(L):
        prev[j] = start[j] + unary[s, j]
    for t in range(s + 1, e):
        max_plus_step(prev, transition if index == NULL else transition + index[t] * L * L,
                      cur, &backpointers[t, 0], L, 0)
        for j in range(L):
            cur[j] += unary[t, j]
        tmp = prev
        prev = cur
        cur = tmp
    best_j = argmax_sum(prev, &end[0], L, score_out)
    path[e - 1] = best_j if best_j >= 0 else 0
    backtrace(&backpointers[s, 0], &path[s], e - s, L)


def viterbi_batch(
    const double[:, ::1] unary, const double[:, ::1] transition,
    const double[::1] start, const double[::1] end, const Py_ssize_t[::1] offsets,
    Py_ssize_t[::1] path, double[::1] score,
    int[:, ::1] backpointers, double[:, ::1] scratch, int n_threads,
):
    """Viterbi path and score for a batch of sequences (low level).

    Use :func:`sklearn_crfloss.inference.viterbi`, which allocates the
    outputs. Shapes: unary (n_tokens, L); transition (L, L); start, end (L,);
    offsets (n_sequences + 1,) intp; path (n_tokens,) intp; score
    (n_sequences,); backpointers (n_tokens, L) int32; scratch
    (n_threads, 2 * L). Empty sequences are skipped (score left untouched).
    """
    cdef Py_ssize_t k
    with nogil:
        for k in prange(offsets.shape[0] - 1, num_threads=n_threads, schedule='static',
                        chunksize=8):
            if offsets[k + 1] > offsets[k]:
                _viterbi_sequence(unary, &transition[0, 0], NULL, start, end, offsets[k],
                                  offsets[k + 1], backpointers, path, &scratch[threadid(), 0],
                                  &score[k])


cdef void _code_backtrace(const int[:, ::1] bp, Py_ssize_t code, Py_ssize_t s,
                          Py_ssize_t e, Py_ssize_t* path, Py_ssize_t n) noexcept nogil:
    # Follow (label, rank) codes n * label + rank back from the last token;
    # path points at the sequence's first token.
    cdef Py_ssize_t t
    path[e - 1 - s] = code // n
    for t in range(e - 1, s, -1):
        code = bp[t, code]
        path[t - 1 - s] = code // n


cdef void _max_incorrect_sequence(
    const double[:, ::1] unary, const double* table, const Py_ssize_t* index,
    const double[::1] start, const double[::1] end, const Py_ssize_t[::1] ref,
    Py_ssize_t s, Py_ssize_t e, int[:, ::1] bp, Py_ssize_t[::1] path,
    double* work, double* score_out,
) noexcept nogil:
    # Viterbi over (label, deviated-from-ref-yet) states from the start
    # potentials to the end potentials; bp[t, j] as in deviated_viterbi.
    # table: one (L, L) matrix (index NULL), or a table of them whose matrix
    # index[t] scores the edge into token t (position-dependent).
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, j, jb
    cdef double d0
    cdef double* last = work + L
    for j in range(L):
        last[j] = start[j] + unary[s, j]
    last = deviated_viterbi_at(&unary[s, 0], table, NULL if index == NULL else index + s,
                               &ref[s], e - s, L, last, work, &bp[s, 0], &d0)
    jb = argmax_sum(last, &end[0], L, score_out)
    if jb < 0:  # a single possible labelling: no incorrect output
        for t in range(s, e):
            path[t] = ref[t]
        return
    path[e - 1] = jb
    deviated_backtrace(&bp[s, 0], &ref[s], &path[s], e - s, L)


def max_incorrect_batch(
    const double[:, ::1] unary, const double[:, :, ::1] table, const Py_ssize_t[::1] index,
    const double[::1] start, const double[::1] end, const Py_ssize_t[::1] offsets,
    const Py_ssize_t[::1] ref, Py_ssize_t[::1] path, double[::1] score,
    int[:, ::1] bp, double[:, ::1] work, int n_threads,
):
    """Best label sequence different from ``ref`` for a batch (low level).

    Use :func:`sklearn_crfloss.inference.viterbi_excluding`. Shapes: table
    (n_matrices, L, L), the matrix index[t] scoring the edge into token t,
    or (1, L, L) with index of length 0 (the same matrix everywhere); ref,
    path (n_tokens,) intp; score (n_sequences,); bp (n_tokens, L) int32;
    work (n_threads, 2 * L). Empty sequences are skipped.
    """
    cdef Py_ssize_t k
    cdef const Py_ssize_t* idx = &index[0] if index.shape[0] else NULL
    with nogil:
        for k in prange(offsets.shape[0] - 1, num_threads=n_threads, schedule='static',
                        chunksize=8):
            if offsets[k + 1] > offsets[k]:
                _max_incorrect_sequence(unary, &table[0, 0, 0], idx, start, end, ref,
                                        offsets[k], offsets[k + 1], bp, path,
                                        &work[threadid(), 0], &score[k])


cdef inline bint _push_n(double v, int code, double* best, int* codes,
                         Py_ssize_t n) noexcept nogil:
    # Insert (v, code) into the descending list best[:n] (codes alongside)
    # if v beats its last entry; False otherwise. Strict '>' keeps earlier
    # codes ahead of later ones among ties, and never inserts -inf.
    cdef Py_ssize_t k = n - 1
    if not (v > best[k]):
        return False
    while k > 0 and v > best[k - 1]:
        best[k] = best[k - 1]
        codes[k] = codes[k - 1]
        k -= 1
    best[k] = v
    codes[k] = code
    return True


cdef inline void _push_list(const double* scores, double shift, int code0,
                            double* best, int* codes, Py_ssize_t n) noexcept nogil:
    # Merge the descending list scores[:n] + shift (codes code0 + r) into
    # best: once one entry misses, the rest (smaller or equal) miss too.
    cdef Py_ssize_t r
    for r in range(n):
        if not _push_n(scores[r] + shift, code0 + <int>r, best, codes, n):
            return


cdef void _n_best_sequence(
    const double[:, ::1] unary, const double* transition, const Py_ssize_t* index,
    const double[::1] start, const double[::1] end,
    Py_ssize_t s, Py_ssize_t e, Py_ssize_t n,
    int[:, ::1] bp, Py_ssize_t[:, ::1] paths, double* score_out,
    double* scratch, int* codes,
) noexcept nogil:
    # List Viterbi with lists of n (the 2-best kernel above, generalised):
    # prev[n*i + r] is the score of the r-th best prefix ending in label i
    # (descending in r, -inf where fewer than r + 1 prefixes exist) and
    # bp[t, n*j + r] = n*i + r' the prefix it extends. Distinct (i, r')
    # give distinct prefixes, so every list holds distinct paths and the
    # final list is the exact n-best. score_out[m] is -inf (and paths[m]
    # left untouched) where the sequence has fewer than m + 1 finite paths.
    # transition: one (L, L) matrix (index NULL) or a table (index[t]: the
    # matrix of the edge into token t), as in _viterbi_sequence.
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, i, j, r, m
    cdef const double* T
    cdef double* prev = scratch
    cdef double* cur = scratch + n * L
    cdef double* tmp
    for j in range(L):
        prev[n * j] = start[j] + unary[s, j]
        for r in range(1, n):
            prev[n * j + r] = -INFINITY
    for t in range(s + 1, e):
        T = transition if index == NULL else transition + index[t] * L * L
        for j in range(L):
            for r in range(n):
                cur[n * j + r] = -INFINITY
                bp[t, n * j + r] = 0
            for i in range(L):
                _push_list(&prev[n * i], T[i * L + j], <int>(n * i), &cur[n * j],
                           &bp[t, n * j], n)
            for r in range(n):
                cur[n * j + r] += unary[t, j]
        tmp = prev
        prev = cur
        cur = tmp
    for m in range(n):
        score_out[m] = -INFINITY
        codes[m] = 0
    for j in range(L):
        _push_list(&prev[n * j], end[j], <int>(n * j), score_out, codes, n)
    for m in range(n):
        if score_out[m] > -INFINITY:
            _code_backtrace(bp, codes[m], s, e, &paths[m, s], n)


def n_best_batch(
    const double[:, ::1] unary, const double[:, :, ::1] transition,
    const Py_ssize_t[::1] index, const double[::1] start, const double[::1] end,
    const Py_ssize_t[::1] offsets,
    Py_ssize_t n_best, Py_ssize_t[:, ::1] paths, double[:, ::1] scores,
    int[:, ::1] bp, double[:, ::1] scratch, int[:, ::1] codes, int n_threads,
):
    """The n best label sequences of each sequence of a batch (low level).

    Use :func:`sklearn_crfloss.inference.viterbi_nbest`. Shapes: unary
    (n_tokens, L); transition (K, L, L): one matrix (K = 1, index empty) or
    a table whose matrix index[t] scores the edge into token t (index of
    shape (n_tokens,) intp: position-dependent transitions); offsets (n_sequences + 1,) intp; paths (n_best,
    n_tokens) intp; scores (n_sequences, n_best); bp (n_tokens, n_best * L)
    int32; scratch (n_threads, 2 * n_best * L); codes (n_threads, n_best)
    int32. Empty sequences are skipped (their row of scores left untouched).
    """
    cdef Py_ssize_t k, tid
    cdef const Py_ssize_t* by_position = &index[0] if index.shape[0] else NULL
    with nogil:
        for k in prange(offsets.shape[0] - 1, num_threads=n_threads, schedule='static',
                        chunksize=8):
            tid = threadid()  # the thread's rows of scratch and codes
            if offsets[k + 1] > offsets[k]:
                _n_best_sequence(unary, &transition[0, 0, 0], by_position, start, end,
                                 offsets[k], offsets[k + 1],
                                 n_best, bp, paths, &scores[k, 0], &scratch[tid, 0],
                                 &codes[tid, 0])


def position_viterbi_batch(
    const double[:, ::1] unary, const double[:, :, ::1] table, const Py_ssize_t[::1] index,
    const double[::1] start, const double[::1] end, const Py_ssize_t[::1] offsets,
    Py_ssize_t[::1] path, double[::1] score,
):
    """Viterbi paths with position-dependent transitions (low level).

    The edge into token t has the transition matrix table[index[t]]
    (observation-dependent label bigrams); otherwise as
    :func:`viterbi_batch`. Use :func:`sklearn_crfloss.inference.viterbi`
    with a :class:`~sklearn_crfloss.inference.PositionTransitions`. Shapes:
    unary (n_tokens, L); table (K, L, L); index, path (n_tokens,) intp;
    start, end (L,); offsets (n_sequences + 1,); score (n_sequences,).
    Empty sequences get score 0.
    """
    cdef Py_ssize_t k
    cdef int[:, ::1] bp = np.zeros((max(unary.shape[0], 1), unary.shape[1]), dtype=np.intc)
    cdef double[::1] rows = np.empty(2 * unary.shape[1])
    with nogil:
        for k in range(offsets.shape[0] - 1):
            score[k] = 0.0
            if offsets[k + 1] > offsets[k]:
                _viterbi_sequence(unary, &table[0, 0, 0], &index[0], start, end, offsets[k],
                                  offsets[k + 1], bp, path, &rows[0], &score[k])
