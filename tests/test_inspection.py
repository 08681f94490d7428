"""Inspection and decoding a sklearn-crfsuite user expects: weights by name, explanations,
n-best lists and sequence probabilities, each against its definition or brute force."""

from collections import Counter

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import logsumexp
from sklearn.feature_extraction import DictVectorizer

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.decoding import iob2_allowed
from sklearn_crfloss.inspection import TokenExplanation, explain_token, top_state_features

from _oracle import enumerate_paths, path_score
from conftest import make_toy_chunks


@pytest.fixture(scope="module")
def l1_toy():
    """Toy chunks and an L1 model: many state weights are exactly 0."""
    X, y = make_toy_chunks(60, seed=2)
    crf = CRFTagger(prior="l1", C=2.0).fit(X, y)
    return X, y, crf


@pytest.fixture(scope="module")
def arrays():
    """Short array sequences (unary = x @ coef_.T, enumerable: <= 5 ** 4 paths)."""
    Xd, y = make_toy_chunks(40, seed=4, max_len=4)
    vec = DictVectorizer(sparse=False).fit([tok for seq in Xd for tok in seq])
    X = [vec.transform(seq) for seq in Xd]
    return X, y, CRFTagger(C=1.0).fit(X, y)


def _log_probs(crf, x):
    """Every label sequence of x (index paths) and its log p(y | x), by enumeration."""
    paths, scores = enumerate_paths(x @ crf.coef_.T, crf.transition_, crf.start_, crf.end_)
    return paths, scores - logsumexp(scores)


# ---------------------------------------------------------- weights by name

def test_state_features_are_the_nonzero_weights(l1_toy):
    _, _, crf = l1_toy
    sf = crf.state_features_
    W = crf.coef_
    assert 0 < len(sf) == np.count_nonzero(W) < W.size  # L1 left zeros out
    for (attr, label), w in sf.items():
        assert type(attr) is str and type(label) is str and w != 0.0
        j = crf.classes_.tolist().index(label)
        a = crf.attributes_.tolist().index(attr)
        assert w == W[j, a]
    # attribute order, then label order (CRFsuite's dump order)
    keys = [(crf.attributes_.tolist().index(a), crf.classes_.tolist().index(lab))
            for a, lab in sf]
    assert keys == sorted(keys)


def test_transition_features_are_the_nonzero_transitions(l1_toy):
    _, _, crf = l1_toy
    tf = crf.transition_features_
    labels = crf.classes_.tolist()
    expected = {(labels[i], labels[j]): crf.transition_[i, j]
                for i in range(len(labels)) for j in range(len(labels))
                if crf.transition_[i, j] != 0}
    assert tf == expected and len(tf) > 0


def test_top_state_features_match_the_counter_idiom(l1_toy):
    # sklearn-crfsuite's tutorial lists Counter(crf.state_features_).most_common(n).
    _, _, crf = l1_toy
    counter = Counter(crf.state_features_)
    assert crf.top_state_features(5) == counter.most_common(5)
    negative = crf.top_state_features(4, sign="negative")
    assert negative == sorted(((k, w) for k, w in counter.items() if w < 0),
                              key=lambda it: it[1])[:4]
    assert all(w < 0 for _, w in negative)
    absolute = top_state_features(crf, 6, sign="absolute")
    assert [abs(w) for _, w in absolute] == sorted((abs(w) for w in counter.values()),
                                                   reverse=True)[:6]
    only_o = crf.top_state_features(100, label="O")
    assert only_o and {label for (_, label), _ in only_o} == {"O"}
    assert crf.top_state_features(0) == []


@pytest.mark.parametrize("kwargs, match", [
    ({"sign": "largest"}, "sign must be"),
    ({"label": "B-XX"}, "is not one of classes_"),
    ({"n": -1}, "non-negative integer"),
])
def test_top_state_features_rejects_bad_arguments(l1_toy, kwargs, match):
    _, _, crf = l1_toy
    with pytest.raises(ValueError, match=match):
        crf.top_state_features(**kwargs)


# ------------------------------------------------------------ explanations

