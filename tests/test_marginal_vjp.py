"""The marginal VJP kernel against finite differences of the marginals and enumeration."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_crfloss._chain._log_space import marginals_vjp_log_space
from sklearn_crfloss.inference import forward_backward, marginals_vjp

from _oracle import enumerate_paths, random_problem


def vjp_by_enumeration(U, T, s, e, offsets, G):
    """Cov(g(y), phi(y)) with g(y) = sum_t G[t, y_t], by enumerating every path."""
    L = U.shape[1]
    dU = np.zeros_like(U)
    dT = np.zeros((L, L))
    ds = np.zeros(L)
    de = np.zeros(L)
    for i in range(len(offsets) - 1):
        a, b = offsets[i], offsets[i + 1]
        if a == b:
            continue
        paths, scores = enumerate_paths(U[a:b], T, s, e)
        p = np.exp(scores - scores.max())
        p /= p.sum()
        g = G[a + np.arange(b - a), paths].sum(axis=1)
        gbar = p @ g
        c = p * (g - gbar)
        for path, ck in zip(paths, c):
            dU[a + np.arange(b - a), path] += ck
            for x, z in zip(path[:-1], path[1:]):
                dT[x, z] += ck
            ds[path[0]] += ck
            de[path[-1]] += ck
    return dU, dT, ds, de


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_threads", [1, 2])
def test_vjp_matches_enumeration(seed, n_threads):
    rng = np.random.default_rng(seed)
    U, T, s, e, _, off = random_problem(rng, 3, lengths=(1, 0, 2, 5, 3))
    G = rng.normal(size=U.shape)
    got = marginals_vjp(U, T, s, e, off, G, n_threads=n_threads)
    for a, b in zip(got, vjp_by_enumeration(U, T, s, e, off, G)):
        assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_vjp_matches_finite_differences_of_marginals(seed):
    rng = np.random.default_rng(seed)
    U, T, s, e, _, off = random_problem(rng, 4, lengths=(3, 6, 1))
    G = rng.normal(size=U.shape)
    params = [U, T, s, e]

    def f(ps):
        return float(np.sum(G * forward_backward(*ps, off).marginals))

    got = marginals_vjp(U, T, s, e, off, G)
    eps = 1e-6
    for k, x in enumerate(params):
        fd = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            plus = [p.copy() for p in params]
            minus = [p.copy() for p in params]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            fd[idx] = (f(plus) - f(minus)) / (2 * eps)
        assert_allclose(got[k], fd, rtol=1e-6, atol=1e-8)


def test_vjp_is_linear_in_grad_and_invariant_to_row_shifts():
    rng = np.random.default_rng(7)
    U, T, s, e, _, off = random_problem(rng, 3, lengths=(4, 2))
    G1, G2 = rng.normal(size=U.shape), rng.normal(size=U.shape)
    a = marginals_vjp(U, T, s, e, off, 2.0 * G1 - G2)
    b1 = marginals_vjp(U, T, s, e, off, G1)
    b2 = marginals_vjp(U, T, s, e, off, G2)
    for x, y1, y2 in zip(a, b1, b2):
        assert_allclose(x, 2.0 * y1 - y2, atol=1e-12)
    # Rows of the marginals sum to 1: adding a constant per row changes nothing.
    shifted = marginals_vjp(U, T, s, e, off, G1 + rng.normal(size=(U.shape[0], 1)))
    for x, y in zip(shifted, b1):
        assert_allclose(x, y, atol=1e-12)


def test_log_space_fallback_matches_enumeration():
    rng = np.random.default_rng(3)
    U, T, s, e, _, off = random_problem(rng, 3, lengths=(5,))
    G = rng.normal(size=U.shape)
    got = marginals_vjp_log_space(U, T, s, e, G)
    for a, b in zip(got, vjp_by_enumeration(U, T, s, e, off, G)):
        assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_huge_potentials_use_the_fallback_and_stay_exact():
    # Potentials of magnitude ~1000 underflow the scaled pass of some sequences.
    rng = np.random.default_rng(0)
    U, T, s, e, _, off = random_problem(rng, 3, lengths=(4, 5, 3), scale=1000.0)
    assert forward_backward(U, T, s, e, off).n_fallback > 0
    G = rng.normal(size=U.shape)
    got = marginals_vjp(U, T, s, e, off, G)
    for a, b in zip(got, vjp_by_enumeration(U, T, s, e, off, G)):
        assert np.all(np.isfinite(a))
        assert_allclose(a, b, rtol=1e-7, atol=1e-9)


def test_long_sequence_vjp_is_exact_at_the_probed_token():
    # 5,000 tokens (log Z about 2e4): the expectation-semiring pass rides on
    # the scaled forward pass and must not under- or overflow. With G the
    # indicator of label k at token t0, g(y) = 1{y_t0 = k}, so
    #   dl/dU[t0, j] = Cov(1{y_t0 = k}, 1{y_t0 = j}) = mu[t0, k] (1{j = k} - mu[t0, j]),
    # exactly, from the marginals of forward_backward; and since every path
    # has one label per token, n - 1 transitions, one start and one end,
    # Cov(g, 1) = 0 makes every row of dl/dU and the sums of dl/dT,
    # dl/dstart and dl/dend vanish.
    rng = np.random.default_rng(3)
    n, L, t0, k = 5_000, 4, 2_500, 2
    U = rng.normal(scale=3.0, size=(n, L))
    T, s, e = rng.normal(size=(L, L)), rng.normal(size=L), rng.normal(size=L)
    off = np.array([0, n])
    fb = forward_backward(U, T, s, e, off)
    assert fb.n_fallback == 0 and fb.log_z[0] > 1e4
    G = np.zeros((n, L))
    G[t0, k] = 1.0
    dU, dT, ds, de = marginals_vjp(U, T, s, e, off, G)
    for x in (dU, dT, ds, de):
        assert np.all(np.isfinite(x))
    mu = fb.marginals[t0]
    assert_allclose(dU[t0], mu[k] * (np.eye(L)[k] - mu), atol=1e-12)
    assert_allclose(dU.sum(axis=1), 0.0, atol=1e-12)
    assert_allclose([dT.sum(), ds.sum(), de.sum()], 0.0, atol=1e-10)
    # The probe reaches both ends of the chain (the rows are not all zero).
    assert np.abs(dU[t0 - 1]).max() > 1e-6 and np.abs(dU[t0 + 1]).max() > 1e-6


def test_vjp_rejects_bad_grad():
    rng = np.random.default_rng(0)
    U, T, s, e, _, off = random_problem(rng, 3, lengths=(2, 3))
    with pytest.raises(ValueError, match="grad_marginals must have the shape"):
        marginals_vjp(U, T, s, e, off, np.zeros((5, 2)))
    G = np.zeros_like(U)
    G[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        marginals_vjp(U, T, s, e, off, G)
    with pytest.raises(ValueError, match="offsets"):
        marginals_vjp(U, T, s, e, np.array([0, 2, 4]), np.zeros_like(U))
