# Sum-product with position-dependent transitions (observation-dependent
# label bigrams).
#
# Design notes
# ------------
# * CRF++ 'B' lines with macros make the transition potentials depend on the
#   position: the edge into token t has the matrix table[index[t]] (table:
#   (K, L, L), the K distinct matrices of a batch; index: (n_tokens,); the
#   entry of a sequence's first token is not read). The dense (L, L) kernels
#   of _forward_backward stay the fast path for plain transitions.
# * Scaled passes as in _forward_backward (Rabiner 1989): every matrix is
#   exponentiated once per call, exp_table[k] = exp(table[k] - shifts[k]),
#   log Z gets shifts[k] back per edge, and the pair marginal of edge
#   (t-1, t) is alpha_hat[t-1, i] * exp_table[k][i, j] * v_t[j] with
#   v_t = psi_t * beta_hat[t] / c_t: the kernels accumulate
#   outer(alpha_hat[t-1], v_t) per matrix k, and the caller multiplies by
#   exp_table[k] once. The range bound of the scaled passes (MAX_RANGE in
#   _chain.pxd) takes the largest range of any matrix.
# * A sequence that the scaled pass cannot do (a normaliser underflows, the
#   range bound is passed, a backward row overflows) runs in log space
#   (_position_sequence) with the vectorised exp_nonpos (every exponent
#   shifted to be <= 0): exact, its pair marginals added to the direct
#   accumulator per matrix.
# * position_forward_backward_batch is the general path (unary potentials in,
#   marginals out) that every loss with position-dependent transitions goes
#   through. position_cll_features_batch is the conditional log-likelihood's
#   fused kernel, as _forward_backward.cll_features_batch for one matrix:
#   per sequence, the unary rows gathered from the sparse features
#   (gather_token), the scaled forward-backward with the edge's own matrix
#   (padded rows of Lp doubles; the forward products register-blocked by
#   vec_mat_padded, the backward ones row dot products of the same matrix,
#   which the forward pass of the sequence has just brought into the cache),
#   the pair sums per matrix and the weighted node marginals scattered into
#   the state-weight gradient (scatter_token). The table is a few MB on CoNLL-2000 (about a thousand
#   matrices) and is read once per edge; no (n_tokens, L) or (n_tokens, L, L)
#   array is built.
# * Sequences are taken in chunks of CHUNK = 8; chunk c adds into
#   accumulator block c % n_acc (a multiple of the number of threads), as in
#   _forward_backward, each block's chunks in order on one thread, so that
#   the sums, rounding included, do not depend on the number of threads.
#   The loop is block-major (a thread runs the chunks of one block, then of
#   the next), so that the per-matrix sums of one block are written at a
#   time, not those of all blocks in turn (same sums, bit for bit, as with
#   the chunks in the dense kernel's order).
# * The cache misses on the table and on the per-matrix sums are the cost
#   over the dense kernel; software prefetching of the next edge's matrix
#   and sums, and a transposed copy of the table for the backward products,
#   did not lower it (benchmarks/README.md, issue 23).

import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport log, isfinite, INFINITY
from libc.stdint cimport uintptr_t

from _chain cimport (LANES, exp_nonpos, gather_rows, logsumexp_row, padded_width,
                     row_max_padded, row_sum_padded, row_too_wide, scale_ok, scatter_token,
                     vec_mat_padded)
from _chain cimport indptr_t