def _expected_explanation(crf, x, t):
    """Runner-up by trying every label at t on the decoded path (scores by path_score)."""
    unary = x @ crf.coef_.T
    labels = crf.classes_.tolist()
    path = np.array([labels.index(lab) for lab in crf.predict([x])[0]])
    best = path_score(unary, crf.transition_, crf.start_, crf.end_, path)
    alternatives = {}
    for r in range(len(labels)):
        if r != path[t]:
            alt = path.copy()
            alt[t] = r
            alternatives[r] = best - path_score(unary, crf.transition_, crf.start_,
                                                crf.end_, alt)
    r = min(alternatives, key=alternatives.get)
    return labels[path[t]], labels[r], alternatives[r], alternatives


def test_explanation_adds_up_to_the_score_difference(arrays):
    X, _, crf = arrays
    n_checked = 0
    for x in X[:12]:
        for t in range(len(x)):
            ex = crf.explain(x, t)
            label, runner_up, diff, _ = _expected_explanation(crf, x, t)
            assert isinstance(ex, TokenExplanation)
            assert (ex.label, ex.runner_up) == (label, runner_up)
            assert ex.score_difference == pytest.approx(diff, rel=1e-10, abs=1e-10)
            assert ex.total() == pytest.approx(diff, rel=1e-10, abs=1e-10)
            assert ex.score_difference >= 0  # Viterbi's label beats any single change
            expected_terms = {"previous"} if t > 0 else {"start"}
            expected_terms |= {"next"} if t < len(x) - 1 else {"end"}
            assert set(ex.transitions) == expected_terms
            # one term per active column, contribution x_ta * (w_label - w_runner)
            active = np.flatnonzero(x[t])
            assert len(ex.attributes) == active.shape[0]
            j, r = crf.classes_.tolist().index(label), crf.classes_.tolist().index(runner_up)
            for a in active:
                assert ex.attributes[crf.attributes_[a]] == pytest.approx(
                    x[t, a] * (crf.coef_[j, a] - crf.coef_[r, a]), rel=1e-12, abs=1e-15)
            n_checked += 1
    assert n_checked > 20


def test_explanation_against_a_chosen_label(arrays):
    X, _, crf = arrays
    x = next(x for x in X if len(x) >= 3)
    label, _, _, alternatives = _expected_explanation(crf, x, 1)
    other = next(lab for lab in crf.classes_.tolist()
                 if lab != label and crf.classes_.tolist().index(lab) in alternatives)
    ex = explain_token(crf, x, 1, against=other)
    assert ex.runner_up == other
    assert ex.score_difference == pytest.approx(
        alternatives[crf.classes_.tolist().index(other)], rel=1e-10)
    assert ex.total() == pytest.approx(ex.score_difference, rel=1e-10)
    assert explain_token(crf, x, -1).token == len(x) - 1
    with pytest.raises(ValueError, match="is the decoded label"):
        crf.explain(x, 1, against=label)
    with pytest.raises(ValueError, match="not one of classes_"):
        crf.explain(x, 1, against="nope")
    with pytest.raises(ValueError, match="integer position"):
        crf.explain(x, len(x))


def test_explanation_of_feature_dicts_names_the_attributes(l1_toy):
    X, _, crf = l1_toy
    x = X[0] + [{"w": "never-seen-in-training", "bias": 1.0}]
    ex = crf.explain(x, len(x) - 1)
    # the unseen value has no column: only 'bias' (and 'prev=...' if known) remain
    assert "w=never-seen-in-training" not in ex.attributes and "bias" in ex.attributes
    assert ex.total() == pytest.approx(ex.score_difference, rel=1e-10, abs=1e-12)
    assert f"{ex.label!r} rather than {ex.runner_up!r}" in str(ex)


def test_explanation_runner_up_respects_constraints():
    # Under IOB2 the runner-up is the best label whose single change keeps the
    # decoded sequence allowed; if no change is allowed, the best of all.
    X, y = make_toy_chunks(80, seed=5)
    crf = CRFTagger(constraints="iob2", C=0.5).fit(X, y)
    labels = crf.classes_.tolist()
    allowed, allowed_start = iob2_allowed(crf.classes_)
    seen = Counter()
    for x, pred in zip(X[:20], crf.predict(X[:20])):
        idx = [labels.index(lab) for lab in pred]
        for t in range(len(x)):
            ex = crf.explain(x, t)
            others = [r for r in range(len(labels)) if r != idx[t]]
            ok = [r for r in others
                  if (allowed[idx[t - 1], r] if t > 0 else allowed_start[r])
                  and (t == len(x) - 1 or allowed[r, idx[t + 1]])]
            pool = ok or others
            diffs = {r: crf.explain(x, t, against=labels[r]).score_difference for r in pool}
            assert ex.runner_up == labels[min(diffs, key=diffs.get)]
            assert ex.total() == pytest.approx(ex.score_difference, rel=1e-10, abs=1e-12)
            seen["allowed" if ok else "none allowed"] += 1
    assert seen["allowed"] > 20 and seen["none allowed"] > 0, seen


