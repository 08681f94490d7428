# Sum-product inference for a batch of linear-chain CRF sequences.
#
# Design notes
# ------------
# * A sequence i occupies rows offsets[i]:offsets[i+1] of the unary potentials
#   U (n_tokens, L). Its score is start[y_0] + sum_t U[t, y_t]
#   + sum_{t>0} T[y_{t-1}, y_t] + end[y_{T-1}].
# * Scaled forward-backward (Rabiner 1989; CRFsuite's crf1d_context.c): every
#   alpha row is normalised to sum 1 and the log of its normaliser c_t kept,
#   so log Z = sum_t log c_t plus the shifts below. The exponentials are taken
#   once: exp(T - max T), exp(start - max), exp(end - max) once per call (by
#   the Python wrapper), and exp(U[t] - max_j U[t, j]) once per token.
#   The forward pass (scaled_forward), the row products and the underflow
#   threshold MIN_SCALE are the inline helpers of _chain.pxd, shared with
#   the marginals' VJP (_marginal_vjp.pyx).
# * With these normalisations the node marginal is alpha_hat[t] * beta_hat[t]
#   and the pair marginal of edge (t-1, t) is
#   alpha_hat[t-1, i] * expT[i, j] * psi[t, j] * beta_hat[t, j] / c_t.
#   The factor expT[i, j] is the same for every edge of every sequence, so the
#   kernel accumulates sum_t outer(alpha_hat[t-1], psi[t] * beta_hat[t] / c_t)
#   and the wrapper multiplies by expT once.
# * If a normaliser underflows (all paths through a position lose their mass
#   in double precision, which needs potentials of magnitude ~700 or more),
#   that sequence is recomputed in log space. The fallback is exact but does
#   L^2 exp/log per edge; ordinary models never reach it.
# * Sequences run in parallel (OpenMP prange, a static schedule so that the
#   sums are the same from run to run); each thread owns its scratch
#   rows and its accumulators (no atomics); the wrapper sums them.

from cython.parallel cimport prange, threadid
from libc.math cimport exp

from _chain cimport logsumexp_row, scaled_forward, vec_mat


cdef int _scaled_sequence(
    const double[:, ::1] unary, const double[:, ::1] exp_trans, const double[:, ::1] exp_trans_t,
    const double[::1] exp_start, const double[::1] exp_end, Py_ssize_t s, Py_ssize_t e,
    double weight, double[:, ::1] marginals, double* psi, double* scratch,
    double* pair_acc, double* start_acc, double* end_acc, double* log_z_out,
) noexcept nogil:
    """Scaled forward-backward for rows s:e. Returns 0, or 1 on underflow.

    psi is the thread's buffer of (e - s) * L doubles; scratch has 3 * L.

    On return 0: marginals[s:e] hold node marginals, pair_acc (L*L) has been
    incremented by weight * sum_t outer(alpha_hat[t-1], psi[t]*beta_hat[t]/c_t),
    start_acc/end_acc by weight * marginals of the first/last token, and
    log_z_out holds log Z minus the constant shifts the wrapper adds back.
    """
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, i, j
    cdef double c, a
    cdef double* v = scratch
    cdef double* b_next = scratch + L
    cdef double* b_cur = scratch + 2 * L
    cdef double* tmp

    # Forward (shared with the VJP): normalised alpha rows in `marginals`,
    # psi[t] = exp(U[t] - max U[t]) / c_t, the factor the backward pass needs.
    c = scaled_forward(&unary[s, 0], e - s, L, &exp_trans[0, 0], &exp_start[0],
                       &exp_end[0], psi, &marginals[s, 0], v, log_z_out, NULL, NULL, NULL)
    if c == 0.0:
        return 1

    # Backward: beta_hat[T-1] = exp_end / c_T; for t < T-1
    # beta_hat[t, i] = sum_j expT[i, j] * psi[t+1, j] / c_{t+1} * beta_hat[t+1, j]
    # (psi already divided by c_{t+1}).
    c = 1.0 / c
    for j in range(L):
        b_next[j] = exp_end[j] * c
    for j in range(L):
        end_acc[j] += weight * marginals[e - 1, j] * b_next[j]
    for t in range(e - 1, s, -1):
        for j in range(L):
            v[j] = psi[(t - s) * L + j] * b_next[j]
        vec_mat(v, &exp_trans_t[0, 0], b_cur, L)  # b_cur = expT @ v
        # pair accumulator for edge (t-1, t) and node marginal of t
        for i in range(L):
            a = weight * marginals[t - 1, i]
            for j in range(L):
                pair_acc[i * L + j] += a * v[j]
        for j in range(L):
            marginals[t, j] *= b_next[j]
        tmp = b_next
        b_next = b_cur
        b_cur = tmp
    for j in range(L):
        marginals[s, j] *= b_next[j]
        start_acc[j] += weight * marginals[s, j]
    return 0


