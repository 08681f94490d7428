"""Log-space reference computations of the chain kernels (the scaled passes' fallback)."""

import numpy as np
from scipy.special import logsumexp

__all__ = ["marginals_vjp_log_space"]


def marginals_vjp_log_space(unary, transition, start, end, grad, index=None):
    """:func:`marginals_vjp` of one non-empty sequence, in log space (the fallback).

    ``grad`` is shifted per row to be >= 1 (adding a constant to a row adds
    a constant to ``g(y)``, which leaves every covariance unchanged), so the
    expectation-semiring quantities are positive and have logarithms. The
    rows are normalised as the scaled kernel's (alpha_hat, beta_hat), in log
    space: every value keeps the magnitude of the potentials rather than of
    log Z, so that rounding errors do not grow with the position.

    With ``index`` (shape (n,)), ``transition`` is a table of shape
    (n_matrices, L, L) whose matrix ``index[t]`` scores the edge into token
    ``t`` (position-dependent transitions), and ``d_trans`` has the table's
    shape.
    """
    n, L = unary.shape

    def T(t):  # the transitions of the edge into token t
        return transition if index is None else transition[index[t]]

    G = grad - grad.min(axis=1, keepdims=True) + 1.0
    log_G = np.log(G)
    la = np.empty((n, L))   # log alpha_hat
    lA = np.empty((n, L))   # log A (prefix-weighted by g), scaled as alpha_hat
    lc = np.empty(n)        # log of the normalisers
    x = start + unary[0]
    X = x + log_G[0]
    for t in range(n):
        if t:
            x = logsumexp(la[t - 1][:, None] + T(t), axis=0) + unary[t]
            X = np.logaddexp(logsumexp(lA[t - 1][:, None] + T(t), axis=0) + unary[t],
                             x + log_G[t])
        lc[t] = logsumexp(x)
        la[t] = x - lc[t]
        lA[t] = X - lc[t]
    lc_end = logsumexp(la[n - 1] + end)
    lb = np.empty((n, L))   # log beta_hat
    lB = np.full((n, L), -np.inf)  # log B (suffix-weighted by g), scaled as beta_hat
    lb[n - 1] = end - lc_end
    for t in range(n - 2, -1, -1):
        nxt = unary[t + 1] + lb[t + 1]
        lb[t] = logsumexp(T(t + 1) + nxt[None, :], axis=1) - lc[t + 1]
        lB[t] = logsumexp(
            T(t + 1) + unary[t + 1][None, :]
            + np.logaddexp(lB[t + 1], log_G[t + 1] + lb[t + 1])[None, :], axis=1) - lc[t + 1]
    gbar = np.exp(logsumexp(lA[n - 1] + end) - lc_end)
    mu = np.exp(la + lb)
    d_unary = np.exp(lA + lb) + np.exp(la + lB) - gbar * mu
    d_trans = np.zeros(np.shape(transition))
    for t in range(1, n):
        step = T(t) + unary[t][None, :] - lc[t]
        base = la[t - 1][:, None] + step
        pair = np.exp(base + lb[t][None, :])
        acc = d_trans if index is None else d_trans[index[t]]  # a view
        acc += (np.exp(lA[t - 1][:, None] + step + lb[t][None, :])
                + np.exp(base + np.logaddexp(lB[t], log_G[t] + lb[t])[None, :])
                - gbar * pair)
    return d_unary, d_trans, d_unary[0].copy(), d_unary[n - 1].copy()
