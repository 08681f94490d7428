# Inline helpers of the max-product kernels that read the max-marginal tables
# (_max_marginals, _chunk_queries), cimported as `from _max_product cimport
# ...`: everything here is `cdef inline` and compiles into each user.
#
# * _matrix, _index_ptr, _block: the (L, L) matrix of the edge into token t
#   (one matrix for every edge when the index is empty, else index[t]'s).
# * _row_max, _first_max: the largest entry of a row and its first index.
# * _off_reference_max: a token's best max-marginal off a reference label;
#   _off_reference_ptrs: those of every token, as given to a kernel, or NULL.
# * _max_incorrect_sequence: the best path off a reference, or the Viterbi
#   path, read off the tables (Suzuki et al. 2006, Eq. 5).
# * _span_weights, _sweep: counts of best paths through given spans, their
#   prefixes and suffixes as node weights swept through the backpointers.

from libc.math cimport INFINITY

from _chain cimport backtrace


cdef extern from *:
    """
    /* The largest of x[0:L] (-inf if none; NaN never counts), by four partial
       maxima without branches, so that the loop vectorises. */
    static inline double crf_row_max(const double* restrict x, ptrdiff_t L) {
        double m[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
        ptrdiff_t j = 0;
        for (; j + 4 <= L; j += 4) {
            for (int q = 0; q < 4; q++) m[q] = x[j + q] > m[q] ? x[j + q] : m[q];
        }
        for (; j < L; j++) m[0] = x[j] > m[0] ? x[j] : m[0];
        for (int q = 1; q < 4; q++) m[0] = m[q] > m[0] ? m[q] : m[0];
        return m[0];
    }
    """
    double _row_max "crf_row_max"(const double* x, Py_ssize_t L) noexcept nogil


cdef inline Py_ssize_t _first_max(const double* x, Py_ssize_t L, Py_ssize_t none) noexcept nogil:
    # The first index of the largest entry of x[:L] (what a scan with a
    # strict '>' from -inf keeps), or `none` where every entry is -inf or NaN.
    cdef double m = _row_max(x, L)
    cdef Py_ssize_t j
    if m > -INFINITY:
        for j in range(L):
            if x[j] == m:
                return j
    return none


cdef inline const double* _matrix(const double* table, const Py_ssize_t* index, Py_ssize_t t,
                                  Py_ssize_t L) noexcept nogil:
    # The (L, L) matrix of the edge into token t.
    return table if index == NULL else table + index[t] * L * L


cdef inline const Py_ssize_t* _index_ptr(const Py_ssize_t[::1] index) noexcept nogil:
    # NULL for an empty index: one matrix for every edge.
    return &index[0] if index.shape[0] else NULL


cdef inline void _off_reference_max(
    const double* alpha, const double* beta, Py_ssize_t r, Py_ssize_t L, double* best,
    Py_ssize_t* arg,
) noexcept nogil:
    # The best alpha[j] + beta[j] over the labels j != r of one token, and the
    # first such j (-inf and -1 if there is none).
    cdef Py_ssize_t j
    cdef double v
    best[0] = -INFINITY
    arg[0] = -1
    for j in range(L):
        v = alpha[j] + beta[j]
        if v > best[0] and j != r:
            best[0] = v
            arg[0] = j


cdef inline void _off_reference_ptrs(
    const double[::1] off_best, const Py_ssize_t[::1] off_arg, const double** ob,
    const Py_ssize_t** oa,
) noexcept:
    # Pointers to the off_best and off_arg of max_marginals_batch passed to a
    # kernel, or NULL (both) where they are not given (None or empty).
    if off_best is not None and off_best.shape[0]:
        ob[0], oa[0] = &off_best[0], &off_arg[0]
    else:
        ob[0], oa[0] = NULL, NULL