cdef void _position_sequence(
    const double* U, Py_ssize_t ldu, Py_ssize_t n, Py_ssize_t L, const double* table,
    const Py_ssize_t* index, const double* start, const double* end, double weight,
    double* alpha, double* beta, double* col, double* acc, double* marginals,
    Py_ssize_t ldm, double* d_table, double* d_start, double* d_end, double* log_z_out,
) noexcept nogil:
    """Log-space forward-backward of one sequence of n >= 1 tokens.

    U: n rows of stride ldu; index: the sequence's own entries (index[0]
    not read); alpha, beta: n rows of L each; col, acc: L each; marginals:
    n rows of stride ldm (L written). d_table (K, L, L), d_start and d_end
    are incremented by weight * the pair and boundary marginals.
    """
    cdef Py_ssize_t t, i, j, k
    cdef double a, v, m, z
    cdef const double* T
    for j in range(L):
        alpha[j] = start[j] + U[j]
    for t in range(1, n):
        T = &table[index[t] * L * L]
        for j in range(L):
            col[j] = -INFINITY
        for i in range(L):
            a = alpha[(t - 1) * L + i]
            for j in range(L):
                v = a + T[i * L + j]
                col[j] = v if v > col[j] else col[j]
        for j in range(L):
            acc[j] = 0.0
            col[j] = col[j] if isfinite(col[j]) else 0.0  # an all -inf column sums to 0
        for i in range(L):
            a = alpha[(t - 1) * L + i]
            for j in range(L):
                acc[j] += exp_nonpos(a + T[i * L + j] - col[j])
        for j in range(L):
            alpha[t * L + j] = ((col[j] + log(acc[j]) if acc[j] > 0.0 else -INFINITY)
                                + U[t * ldu + j])
    for j in range(L):
        acc[j] = alpha[(n - 1) * L + j] + end[j]
    z = logsumexp_row(acc, L)
    log_z_out[0] = z
    for j in range(L):
        beta[(n - 1) * L + j] = end[j]
    for t in range(n - 1, 0, -1):
        T = &table[index[t] * L * L]
        for j in range(L):
            acc[j] = U[t * ldu + j] + beta[t * L + j]
        for i in range(L):
            m = -INFINITY
            for j in range(L):
                v = T[i * L + j] + acc[j]
                m = v if v > m else m
            if m == -INFINITY:
                beta[(t - 1) * L + i] = m
                continue
            v = 0.0
            for j in range(L):
                v += exp_nonpos(T[i * L + j] + acc[j] - m)
            beta[(t - 1) * L + i] = m + log(v)
    if not isfinite(z):  # no allowed path: no marginals
        for t in range(n):
            for j in range(L):
                marginals[t * ldm + j] = 0.0
        return
    for t in range(n):
        for j in range(L):
            v = alpha[t * L + j] + beta[t * L + j] - z
            marginals[t * ldm + j] = exp_nonpos(v if v < 0.0 else 0.0)
    for j in range(L):
        d_start[j] += weight * marginals[j]
        d_end[j] += weight * marginals[(n - 1) * ldm + j]
    for t in range(1, n):
        k = index[t]
        T = &table[k * L * L]
        for j in range(L):
            acc[j] = U[t * ldu + j] + beta[t * L + j]
        for i in range(L):
            a = alpha[(t - 1) * L + i] - z
            for j in range(L):
                v = a + T[i * L + j] + acc[j]
                d_table[(k * L + i) * L + j] += weight * exp_nonpos(v if v < 0.0 else 0.0)