cdef void _log_sequence(
    const double[:, ::1] unary, const double[:, ::1] transition,
    const double[::1] start, const double[::1] end, Py_ssize_t s, Py_ssize_t e,
    double weight, double[:, ::1] marginals, double* work, double* scratch,
    double* direct_acc, double* start_acc, double* end_acc, double* log_z_out,
) noexcept nogil:
    """Log-space forward-backward for rows s:e (the underflow fallback).

    marginals[s:e] receives log alpha then the marginals; the thread's buffer
    work ((e - s) * L doubles) log beta.
    direct_acc (L*L) is incremented by weight * the pair marginals themselves.
    """
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, i, j
    cdef double log_z, x
    for j in range(L):
        marginals[s, j] = start[j] + unary[s, j]
    for t in range(s + 1, e):
        for j in range(L):
            for i in range(L):
                scratch[i] = marginals[t - 1, i] + transition[i, j]
            marginals[t, j] = logsumexp_row(scratch, L) + unary[t, j]
    for j in range(L):
        work[(e - 1 - s) * L + j] = end[j]
        scratch[j] = marginals[e - 1, j] + end[j]
    log_z = logsumexp_row(scratch, L)
    log_z_out[0] = log_z
    for t in range(e - 2, s - 1, -1):
        for i in range(L):
            for j in range(L):
                scratch[j] = transition[i, j] + unary[t + 1, j] + work[(t + 1 - s) * L + j]
            work[(t - s) * L + i] = logsumexp_row(scratch, L)
    for t in range(s + 1, e):
        for i in range(L):
            for j in range(L):
                x = (marginals[t - 1, i] + transition[i, j] + unary[t, j]
                     + work[(t - s) * L + j] - log_z)
                direct_acc[i * L + j] += weight * exp(x)
    for t in range(s, e):
        for j in range(L):
            marginals[t, j] = exp(marginals[t, j] + work[(t - s) * L + j] - log_z)
    for j in range(L):
        start_acc[j] += weight * marginals[s, j]
        end_acc[j] += weight * marginals[e - 1, j]


def forward_backward_batch(
    const double[:, ::1] unary,
    const double[:, ::1] transition,
    const double[::1] start,
    const double[::1] end,
    const double[:, ::1] exp_trans,
    const double[:, ::1] exp_trans_t,
    const double[::1] exp_start,
    const double[::1] exp_end,
    const Py_ssize_t[::1] offsets,
    const double[::1] weights,
    double[:, ::1] marginals,
    double[::1] log_z,
    double[:, :, ::1] pair_acc,
    double[:, :, ::1] direct_acc,
    double[:, :, ::1] boundary_acc,
    double[:, ::1] scratch,
    double shift_start,
    double shift_end,
    double shift_trans,
    int n_threads,
):
    """Scaled forward-backward over a batch of sequences (low level).

    Use :func:`sklearn_crfloss.inference.forward_backward`, which allocates
    the outputs and adds back the shifts. Shapes: unary, marginals
    (n_tokens, L); transition, exp_trans and its transpose exp_trans_t (L, L); start, end, exp_start,
    exp_end (L,); offsets (n_sequences + 1,) intp; weights, log_z
    (n_sequences,); pair_acc, direct_acc (n_threads, L, L); boundary_acc
    (n_threads, 2, L); scratch (n_threads, (max_length + 3) * L) where
    max_length is the longest sequence. All float64, C order. exp_trans = exp(transition - shift_trans), and likewise for start/end.
    Every sequence must be non-empty. Returns the number of sequences that
    needed the log-space fallback.
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t k, s, e, tid, j
    cdef int n_fallback = 0
    cdef double lz
    cdef double* sc
    cdef double* buf
    cdef double* start_acc
    cdef double* end_acc
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            tid = threadid()
            s = offsets[k]
            e = offsets[k + 1]
            sc = &scratch[tid, 0]
            buf = &scratch[tid, 3 * L]
            start_acc = &boundary_acc[tid, 0, 0]
            end_acc = &boundary_acc[tid, 1, 0]
            lz = 0.0
            if _scaled_sequence(unary, exp_trans, exp_trans_t, exp_start, exp_end, s, e,
                                weights[k], marginals, buf, sc,
                                &pair_acc[tid, 0, 0], start_acc, end_acc, &lz):
                # The scaled pass touches the accumulators only after all
                # its checks have passed, so there is nothing to undo.
                _log_sequence(unary, transition, start, end, s, e, weights[k],
                              marginals, buf, sc, &direct_acc[tid, 0, 0],
                              start_acc, end_acc, &lz)
                log_z[k] = lz
                n_fallback += 1
            else:
                log_z[k] = lz + shift_start + shift_end + (e - s - 1) * shift_trans
    return n_fallback
