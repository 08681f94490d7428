"""Brute-force oracle of the kernels: enumerate every label sequence of tiny chains.

``enumerate_paths`` (the package's, :mod:`sklearn_crfloss.losses`) lists all
label sequences with their scores, from which log Z, marginals, expected
counts, Viterbi, max-marginals and segment margins follow here by direct
summation. The losses' definitions by enumeration are in the package (each
loss's ``enumerated_loss``, checked by ``sklearn_crfloss.losses.check_loss``);
``loss_by_enumeration`` is kept here for the tests of loss variants. Keep
chains tiny (n_labels <= 4, length <= 6).
"""

import numpy as np
from scipy.special import logsumexp

# Re-exported for the tests of kernels and loss variants.
from sklearn_crfloss.losses import enumerate_paths, loss_by_enumeration

__all__ = ["brute_force", "enumerate_paths", "loss_by_enumeration", "markov_loss_by_enumeration",
           "max_incorrect_by_enumeration", "path_score", "position_brute_force", "position_paths",
           "random_problem", "segment_margin_by_enumeration", "two_best_by_enumeration",
           "window_log_prob"]


def random_problem(rng, n_labels=3, lengths=(1, 3, 5), scale=1.0):
    """Random potentials and gold labels for a few short sequences.

    Returns
    -------
    unary, transition, start, end, y, offsets
    """
    lengths = np.asarray(lengths)
    offsets = np.zeros(len(lengths) + 1, dtype=np.intp)
    np.cumsum(lengths, out=offsets[1:])
    n = offsets[-1]
    unary = rng.normal(scale=scale, size=(n, n_labels))
    transition = rng.normal(scale=scale, size=(n_labels, n_labels))
    start = rng.normal(scale=scale, size=n_labels)
    end = rng.normal(scale=scale, size=n_labels)
    y = rng.integers(n_labels, size=n).astype(np.intp)
    return unary, transition, start, end, y, offsets


def path_score(unary, transition, start, end, path):
    """score(y) of one label sequence over the rows of ``unary``."""
    s = start[path[0]] + end[path[-1]] + unary[np.arange(len(path)), path].sum()
    s += sum(transition[a, b] for a, b in zip(path[:-1], path[1:]))
    return float(s)


def brute_force(unary, transition, start, end, offsets, sample_weight=None):
    """log Z, marginals, expected counts and Viterbi by enumeration."""
    n_tokens, L = unary.shape
    n_seq = len(offsets) - 1
    w = np.ones(n_seq) if sample_weight is None else np.asarray(sample_weight)
    log_z = np.zeros(n_seq)
    marg = np.zeros((n_tokens, L))
    trans = np.zeros((L, L))
    start_c = np.zeros(L)
    end_c = np.zeros(L)
    best_path = np.zeros(n_tokens, dtype=np.intp)
    best_score = np.zeros(n_seq)
    for i in range(n_seq):
        s, e = offsets[i], offsets[i + 1]
        paths, scores = enumerate_paths(unary[s:e], transition, start, end)
        log_z[i] = logsumexp(scores)
        p = np.exp(scores - log_z[i])
        # Sum p(path) over the paths with label a at t (and b at t + 1).
        for t in range(e - s):
            marg[s + t] = np.bincount(paths[:, t], weights=p, minlength=L)
        pairs = (paths[:, :-1] * L + paths[:, 1:]).ravel()
        trans += w[i] * np.bincount(pairs, weights=np.repeat(p, e - s - 1),
                                    minlength=L * L).reshape(L, L)
        start_c += w[i] * np.bincount(paths[:, 0], weights=p, minlength=L)
        end_c += w[i] * np.bincount(paths[:, -1], weights=p, minlength=L)
        k = int(np.argmax(scores))
        best_path[s:e] = paths[k]
        best_score[i] = scores[k]
    return dict(log_z=log_z, marginals=marg, transition_counts=trans,
                start_counts=start_c, end_counts=end_c,
                path=best_path, score=best_score)


def window_log_prob(paths, scores, y, lo, hi):
    """log p(y_lo..y_hi-1 = gold | x) by summing the enumerated paths."""
    match = np.all(paths[:, lo:hi] == y[lo:hi], axis=1)
    return logsumexp(scores[match]) - logsumexp(scores)