cdef bint _position_scaled(
    const double[:, ::1] unary, const double[:, :, ::1] exp_table, const double[::1] shifts,
    const Py_ssize_t[::1] index, const double[::1] exp_start, const double[::1] exp_end,
    double shift_boundary, double t_range, Py_ssize_t s, Py_ssize_t e, double weight,
    double[:, ::1] alpha, double[:, ::1] beta, double[:, ::1] psi, double[::1] scale,
    double* tmp, double[:, ::1] marginals, double[:, :, ::1] outer, double* d_start,
    double* d_end, double* log_z_out,
) noexcept nogil:
    """The scaled pass of one sequence (False: it must run in log space instead).

    exp_table[k] = exp(table[k] - shifts[k]); the pair counts are
    accumulated as outer(alpha_hat[t-1], psi[t] * beta_hat[t] / c_t) per
    matrix (outer), which the wrapper multiplies by exp_table once.
    """
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, i, j, k
    cdef double m, c, a, v, z
    cdef const double* E
    for t in range(s, e):
        if row_too_wide(t_range, &unary[t, 0], L):
            return False
        m = -INFINITY
        for j in range(L):
            m = unary[t, j] if unary[t, j] > m else m
        for j in range(L):
            psi[t, j] = exp_nonpos(unary[t, j] - m)
        scale[t] = m  # the row's shift, until the normaliser replaces it
    z = shift_boundary
    for t in range(s, e):
        z += scale[t]
        if t == s:
            for j in range(L):
                alpha[t, j] = exp_start[j] * psi[t, j]
        else:
            k = index[t]
            z += shifts[k]
            E = &exp_table[k, 0, 0]
            for j in range(L):
                alpha[t, j] = 0.0
            for i in range(L):
                a = alpha[t - 1, i]
                for j in range(L):
                    alpha[t, j] += a * E[i * L + j]
            for j in range(L):
                alpha[t, j] *= psi[t, j]
        c = 0.0
        for j in range(L):
            c += alpha[t, j]
        if not scale_ok(c):
            return False
        scale[t] = c
        z += log(c)
        for j in range(L):
            alpha[t, j] /= c
    c = 0.0
    for j in range(L):
        c += alpha[e - 1, j] * exp_end[j]
    if not scale_ok(c):
        return False
    log_z_out[0] = z + log(c)
    for j in range(L):
        beta[e - 1, j] = exp_end[j] / c
    for t in range(e - 1, s, -1):
        E = &exp_table[index[t], 0, 0]
        for j in range(L):
            tmp[j] = psi[t, j] * beta[t, j] / scale[t]
        for i in range(L):
            v = 0.0
            for j in range(L):
                v += E[i * L + j] * tmp[j]
            beta[t - 1, i] = v
    for t in range(s, e):
        for j in range(L):
            marginals[t, j] = alpha[t, j] * beta[t, j]
    for j in range(L):
        d_start[j] += weight * marginals[s, j]
        d_end[j] += weight * marginals[e - 1, j]
    for t in range(s + 1, e):
        k = index[t]
        for j in range(L):
            tmp[j] = weight * psi[t, j] * beta[t, j] / scale[t]
        for i in range(L):
            a = alpha[t - 1, i]
            for j in range(L):
                outer[k, i, j] += a * tmp[j]
    return True


def _finite_max(x):
    """The largest finite entry of x (0 if there is none)."""
    finite = x[np.isfinite(x)]
    return float(finite.max()) if finite.shape[0] else 0.0


def exp_tables(table, start, end, padded=False):
    """The scaled passes' exponentials of a table of transition matrices (low level).

    Parameters
    ----------
    table : ndarray of float64 of shape (K, L, L)
    start, end : ndarray of float64 of shape (L,)
    padded : bool, default=False
        Rows of ``Lp = row_width(L)`` doubles (zeros past L), as
        :func:`position_cll_features_batch` reads them.

    Returns
    -------
    exp_table : ndarray of shape (K, L, L) or, padded, (K, L, Lp)
        ``exp(table[k] - shifts[k])``, shifts[k] the largest finite entry
        of ``table[k]`` (0 if none).
    shifts : ndarray of shape (K,)
    exp_start, exp_end : ndarray of shape (L,)
        ``exp(start - s_shift)``, ``exp(end - e_shift)``.
    shift_boundary : float
        ``s_shift + e_shift``.
    t_range : float
        The largest finite range of a matrix or of ``start``, plus log L
        (the part of the range bound that does not depend on the unary rows).
    """
    table = np.asarray(table, dtype=np.float64)
    K, L = table.shape[0], table.shape[1]
    flat = table.reshape(K, -1)
    finite = np.isfinite(flat)
    top = np.where(finite, flat, -np.inf).max(axis=1)
    shifts = np.where(np.isfinite(top), top, 0.0)
    low = np.where(finite, flat, np.inf).min(axis=1)
    ranges = np.where(np.isfinite(low) & np.isfinite(top), top - low, 0.0)
    start, end = np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)
    s_shift, e_shift = _finite_max(start), _finite_max(end)
    if padded:
        exp_table = np.zeros((K, L, padded_width(L)))
        np.exp(table - shifts[:, None, None], out=exp_table[:, :, :L])
    else:
        exp_table = np.exp(table - shifts[:, None, None])
    t_range = max(float(ranges.max(initial=0.0)),
                  float(np.ptp(start[np.isfinite(start)]) if np.isfinite(start).any()
                        else 0.0)) + np.log(L)
    return (exp_table, shifts, np.exp(start - s_shift), np.exp(end - e_shift),
            s_shift + e_shift, t_range)


