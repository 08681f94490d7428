"""Feature dicts are named as python-crfsuite names them (nested dicts, lists, numbers)."""

import numpy as np
import pytest
import sklearn_crfsuite

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.features import crfsuite_attributes


def word2features(sent, i):
    """sklearn-crfsuite's tutorial features, plus a nested dict and a list."""
    word, postag = sent[i]
    features = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:],
                "word.isupper()": word.isupper(), "word.istitle()": word.istitle(),
                "postag": postag, "shape": {"title": word.istitle(), "len": len(word) / 10,
                                            "kind": {"digit": word.isdigit()}},
                "chars": sorted(set(word.lower()))[:2]}
    if i > 0:
        features.update({"-1:word.lower()": sent[i - 1][0].lower(),
                         "-1:postag": sent[i - 1][1]})
    else:
        features["BOS"] = True
    if i == len(sent) - 1:
        features["EOS"] = True
    return features


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_state_features_keys_equal_sklearn_crfsuites(corpus):
    sents, y = corpus("conll2002", "esp", "train")
    X = [[word2features(s, i) for i in range(len(s))] for s in sents[:60]]
    y = y[:60]
    # L2 only: every weight of an observed (attribute, label) pair is non-zero in both.
    theirs = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=0.5, max_iterations=50,
                                  all_possible_transitions=True).fit(X, y)
    ours = CRFTagger(C=1.0, max_iter=50, tol=0.0).fit(X, y)
    # CRFsuite also trains the (attribute, label) pairs seen only with value 0 (False);
    # a zero value is no attribute here (DictVectorizer), so those pairs are not trained.
    zero_valued = {a for s in X for t in s for a, v in crfsuite_attributes(t).items() if v == 0}
    ours_keys, their_keys = set(ours.state_features_), set(theirs.state_features_)
    assert len(ours_keys) > 1000
    assert ours_keys <= their_keys
    assert {a for a, _ in their_keys - ours_keys} <= zero_valued
    assert set(ours.attributes_) <= set(theirs.attributes_)
    assert "shape:kind:digit" in set(ours.attributes_)
    assert {"chars:a", "postag:NC", "-1:word.lower():de"} <= set(ours.attributes_)
    # The attributes of one token are python-crfsuite's, by name and value.
    token = X[0][1]
    names = crfsuite_attributes(token)
    row = ours._features.transform([token], np.array([0, 1])).toarray()[0]
    kept = {a: row[j] for j, a in enumerate(ours.attributes_) if row[j] != 0}
    assert kept == {a: v for a, v in names.items() if v != 0}
    assert ours.predict(X[:5]) == ours.predict([[dict(t) for t in s] for s in X[:5]])


def test_crfsuite_attributes_rules():
    assert crfsuite_attributes({"a": "x", "n": 2, "b": True, "f": False,
                                "d": {"e": "y", "g": {"h": 1.5}}, "l": ["p", "q", "p"]}) == {
        "a:x": 1.0, "n": 2.0, "b": 1.0, "f": 0.0, "d:e:y": 1.0, "d:g:h": 1.5,
        "l:p": 2.0, "l:q": 1.0}
    with pytest.raises(TypeError, match="'o'"):
        crfsuite_attributes({"o": None})


def test_nested_dicts_at_fit_and_predict():
    X = [[{"w": "a", "s": {"up": True}}, {"w": "B", "s": {"up": False, "k": "x"}}]] * 4
    y = [["O", "B-X"]] * 4
    crf = CRFTagger(C=10.0).fit(X, y)
    assert set(crf.attributes_) == {"w:a", "w:B", "s:up", "s:k:x"}
    nested = crf.predict_marginals([[{"s": {"k": "x"}}, {"w": "a", "s": {"up": True}}]])
    joined = crf.predict_marginals([[{"s:k": "x"}, {"w": "a", "s:up": True}]])
    np.testing.assert_array_equal(nested[0], joined[0])
    flat = CRFTagger(C=10.0).fit([[{"w": "a", "s:up": True}, {"w": "B", "s:k": "x"}]] * 4, y)
    assert set(flat.attributes_) == {"w:a", "w:B", "s:up", "s:k:x"}
    with pytest.raises(ValueError, match="'s:up' twice"):
        CRFTagger().fit([[{"s:up": 1.0, "s": {"up": True}}, {"w": "a"}]] * 2, [["O", "B-X"]] * 2)
