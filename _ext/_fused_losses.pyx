# Fused kernel of the losses on the node marginals (risk, labelwise accuracy,
# pointwise): one pass over the features per sequence, as the conditional
# log-likelihood's kernel (_forward_backward.pyx: cll_features_batch) does.
#
# Design notes
# ------------
# * For every sequence, in the thread's own padded rows (_chain.pxd: rows of
#   Lp = padded_width(L) doubles, pads 0 or -inf):
#   1. the unary rows U = X @ W from the sparse features (gather_token);
#   2. the scaled forward pass (alpha_hat, and psi_t / c_t) and the scaled
#      backward pass (beta_hat), kept for every position: the node marginals
#      mu[t] = alpha_hat[t] * beta_hat[t] (Rabiner 1989);
#   3. the loss's value and its dl/dmu (G below) from the marginals, per
#      token (the loss's `mode`);
#   4. the vector-Jacobian product of the marginals (_marginal_vjp.pyx's
#      design notes: the first-order expectation semiring, Li & Eisner 2009;
#      Gross et al. 2006, Eqs. (16)-(22)), reusing alpha_hat and beta_hat:
#         A[t] = (A[t-1] @ expT) * psi_t / c_t + alpha_hat[t] * G[t]
#         B[t-1] = expT @ (psi_t / c_t * (B[t] + G[t] * beta_hat[t]))
#         gbar = A[n-1] . exp_end / c_end  (= E[sum_t G[t, y_t]])
#         dl/dU[t] = A[t] * beta_hat[t] + alpha_hat[t] * B[t] - gbar * mu[t]
#      so four L x L products per position (alpha, beta, A, B) and two
#      outer products for the pair sums, against six products and three
#      outer products for a forward-backward followed by the VJP;
#   5. the chain rule X.T @ dl/dU scattered straight into the state-weight
#      gradient (scatter_token), the pair sums and the boundary rows into
#      the block accumulators.
#   No (n_tokens, L) array is built.
# * Modes (dl/dmu of token t, weight w_t = its sequence's weight times its
#   own, gold label y_t):
#   0 risk (Gimpel & Smith 2010, Eq. 5): G[t] = w_t cost[y_t]; value gbar.
#   1 labelwise, sigmoid (Gross et al. 2006, Eqs. (9)-(10)): margin
#     m = mu[t, y_t] - mu[t, r] with r the best other label (smallest index
#     among ties), q = 1 / (1 + exp(-alpha m)); value w_t (1 - q),
#     G[t, y_t] = -w_t q', G[t, r] = +w_t q', q' = alpha q (1 - q).
#   2 labelwise, identity (footnote 5): value w_t (1 - mu[t, y_t]),
#     G[t, y_t] = -w_t.
#   3 pointwise log loss (Tsuboi & Kashima, Definition 2): value
#     -w_t log max(mu[t, y_t], TINY), G[t, y_t] = -w_t / max(mu, TINY).
#   4 λ-mixed loss (Tsuboi & Kashima, Definition 3): (1 - λ) times mode 3,
#     plus λ times the log-likelihood's sequence-dependent part: λ s_k
#     (log Z - shifts) in the value (s_k the sequence's weight) and the
#     expected counts λ s_k mu[t] in dl/dU, λ s_k alpha_hat[t] added to A's
#     rows (so the pair sums gain λ s_k times the pair marginals); the
#     boundary rows are dl/dU's, so they gain λ s_k mu[0] and mu[n-1]. The
#     caller subtracts λ times the observed counts and adds the shifts.
# * A sequence whose scaled passes underflow or overflow, or whose
#   potentials' range passes MAX_RANGE (_chain.pxd), is flagged in `failed`
#   and touches no accumulator: the Python wrapper recomputes it by the
#   general path (log space).
# * Sequences run in parallel (prange, static chunks of 8, block
#   accumulators as in _forward_backward.pyx): the sums do not depend on the
#   number of threads.

from cython.parallel cimport prange, threadid
from libc.math cimport exp, log, isfinite, INFINITY

from _chain cimport (gather_token, outer_acc_padded, padded_width, row_sum_padded, scale_ok,
                     scaled_forward_padded, scatter_token, tail_range, vec_mat_padded)
from _chain cimport indptr_t