def position_forward_backward_batch(
    const double[:, ::1] unary, const double[:, :, ::1] table, const Py_ssize_t[::1] index,
    const double[::1] start, const double[::1] end, const Py_ssize_t[::1] offsets,
    const double[::1] weights, double[:, ::1] marginals, double[::1] log_z,
    double[:, :, ::1] d_table, double[:, ::1] d_boundary,
):
    """Forward-backward with position-dependent transitions (low level).

    Use :func:`sklearn_crfloss.inference.forward_backward` with a
    :class:`~sklearn_crfloss.inference.PositionTransitions`. Shapes: unary,
    marginals (n_tokens, L); table, d_table (K, L, L); index (n_tokens,)
    intp in [0, K); start, end (L,); offsets (n_sequences + 1,) intp;
    weights, log_z (n_sequences,); d_boundary (2, L). Outputs: log Z and the
    node marginals of every sequence, and the weighted expected counts of
    every table entry (d_table, summed over the positions that use it) and
    of the first and last labels (d_boundary), added to the given arrays.
    Empty sequences get log Z = 0. Scaled passes (exponentials of the table
    once per call), a sequence in log space where they would underflow.
    Returns the number of sequences computed in log space.
    """
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t K = table.shape[0]
    cdef Py_ssize_t N = unary.shape[0]
    cdef Py_ssize_t k, s, e
    cdef int n_fallback = 0
    tables = exp_tables(table, start, end)
    cdef double[:, :, ::1] exp_table = tables[0]
    cdef double[::1] shifts = tables[1]
    cdef double[::1] exp_start = tables[2]
    cdef double[::1] exp_end = tables[3]
    cdef double shift_boundary = tables[4]
    cdef double t_range = tables[5]
    cdef double[:, ::1] alpha = np.empty((N, L))
    cdef double[:, ::1] beta = np.empty((N, L))
    cdef double[:, ::1] psi = np.empty((N, L))
    cdef double[::1] scale = np.empty(max(N, 1))
    cdef double[::1] rows = np.empty(2 * L + 2)
    outer_arr = np.zeros((K, L, L))
    cdef double[:, :, ::1] outer = outer_arr
    with nogil:
        for k in range(offsets.shape[0] - 1):
            s = offsets[k]
            e = offsets[k + 1]
            if e == s:
                log_z[k] = 0.0
                continue
            if _position_scaled(unary, exp_table, shifts, index, exp_start, exp_end,
                                shift_boundary, t_range, s, e, weights[k], alpha, beta, psi,
                                scale, &rows[0], marginals, outer, &d_boundary[0, 0],
                                &d_boundary[1, 0], &log_z[k]):
                continue
            n_fallback += 1
            _position_sequence(&unary[s, 0], L, e - s, L, &table[0, 0, 0], &index[s], &start[0],
                               &end[0], weights[k], &alpha[s, 0], &beta[s, 0], &rows[0],
                               &rows[L], &marginals[s, 0], L, &d_table[0, 0, 0],
                               &d_boundary[0, 0], &d_boundary[1, 0], &log_z[k])
    np.asarray(d_table)[...] += outer_arr * np.asarray(exp_table)
    return n_fallback


# ------------------------------------------- the fused conditional log-likelihood

def position_scratch_width(Py_ssize_t n_labels, Py_ssize_t max_length):
    """Doubles of scratch per thread of :func:`position_cll_features_batch`."""
    cdef Py_ssize_t Lp = padded_width(n_labels)
    return 4 * max_length * Lp + padded_width(max_length) + 6 * Lp + LANES


