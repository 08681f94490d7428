"""Brute-force oracle: enumerate every label sequence of tiny chains.

Reusable by the tests of every loss: ``enumerate_paths`` lists all label
sequences with their scores, from which log Z, marginals, expected counts,
Viterbi and any loss defined on the distribution p(y | x) follow by direct
summation. Keep chains tiny (n_labels <= 4, length <= 6).
"""

import itertools

import numpy as np
from scipy.special import logsumexp


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


def enumerate_paths(unary, transition, start, end):
    """All label sequences of one chain and their scores.

    Returns
    -------
    paths : ndarray of int of shape (n_labels ** length, length)
    scores : ndarray of shape (n_labels ** length,)
    """
    length, n_labels = unary.shape
    paths = np.array(list(itertools.product(range(n_labels), repeat=length)), dtype=np.intp)
    # path_score of every row of paths at once.
    scores = (start[paths[:, 0]] + end[paths[:, -1]]
              + unary[np.arange(length), paths].sum(axis=1)
              + transition[paths[:, :-1], paths[:, 1:]].sum(axis=1))
    return paths, scores


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


def loss_by_enumeration(loss, unary, transition, start, end, y, offsets, sample_weight=None,
                        token_weight=None):
    """A loss's value computed from its definition by enumeration.

    Dispatches on the loss's registry name; every registered loss must have
    an entry here (the test of the registry checks that). ``token_weight``
    (per token) is used by the marginal losses.
    """
    n_seq = len(offsets) - 1
    L = unary.shape[1]
    w = np.ones(n_seq) if sample_weight is None else np.asarray(sample_weight)
    tw = np.ones(len(y)) if token_weight is None else np.asarray(token_weight)
    if loss.name == "mce_f":  # a ratio of corpus-level sums, not a sum over sequences
        return _mce_f_value(loss, unary, transition, start, end, y, offsets, w)
    total = 0.0
    for i in range(n_seq):
        s, e = offsets[i], offsets[i + 1]
        paths, scores = enumerate_paths(unary[s:e], transition, start, end)
        gold = path_score(unary[s:e], transition, start, end, y[s:e])
        log_z = logsumexp(scores)
        prob = np.exp(scores - log_z)
        # node marginals p(y_t = j | x) by direct summation over paths
        L = unary.shape[1]
        marg = np.array([[prob[paths[:, t] == j].sum() for j in range(L)]
                         for t in range(e - s)])
        gold_marg = marg[np.arange(e - s), y[s:e]]
        if loss.name == "cll":
            total += w[i] * (log_z - gold)
        elif loss.name in ("softmax_margin", "jrb"):
            costs = np.array([path_cost(loss, y[s:e], p, L) for p in paths])
            if loss.name == "softmax_margin":  # Gimpel & Smith Eq. 6
                total += w[i] * (logsumexp(scores + costs) - gold)
            else:  # log E_p[exp cost], section 3.1
                total += w[i] * (logsumexp(scores + costs) - logsumexp(scores))
        elif loss.name == "risk":  # Gimpel & Smith Eq. 5: E_p[cost]
            costs = np.array([path_cost(loss, y[s:e], p, L) for p in paths])
            total += w[i] * float(np.dot(prob, costs))
        elif loss.name in ("max_margin", "mira"):  # Gimpel & Smith Eq. 4
            costs = np.array([path_cost(loss, y[s:e], p, L) for p in paths])
            total += w[i] * (np.max(scores + costs) - gold)
        elif loss.name == "perceptron":  # max_y score(y) - score(y*)
            total += w[i] * (np.max(scores) - gold)
        elif loss.name == "pointwise" or (loss.name == "labelwise" and loss.q == "log"):
            total += w[i] * -np.sum(tw[s:e] * np.log(gold_marg))
        elif loss.name == "mixed":
            lam = (loss.markov_order / (loss.markov_order + 1.0)
                   if loss.markov_order is not None else loss.lam)
            total += w[i] * (lam * (log_z - gold)
                             - (1 - lam) * np.sum(tw[s:e] * np.log(gold_marg)))
        elif loss.name == "labelwise":
            if loss.q == "identity":
                total += w[i] * np.sum(tw[s:e] * (1.0 - gold_marg))
            else:
                alpha = float(np.atleast_1d(loss.alpha)[-1])
                for t in range(e - s):
                    rival = max(marg[t, j] for j in range(L) if j != y[s + t])
                    q = 1.0 / (1.0 + np.exp(-alpha * (gold_marg[t] - rival)))
                    total += w[i] * tw[s + t] * (1.0 - q)
        elif loss.name == "mce":
            total += w[i] * _mce_sequence(loss, unary[s:e], transition, start, end, y[s:e])
        else:
            raise NotImplementedError(f"no enumeration oracle for loss {loss.name!r}")
    return total


