"""The inference kernels on finite potentials of every magnitude, 1e-300 to 1e300.

Max-product (Viterbi, n-best, max-marginals, the best incorrect path) only
adds and compares: it is exact at any magnitude whose sums stay finite. The
sum-product kernels take exponentials: ``log_z`` stays exact, but the
marginals' error grows as the magnitude times 1e-16 (1e-6 at 1e10), and
exponentials overflow from about 1e20; ``forward_backward`` and
``marginals_vjp`` then refuse with a ``ValueError`` naming the sequence and
the magnitude rather than return rows that do not sum to 1 or NaN.
(benchmarks/README.md has the measured table.)
"""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from sklearn_crfloss import inference
from sklearn_crfloss.exceptions import PotentialMagnitudeError

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)


@st.composite
def chains(draw):
    """Potentials of one magnitude (10**exponent, exponent in -300..300), 1-3 sequences."""
    magnitude = 10.0 ** draw(st.integers(-300, 300))
    L = draw(st.integers(2, 3))
    lengths = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = sum(lengths)
    U, T = rng.uniform(-1, 1, (n, L)) * magnitude, rng.uniform(-1, 1, (L, L)) * magnitude
    s, e = rng.uniform(-1, 1, L) * magnitude, rng.uniform(-1, 1, L) * magnitude
    return magnitude, U, T, s, e, np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)


def _scores(U, T, s, e):
    """Every labelling of one sequence and its score, summed in the kernels' order."""
    L = U.shape[1]
    paths = list(itertools.product(range(L), repeat=U.shape[0]))
    scores = []
    for p in paths:
        v = s[p[0]] + U[0, p[0]]
        for t in range(1, len(p)):
            v = (v + T[p[t - 1], p[t]]) + U[t, p[t]]
        scores.append(v + e[p[-1]])
    return np.array(paths), np.array(scores)


@SETTINGS
@given(chains())
def test_max_product_is_exact_at_every_magnitude(chain):
    magnitude, U, T, s, e, off = chain
    path, score = inference.viterbi(U, T, s, e, off)
    paths, nbest = inference.viterbi_nbest(U, T, s, e, off, 3)
    excl, excl_score = inference.viterbi_excluding(U, T, s, e, off, path)
    mm = inference.max_marginals(U, T, s, e, off)
    for k in range(len(off) - 1):
        a, b = off[k], off[k + 1]
        labellings, scores = _scores(U[a:b], T, s, e)
        assert score[k] == scores.max()  # the same sums: exactly the maximum
        assert scores[labellings.tolist().index(path[a:b].tolist())] == score[k]
        assert nbest[k, 0] == score[k] and np.all(np.diff(nbest[k]) <= 0)
        assert paths[0, a:b].tolist() == path[a:b].tolist()
        assert excl_score[k] <= score[k] and excl[a:b].tolist() != path[a:b].tolist()
        # the best score through each cell, its forward and backward parts
        top = (mm.alpha[a:b] + mm.beta[a:b]).max(axis=1)
        np.testing.assert_allclose(top, score[k], rtol=1e-12,
                                   atol=1e-12 * magnitude * (b - a + 2))


@SETTINGS
@given(chains())
def test_sum_product_is_right_or_refuses_naming_the_magnitude(chain):
    magnitude, U, T, s, e, off = chain
    try:
        fb = inference.forward_backward(U, T, s, e, off)
    except ValueError as exc:
        assert "not 1: its potentials reach magnitude" in str(exc)
        assert magnitude > 1e6  # refused only far from the scale of trained models
    else:
        assert np.all(np.isfinite(fb.marginals))
        assert np.allclose(fb.marginals.sum(axis=1), 1.0, rtol=0, atol=1e-6)
        for k in range(len(off) - 1):
            _, scores = _scores(U[off[k]:off[k + 1]], T, s, e)
            assert fb.log_z[k] == pytest.approx(logsumexp(scores), rel=1e-12, abs=1e-12)
    grad = np.ones_like(U)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning: a clear error or a result
        try:
            vjp = inference.marginals_vjp(U, T, s, e, off, grad)
        except ValueError as exc:
            assert "the product is not finite" in str(exc) and "magnitude" in str(exc)
            assert magnitude > 1e15
        else:
            assert all(np.all(np.isfinite(part)) for part in vjp)


@pytest.mark.parametrize("magnitude", [1e-300, 1.0, 1e3, 1e6])
def test_marginals_are_distributions_up_to_a_million(magnitude):
    rng = np.random.default_rng(0)
    U = rng.uniform(-1, 1, (30, 4)) * magnitude
    T, s, e = (rng.uniform(-1, 1, shape) * magnitude for shape in ((4, 4), 4, 4))
    fb = inference.forward_backward(U, T, s, e, [0, 12, 30])
    np.testing.assert_allclose(fb.marginals.sum(axis=1), 1.0, atol=1e-9)


@pytest.mark.parametrize("magnitude", [1e15, 1e200, 1e300])
def test_forward_backward_refuses_potentials_beyond_double_precision(magnitude):
    rng = np.random.default_rng(0)
    U = rng.uniform(-1, 1, (7, 3)) * magnitude
    T, s, e = (rng.uniform(-1, 1, shape) * magnitude for shape in ((3, 3), 3, 3))
    with pytest.raises(PotentialMagnitudeError,
                       match=r"the marginals of sequence \d \(token \d\) sum to .*"
                             r"not 1: its potentials reach magnitude"):
        inference.forward_backward(U, T, s, e, [0, 4, 7])