cdef struct Rows:
    # A thread's padded rows (position_scratch_width): R = max_length rows each
    # of psi, alpha, marginals and the log-space fallback's log beta; the
    # inverse scales; exp_start, exp_end, two beta rows, two rows of scratch.
    double* psi
    double* alpha
    double* mu
    double* work
    double* rs
    double* es
    double* ee
    double* beta
    double* beta2
    double* tmp


cdef inline Rows _rows(double* row, Py_ssize_t Lp, Py_ssize_t R) noexcept nogil:
    """The thread's buffers in its scratch row, from a 64-byte boundary."""
    cdef Rows b
    b.psi = <double*>((<uintptr_t>row + 63) & ~(<uintptr_t>63))
    b.alpha = b.psi + R * Lp
    b.mu = b.alpha + R * Lp
    b.work = b.mu + R * Lp
    b.rs = b.work + R * Lp
    b.es = b.rs + padded_width(R)
    b.ee = b.es + Lp
    b.beta = b.ee + Lp
    b.beta2 = b.beta + Lp
    b.tmp = b.beta2 + Lp
    return b


cdef inline double _dot_padded(const double* x, const double* y, Py_ssize_t Lp) noexcept nogil:
    """sum(x[:Lp] * y[:Lp]), by LANES partial sums."""
    cdef Py_ssize_t jb, jj
    cdef double acc[LANES]
    for jj in range(LANES):
        acc[jj] = x[jj] * y[jj]
    for jb in range(8, Lp, 8):  # LANES
        for jj in range(LANES):
            acc[jj] += x[jb + jj] * y[jb + jj]
    return (((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])))


cdef bint _scaled_sequence(
    Rows* b, Py_ssize_t n, Py_ssize_t L, Py_ssize_t Lp, const double* E,
    const double* shifts, const Py_ssize_t* index, double t_range, double* log_z,
) noexcept nogil:
    """The scaled forward-backward of one sequence of n >= 1 gathered rows (b.psi).

    E: the padded exponentials (K, L, Lp); index: the sequence's own entries.
    On success (True): log_z = log Z minus the boundary shifts, b.alpha
    alpha_hat, b.mu the node marginals (pads 0), b.psi's rows t >= 1
    v_t = psi_t / c_t * beta_hat[t]. False (rows left partial) when a row
    passes the range bound, a normaliser underflows or a backward row
    overflows: the sequence must run in log space.
    """
    cdef Py_ssize_t t, i, j
    cdef double m, c, r, total = 0.0
    cdef double *row, *a, *sw
    cdef const double* M
    cdef double* beta = b.beta
    cdef double* beta2 = b.beta2
    for t in range(n):
        row = b.psi + t * Lp
        if row_too_wide(t_range, row, L):
            return False
        m = row_max_padded(row, Lp)
        total += m
        for j in range(Lp):
            row[j] = exp_nonpos(row[j] - m)
    for t in range(n):
        a = b.alpha + t * Lp
        row = b.psi + t * Lp
        if t == 0:
            for j in range(Lp):
                a[j] = b.es[j] * row[j]
        else:
            total += shifts[index[t]]
            vec_mat_padded(a - Lp, &E[index[t] * L * Lp], a, L, Lp)
            for j in range(Lp):
                a[j] *= row[j]
        c = row_sum_padded(a, Lp)
        if not scale_ok(c):
            return False
        r = 1.0 / c
        b.rs[t] = r
        for j in range(Lp):
            a[j] *= r
        total += log(c)
    a = b.alpha + (n - 1) * Lp
    for j in range(Lp):
        b.tmp[j] = a[j] * b.ee[j]
    c = row_sum_padded(b.tmp, Lp)
    if not scale_ok(c):
        return False
    total += log(c)
    r = 1.0 / c
    for j in range(Lp):
        beta[j] = b.ee[j] * r
    for t in range(n - 1, 0, -1):
        a = b.alpha + t * Lp
        row = b.psi + t * Lp
        r = b.rs[t]
        for j in range(Lp):
            b.mu[t * Lp + j] = a[j] * beta[j]
            row[j] = row[j] * r * beta[j]
        M = &E[index[t] * L * Lp]  # read by the forward pass: in the cache
        for i in range(L):
            beta2[i] = _dot_padded(M + i * Lp, row, Lp)
        for i in range(L, Lp):
            beta2[i] = 0.0
        # As in _forward_backward: a backward row can overflow with no
        # forward normaliser underflowing (redo the sequence in log space).
        if not isfinite(row_sum_padded(beta2, Lp)):
            return False
        sw = beta
        beta = beta2
        beta2 = sw
    for j in range(Lp):
        b.mu[j] = b.alpha[j] * beta[j]
    log_z[0] = total
    return True