# ------------------------------------------------ n-best and probabilities

def test_predict_nbest_matches_enumeration(arrays):
    X, _, crf = arrays
    lists = crf.predict_nbest(X[:10], n_best=7)
    assert len(lists) == 10
    for x, found in zip(X[:10], lists):
        paths, log_p = _log_probs(crf, x)
        order = np.argsort(-log_p, kind="stable")[:7]
        assert len(found) == min(7, paths.shape[0])
        assert_allclose([lp for _, lp in found], log_p[order], rtol=1e-10, atol=1e-12)
        seqs = [tuple(labels) for labels, _ in found]
        assert len(set(seqs)) == len(seqs)
        for labels, lp in found:
            idx = [crf.classes_.tolist().index(lab) for lab in labels]
            k = next(i for i, p in enumerate(paths) if p.tolist() == idx)
            assert lp == pytest.approx(log_p[k], rel=1e-10, abs=1e-12)
        assert found[0][0] == crf.predict([x])[0]
        assert all(type(lab) is str for lab in found[0][0])


def test_predict_nbest_short_and_empty_sequences(arrays):
    X, _, crf = arrays
    x1 = X[0][:1]
    one_token = crf.predict_nbest([x1, X[0][:0]], n_best=50)
    L = len(crf.classes_)
    assert len(one_token[0]) == L  # only L labellings of one token
    assert_allclose(sum(np.exp(lp) for _, lp in one_token[0]), 1.0, rtol=1e-12)
    assert one_token[1] == [([], 0.0)]
    with pytest.raises(ValueError, match="n_best must be an integer >= 1"):
        crf.predict_nbest(X[:1], n_best=0)


def test_predict_nbest_under_constraints_lists_allowed_sequences_only():
    X, y = make_toy_chunks(60, seed=3)
    crf = CRFTagger(constraints="iob2", C=0.1).fit(X, y)
    lists = crf.predict_nbest(X[:15], n_best=6)
    for x, found, pred in zip(X[:15], lists, crf.predict(X[:15])):
        assert found[0][0] == pred
        for labels, _ in found:
            prev = ["O"] + labels[:-1]
            assert all(not lab.startswith("I-") or p[2:] == lab[2:] and p != "O"
                       for p, lab in zip(prev, labels))
        assert np.all(np.diff([lp for _, lp in found]) <= 1e-12)


def test_sequence_log_proba_matches_enumeration(arrays):
    X, y, crf = arrays
    got = crf.sequence_log_proba(X[:10], y[:10])
    for x, yi, lp in zip(X[:10], y[:10], got):
        paths, log_p = _log_probs(crf, x)
        idx = [crf.classes_.tolist().index(lab) for lab in yi]
        k = next(i for i, p in enumerate(paths) if p.tolist() == idx)
        assert lp == pytest.approx(log_p[k], rel=1e-10, abs=1e-12)
    # y=None: the probability of the predicted sequences, the top of the n-best list
    pred = crf.sequence_log_proba(X[:10])
    assert_allclose(pred, [found[0][1] for found in crf.predict_nbest(X[:10], 1)],
                    rtol=1e-12)
    assert_allclose(pred, crf.sequence_log_proba(X[:10], crf.predict(X[:10])), rtol=1e-12)
    assert np.all(pred <= 0) and np.all(pred >= got - 1e-12)
    assert crf.sequence_log_proba([X[0][:0]], [[]]).tolist() == [0.0]


def test_sequence_log_proba_rejects_bad_labels(arrays):
    X, y, crf = arrays
    with pytest.raises(ValueError, match="label 'B-XX' is not one of the classes"):
        crf.sequence_log_proba(X[:1], [["B-XX"] * len(X[0])])
    with pytest.raises(ValueError, match="Sequence 0 has"):
        crf.sequence_log_proba(X[:1], [y[0] + ["O"]])
    with pytest.raises(ValueError, match="different numbers of sequences"):
        crf.sequence_log_proba(X[:2], y[:1])