# Floor of a gold marginal inside a logarithm (losses/_marginal.py: _TINY).
cdef double TINY = 1e-300


def fused_scratch_width(Py_ssize_t n_labels, Py_ssize_t max_length):
    """Doubles of scratch per thread of :func:`marginal_loss_features_batch`."""
    cdef Py_ssize_t Lp = padded_width(n_labels)
    return 6 * max_length * Lp + n_labels * max_length + 2 * Lp + max_length


cdef int _forward_backward(double* psi, double* alpha, double* beta, double* rs,
                           double* tmp, Py_ssize_t n, Py_ssize_t L, Py_ssize_t Lp,
                           const double* E, const double* Et, const double* es,
                           const double* ee, double t_range, double* c_end,
                           double* lz_out) noexcept nogil:
    """Scaled forward and backward rows of one sequence. 0, or 1 on underflow/overflow.

    On entry psi holds the n padded rows of U (pads -inf); on return
    psi[t] = exp(U[t] - max U[t]) / c_t, alpha[t] = alpha_hat[t],
    beta[t] = beta_hat[t] (pads 0), c_end = alpha_hat[n-1] . exp_end and
    lz_out = log Z less the shifts of expT, exp_start and exp_end.
    rs has n doubles of scratch.
    """
    cdef Py_ssize_t t, j
    cdef double c, r, lz = 0.0
    cdef double* row
    cdef double* a
    if scaled_forward_padded(psi, alpha, rs, n, L, Lp, E, es, t_range, &lz):
        return 1
    for t in range(n):
        for j in range(Lp):
            psi[t * Lp + j] *= rs[t]
    for j in range(Lp):
        tmp[j] = alpha[(n - 1) * Lp + j] * ee[j]
    c = row_sum_padded(tmp, Lp)
    if not scale_ok(c):
        return 1
    c_end[0] = c
    lz_out[0] = lz + log(c)
    r = 1.0 / c
    for j in range(Lp):
        beta[(n - 1) * Lp + j] = ee[j] * r
    for t in range(n - 1, 0, -1):
        row = psi + t * Lp
        a = beta + t * Lp
        for j in range(Lp):
            tmp[j] = row[j] * a[j]
        vec_mat_padded(tmp, Et, beta + (t - 1) * Lp, L, Lp)
        # beta_hat is bounded only by 1 / alpha_hat (see _forward_backward.pyx)
        if not isfinite(row_sum_padded(beta + (t - 1) * Lp, Lp)):
            return 1
    return 0


cdef double _loss_rows(int mode, double alpha_q, const double* alpha, const double* beta,
                       double* G, Py_ssize_t n, Py_ssize_t L, Py_ssize_t Lp,
                       const Py_ssize_t* y, const double* tw, const double* cost) noexcept nogil:
    """G = dl/dmu of the sequence's n tokens (padded rows, pads 0); returns its value.

    The value of mode 0 (risk) is gbar, computed by the caller: 0 here.
    """
    cdef Py_ssize_t t, j, g, rival
    cdef double value = 0.0, mu_g, best, m, q, dq, x
    for t in range(n):
        for j in range(Lp):
            G[t * Lp + j] = 0.0
        g = y[t]
        if mode == 0:
            for j in range(L):
                G[t * Lp + j] = tw[t] * cost[g * L + j]
            continue
        mu_g = alpha[t * Lp + g] * beta[t * Lp + g]
        if mode == 1:
            best = -INFINITY
            rival = 0
            for j in range(L):
                if j != g:
                    x = alpha[t * Lp + j] * beta[t * Lp + j]
                    if x > best:
                        best = x
                        rival = j
            m = mu_g - best
            # expit without overflow
            if m >= 0:
                q = 1.0 / (1.0 + exp(-alpha_q * m))
            else:
                x = exp(alpha_q * m)
                q = x / (1.0 + x)
            dq = alpha_q * q * (1.0 - q)
            value += tw[t] * (1.0 - q)
            G[t * Lp + g] = -tw[t] * dq
            G[t * Lp + rival] += tw[t] * dq
        elif mode == 2:
            value += tw[t] * (1.0 - mu_g)
            G[t * Lp + g] = -tw[t]
        else:
            mu_g = mu_g if mu_g > TINY else TINY
            value -= tw[t] * log(mu_g)
            G[t * Lp + g] = -tw[t] / mu_g
    return value