cdef int _cll_sequence(
    Rows* b, Py_ssize_t s, Py_ssize_t n, Py_ssize_t L, Py_ssize_t Lp,
    const indptr_t[::1] indptr, const int[::1] indices, const double[::1] data, bint binary,
    const long long[::1] code, const double[::1] w, const double[:, ::1] W_hot,
    const double* table, const double* E, const double* shifts, const Py_ssize_t* index,
    const double* start, const double* end, double shift_boundary, double t_range,
    double weight, double* log_z, double* grad, double* hot, double* pair, double* direct,
    double* start_acc, double* end_acc,
) noexcept nogil:
    """One sequence (tokens s:s+n, n >= 1) into the block's sums. 1 if in log space."""
    cdef Py_ssize_t nnz = indices.shape[0]
    cdef Py_ssize_t t, i, j
    cdef double c
    cdef double *P, *v
    cdef int fallback = 0
    gather_rows(&indptr[0], &indices[0], &data[0], binary, &code[0], &w[0], &W_hot[0, 0],
                 s, n, L, Lp, nnz, b.psi)
    if _scaled_sequence(b, n, L, Lp, E, shifts, &index[s], t_range, log_z):
        log_z[0] += shift_boundary
        for t in range(1, n):
            P = pair + index[s + t] * L * Lp
            v = b.psi + t * Lp
            for i in range(L):
                c = weight * b.alpha[(t - 1) * Lp + i]
                for j in range(Lp):
                    P[i * Lp + j] += c * v[j]
        for j in range(Lp):
            start_acc[j] += weight * b.mu[j]
            end_acc[j] += weight * b.mu[(n - 1) * Lp + j]
    else:  # log space; the scaled pass touched no accumulator
        fallback = 1
        gather_rows(&indptr[0], &indices[0], &data[0], binary, &code[0], &w[0], &W_hot[0, 0],
                     s, n, L, Lp, nnz, b.psi)
        _position_sequence(b.psi, Lp, n, L, table, &index[s], start, end, weight, b.alpha,
                           b.work, b.tmp, b.tmp + Lp, b.mu, Lp, direct, start_acc, end_acc,
                           log_z)
        for t in range(n):
            for j in range(L, Lp):
                b.mu[t * Lp + j] = 0.0
    for t in range(n):
        scatter_token(&indptr[0], &indices[0], &data[0], binary, &code[0], grad, hot, Lp,
                      b.mu + t * Lp, weight, s + t, Lp, nnz)
    return fallback


