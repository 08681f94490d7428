# Vector-Jacobian product of the node marginals of a linear-chain CRF.
#
# Design notes
# ------------
# * Given G = dl/dmu of shape (n_tokens, L), where mu[t, j] = p(y_t = j | x)
#   are the node marginals, compute dl/dU, dl/dT, dl/dstart, dl/dend.
# * Since mu[t, j] = E[1{y_t = j}] under an exponential family whose
#   sufficient statistics are the indicators of the potentials,
#   d mu[t, j] / d theta = Cov(1{y_t = j}, phi_theta(y)), so the VJP is
#       dl/d theta = Cov(g(y), phi_theta(y)),   g(y) = sum_t G[t, y_t],
#   a covariance with an additive function of the path. It is computed by a
#   forward-backward pass in the first-order expectation semiring (Li & Eisner
#   2009), which is the recurrence of Gross et al. (2006), Eqs. (16)-(19),
#   with Q'(w) 1{y_k = y*_k} replaced by an arbitrary G[k, y_k]:
#       A[t, j] = sum over prefixes ending in j of exp(score) * sum_{k<=t} G[k, y_k]
#       B[t, i] = sum over suffixes after label i at t of exp(score) * sum_{k>t} G[k, y_k]
#   stored with the same scaling as the normalised alpha_hat / beta_hat of
#   _forward_backward.pyx (alpha_hat[t] * beta_hat[t] = mu[t]). Then
#       E[g 1{y_t = k}]             = A[t, k] beta_hat[t, k] + alpha_hat[t, k] B[t, k]
#       E[g] = gbar                 = sum_k A[T-1, k] exp_end[k] / c_end
#       dl/dU[t, k]                 = E[g 1{y_t = k}] - gbar mu[t, k]
#       dl/dstart = dl/dU[first],   dl/dend = dl/dU[last]
#       dl/dT = expT * sum_t [outer(A[t-1] - gbar alpha_hat[t-1], v_t)
#                             + outer(alpha_hat[t-1], w_t)]
#   with v_t = psi_t / c_t * beta_hat[t] and
#   w_t = psi_t / c_t * (B[t] + G[t] * beta_hat[t]); as in the forward-backward
#   kernel, the common factor expT is applied once by the wrapper.
# * Cost: one forward and one backward pass, each with two L x L products per
#   position (alpha and A; beta and B): about twice the forward-backward.
# * The scaled forward pass is the forward-backward kernel's own
#   (_chain.pxd: scaled_forward), run with its expectation-semiring part on,
#   which carries A along with alpha_hat (one pass over exp_trans for both).
# * A sequence whose scaled pass underflows (forward), overflows (backward)
#   or whose potentials' range passes MAX_RANGE (_chain.pxd) is flagged in `failed`; it has added nothing to the accumulators and its rows
#   of d_unary hold partial values, which the Python wrapper overwrites with
#   a log-space recomputation.
# * Sequences run in parallel (prange, static schedule); each thread owns its
#   scratch and its accumulators.

from cython.parallel cimport prange, threadid

from libc.math cimport isfinite

from _chain cimport scaled_forward, tail_range, vec_mat2


