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


def _tie_order_key(U, T, s, e, path):
    """Where a path stands in the n-best order, ties included, by its definition.

    Scores are summed as the kernel sums them: ``S_0 = start + U_0``, ``V_t =
    S_{t-1} + T[y_{t-1}, y_t]`` (what a cell's list is sorted by), ``S_t =
    V_t + U_t``, the root ``S_{n-1} + end``. The order: higher score, then,
    going back from the last token, the smaller label and the better prefix
    ending there (higher ``V``), and so on.
    """
    S = s[path[0]] + U[0, path[0]]
    V = [None]
    for t in range(1, len(path)):
        V.append(S + T[path[t - 1], path[t]])
        S = V[t] + U[t, path[t]]
    key = [-(S + e[path[-1]])]
    for t in range(len(path) - 1, 0, -1):
        key += [path[t], -V[t]]
    return tuple(key + [path[0]])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("scale", [1.0, 1e16])
def test_nbest_order_with_ties_is_the_enumerated_order(seed, scale):
    # Every labelling of small integer potentials listed: the paths, their
    # scores and the order among equal scores are those of sorting the
    # enumeration by _tie_order_key. At scale 1e16 the sums round, so that
    # prefixes of different V can reach equal S (ties made by rounding).
    rng = np.random.default_rng(seed)
    L, n = 3, 5
    U = rng.integers(0, 2, size=(n, L)) * scale + rng.integers(0, 3, size=(n, L))
    T = rng.integers(0, 2, size=(L, L)).astype(float)
    s, e = rng.integers(0, 2, size=L).astype(float), rng.integers(0, 2, size=L) * scale
    T[rng.random((L, L)) < 0.2] = -np.inf
    T[0, 1] = -np.inf  # (a forbidden transition: labellings of score -inf, never listed)
    off = np.array([0, n], dtype=np.intp)
    everything = [np.array(p) for p in np.ndindex(*(L,) * n)]
    keys = sorted((_tie_order_key(U, T, s, e, p), tuple(p)) for p in everything)
    finite = [(k, p) for k, p in keys if np.isfinite(k[0])]
    paths, scores = viterbi_nbest(U, T, s, e, off, L ** n)
    assert len(finite) < L ** n and np.all(scores[0, len(finite):] == -np.inf)
    assert [tuple(paths[m]) for m in range(len(finite))] == [p for _, p in finite]
    assert scores[0, :len(finite)].tolist() == [-k[0] for k, _ in finite]
    assert len({k[0] for k, _ in finite}) < len(finite) / 2  # many ties


def test_nbest_of_a_million_paths_is_fast():
    # 40 tokens, 2 labels: a million paths listed in well under a second per
    # ten thousand (the list Viterbi took 39 s for 30,000); first ones exact.
    rng = np.random.default_rng(0)
    U, T, s, e = rng.normal(size=(40, 2)), rng.normal(size=(2, 2)), rng.normal(size=2), \
        rng.normal(size=2)
    off = np.array([0, 40], dtype=np.intp)
    import time
    t0 = time.perf_counter()
    paths, scores = viterbi_nbest(U, T, s, e, off, 10**6)
    seconds = time.perf_counter() - t0
    assert np.all(np.isfinite(scores)) and np.all(np.diff(scores[0]) <= 0)
    assert seconds < 30.0, seconds  # the bar is 1 s per 10,000 paths: 100 s
    assert_array_equal(paths[0], viterbi(U, T, s, e, off)[0])
    assert len({tuple(p) for p in paths[:5000]}) == 5000
