"""fit(X, y, *, X_val, y_val, sample_weight_val): a given validation set; keyword-only fit."""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_crfloss import CRFTagger, LOPTagger
from sklearn_crfloss.metrics import token_accuracy
from sklearn_crfloss.solvers import get_solver_tags, make_solver


def test_given_validation_set_is_scored_and_all_of_X_is_trained(toy_chunks):
    X, y = toy_chunks
    kw = dict(early_stopping=True, scoring="accuracy", n_iter_no_change=3, C=1.0)
    crf = CRFTagger(**kw).fit(X[:40], y[:40], X_val=X[40:], y_val=y[40:])
    assert len(crf.validation_scores_) == crf.n_iter_
    # The kept parameters are those of the best score on the given set.
    assert crf.best_validation_score_ == max(crf.validation_scores_)
    assert crf.best_validation_score_ == pytest.approx(token_accuracy(y[40:],
                                                                      crf.predict(X[40:])))
    # No random hold-out: every training sequence is trained on, whatever
    # validation_fraction says.
    other = CRFTagger(**kw, validation_fraction=0.5).fit(X[:40], y[:40], X_val=X[40:],
                                                         y_val=y[40:])
    np.testing.assert_array_equal(other.coef_, crf.coef_)
    held = CRFTagger(**kw).fit(X[:40], y[:40])
    assert not np.array_equal(held.coef_, crf.coef_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver, loss", [("lbfgs", "cll"), ("sgd", "cll"),
                                          ([("sgd", 2), "quickprop"], "mce")], ids=str)
def test_validation_set_without_early_stopping_is_only_logged(toy_chunks, solver, loss):
    X, y = toy_chunks
    kw = dict(solver=solver, loss=loss, scoring="accuracy", max_iter=8, random_state=0)
    models = {}
    logged = CRFTagger(**kw, callback=lambda k, f, m: models.setdefault(k, m)).fit(
        X[:40], y[:40], X_val=X[40:], y_val=y[40:])
    plain = CRFTagger(**kw).fit(X[:40], y[:40])
    # The fit is the one without X_val, bit for bit: the last parameters, not the best.
    for name in ("coef_", "transition_", "start_", "end_", "loss_curve_"):
        np.testing.assert_array_equal(getattr(logged, name), getattr(plain, name))
    assert logged.n_iter_ == plain.n_iter_ and logged.stop_reason_ == plain.stop_reason_
    assert plain.validation_scores_ is None
    # One score per iteration, each that of the model of that iteration.
    assert len(logged.validation_scores_) == logged.n_iter_ == len(models)
    for k, score in enumerate(logged.validation_scores_, 1):
        assert score == pytest.approx(token_accuracy(y[40:], models[k].predict(X[40:])))
    assert logged.best_validation_score_ == max(logged.validation_scores_)


def test_default_patience_is_the_solvers(toy_chunks):
    X, y = toy_chunks
    # L-BFGS's held-out score may stay flat for many iterations: its default
    # patience is longer than SGD's epochs.
    lbfgs, sgd = get_solver_tags(make_solver("lbfgs")), get_solver_tags(make_solver("sgd"))
    assert lbfgs.n_iter_no_change > sgd.n_iter_no_change
    assert get_solver_tags(make_solver("owlqn")).n_iter_no_change == lbfgs.n_iter_no_change
    schedule = get_solver_tags(make_solver([("sgd", 2), "lbfgs"]))
    assert schedule.n_iter_no_change == lbfgs.n_iter_no_change
    kw = dict(early_stopping=True, scoring="accuracy", C=1.0)
    default = CRFTagger(**kw).fit(X[:40], y[:40], X_val=X[40:], y_val=y[40:])
    explicit = CRFTagger(**kw, n_iter_no_change=lbfgs.n_iter_no_change).fit(
        X[:40], y[:40], X_val=X[40:], y_val=y[40:])
    np.testing.assert_array_equal(default.coef_, explicit.coef_)
    assert default.n_iter_ == explicit.n_iter_


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sample_weight_val_weights_the_score(toy_chunks):
    X, y = toy_chunks
    w = np.r_[np.zeros(10), np.ones(10)]
    crf = CRFTagger(early_stopping=True, scoring="accuracy", max_iter=5).fit(
        X[:40], y[:40], X_val=X[40:], y_val=y[40:], sample_weight_val=w)
    assert crf.best_validation_score_ == pytest.approx(
        token_accuracy(y[40:], crf.predict(X[40:]), sample_weight=w))
    loss = CRFTagger(early_stopping=True, scoring="loss", max_iter=5)
    half = loss.fit(X[:40], y[:40], X_val=X[40:], y_val=y[40:], sample_weight_val=w * 0.5)
    full = CRFTagger(**loss.get_params()).fit(X[:40], y[:40], X_val=X[40:], y_val=y[40:],
                                              sample_weight_val=w)
    np.testing.assert_allclose(half.validation_scores_, np.array(full.validation_scores_) / 2)