cdef int _vjp(double* psi, const double* alpha, const double* beta, double* G, double* A,
              double* W, Py_ssize_t n, Py_ssize_t L, Py_ssize_t Lp, const double* E,
              const double* Et, const double* ee, double c_end, double* gbar_out) noexcept nogil:
    """The marginals' VJP from the kept alpha_hat, beta_hat. 0, or 1 on overflow.

    On return G's rows hold dl/dU (pads 0), psi's rows t >= 1 v_t =
    psi_t / c_t * beta_hat[t], W's rows t >= 1 w_t = psi_t / c_t * (B[t] +
    G[t] beta_hat[t]) and A's rows A[t] - gbar alpha_hat[t]: the pair sums
    are sum_t outer(A[t-1], v_t) + outer(alpha_hat[t-1], w_t), times expT.
    """
    cdef Py_ssize_t t, j
    cdef double gbar, x
    cdef double* b_cur
    cdef double* b_prev
    for t in range(n):
        if t == 0:
            for j in range(Lp):
                A[j] = alpha[j] * G[j]
        else:
            vec_mat_padded(A + (t - 1) * Lp, E, A + t * Lp, L, Lp)
            for j in range(Lp):
                A[t * Lp + j] = (A[t * Lp + j] * psi[t * Lp + j]
                                 + alpha[t * Lp + j] * G[t * Lp + j])
    gbar = 0.0
    for j in range(Lp):
        gbar += A[(n - 1) * Lp + j] * ee[j]
    gbar /= c_end
    gbar_out[0] = gbar
    # B[n-1] = 0 in W's row 0 (free until the end), B[t-1] in the row after.
    b_cur = W
    for j in range(Lp):
        b_cur[j] = 0.0
    for t in range(n - 1, -1, -1):
        for j in range(Lp):
            x = alpha[t * Lp + j]
            # w_t uses G[t] before it is overwritten by dl/dU[t]
            if t > 0:
                W[t * Lp + j] = psi[t * Lp + j] * (b_cur[j] + G[t * Lp + j] * beta[t * Lp + j])
                psi[t * Lp + j] = psi[t * Lp + j] * beta[t * Lp + j]
            G[t * Lp + j] = (A[t * Lp + j] * beta[t * Lp + j] + x * b_cur[j]
                             - gbar * x * beta[t * Lp + j])
            A[t * Lp + j] -= gbar * x
        if t > 0:
            # B[t-1] = expT @ w_t, into row 0 of W (w_0 is never needed)
            b_prev = W
            vec_mat_padded(W + t * Lp, Et, b_prev, L, Lp)
            if not isfinite(row_sum_padded(b_prev, Lp)):
                return 1
            b_cur = b_prev
    return 0


