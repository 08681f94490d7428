"""Model files on CoNLL-2000 (1,000 training sentences, every test sentence).

- save_model / load_model round-trip the predictions exactly;
- a CRFTagger trained with boundary_potentials=False and exported is read by
  pycrfsuite.Tagger, which tags every test sentence as predict does;
- a model trained by sklearn_crfsuite.CRF and imported predicts every test
  sentence as sklearn-crfsuite does, and softmax-margin and MCE-F continue
  training it with warm_start=True.
"""

import warnings

import numpy as np
import pycrfsuite
import pytest
import sklearn_crfsuite

from sklearn_crfloss import CRFTagger
from sklearn_crfloss._data._attribute_names import crfsuite_name, separator
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
from sklearn_crfloss.io import export_crfsuite, import_crfsuite, load_model, save_model
from sklearn_crfloss.metrics import segment_f1_score


@pytest.fixture(scope="module")
def conll(corpus):
    X_train, y_train = corpus("conll2000", "train")
    X_test, y_test = corpus("conll2000", "test")
    features = TemplateFeatures(CONLL2000_TEMPLATE)
    F_train = features.fit_transform(X_train[:1000])
    return F_train, y_train[:1000], features.transform(X_test), y_test


@pytest.fixture(scope="module")
def crf(conll):
    F_train, y_train, _, _ = conll
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: max_iter is kept short
        return CRFTagger(boundary_potentials=False, C=10.0, max_iter=40).fit(F_train, y_train)


@pytest.fixture(scope="module")
def crfsuite_model(conll, tmp_path_factory):
    """A model trained by sklearn-crfsuite (L-BFGS, c2=0.5), its file and predictions."""
    F_train, y_train, F_test, _ = conll
    path = tmp_path_factory.mktemp("crfsuite") / "sk.crfsuite"
    sk = sklearn_crfsuite.CRF(algorithm="lbfgs", c2=0.5, max_iterations=30,
                              model_filename=str(path))
    sk.fit(F_train, y_train)
    return path, [list(p) for p in sk.predict(F_test)]


def test_save_load_predicts_exactly(conll, crf, tmp_path):
    _, _, F_test, _ = conll
    save_model(crf, tmp_path / "chunker.crfl")
    loaded = load_model(tmp_path / "chunker.crfl")
    assert loaded.predict(F_test) == crf.predict(F_test)
    np.testing.assert_array_equal(loaded.coef_, crf.coef_)
    np.testing.assert_array_equal(loaded.sequence_log_proba(F_test[:50]),
                                  crf.sequence_log_proba(F_test[:50]))


def test_export_tags_every_test_sentence_as_predict(conll, crf, tmp_path):
    _, _, F_test, y_test = conll
    assert np.all(crf.start_ == 0) and np.all(crf.end_ == 0)
    path = tmp_path / "chunker.crfsuite"
    export_crfsuite(crf, path)
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    tagged = [tagger.tag(pycrfsuite.ItemSequence(x)) for x in F_test]
    predicted = crf.predict(F_test)
    assert len(predicted) == 2012
    assert tagged == predicted
    assert segment_f1_score(y_test, tagged) > 0.85  # a real chunker, not a constant one
    # And back: the imported file predicts the same.
    assert import_crfsuite(path).predict(F_test) == predicted


def test_import_predicts_as_sklearn_crfsuite(conll, crfsuite_model):
    _, _, F_test, y_test = conll
    path, expected = crfsuite_model
    imported = import_crfsuite(path)
    assert imported.predict(F_test) == expected
    assert np.all(imported.start_ == 0) and np.all(imported.end_ == 0)
    assert segment_f1_score(y_test, expected) > 0.85


# QuickProp for MCE-F: its default schedule starts with SGD epochs, which on
# 300 sentences move the imported weights further than this test is about.
@pytest.mark.parametrize("loss, max_iter, solver",
                         [("softmax_margin", 4, None), ("mce_f", 2, "quickprop")])
def test_warm_start_continues_an_imported_model(conll, crfsuite_model, loss, max_iter, solver):
    F_train, y_train, F_test, y_test = conll
    path, expected = crfsuite_model
    imported = import_crfsuite(path)
    before = imported.state_features_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: a few iterations only
        warm = imported.set_params(loss=loss, warm_start=True, max_iter=max_iter, solver=solver)
        warm.fit(F_train[:300], y_train[:300])  # a few sentences keep the test short
    assert warm.n_iter_ >= 1 and np.all(warm.start_ == 0)
    # Training started from the imported weights, matched by python-crfsuite
    # attribute name (the new fit may name them 'key=value'): after a few
    # iterations the weights are still close to them, and the model is as
    # good as the imported one.
    after = {(crfsuite_name(a, separator(warm._features)), c): v
             for (a, c), v in warm.state_features_.items()}
    common = sorted(set(before) & set(after))
    assert len(common) > 0.3 * len(before)  # the attributes of the 300 sentences
    r = np.corrcoef([before[k] for k in common], [after[k] for k in common])[0, 1]
    assert r > 0.9
    assert segment_f1_score(y_test[:500], warm.predict(F_test[:500])) > segment_f1_score(
        y_test[:500], expected[:500]) - 0.01
