"""Second-order (label-trigram) chains: exact inference against enumeration, and the estimator."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from sklearn_crfloss.inference import (PairStates, second_order_forward_backward,
                                       second_order_scores, second_order_viterbi)


def _random_chain(rng, L, lengths, scale=1.0, p_allowed=0.75):
    n = int(sum(lengths))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    allowed = rng.random((L, L)) < p_allowed
    allowed[0] = True  # some path always exists
    return (scale * rng.normal(size=(n, L)), scale * rng.normal(size=(L, L)),
            scale * rng.normal(size=(L, L, L)), scale * rng.normal(size=L),
            scale * rng.normal(size=L), offsets, allowed)


def _enumerate(U, T, W3, start, end, allowed):
    """Every allowed labelling of one sequence, its score and the exact quantities."""
    n, L = U.shape
    ys = [np.array(y, dtype=np.intp) for y in itertools.product(range(L), repeat=n)
          if all(allowed[y[t - 1], y[t]] for t in range(1, n))]
    off = np.array([0, n])
    scores = np.array([second_order_scores(U, T, W3, start, end, y, off)[0] for y in ys])
    log_z = logsumexp(scores)
    p = np.exp(scores - log_z)
    marg, big, tri = np.zeros((n, L)), np.zeros((L, L)), np.zeros((L, L, L))
    for y, q in zip(ys, p):
        marg[np.arange(n), y] += q
        for t in range(1, n):
            big[y[t - 1], y[t]] += q
        for t in range(2, n):
            tri[y[t - 2], y[t - 1], y[t]] += q
    best = ys[int(np.argmax(scores))]
    return log_z, marg, big, tri, best, scores.max()


@pytest.mark.parametrize("L", [2, 3])
@pytest.mark.parametrize("scale", [1.0, 400.0])  # 400: the log-space path
def test_forward_backward_and_viterbi_match_enumeration(L, scale):
    rng = np.random.default_rng(L)
    lengths = [1, 2, 3, 5, 0, 4]
    U, T, W3, s, e, offsets, allowed = _random_chain(rng, L, lengths, scale)
    weights = rng.random(len(lengths)) + 0.5
    fb = second_order_forward_backward(U, T, W3, s, e, offsets, allowed, weights)
    path, score = second_order_viterbi(U, T, W3, s, e, offsets, allowed)
    assert (fb.n_fallback > 0) == (scale > 1)
    big, tri = np.zeros((L, L)), np.zeros((L, L, L))
    start_c, end_c = np.zeros(L), np.zeros(L)
    for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        if a == b:
            assert fb.log_z[i] == 0.0 and score[i] == 0.0
            continue
        log_z, marg, bi, tr, best, best_score = _enumerate(U[a:b], T, W3, s, e, allowed)
        np.testing.assert_allclose(fb.log_z[i], log_z, rtol=1e-12, atol=1e-9 * scale)
        np.testing.assert_allclose(fb.marginals[a:b], marg, atol=1e-10)
        np.testing.assert_array_equal(path[a:b], best)
        np.testing.assert_allclose(score[i], best_score, rtol=1e-12)
        big += weights[i] * bi
        tri += weights[i] * tr
        start_c += weights[i] * marg[0]
        end_c += weights[i] * marg[-1]
    np.testing.assert_allclose(fb.transition_counts, big, atol=1e-10)
    np.testing.assert_allclose(fb.trigram_counts, tri, atol=1e-10)
    np.testing.assert_allclose(fb.start_counts, start_c, atol=1e-10)
    np.testing.assert_allclose(fb.end_counts, end_c, atol=1e-10)


def test_results_do_not_depend_on_threads():
    rng = np.random.default_rng(7)
    U, T, W3, s, e, offsets, allowed = _random_chain(rng, 4, rng.integers(1, 9, size=90))
    runs = [second_order_forward_backward(U, T, W3, s, e, offsets, allowed, n_threads=k)
            for k in (1, 2, 4)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.log_z, runs[0].log_z)
        np.testing.assert_array_equal(r.trigram_counts, runs[0].trigram_counts)
        np.testing.assert_array_equal(r.transition_counts, runs[0].transition_counts)
    paths = [second_order_viterbi(U, T, W3, s, e, offsets, allowed, n_threads=k)[0]
             for k in (1, 4)]
    np.testing.assert_array_equal(paths[0], paths[1])


def test_pair_states_lists_allowed_triples():
    allowed = np.array([[True, True, False], [False, True, True], [True, False, False]])
    states = PairStates(allowed)
    assert states.n_pairs == 5
    expected = {(a, b, c) for a, b, c in itertools.product(range(3), repeat=3)
                if allowed[a, b] and allowed[b, c]}
    assert {tuple(t) for t in states.triples} == expected
    with pytest.raises(ValueError, match="square boolean"):
        PairStates(np.ones((2, 3), dtype=bool))


def test_forbidden_start_is_respected_by_viterbi():
    rng = np.random.default_rng(3)
    U, T, W3, s, e, offsets, allowed = _random_chain(rng, 3, [4])
    U[0, 1] = 50.0
    s[1] = -np.inf
    path, score = second_order_viterbi(U, T, W3, s, e, offsets, allowed)
    assert path[0] != 1 and np.isfinite(score[0])
