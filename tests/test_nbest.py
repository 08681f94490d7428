"""The n-best list Viterbi kernel against brute-force enumeration of all label sequences."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_crfloss.inference import viterbi, viterbi_2best, viterbi_nbest

from _oracle import enumerate_paths, path_score, random_problem


def _check_against_enumeration(U, T, s, e, off, n_best, paths, scores):
    """Each sequence's list: distinct, non-increasing, the top scores of enumeration."""
    for k in range(len(off) - 1):
        a, b = off[k], off[k + 1]
        if b == a:
            assert scores[k, 0] == 0.0 and np.all(scores[k, 1:] == -np.inf)
            continue
        _, all_scores = enumerate_paths(U[a:b], T, s, e)
        finite = np.sort(all_scores[np.isfinite(all_scores)])[::-1]
        n_found = min(n_best, finite.shape[0])
        assert_allclose(scores[k, :n_found], finite[:n_found], rtol=1e-12, atol=1e-12)
        assert np.all(scores[k, n_found:] == -np.inf)
        assert np.all(np.diff(scores[k, :n_found]) <= 0)
        found = [tuple(paths[m, a:b]) for m in range(n_found)]
        assert len(set(found)) == n_found
        for m, path in enumerate(found):
            assert path_score(U[a:b], T, s, e, np.array(path)) == pytest.approx(
                scores[k, m], rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n_best", [1, 2, 5, 40])
def test_nbest_matches_enumeration(seed, n_best):
    # 40 exceeds the 3 ** 1 and 3 ** 2 labellings of the short sequences,
    # whose lists are padded with -inf.
    rng = np.random.default_rng(seed)
    U, T, s, e, _, off = random_problem(rng, 3, lengths=(1, 2, 0, 4, 5), scale=1.5)
    paths, scores = viterbi_nbest(U, T, s, e, off, n_best)
    assert paths.shape == (n_best, U.shape[0]) and scores.shape == (len(off) - 1, n_best)
    _check_against_enumeration(U, T, s, e, off, n_best, paths, scores)
    best, best_score = viterbi(U, T, s, e, off)
    assert_array_equal(paths[0], best)
    assert_allclose(scores[:, 0], best_score, rtol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_nbest_with_ties_lists_distinct_sequences(seed):
    # Integer potentials make many equal scores: the list must still hold
    # distinct sequences with the enumeration's top scores, and the first
    # breaks ties as Viterbi does (towards smaller labels).
    rng = np.random.default_rng(seed)
    U, T, s, e, _, off = random_problem(rng, 3, lengths=(3, 4), scale=1.0)
    U, T, s, e = (np.round(a) for a in (U, T, s, e))
    paths, scores = viterbi_nbest(U, T, s, e, off, 12)
    _check_against_enumeration(U, T, s, e, off, 12, paths, scores)
    assert_array_equal(paths[0], viterbi(U, T, s, e, off)[0])


def test_nbest_two_equals_two_best():
    rng = np.random.default_rng(7)
    U, T, s, e, _, off = random_problem(rng, 4, lengths=(1, 3, 6, 2), scale=2.0)
    paths, scores = viterbi_nbest(U, T, s, e, off, 2)
    p1, p2, s1, s2 = viterbi_2best(U, T, s, e, off)
    assert_array_equal(paths[0], p1)
    assert_array_equal(paths[1], p2)
    assert_allclose(scores, np.column_stack([s1, s2]), rtol=1e-12)


def test_nbest_skips_forbidden_sequences():
    # -inf transitions (decode-time constraints): only the allowed sequences
    # are listed, and all of them when n_best exceeds their number.
    rng = np.random.default_rng(3)
    U, T, s, e, _, off = random_problem(rng, 3, lengths=(4,), scale=1.0)
    T[0, 1] = T[2, 2] = -np.inf
    s[1] = -np.inf
    _, all_scores = enumerate_paths(U, T, s, e)
    n_allowed = int(np.isfinite(all_scores).sum())
    assert 0 < n_allowed < 81
    paths, scores = viterbi_nbest(U, T, s, e, off, 100)
    assert np.isfinite(scores[0]).sum() == n_allowed
    _check_against_enumeration(U, T, s, e, off, 100, paths, scores)


def test_nbest_threads_agree_with_serial():
    rng = np.random.default_rng(11)
    U, T, s, e, _, off = random_problem(rng, 5, lengths=[1, 7, 3, 9, 2] * 8, scale=1.0)
    serial = viterbi_nbest(U, T, s, e, off, 4, n_threads=1)
    parallel = viterbi_nbest(U, T, s, e, off, 4, n_threads=2)
    assert_array_equal(serial[0], parallel[0])
    assert_array_equal(serial[1], parallel[1])


def test_nbest_rejects_bad_n_best():
    rng = np.random.default_rng(0)
    U, T, s, e, _, off = random_problem(rng, 2, lengths=(2,))
    with pytest.raises(ValueError, match="n_best must be an integer >= 1"):
        viterbi_nbest(U, T, s, e, off, 0)
