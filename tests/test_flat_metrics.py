"""sklearn-crfsuite's flat metrics and scorers; scikit-learn's flat scorers refused clearly."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn import metrics as skm
from sklearn.model_selection import cross_val_score

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.metrics import (flat_accuracy_score, flat_accuracy_scorer,
                                     flat_classification_report, flat_f1_score, flat_f1_scorer,
                                     flat_fbeta_score, flat_precision_score,
                                     flat_precision_scorer, flat_recall_score,
                                     flat_recall_scorer, token_accuracy)

Y_TRUE = [["B-PER", "I-PER", "O"], ["O", "B-LOC"], ["B-LOC", "I-LOC", "O", "O"]]
Y_PRED = [["B-PER", "O", "O"], ["O", "B-LOC"], ["B-PER", "I-LOC", "O", "B-LOC"]]
FLAT_TRUE = [t for s in Y_TRUE for t in s]
FLAT_PRED = [t for s in Y_PRED for t in s]


@pytest.mark.parametrize("ours, theirs, kwargs", [
    (flat_accuracy_score, skm.accuracy_score, {}),
    (flat_precision_score, skm.precision_score, {"average": "macro", "zero_division": 0}),
    (flat_recall_score, skm.recall_score, {"average": "micro"}),
    (flat_f1_score, skm.f1_score, {"average": "weighted", "labels": ["B-PER", "B-LOC"]}),
    (flat_f1_score, skm.f1_score, {"average": None, "zero_division": 0}),
    (flat_fbeta_score, skm.fbeta_score, {"beta": 2.0, "average": "micro"}),
    (flat_classification_report, skm.classification_report, {"zero_division": 0}),
    (flat_classification_report, skm.classification_report,
     {"labels": ["B-LOC", "I-LOC"], "output_dict": True}),
])
def test_flat_metrics_equal_sklearn_on_the_concatenated_labels(ours, theirs, kwargs):
    got, expected = ours(Y_TRUE, Y_PRED, **kwargs), theirs(FLAT_TRUE, FLAT_PRED, **kwargs)
    if isinstance(expected, str):
        assert got == expected
    elif isinstance(expected, dict):
        assert got.keys() == expected.keys()
    else:
        assert_allclose(got, expected)


def test_sample_weight_per_sequence_or_per_token():
    w = np.array([1.0, 0.0, 3.0])
    per_token = np.repeat(w, [3, 2, 4])
    assert_allclose(flat_accuracy_score(Y_TRUE, Y_PRED, sample_weight=w),
                    skm.accuracy_score(FLAT_TRUE, FLAT_PRED, sample_weight=per_token))
    assert_allclose(flat_accuracy_score(Y_TRUE, Y_PRED, sample_weight=per_token),
                    token_accuracy(Y_TRUE, Y_PRED, sample_weight=w))
    with pytest.raises(ValueError, match="one weight per sequence"):
        flat_accuracy_score(Y_TRUE, Y_PRED, sample_weight=[1.0, 2.0])


def test_mismatched_sequences_are_named():
    with pytest.raises(ValueError, match="Sequence 1"):
        flat_f1_score(Y_TRUE, [Y_PRED[0], ["O"], Y_PRED[2]], average="micro")


def test_scorers_and_string_scoring_message(toy_chunks):
    X, y = toy_chunks
    crf = CRFTagger(C=1.0).fit(X[:40], y[:40])
    y_pred = crf.predict(X[40:])
    assert flat_accuracy_scorer(crf, X[40:], y[40:]) == flat_accuracy_score(y[40:], y_pred)
    for scorer, func in [(flat_f1_scorer, flat_f1_score), (flat_recall_scorer, flat_recall_score),
                         (flat_precision_scorer, flat_precision_score)]:
        assert_allclose(scorer(crf, X[40:], y[40:]),
                        func(y[40:], y_pred, average="weighted", zero_division=0))
    scores = cross_val_score(CRFTagger(), X, y, cv=2, scoring=flat_f1_scorer)
    assert np.all((scores > 0) & (scores <= 1))
    for scoring in ("f1", "accuracy", "f1_macro"):
        with pytest.raises(ValueError, match="segment_f1_scorer, flat_f1_scorer"):
            cross_val_score(CRFTagger(), X, y, cv=2, scoring=scoring, error_score="raise")