def position_cll_features_batch(
    const indptr_t[::1] indptr, const int[::1] indices, const double[::1] data, bint binary,
    const long long[::1] code, const double[::1] w, const double[:, ::1] W_hot,
    const double[:, :, ::1] table, const double[:, :, ::1] exp_table,
    const double[::1] shifts, const Py_ssize_t[::1] index, const double[::1] start,
    const double[::1] end, const double[::1] exp_start, const double[::1] exp_end,
    const Py_ssize_t[::1] offsets, const double[::1] weights, double[::1] log_z,
    double[:, ::1] grad_acc, double[:, :, ::1] hot_acc, double[:, :, :, ::1] pair_acc,
    double[:, :, :, ::1] direct_acc, double[:, :, ::1] boundary_acc, double[:, ::1] scratch,
    Py_ssize_t max_length, double shift_boundary, double t_range, int n_threads,
):
    """Log Z and the expected counts from sparse features, transitions per position (low level).

    :func:`_forward_backward.cll_features_batch` with the edge into token t
    scored by ``table[index[t]]``. Shapes: table (K, L, L); exp_table,
    shifts, exp_start, exp_end, shift_boundary and t_range from
    :func:`exp_tables` (``padded=True``: exp_table (K, L, Lp), Lp =
    row_width(L)); index (n_tokens,) intp in [0, K); start, end (L,);
    offsets (n_sequences + 1,) intp, every sequence non-empty; weights,
    log_z (n_sequences,); grad_acc (n_grad, len(w)), hot_acc (n_grad,
    n_hot, Lp); pair_acc (n_acc, K, L, Lp), direct_acc (n_acc, K, L, L),
    boundary_acc (n_acc, 2, Lp), n_grad and n_acc multiples of n_threads
    (accumulator_blocks); scratch (n_threads, position_scratch_width(L,
    max_length)), max_length at least the longest sequence. Accumulators
    zeroed. Outputs: log Z; the weighted node marginals scattered into the
    state-weight gradient; per matrix k, pair_acc[., k] the sums of
    weight * outer(alpha_hat[t-1], v_t) (times exp_table[k]: the expected
    counts) and direct_acc[., k] the expected counts of the sequences in
    log space; the boundary counts. Returns the number of sequences in
    log space.
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t n_chunks = (n_seq + 7) // 8  # CHUNK
    cdef Py_ssize_t L = table.shape[1]
    cdef Py_ssize_t Lp = padded_width(L)
    cdef Py_ssize_t n_acc = pair_acc.shape[0], n_grad = grad_acc.shape[0]
    cdef Py_ssize_t m = n_acc if n_acc > n_grad else n_grad  # the other divides it
    cdef Py_ssize_t r, ch, k, k1, a, g, j
    cdef int tid, q
    cdef int n_fallback = 0
    cdef Rows b
    if (exp_table.shape[0] != table.shape[0] or exp_table.shape[1] != L
            or exp_table.shape[2] != Lp):
        raise ValueError(f"exp_table must have shape {(table.shape[0], L, Lp)}")
    with nogil:
        for q in range(n_threads):
            b = _rows(&scratch[q, 0], Lp, max_length)
            for j in range(Lp):
                b.es[j] = exp_start[j] if j < L else 0.0
                b.ee[j] = exp_end[j] if j < L else 0.0
        # Block-major: group r (on thread r % n_threads) runs chunks r, r + m, ...
        # in order, so that one block's sums are written at a time.
        for r in prange(m, num_threads=n_threads, schedule='static', chunksize=1):
            tid = threadid()
            b = _rows(&scratch[tid, 0], Lp, max_length)
            ch = r
            while ch < n_chunks:
                a = ch % n_acc  # the block's accumulators (see the header)
                g = ch % n_grad
                k1 = 8 * ch + 8 if 8 * ch + 8 < n_seq else n_seq
                for k in range(8 * ch, k1):
                    n_fallback += _cll_sequence(
                        &b, offsets[k], offsets[k + 1] - offsets[k], L, Lp, indptr, indices,
                        data, binary, code, w, W_hot, &table[0, 0, 0], &exp_table[0, 0, 0],
                        &shifts[0], &index[0], &start[0], &end[0], shift_boundary, t_range,
                        weights[k], &log_z[k], &grad_acc[g, 0], &hot_acc[g, 0, 0],
                        &pair_acc[a, 0, 0, 0], &direct_acc[a, 0, 0, 0], &boundary_acc[a, 0, 0],
                        &boundary_acc[a, 1, 0])
                ch = ch + m
    return n_fallback
