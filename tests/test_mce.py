"""MCE and MCE-F (Suzuki et al. 2006): kernels and losses against enumeration."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_crfloss.inference import (
    max_marginals,
    segment_margins,
    sequence_scores,
    viterbi,
    viterbi_2best,
)

from _oracle import (
    enumerate_paths,
    random_problem,
    segment_margin_by_enumeration,
    two_best_by_enumeration,
)


# ------------------------------------------------------------------ kernels


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_labels", [2, 3, 4])
def test_viterbi_2best_matches_enumeration(seed, n_labels):
    rng = np.random.default_rng(seed)
    U, T, s, e, y, off = random_problem(rng, n_labels, lengths=(1, 2, 5, 4), scale=1.5)
    p1, p2, s1, s2 = viterbi_2best(U, T, s, e, off)
    for k in range(len(off) - 1):
        a, b = off[k], off[k + 1]
        q1, r1, q2, r2 = two_best_by_enumeration(U[a:b], T, s, e)
        assert_array_equal(p1[a:b], q1)
        assert_array_equal(p2[a:b], q2)
        assert_allclose([s1[k], s2[k]], [r1, r2], rtol=1e-12)
    # The first path is the Viterbi path; the scores are those of the paths.
    assert_array_equal(p1, viterbi(U, T, s, e, off)[0])
    assert_allclose(sequence_scores(U, T, s, e, p2, off), s2, rtol=1e-12)
    assert np.all(s2 <= s1)


def test_viterbi_2best_single_label_has_no_runner_up():
    U = np.zeros((1, 1))
    p1, p2, s1, s2 = viterbi_2best(U, np.zeros((1, 1)), np.zeros(1), np.zeros(1), [0, 1])
    assert s1[0] == 0.0 and s2[0] == -np.inf


def test_viterbi_2best_all_ties_gives_two_distinct_paths():
    U = np.zeros((4, 3))
    p1, p2, s1, s2 = viterbi_2best(U, np.zeros((3, 3)), np.zeros(3), np.zeros(3), [0, 4])
    assert s1[0] == s2[0] == 0.0
    assert np.any(p1 != p2)


@pytest.mark.parametrize("seed", range(5))
def test_max_marginals_match_enumeration(seed):
    rng = np.random.default_rng(seed)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 4, 5), scale=1.5)
    mm = max_marginals(U, T, s, e, off)
    for k in range(len(off) - 1):
        a, b = off[k], off[k + 1]
        paths, scores = enumerate_paths(U[a:b], T, s, e)
        for t in range(b - a):
            for j in range(3):
                expected = scores[paths[:, t] == j].max()
                assert_allclose(mm.alpha[a + t, j] + mm.beta[a + t, j], expected, rtol=1e-12)
        # Following the backpointers from the best end recovers the Viterbi path.
        j = int(np.argmax(mm.alpha[b - 1] + e))
        path = [j]
        for t in range(b - 1, a, -1):
            path.append(int(mm.bp_fwd[t, path[-1]]))
        assert_array_equal(path[::-1], paths[np.argmax(scores)])
        j = int(np.argmax(s + U[a] + mm.beta[a]))
        path = [j]
        for t in range(a, b - 1):
            path.append(int(mm.bp_bwd[t, path[-1]]))
        assert_array_equal(path, paths[np.argmax(scores)])


def _random_segments(rng, off, n=12):
    seq, begin, stop = [], [], []
    for _ in range(n):
        k = int(rng.integers(len(off) - 1))
        length = off[k + 1] - off[k]
        a = int(rng.integers(length))
        b = int(rng.integers(a + 1, length + 1))
        seq.append(k), begin.append(a), stop.append(b)
    order = np.argsort(seq, kind="stable")
    return tuple(np.asarray(v)[order] for v in (seq, begin, stop))


@pytest.mark.parametrize("seed", range(5))
def test_segment_margins_match_enumeration(seed):
    rng = np.random.default_rng(seed)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 4, 5), scale=1.5)
    segs = _random_segments(rng, off)
    g_carry, g_other, grad = segment_margins(U, T, s, e, off, y, segs)
    assert grad is None
    for m, (k, a, b) in enumerate(zip(*segs)):
        o = off[k]
        c, other = segment_margin_by_enumeration(U[o:off[k + 1]], T, s, e, a, b, y[o + a:o + b])
        assert_allclose([g_carry[m], g_other[m]], [c, other], rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_segment_margins_gradient_matches_finite_differences(seed):
    rng = np.random.default_rng(10 + seed)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 4, 5), scale=1.5)
    segs = _random_segments(rng, off)
    coef = rng.normal(size=segs[0].shape[0])
    _, _, (dU, dT, ds, de) = segment_margins(U, T, s, e, off, y, segs, coef=coef)

    def f(U, T, s, e):
        c, o, _ = segment_margins(U, T, s, e, off, y, segs)
        return float(coef @ (c - o))

    # Piecewise linear: a one-sided difference of a small step is exact away from ties.
    eps = 1e-6
    base = f(U, T, s, e)
    for arr, grad in ((U, dU), (T, dT), (s, ds), (e, de)):
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            fd = (f(U, T, s, e) - base) / eps
            arr[idx] = old
            assert_allclose(grad[idx], fd, atol=1e-5)


def test_segment_margins_reject_bad_segments():
    U = np.zeros((3, 2))
    z = np.zeros(2)
    with pytest.raises(ValueError, match="inside its sequence"):
        segment_margins(U, np.zeros((2, 2)), z, z, [0, 3], [0, 0, 0], ([0], [2], [4]))
    with pytest.raises(ValueError, match="label indices"):
        segment_margins(U, np.zeros((2, 2)), z, z, [0, 3], [0, 5, 0], ([0], [0], [1]))