@pytest.mark.parametrize("kwargs, message", [
    (dict(X_val="X"), "X_val is given but y_val is not"),
    (dict(y_val="y"), "y_val is given but X_val is not"),
    (dict(X_val="X", y_val="y", sample_weight_val=np.ones(20), scoring="f1"),
     "no sequence weights"),
    (dict(X_val="X", y_val="y", sample_weight_val=np.ones(3), scoring="loss"),
     "sample_weight_val: sample_weight must have one weight per sequence"),
    (dict(X_val="X", y_val="unknown"), "y_val: Sequence 0: label 'Z'"),
    (dict(X_val="short", y_val="y"), "y_val: X and y have different numbers"),
    (dict(X_val="arrays", y_val="y"), "X_val: The estimator was fitted on dict sequences"),
])
def test_validation_set_errors(toy_chunks, kwargs, message):
    X, y = toy_chunks
    data = {"X": X[40:], "y": y[40:], "unknown": [["Z"] * len(s) for s in y[40:]],
            "short": X[40:45], "arrays": [np.ones((len(s), 2)) for s in X[40:]]}
    fit_kw = {k: data.get(v, v) if isinstance(v, str) else v for k, v in kwargs.items()
              if k in ("X_val", "y_val", "sample_weight_val")}
    params = {k: v for k, v in kwargs.items() if k in ("early_stopping", "scoring")}
    crf = CRFTagger(**{"early_stopping": True, **params})
    with pytest.raises(ValueError, match=message):
        crf.fit(X[:40], y[:40], **fit_kw)
    assert not hasattr(crf, "coef_")


def test_positional_validation_set_is_refused_with_the_keywords(toy_chunks):
    X, y = toy_chunks
    for est in (CRFTagger(), LOPTagger()):
        with pytest.raises(TypeError, match=r"fit\(X, y, X_val=X_dev, y_val=y_dev\)"):
            est.fit(X[:40], y[:40], X[40:], y[40:])
        with pytest.raises(TypeError, match="sample_weight="):
            est.fit(X[:40], y[:40], np.ones(40))


def test_lop_fits_its_weights_on_the_validation_set(toy_chunks):
    X, y = toy_chunks
    lop = LOPTagger(reduced=["w"], weights="fit", estimator=CRFTagger(C=0.3))
    val = clone(lop).fit(X[:40], y[:40], X_val=X[40:], y_val=y[40:])
    lop.fit(X[:40], y[:40])
    assert not np.allclose(lop.weights_, val.weights_)
    for e, f in zip(lop.experts_, val.experts_):  # the experts are trained on X only
        np.testing.assert_array_equal(e.coef_, f.coef_)
    with pytest.raises(ValueError, match="weights='fit' only"):
        LOPTagger().fit(X[:40], y[:40], X_val=X[40:], y_val=y[40:])


def test_warnings_of_fit_point_at_the_callers_line(toy_chunks):
    X, y = toy_chunks
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1
        CRFTagger(max_iter=2).fit(X, y)
    found = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert found and all(w.filename == __file__ and w.lineno == line for w in found)