cdef inline void _max_incorrect_sequence(
    const double[:, ::1] alpha, const double[:, ::1] beta, const int[:, ::1] bp_fwd,
    const int[:, ::1] bp_bwd, const Py_ssize_t[::1] ref, bint exclude, Py_ssize_t s,
    Py_ssize_t e, Py_ssize_t[::1] path, double* score, const double* off_best,
    const Py_ssize_t* off_arg,
) noexcept nogil:
    # One sequence of max_incorrect_from_tables (tokens s .. e-1, e > s).
    # off_best, off_arg (or NULL): _off_reference_max of every token with
    # ref's labels, as the max-marginal kernel writes them.
    cdef Py_ssize_t L = alpha.shape[1]
    cdef Py_ssize_t t, bt = -1, bj = -1, j
    cdef double v, best = -INFINITY
    for t in range(s if exclude else e - 1, e):
        if exclude and off_best != NULL:
            v = off_best[t]
            j = off_arg[t]
        else:
            _off_reference_max(&alpha[t, 0], &beta[t, 0], ref[t] if exclude else -1, L, &v,
                               &j)
        if v > best:
            best = v
            bt = t
            bj = j
    score[0] = best
    if bt < 0:
        for t in range(s, e):
            path[t] = ref[t]
        return
    path[bt] = bj
    backtrace(&bp_fwd[s, 0], &path[s], bt - s + 1, L)
    for t in range(bt, e - 1):
        path[t + 1] = bp_bwd[t, path[t]]


cdef inline Py_ssize_t _block(const Py_ssize_t* index, Py_ssize_t t, Py_ssize_t L) noexcept nogil:
    # Offset of the transition block of the edge into token t.
    return 0 if index == NULL else index[t] * L * L


cdef inline void _span_weights(
    const Py_ssize_t* lab, Py_ssize_t s, Py_ssize_t e, Py_ssize_t a, Py_ssize_t b, double c,
    const Py_ssize_t* index, const int[:, ::1] bp_fwd, const int[:, ::1] bp_bwd, Py_ssize_t L,
    double* pre, double* suf, double[:, ::1] d_unary, double* acc_trans, double* acc_start,
    double* acc_end,
) noexcept nogil:
    # c times the counts of the best path with labels lab[0 .. b-a-1] on tokens
    # a .. b-1: the span's own counts now; its best prefix (suffix) as a node
    # weight at the token before (after) the span, spread by _sweep.
    cdef Py_ssize_t t, i
    for t in range(a, b):
        d_unary[t, lab[t - a]] += c
    for t in range(a + 1, b):
        acc_trans[_block(index, t, L) + lab[t - a - 1] * L + lab[t - a]] += c
    if a > s:
        i = bp_fwd[a, lab[0]]
        acc_trans[_block(index, a, L) + i * L + lab[0]] += c
        pre[(a - 1 - s) * L + i] += c
    else:
        acc_start[lab[0]] += c
    if b < e:
        i = bp_bwd[b - 1, lab[b - 1 - a]]
        acc_trans[_block(index, b, L) + lab[b - 1 - a] * L + i] += c
        suf[(b - s) * L + i] += c
    else:
        acc_end[lab[b - 1 - a]] += c


cdef inline void _sweep(
    Py_ssize_t s, Py_ssize_t e, const Py_ssize_t* index, const int[:, ::1] bp_fwd,
    const int[:, ::1] bp_bwd, Py_ssize_t L, double* pre, double* suf, double[:, ::1] d_unary,
    double* acc_trans, double* acc_start, double* acc_end,
) noexcept nogil:
    # The counts of the best prefixes (suffixes) weighted in pre (suf): one
    # pass back (forward) through the backpointers, O(n L) for all of them.
    cdef Py_ssize_t t, j, i
    cdef double w
    for t in range(e - 1, s - 1, -1):
        for j in range(L):
            w = pre[(t - s) * L + j]
            if w == 0.0:
                continue
            d_unary[t, j] += w
            if t > s:
                i = bp_fwd[t, j]
                acc_trans[_block(index, t, L) + i * L + j] += w
                pre[(t - 1 - s) * L + i] += w
            else:
                acc_start[j] += w
    for t in range(s, e):
        for j in range(L):
            w = suf[(t - s) * L + j]
            if w == 0.0:
                continue
            d_unary[t, j] += w
            if t < e - 1:
                i = bp_bwd[t, j]
                acc_trans[_block(index, t + 1, L) + j * L + i] += w
                suf[(t + 1 - s) * L + i] += w
            else:
                acc_end[j] += w
