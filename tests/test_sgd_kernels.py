"""The compiled loops of solver='sgd' against plain NumPy.

``batch_potentials`` must give ``scale * X[rows] @ W`` and ``sgd_step`` the
scaled step ``V += -(eta / a') mask * (X[rows].T @ dU)`` (``a' = a (1 - eta
lam m)``; the averaging corrections ``B += S`` times that), entries outside
the mask left exactly as they were. The masks mix rows with no, one, a few
and all free labels, the gradient rows dense and sparse ones (the step adds
only the nonzero entries of those).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_crfloss.solvers._sgd_loops import batch_potentials, sgd_step


def _problem(rng, binary, L=13, n_features=40, lengths=(3, 7, 1, 5)):
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    n = int(offsets[-1])
    X = sp.random(n, n_features, density=0.3, random_state=int(rng.integers(1000)),
                  format="csr")
    X.data = np.ones_like(X.data) if binary else rng.uniform(0.5, 3.0, X.data.shape[0])
    csr = (X.indptr.astype(np.intp), X.indices.astype(np.int32),
           np.ones(1) if binary else X.data.copy(), binary)
    # Free labels per attribute: none, one, two, three, half, all.
    mask = np.zeros((n_features, L), dtype=np.uint8)
    for k in range(n_features):
        free = [0, 1, 2, 3, L // 2, L][k % 6]
        mask[k, rng.choice(L, size=free, replace=False)] = 1
    return X, csr, offsets, mask


@pytest.mark.parametrize("binary", [False, True])
def test_batch_potentials_is_the_sparse_product(binary):
    rng = np.random.default_rng(0)
    X, csr, offsets, _ = _problem(rng, binary)
    W = rng.normal(size=(X.shape[1], 13))
    seqs = np.array([2, 0, 3], dtype=np.intp)
    rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in seqs])
    out = np.full((rows.shape[0], 13), np.nan)
    batch_potentials(*csr, offsets, seqs, W, 0.7, out)
    assert_allclose(out, 0.7 * (X[rows] @ W), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("averaging", [False, True])
@pytest.mark.parametrize("sparse_rows", [False, True])
def test_sgd_step_is_the_scaled_sparse_step(binary, masked, averaging, sparse_rows):
    rng = np.random.default_rng(1)
    L = 13
    X, csr, offsets, mask = _problem(rng, binary, L=L)
    if not masked:
        mask = np.zeros((0, L), dtype=np.uint8)
    seqs = np.array([1, 3, 0], dtype=np.intp)
    rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in seqs])
    # Gradient rows with zero, one, two and L nonzero entries.
    d_unary = np.zeros((rows.shape[0], L))
    for t in range(rows.shape[0]):
        size = [0, 1, 2, L][t % 4]
        d_unary[t, rng.choice(L, size=size, replace=False)] = rng.normal(size=size)
    full = mask.astype(bool) if masked else np.ones((X.shape[1], L), dtype=bool)
    W = np.where(full, rng.normal(size=(X.shape[1], L)), 0.0)
    tail = rng.normal(size=L * L + 2 * L)
    tail_mask = (rng.random(tail.shape[0]) < 0.8).astype(np.float64)
    d_tail = rng.normal(size=tail.shape[0])
    BW = rng.normal(size=W.shape) if averaging else np.zeros((0, L))
    Btail = rng.normal(size=tail.shape) if averaging else np.zeros(0)
    state = np.array([0.7, 5.0, 2.5 if averaging else 0.0, 3.0, 0.0])
    eta, lam = 0.3, 0.01
    params = [W.copy(), tail.copy(), BW.copy(), Btail.copy(), state.copy()]
    sgd_step(
        *csr, np.zeros(X.shape[0], dtype=np.intp), offsets, seqs, params[0], mask, params[1],
        tail_mask, params[2], params[3], d_unary, d_tail, params[4], eta, lam,
        0.0 if averaging else np.inf, sparse_rows=sparse_rows)

    a = state[0] * (1.0 - eta * lam * seqs.shape[0])
    gain, S = -eta / a, state[2]
    dW = np.where(full, gain * (X[rows].T @ d_unary), 0.0)
    dtail = gain * d_tail * tail_mask
    assert_allclose(params[0], W + dW, rtol=1e-12, atol=1e-14)
    assert_array_equal(params[0][~full], 0.0)  # outside the mask: untouched
    assert_allclose(params[1], tail + dtail, rtol=1e-12, atol=1e-14)
    if averaging:
        assert_allclose(params[2], BW + S * dW, rtol=1e-12, atol=1e-14)
        assert_array_equal(params[2][~full], BW[~full])
        assert_allclose(params[3], Btail + S * dtail, rtol=1e-12, atol=1e-14)
    assert_allclose(params[4], [a, state[1] + 3, S + a if averaging else S,
                                state[3] + averaging, 0.0], rtol=1e-15)