def marginal_loss_features_batch(
    const indptr_t[::1] indptr, const int[::1] indices, const double[::1] data, bint binary,
    const long long[::1] code, const double[::1] w, const double[:, ::1] W_hot,
    const double[:, ::1] transition, const double[::1] start,
    const double[:, ::1] E, const double[:, ::1] Et, const double[::1] exp_start,
    const double[::1] exp_end, const Py_ssize_t[::1] offsets, const Py_ssize_t[::1] y,
    const double[::1] token_weight, const double[:, ::1] cost, int mode, double alpha_q,
    double[::1] values, double[:, ::1] grad_acc, double[:, :, ::1] hot_acc,
    double[:, :, ::1] pair_acc, double[:, :, ::1] boundary_acc, double[:, ::1] scratch,
    Py_ssize_t max_length, signed char[::1] failed, int n_threads,
    const double[::1] seq_weight=None, double lam=0.0,
):
    """A marginal loss's value and gradient from sparse features, fused (low level).

    Per sequence k (CSR rows offsets[k]:offsets[k+1] of X, state weights in
    the hybrid storage of _chain.pxd's gather_token): values[k] = its loss
    (mode 0 risk, 1 labelwise sigmoid with sharpness alpha_q, 2 labelwise
    identity, 3 pointwise, 4 λ-mixed with λ = lam: (1 - lam) pointwise
    plus lam (log Z less the shifts, expected counts), each sequence's
    log Z term times seq_weight[k]; token_weight (n_tokens,) the per-token
    weights times the sequence weights; cost (L, L) read in mode 0 only), the
    chain rule X.T @ dl/dU into grad_acc / hot_acc (as in
    ``_forward_backward.cll_features_batch``), the pair sums (times expT
    later) into pair_acc (n_acc, L, Lp) and dl/dU of the first and last
    tokens into boundary_acc (n_acc, 2, Lp). E, Et: exp(T - max T) and its
    transpose, zero-padded to (Lp, Lp); exp_start, exp_end zero-padded to
    (Lp,). scratch: (n_threads, fused_scratch_width(L, max_length)).
    failed[k] = 1 for a sequence the scaled passes cannot do (nothing of it
    accumulated). Returns the number of failed sequences.
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t L = transition.shape[0]
    cdef Py_ssize_t Lp = padded_width(L)
    cdef Py_ssize_t nnz = indices.shape[0]
    cdef Py_ssize_t n_acc = pair_acc.shape[0], n_grad = grad_acc.shape[0]
    cdef Py_ssize_t k, s, n, t, j, a, g
    cdef int tid, n_failed = 0
    cdef double t_range = tail_range(&transition[0, 0], &start[0], L, 1.0)
    cdef double c_end, gbar, value, lz, x
    cdef double* psi
    cdef double* alph
    cdef double* beta
    cdef double* G
    cdef double* A
    cdef double* W
    cdef double* At
    cdef double* tmp
    cdef double* rs
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            tid = threadid()
            a = (k // 8) % n_acc
            g = (k // 8) % n_grad
            s = offsets[k]
            n = offsets[k + 1] - s
            psi = &scratch[tid, 0]
            alph = psi + max_length * Lp
            beta = alph + max_length * Lp
            G = beta + max_length * Lp
            A = G + max_length * Lp
            W = A + max_length * Lp
            At = W + max_length * Lp
            tmp = At + L * max_length
            rs = tmp + 2 * Lp
            for t in range(n):
                gather_token(&indptr[0], &indices[0], &data[0], binary, &code[0], &w[0],
                             &W_hot[0, 0], Lp, s + t, Lp, nnz, psi + t * Lp)
                for j in range(L, Lp):
                    psi[t * Lp + j] = -INFINITY
            c_end = 0.0
            lz = 0.0
            if _forward_backward(psi, alph, beta, rs, tmp, n, L, Lp, &E[0, 0], &Et[0, 0],
                                 &exp_start[0], &exp_end[0], t_range, &c_end, &lz):
                failed[k] = 1
                n_failed += 1
                continue
            value = _loss_rows(3 if mode == 4 else mode, alpha_q, alph, beta, G, n, L, Lp,
                               &y[s], &token_weight[s], &cost[0, 0])
            if mode == 4:
                value = (1.0 - lam) * value + lam * seq_weight[k] * lz
                for j in range(n * Lp):
                    G[j] = (1.0 - lam) * G[j]
            gbar = 0.0
            if _vjp(psi, alph, beta, G, A, W, n, L, Lp, &E[0, 0], &Et[0, 0], &exp_end[0],
                    c_end, &gbar):
                failed[k] = 1
                n_failed += 1
                continue
            values[k] = gbar if mode == 0 else value
            if mode == 4:
                x = lam * seq_weight[k]
                for j in range(n * Lp):
                    G[j] = G[j] + x * alph[j] * beta[j]
                    A[j] = A[j] + x * alph[j]
            outer_acc_padded(A, psi + Lp, n - 1, L, Lp, 1.0, At, tmp, &pair_acc[a, 0, 0])
            outer_acc_padded(alph, W + Lp, n - 1, L, Lp, 1.0, At, tmp, &pair_acc[a, 0, 0])
            for j in range(Lp):
                boundary_acc[a, 0, j] += G[j]
                boundary_acc[a, 1, j] += G[(n - 1) * Lp + j]
            for t in range(n):
                scatter_token(&indptr[0], &indices[0], &data[0], binary, &code[0],
                              &grad_acc[g, 0], &hot_acc[g, 0, 0], Lp, G + t * Lp, 1.0,
                              s + t, Lp, nnz)
    return n_failed