def markov_loss_by_enumeration(k, unary, transition, start, end, y, offsets):
    """Tsuboi & Kashima's M_k (Definition 4, Eq. (3.9)) by enumeration.

    Windows ``t = -k+1 .. T`` (1-based) of ``k + 1`` labels; positions
    outside ``1..T`` are the dummy label ``σ_0`` (always gold, probability
    1), so each window reduces to its intersection with the sequence.
    """
    total = 0.0
    for i in range(len(offsets) - 1):
        s, e = offsets[i], offsets[i + 1]
        T = e - s
        paths, scores = enumerate_paths(unary[s:e], transition, start, end)
        for t in range(-k + 1, T + 1):  # 1-based window start
            lo, hi = max(t, 1) - 1, min(t + k, T)
            total -= window_log_prob(paths, scores, y[s:e], lo, hi)
    return total


# --- Minimum classification error (Suzuki et al. 2006) by enumeration ------


def two_best_by_enumeration(unary, transition, start, end):
    """Best and second-best (path, score) of one chain, by sorting all paths."""
    paths, scores = enumerate_paths(unary, transition, start, end)
    order = np.argsort(-scores, kind="stable")
    return paths[order[0]], scores[order[0]], paths[order[1]], scores[order[1]]


def max_incorrect_by_enumeration(unary, transition, start, end, gold):
    """max over y != gold of score(y) and its argmax (Eq. 5)."""
    paths, scores = enumerate_paths(unary, transition, start, end)
    wrong = np.any(paths != np.asarray(gold)[None, :], axis=1)
    k = np.flatnonzero(wrong)[np.argmax(scores[wrong])]
    return paths[k], scores[k]


def segment_margin_by_enumeration(unary, transition, start, end, begin, stop, labels):
    """(best score carrying labels on begin:stop, best score not carrying them)."""
    paths, scores = enumerate_paths(unary, transition, start, end)
    carry = np.all(paths[:, begin:stop] == np.asarray(labels)[None, :], axis=1)
    other = scores[~carry].max() if np.any(~carry) else -np.inf
    return scores[carry].max(), other


def position_brute_force(unary, transitions, start, end, offsets, sample_weight=None):
    """log Z, marginals, expected counts per position and Viterbi by enumeration.

    ``transitions`` of shape (n_tokens, L, L): the edge into token t scores
    ``transitions[t]`` (observation-dependent label bigrams). Returns
    ``log_z, marginals, pair (n_tokens, L, L) weighted, start_counts,
    end_counts, best_path, best_score``.
    """
    n_tokens, L = unary.shape
    w = np.ones(len(offsets) - 1) if sample_weight is None else np.asarray(sample_weight)
    out = {"marg": np.zeros((n_tokens, L)), "pair": np.zeros((n_tokens, L, L)),
           "bounds": np.zeros((2, L)), "path": np.zeros(n_tokens, dtype=np.intp)}
    log_z, best = np.zeros(len(w)), np.zeros(len(w))
    for k, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        if a == b:
            continue
        paths, scores = enumerate_paths(unary[a:b], np.zeros((L, L)), start, end)
        for t in range(1, b - a):  # the position's own transitions
            scores = scores + transitions[a + t][paths[:, t - 1], paths[:, t]]
        log_z[k] = logsumexp(scores)
        prob = np.exp(scores - log_z[k])
        for t in range(b - a):
            out["marg"][a + t] = np.bincount(paths[:, t], weights=prob, minlength=L)
            if t:
                np.add.at(out["pair"][a + t], (paths[:, t - 1], paths[:, t]), w[k] * prob)
        np.add.at(out["bounds"], (0, paths[:, 0]), w[k] * prob)
        np.add.at(out["bounds"], (1, paths[:, -1]), w[k] * prob)
        out["path"][a:b] = paths[np.argmax(scores)]
        best[k] = scores.max()
    return (log_z, out["marg"], out["pair"], out["bounds"][0], out["bounds"][1], out["path"],
            best)


def position_paths(unary, transitions, start, end):
    """Every label sequence of one chain and its score, with position-dependent transitions.

    ``transitions`` of shape (length, L, L): the edge into token t scores
    ``transitions[t]`` (row 0 is not read). Returns ``paths, scores`` as
    :func:`enumerate_paths`.
    """
    length, L = unary.shape
    paths, scores = enumerate_paths(unary, np.zeros((L, L)), start, end)
    steps = np.arange(1, length)
    return paths, scores + transitions[steps, paths[:, :-1], paths[:, 1:]].sum(axis=1)
