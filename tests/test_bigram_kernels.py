"""Position-dependent transitions (observation-dependent label bigrams) against enumeration."""

import itertools

import numpy as np
import pytest
from _oracle import position_brute_force, random_problem

from sklearn_crfloss.decoding import apply_allowed, viterbi_decode
from sklearn_crfloss.inference import (PositionTransitions, forward_backward, marginals_vjp,
                                       check_potentials, sequence_scores, viterbi, viterbi_nbest)
from sklearn_crfloss.losses import ConditionalLogLikelihood


def _problem(seed, n_labels=3, lengths=(1, 3, 5, 2), n_matrices=None, scale=1.0):
    rng = np.random.default_rng(seed)
    unary, _, start, end, y, offsets = random_problem(rng, n_labels, lengths, scale)
    n = unary.shape[0]
    if n_matrices is None:
        trans = PositionTransitions.from_dense(
            rng.normal(scale=scale, size=(n, n_labels, n_labels)))
    else:  # a shared table, as the estimator builds it
        trans = PositionTransitions(rng.normal(scale=scale, size=(n_matrices, n_labels, n_labels)),
                                    rng.integers(n_matrices, size=n).astype(np.intp))
    return unary, trans, start, end, y, offsets


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_matrices", [None, 2])
def test_forward_backward_matches_enumeration(seed, n_matrices):
    unary, trans, start, end, y, offsets = _problem(seed, n_matrices=n_matrices)
    w = np.array([0.5, 1.0, 2.0, 1.5])
    log_z, marg, pair, s_c, e_c, _, _ = position_brute_force(unary, trans.dense(), start, end,
                                                             offsets, w)
    fb = forward_backward(unary, trans, start, end, offsets, sample_weight=w)
    assert fb.n_fallback == 0  # the scaled passes
    np.testing.assert_allclose(fb.log_z, log_z, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fb.marginals, marg, atol=1e-12)
    # expected counts per matrix of the table: the positions' pair marginals summed
    first = offsets[:-1]
    expected = np.zeros_like(trans.table)
    for t in range(unary.shape[0]):
        if t not in first:
            expected[trans.index[t]] += pair[t]
    np.testing.assert_allclose(fb.transition_counts, expected, atol=1e-12)
    np.testing.assert_allclose(fb.start_counts, s_c, atol=1e-12)
    np.testing.assert_allclose(fb.end_counts, e_c, atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_viterbi_and_scores_match_enumeration(seed):
    unary, trans, start, end, y, offsets = _problem(seed, n_labels=4, lengths=(4, 1, 5))
    *_, best_path, best_score = position_brute_force(unary, trans.dense(), start, end, offsets)
    path, score = viterbi(unary, trans, start, end, offsets)
    np.testing.assert_array_equal(path, best_path)
    np.testing.assert_allclose(score, best_score, rtol=1e-12)
    np.testing.assert_allclose(sequence_scores(unary, trans, start, end, path, offsets),
                               best_score, rtol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_nbest_matches_enumeration(seed):
    unary, trans, start, end, y, offsets = _problem(seed, n_labels=3, lengths=(3, 1, 4),
                                                    n_matrices=3)
    paths, scores = viterbi_nbest(unary, trans, start, end, offsets, 5)
    dense = trans.dense()
    for k, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        every = np.array(list(itertools.product(range(3), repeat=b - a)))
        s = np.array([start[p[0]] + end[p[-1]] + unary[np.arange(a, b), p].sum()
                      + sum(dense[a + t, p[t - 1], p[t]] for t in range(1, b - a))
                      for p in every])
        top = np.sort(s)[::-1][:5]
        np.testing.assert_allclose(scores[k, :len(top)], top, rtol=1e-12)
        for m in range(len(top)):  # each listed path has its listed score
            np.testing.assert_allclose(
                sequence_scores(unary[a:b], trans._replace(index=trans.index[a:b]), start, end,
                                paths[m, a:b], [0, b - a]), scores[k, m], rtol=1e-12)


def test_equal_matrices_match_the_dense_kernels():
    """Every position with the shared matrix: the same numbers as the (L, L) fast path."""
    rng = np.random.default_rng(0)
    unary, T, start, end, y, offsets = random_problem(rng, 4, (3, 1, 6, 2))
    trans = PositionTransitions(T[None], np.zeros(unary.shape[0], dtype=np.intp))
    fb, ref = (forward_backward(unary, t, start, end, offsets) for t in (trans, T))
    np.testing.assert_allclose(fb.log_z, ref.log_z, rtol=1e-12)
    np.testing.assert_allclose(fb.marginals, ref.marginals, atol=1e-12)
    np.testing.assert_allclose(fb.transition_counts[0], ref.transition_counts, atol=1e-12)
    np.testing.assert_array_equal(viterbi(unary, trans, start, end, offsets)[0],
                                  viterbi(unary, T, start, end, offsets)[0])


@pytest.mark.parametrize("n_matrices", [None, 2])
def test_large_potentials_fall_back_to_log_space(n_matrices):
    """Potentials of magnitude 1e3: past the scaled passes' range, in log space."""
    unary, trans, start, end, y, offsets = _problem(1, scale=1e3, n_matrices=n_matrices)
    w = np.array([0.5, 1.0, 2.0, 1.5])
    _, _, pair, s_c, e_c, _, _ = position_brute_force(unary, trans.dense(), start, end, offsets, w)
    fb_w = forward_backward(unary, trans, start, end, offsets, sample_weight=w)
    np.testing.assert_allclose(fb_w.start_counts, s_c, atol=1e-9)
    np.testing.assert_allclose(fb_w.transition_counts.sum(axis=0), pair.sum(axis=0), atol=1e-9)
    log_z, marg, *_ = position_brute_force(unary, trans.dense(), start, end, offsets)
    fb = forward_backward(unary, trans, start, end, offsets)
    assert fb.n_fallback == 4  # every sequence in log space
    np.testing.assert_allclose(fb.log_z, log_z, rtol=1e-12)
    np.testing.assert_allclose(fb.marginals, marg, atol=1e-9)


def test_constraints_apply_to_every_matrix():
    unary, trans, start, end, y, offsets = _problem(2, n_labels=3, n_matrices=3)
    allowed = (np.array([[True, False, True], [True, True, True], [False, True, True]]),
               np.array([True, False, True]))
    path, score = viterbi_decode(unary, trans, start, end, offsets, allowed)
    masked, start_m = apply_allowed(trans, start, allowed)
    *_, best_path, best_score = position_brute_force(unary, masked.dense(), start_m, end, offsets)
    np.testing.assert_array_equal(path, best_path)
    assert np.all(allowed[1][path[offsets[:-1]]])
    inner = np.setdiff1d(np.arange(unary.shape[0]), offsets[:-1])
    assert np.all(allowed[0][path[inner - 1], path[inner]])


@pytest.mark.parametrize("seed", range(3))
def test_cll_gradient_by_finite_differences(seed):
    unary, trans, start, end, y, offsets = _problem(seed, n_matrices=3)
    w = np.array([0.5, 1.0, 2.0, 1.5])
    loss = ConditionalLogLikelihood()

    def f(table):
        return loss.value_and_grad(unary, trans._replace(table=table), start, end, y, offsets,
                                   sample_weight=w)

    value, d_unary, d_table, d_start, d_end = f(trans.table)
    log_z, *_ = position_brute_force(unary, trans.dense(), start, end, offsets)
    gold = sequence_scores(unary, trans, start, end, y, offsets)
    assert value == pytest.approx(float(np.dot(w, log_z - gold)), rel=1e-12)
    assert d_table.shape == trans.table.shape
    eps = 1e-6
    numeric = np.zeros_like(trans.table)
    for k in np.ndindex(trans.table.shape):
        plus, minus = trans.table.copy(), trans.table.copy()
        plus[k] += eps
        minus[k] -= eps
        numeric[k] = (f(plus)[0] - f(minus)[0]) / (2 * eps)
    np.testing.assert_allclose(d_table, numeric, atol=1e-6)


@pytest.mark.parametrize("seed", range(2))
def test_marginals_vjp_by_finite_differences(seed):
    """The marginals' VJP with a table: the gradient of sum(G * marginals)."""
    unary, trans, start, end, y, offsets = _problem(seed, n_matrices=2)
    G = np.random.default_rng(seed).normal(size=unary.shape)

    args = [unary, trans.table, start, end]
    split = np.cumsum([x.size for x in args])[:-1]

    def f(v):  # sum(G * marginals) at the potentials of the flat vector v
        u, table, s, e = (p.reshape(x.shape) for p, x in zip(np.split(v, split), args))
        return float(np.sum(G * forward_backward(u, trans._replace(table=table), s, e,
                                                 offsets).marginals))

    got = marginals_vjp(unary, trans, start, end, offsets, G)
    assert got[1].shape == trans.table.shape
    flat = np.concatenate([x.ravel() for x in args])
    numeric = [(f(flat + 1e-6 * d) - f(flat - 1e-6 * d)) / 2e-6 for d in np.eye(flat.size)]
    np.testing.assert_allclose(np.concatenate([g.ravel() for g in got]), numeric, atol=1e-6)


def test_unsupported_kernels_refuse_clearly():
    unary, trans, start, end, y, offsets = _problem(0)
    with pytest.raises(ValueError, match="position-dependent transitions"):
        check_potentials(unary, trans, start, end, offsets)  # a caller without them


def test_bad_position_transitions():
    unary, trans, start, end, y, offsets = _problem(0)
    with pytest.raises(ValueError, match="index must have shape"):
        forward_backward(unary, trans._replace(index=trans.index[:-1]), start, end, offsets)
    with pytest.raises(ValueError, match=r"index must lie in \[0, "):
        viterbi(unary, trans._replace(index=trans.index + 100), start, end, offsets)
    with pytest.raises(ValueError, match="table must have shape"):
        viterbi(unary, trans._replace(table=trans.table[:, :2]), start, end, offsets)