def path_cost(loss, gold, path, n_labels):
    """cost(gold, path) of a cost-sensitive loss, summed over positions."""
    M = getattr(loss, "cost_matrix_", None)
    if M is None:  # Hamming with multiplier cost_scale, labels are indices
        assert loss.cost == "hamming"
        return loss.cost_scale * float(np.sum(np.asarray(gold) != np.asarray(path)))
    return float(sum(M[a, b] for a, b in zip(gold, path)))


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


def _smooth(loss, d):
    """l(d) of Eq. 8 for a loss with alpha, beta and smoothing."""
    z = loss.alpha * d + loss.beta
    if getattr(loss, "smoothing", "sigmoid") == "sigmoid":
        return 1.0 / (1.0 + np.exp(-z))
    return np.log1p(np.exp(z)) / loss.alpha


def _mce_sequence(loss, unary, transition, start, end, gold):
    """l(d(y*, x)) of one sequence, from the definitions (Eqs. 5, 7, 8)."""
    paths, scores = enumerate_paths(unary, transition, start, end)
    g_star = path_score(unary, transition, start, end, gold)
    wrong = np.any(paths != np.asarray(gold)[None, :], axis=1)
    if np.isinf(loss.psi):
        d = -g_star + scores[wrong].max()  # Eq. 5
    else:  # Eq. 7 with A = 1 / (|Y| - 1)
        psi = loss.psi
        d = -g_star + (np.log(1.0 / (len(paths) - 1))
                       + logsumexp(psi * scores[wrong])) / psi
    return _smooth(loss, d)


def _mce_f_value(loss, unary, transition, start, end, y, offsets, w):
    """Eq. 16 (times the weighted number of gold segments) by enumeration."""
    from sklearn_crfloss.segments import get_segments

    classes = np.asarray(loss.classes_)
    tp = fn = fp = n_gold = 0.0
    for i in range(len(offsets) - 1):
        s, e = offsets[i], offsets[i + 1]
        U = unary[s:e]
        gold = y[s:e]
        paths, scores = enumerate_paths(U, transition, start, end)
        gold_segs = get_segments(list(classes[gold]), scheme=loss.scheme)
        if loss.false_positives == "viterbi":
            wrong_path = paths[np.argmax(scores)]
        else:
            wrong_path, _ = max_incorrect_by_enumeration(U, transition, start, end, gold)
        wrong_segs = get_segments(list(classes[wrong_path]), scheme=loss.scheme)

        def margin(ref, a, b):
            carry = np.all(paths[:, a:b] == ref[None, a:b], axis=1)
            return scores[carry].max() - scores[~carry].max()

        for a, b, _ in gold_segs:
            lg = _smooth(loss, -margin(gold, a, b))  # d = -g(y*, s) + best other
            tp += w[i] * (1.0 - lg)
            fn += w[i] * lg
            n_gold += w[i]
        gold_set = set(gold_segs)
        for seg in wrong_segs:
            if seg not in gold_set:
                a, b, _ = seg
                if loss.false_positives == "gold":  # against the gold labels of the span
                    carry = np.all(paths[:, a:b] == wrong_path[None, a:b], axis=1)
                    gold_carry = np.all(paths[:, a:b] == gold[None, a:b], axis=1)
                    lf = _smooth(loss, scores[carry].max() - scores[gold_carry].max())
                else:
                    lf = _smooth(loss, margin(wrong_path, a, b))
                if loss.false_positives == "viterbi":
                    l0 = 1.0 / (1.0 + np.exp(-loss.beta))
                    lf = (lf - l0) / (1.0 - l0)
                fp += w[i] * lf
    g2 = loss.gamma ** 2
    if n_gold == 0:  # no gold segment: the false positives at TP = S
        return fp / (g2 + 1.0)
    return n_gold * (g2 * fn + fp) / ((g2 + 1.0) * tp)