cdef int _vjp_sequence(
    const double[:, ::1] unary, const double[:, ::1] grad,
    const double[:, ::1] exp_trans, const double[:, ::1] exp_trans_t,
    const double[::1] exp_start, const double[::1] exp_end,
    Py_ssize_t s, Py_ssize_t e,
    double[:, ::1] d_unary, double* buf, double* pair_acc,
    double* start_acc, double* end_acc, double t_range,
) noexcept nogil:
    """VJP for rows s:e. buf holds (2 * (e - s) + 5 + L) * L doubles. 0 or 1 on underflow.

    The sequence's pair sums go to the last L * L doubles of buf first, and
    to pair_acc only once the backward pass has finished: a sequence that
    fails half-way adds nothing.
    """
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t n = e - s
    cdef Py_ssize_t t, i, j
    cdef double a, b, gbar, c_end
    cdef double* psi = buf
    cdef double* alpha = buf + n * L
    cdef double* v = buf + 2 * n * L
    cdef double* w = v + L
    cdef double* b_next = w + L
    cdef double* b_cur = b_next + L
    cdef double* B_next = b_cur + L
    cdef double* B_cur
    cdef double* tmp
    cdef double* pairs = B_next + L
    cdef double total

    # Forward: alpha_hat in `alpha` and psi divided by the scales, as in the
    # forward-backward kernel (log Z is not needed), and A (same scaling as
    # alpha_hat) in d_unary[s:e].
    c_end = scaled_forward(&unary[s, 0], n, L, &exp_trans[0, 0], &exp_start[0],
                           &exp_end[0], psi, alpha, v, NULL, &grad[s, 0], &d_unary[s, 0], w, t_range)
    if c_end == 0.0:
        return 1
    gbar = 0.0
    for j in range(L):
        gbar += d_unary[e - 1, j] * exp_end[j]
    gbar /= c_end

    # Backward: beta_hat in b_next/b_cur, B in B_next/B_cur (B[T-1] = 0).
    # d_unary[t] is overwritten by the gradient once A[t] is no longer needed
    # (A[t] is read for edge (t, t+1), processed before row t is finalised).
    B_cur = v  # v is free after the forward pass
    c_end = 1.0 / c_end
    for j in range(L * L):
        pairs[j] = 0.0
    for j in range(L):
        b_next[j] = exp_end[j] * c_end
        B_next[j] = 0.0
    for t in range(n - 1, 0, -1):
        # row t: gradient from A[t], alpha_hat[t], beta_hat[t], B[t]
        for j in range(L):
            a = alpha[t * L + j]
            d_unary[s + t, j] = (d_unary[s + t, j] * b_next[j] + a * B_next[j]
                                 - gbar * a * b_next[j])
        # v_t = psi_t/c_t * beta_hat[t]; w_t = psi_t/c_t * (B[t] + G[t] beta_hat[t])
        # (stored in psi's row t, which is no longer needed, and in B_next)
        for j in range(L):
            a = psi[t * L + j]
            psi[t * L + j] = a * b_next[j]
            B_next[j] = a * (B_next[j] + grad[s + t, j] * b_next[j])
        # pair accumulator of edge (t-1, t); A[t-1] is still in d_unary[s+t-1]
        for i in range(L):
            a = d_unary[s + t - 1, i] - gbar * alpha[(t - 1) * L + i]
            b = alpha[(t - 1) * L + i]
            for j in range(L):
                pairs[i * L + j] += a * psi[t * L + j] + b * B_next[j]
        # beta_hat[t-1] = expT @ v_t ; B[t-1] = expT @ w_t
        vec_mat2(&psi[t * L], B_next, &exp_trans_t[0, 0], b_cur, B_cur, L)
        # beta_hat[t-1, j] is bounded only by 1 / alpha_hat[t-1, j], which an
        # underflow to 0 makes unbounded: the backward rows can overflow
        # (potentials of a few hundred) although the forward pass did not.
        # A sum with an inf or NaN term is not finite: log space then.
        total = 0.0
        for j in range(L):
            total += b_cur[j] + B_cur[j]
        if not isfinite(total):
            return 1
        tmp = b_next
        b_next = b_cur
        b_cur = tmp
        tmp = B_next
        B_next = B_cur
        B_cur = tmp
    for j in range(L):
        a = alpha[j]
        d_unary[s, j] = d_unary[s, j] * b_next[j] + a * B_next[j] - gbar * a * b_next[j]
    for j in range(L):
        start_acc[j] += d_unary[s, j]
        end_acc[j] += d_unary[e - 1, j]
    for j in range(L * L):
        pair_acc[j] += pairs[j]
    return 0


def marginals_vjp_batch(
    const double[:, ::1] unary,
    const double[:, ::1] transition,
    const double[::1] start,
    const double[:, ::1] grad,
    const double[:, ::1] exp_trans,
    const double[:, ::1] exp_trans_t,
    const double[::1] exp_start,
    const double[::1] exp_end,
    const Py_ssize_t[::1] offsets,
    double[:, ::1] d_unary,
    double[:, :, ::1] pair_acc,
    double[:, :, ::1] boundary_acc,
    double[:, ::1] scratch,
    signed char[::1] failed,
    int n_threads,
):
    """Marginal VJP over a batch of non-empty sequences (low level).

    Use :func:`sklearn_crfloss.inference.marginals_vjp`. Shapes: unary, grad,
    d_unary (n_tokens, L); transition (L, L) and start (L,) (for the range
    bound of the scaled pass, MAX_RANGE in _chain.pxd); exp_trans = exp(T - max T) and its transpose (L, L);
    exp_start, exp_end (L,) (shifted exponentials); offsets (n_seq + 1,) intp;
    pair_acc (n_acc, L, L) (zeroed; receives sum over edges before the
    final multiplication by exp_trans); boundary_acc (n_acc, 2, L) (zeroed),
    n_acc a multiple of n_threads (``_forward_backward.accumulator_blocks``:
    chunk c of 8 sequences adds into accumulator c % n_acc);
    scratch (n_threads, (2 * max_length + 5 + L) * L); failed (n_seq,) int8,
    set to 1 for a sequence whose scaled pass underflowed (its d_unary rows
    are then garbage and it adds nothing to the accumulators). Returns the
    number of failed sequences.
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t k, s, e, tid, j, a
    cdef Py_ssize_t n_acc = pair_acc.shape[0]
    cdef int n_failed = 0
    cdef double t_range = tail_range(&transition[0, 0], &start[0], unary.shape[1], 1.0)
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            tid = threadid()
            a = (k // 8) % n_acc  # the block's accumulator, as in _forward_backward
            s = offsets[k]
            e = offsets[k + 1]
            if _vjp_sequence(unary, grad, exp_trans, exp_trans_t, exp_start, exp_end,
                             s, e, d_unary, &scratch[tid, 0], &pair_acc[a, 0, 0],
                             &boundary_acc[a, 0, 0], &boundary_acc[a, 1, 0], t_range):
                failed[k] = 1
                n_failed += 1
    return n_failed
