"""Inference kernels against brute-force enumeration of all label sequences."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import logsumexp

from sklearn_crfloss.inference import (forward_backward, marginals_vjp, max_marginals,
                                       segment_margins, sequence_scores, viterbi)

from _oracle import brute_force, random_problem


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_labels", [1, 2, 4])
def test_forward_backward_matches_enumeration(seed, n_labels):
    rng = np.random.default_rng(seed)
    U, T, s, e, y, off = random_problem(rng, n_labels, lengths=(1, 2, 6, 4), scale=1.5)
    w = rng.uniform(0.2, 2.0, size=len(off) - 1)
    ref = brute_force(U, T, s, e, off, sample_weight=w)
    fb = forward_backward(U, T, s, e, off, sample_weight=w)
    assert fb.n_fallback == 0
    assert_allclose(fb.log_z, ref["log_z"], rtol=1e-12, atol=1e-12)
    assert_allclose(fb.marginals, ref["marginals"], atol=1e-12)
    assert_allclose(fb.transition_counts, ref["transition_counts"], atol=1e-12)
    assert_allclose(fb.start_counts, ref["start_counts"], atol=1e-12)
    assert_allclose(fb.end_counts, ref["end_counts"], atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_viterbi_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    U, T, s, e, y, off = random_problem(rng, 4, lengths=(1, 3, 6, 5), scale=2.0)
    ref = brute_force(U, T, s, e, off)
    path, score = viterbi(U, T, s, e, off)
    assert_array_equal(path, ref["path"])
    assert_allclose(score, ref["score"], rtol=1e-12)
    assert_allclose(sequence_scores(U, T, s, e, path, off), score, rtol=1e-12)


def test_sequence_scores_match_enumeration():
    rng = np.random.default_rng(7)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 4, 2))
    from _oracle import path_score

    expected = [path_score(U[a:b], T, s, e, y[a:b]) for a, b in zip(off[:-1], off[1:])]
    assert_allclose(sequence_scores(U, T, s, e, y, off), expected, rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_large_potentials_fall_back_to_log_space(seed):
    # Potentials of magnitude 1e3: the scaled pass underflows on some
    # sequences; the result must still equal the enumeration.
    rng = np.random.default_rng(100 + seed)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 4, 5, 6), scale=1e3)
    ref = brute_force(U, T, s, e, off)
    fb = forward_backward(U, T, s, e, off)
    assert np.all(np.isfinite(fb.log_z))
    assert_allclose(fb.log_z, ref["log_z"], rtol=1e-12)
    assert_allclose(fb.marginals, ref["marginals"], atol=1e-9)
    assert_allclose(fb.transition_counts, ref["transition_counts"], atol=1e-9)
    path, score = viterbi(U, T, s, e, off)
    assert_allclose(score, ref["score"], rtol=1e-12)


def test_underflowing_transitions_use_fallback():
    # Row 0 of exp(T - max T) underflows to 0: the scaled pass loses all mass
    # after a token that surely has label 0.
    U = np.array([[1000.0, -1000.0], [0.0, 0.0], [0.0, 0.0]])
    T = np.array([[-1000.0, -1000.0], [1000.0, 1000.0]])
    s = np.zeros(2)
    e = np.zeros(2)
    off = np.array([0, 3])
    ref = brute_force(U, T, s, e, off)
    fb = forward_backward(U, T, s, e, off)
    assert fb.n_fallback == 1
    assert_allclose(fb.log_z, ref["log_z"], rtol=1e-12)
    assert_allclose(fb.marginals, ref["marginals"], atol=1e-12)
    assert_allclose(fb.transition_counts, ref["transition_counts"], atol=1e-12)


def _log_forward(U, T, s, e):
    """log Z by the plain log-space forward recursion (logaddexp: no scaling, no shifts)."""
    a = s + U[0]
    for t in range(1, U.shape[0]):
        a = np.logaddexp.reduce(a[:, None] + T, axis=0) + U[t]
    return np.logaddexp.reduce(a + e)


def test_long_sequence_is_stable():
    # One sequence of 5,000 tokens: log Z is about 2e4, so an unscaled
    # forward pass would overflow after a few hundred tokens; the scaled
    # pass must match a log-space recursion, with no fallback.
    rng = np.random.default_rng(3)
    n, L = 5_000, 4
    U = rng.normal(scale=3.0, size=(n, L))
    T = rng.normal(size=(L, L))
    s = rng.normal(size=L)
    e = rng.normal(size=L)
    off = np.array([0, n])
    fb = forward_backward(U, T, s, e, off)
    assert fb.n_fallback == 0
    assert fb.log_z[0] > 1e4
    assert_allclose(fb.log_z[0], _log_forward(U, T, s, e), rtol=1e-12)
    assert np.all(np.isfinite(fb.marginals))
    assert_allclose(fb.marginals.sum(axis=1), 1.0, atol=1e-10)
    assert_allclose(fb.transition_counts.sum(), n - 1, rtol=1e-10)
    path, score = viterbi(U, T, s, e, off)
    assert_allclose(sequence_scores(U, T, s, e, path, off), score, rtol=1e-12)
    assert score[0] <= fb.log_z[0]


def test_threads_agree_with_serial():
    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 30, size=300)
    U, T, s, e, y, off = random_problem(rng, 5, lengths=lengths)
    one = forward_backward(U, T, s, e, off, n_threads=1)
    two = forward_backward(U, T, s, e, off, n_threads=2)
    assert_allclose(two.log_z, one.log_z, rtol=1e-14)
    assert_allclose(two.marginals, one.marginals, atol=1e-14)
    assert_allclose(two.transition_counts, one.transition_counts, rtol=1e-12)
    p1, s1 = viterbi(U, T, s, e, off, n_threads=1)
    p2, s2 = viterbi(U, T, s, e, off, n_threads=2)
    assert_array_equal(p1, p2)
    assert_array_equal(s1, s2)


def test_empty_sequences_are_skipped():
    rng = np.random.default_rng(5)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(2, 3))
    off_with_empty = np.array([0, 0, 2, 2, 5])
    fb = forward_backward(U, T, s, e, off_with_empty)
    ref = forward_backward(U, T, s, e, off)
    assert_allclose(fb.log_z, [0.0, ref.log_z[0], 0.0, ref.log_z[1]])
    assert_allclose(fb.marginals, ref.marginals)
    path, score = viterbi(U, T, s, e, off_with_empty)
    assert_array_equal(path, viterbi(U, T, s, e, off)[0])


def test_textbook_hmm_as_crf():
    # Wikipedia's "healthy/fever" HMM written as CRF potentials:
    # start = log pi, transition = log A, unary[t] = log B[:, obs_t].
    # Viterbi gives Healthy, Healthy, Fever with probability 0.01512.
    pi = np.array([0.6, 0.4])
    A = np.array([[0.7, 0.3], [0.4, 0.6]])
    B = np.array([[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])  # normal, cold, dizzy
    obs = [0, 1, 2]
    U = np.log(B[:, obs].T)
    path, score = viterbi(U, np.log(A), np.log(pi), np.zeros(2), np.array([0, 3]))
    assert_array_equal(path, [0, 0, 1])
    assert_allclose(np.exp(score), 0.01512, rtol=1e-12)
    # The partition function of an HMM is the likelihood of the observations.
    fb = forward_backward(U, np.log(A), np.log(pi), np.zeros(2), np.array([0, 3]))
    assert_allclose(np.exp(fb.log_z), 0.03628, rtol=1e-12)


def test_bad_shapes_raise():
    U = np.zeros((3, 2))
    with pytest.raises(ValueError, match="transition"):
        forward_backward(U, np.zeros((3, 3)), np.zeros(2), np.zeros(2), [0, 3])
    with pytest.raises(ValueError, match="offsets"):
        forward_backward(U, np.zeros((2, 2)), np.zeros(2), np.zeros(2), [0, 2])


def _log_space_forward_backward(U, T, s, e):
    """log Z, node marginals and pair-marginal sums by plain log-space recursions."""
    n, L = U.shape
    la = np.empty((n, L))
    lb = np.empty((n, L))
    la[0] = s + U[0]
    for t in range(1, n):
        la[t] = logsumexp(la[t - 1][:, None] + T, axis=0) + U[t]
    lb[n - 1] = e
    for t in range(n - 2, -1, -1):
        lb[t] = logsumexp(T + (U[t + 1] + lb[t + 1])[None, :], axis=1)
    log_z = logsumexp(la[n - 1] + e)
    pairs = sum(np.exp(la[t - 1][:, None] + T + (U[t] + lb[t])[None, :] - log_z)
                for t in range(1, n))
    return log_z, np.exp(la + lb - log_z), pairs


@pytest.mark.parametrize("n_labels", [9, 17, 22, 33, 70])
def test_forward_backward_with_padded_rows_matches_log_space(n_labels):
    # More than 8 labels: the kernel's rows are padded to 16 to 72 doubles
    # (33 and 70: one and two full column panels of the products, and a rest).
    rng = np.random.default_rng(n_labels)
    U, T, s, e, y, off = random_problem(rng, n_labels, lengths=(1, 2, 7, 30), scale=2.0)
    fb = forward_backward(U, T, s, e, off, n_threads=2)
    counts = np.zeros((n_labels, n_labels))
    for k, (a, b) in enumerate(zip(off[:-1], off[1:])):
        log_z, marginals, pairs = _log_space_forward_backward(U[a:b], T, s, e)
        assert_allclose(fb.log_z[k], log_z, rtol=1e-12)
        assert_allclose(fb.marginals[a:b], marginals, atol=1e-12)
        counts += pairs
    assert_allclose(fb.transition_counts, counts, atol=1e-11)


def _max_product(U, T, s, e):
    """max_y score(y) by the plain max-product recursion."""
    a = s + U[0]
    for t in range(1, U.shape[0]):
        a = np.max(a[:, None] + T, axis=0) + U[t]
    return np.max(a + e)


def _extreme_problem(scale, n, n_labels, seed):
    rng = np.random.default_rng(seed)
    U = rng.uniform(-scale, scale, size=(n, n_labels))
    T = rng.uniform(-scale, scale, size=(n_labels, n_labels))
    s = rng.uniform(-scale, scale, size=n_labels)
    e = rng.uniform(-scale, scale, size=n_labels)
    return U, T, s, e, np.array([0, n])


# (scale, n_tokens, n_labels, seed). Scale 300: no normaliser underflows, but
# entries flushed to 0 in the scaled rows later carry the likely paths (the
# marginals summed to 8e7 at some tokens, or were NaN, with no fallback).
# 5 labels: rows padded to 8 doubles; 12: to 16.
EXTREME = [(300.0, 2000, 5, 1), (300.0, 2000, 3, 0), (400.0, 2000, 12, 3),
           (1e3, 2000, 5, 0), (1e4, 2000, 12, 1), (1e3, 5000, 12, 2), (1e4, 5000, 5, 3)]


@pytest.mark.parametrize("scale, n, n_labels, seed", EXTREME)
def test_extreme_potentials_stay_finite(scale, n, n_labels, seed):
    # Issue "Faults and bad input": any finite potentials give finite
    # outputs of every kernel, marginals that sum to 1, log Z as a log-space
    # recursion, and the Viterbi score as a max-product recursion.
    U, T, s, e, off = _extreme_problem(scale, n, n_labels, seed)
    fb = forward_backward(U, T, s, e, off)
    assert np.all(np.isfinite(fb.marginals))
    assert_allclose(fb.marginals.sum(axis=1), 1.0, rtol=0, atol=1e-9)
    assert_allclose(fb.log_z[0], _log_forward(U, T, s, e), rtol=1e-9)
    for counts in (fb.transition_counts, fb.start_counts, fb.end_counts):
        assert np.all(np.isfinite(counts))
    assert_allclose(fb.transition_counts.sum(), n - 1, rtol=1e-9)

    # The marginals' VJP: finite, and a constant added to a row of U changes
    # no marginal, so the rows of d_unary sum to 0. (So does d_trans, but the
    # log-space fallback sums ~n shifted terms of size ~n per edge: at scale
    # 1e4 its sum is off by ~2e-4; only finiteness is checked there.)
    grad = np.random.default_rng(seed).normal(size=U.shape)
    d_unary, d_trans, d_start, d_end = marginals_vjp(U, T, s, e, off, grad)
    for d in (d_unary, d_trans, d_start, d_end):
        assert np.all(np.isfinite(d))
    assert_allclose(d_unary.sum(axis=1), 0.0, atol=1e-6)

    best = _max_product(U, T, s, e)
    path, score = viterbi(U, T, s, e, off)
    assert_allclose(score[0], best, rtol=1e-12)
    assert_allclose(sequence_scores(U, T, s, e, path, off), score, rtol=1e-12)
    mm = max_marginals(U, T, s, e, off)
    assert np.all(np.isfinite(mm.alpha)) and np.all(np.isfinite(mm.beta))
    assert_allclose(np.max(mm.alpha + mm.beta, axis=1), best, rtol=1e-12)
    segments = (np.zeros(3, dtype=np.intp), np.array([0, 10, n - 5]), np.array([5, 20, n]))
    g_carry, g_other, grads = segment_margins(U, T, s, e, off, path, segments,
                                              coef=np.ones(3), mm=mm)
    assert_allclose(g_carry, best, rtol=1e-12)  # the spans of the best path
    assert np.all(np.isfinite(g_other)) and np.all(g_other <= best)
    for d in grads:
        assert np.all(np.isfinite(d))
