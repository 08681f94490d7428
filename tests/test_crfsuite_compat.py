"""sklearn_crfloss.crfsuite.CRF: sklearn-crfsuite's estimator over CRFTagger."""

import pickle

import numpy as np
import pycrfsuite
import pytest
import sklearn_crfsuite
from scipy.stats import expon
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import make_scorer
from sklearn.model_selection import RandomizedSearchCV
from sklearn.utils.validation import NotFittedError

from sklearn_crfloss import CRFTagger, metrics
from sklearn_crfloss.crfsuite import CRF, crfsuite_prior
from sklearn_crfloss.priors import ElasticNetPrior

from conftest import make_toy_chunks

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def word2features(sent, i):
    """sklearn-crfsuite's tutorial features."""
    word, postag = sent[i]
    features = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:],
                "word[-2:]": word[-2:], "word.isupper()": word.isupper(),
                "word.istitle()": word.istitle(), "word.isdigit()": word.isdigit(),
                "postag": postag, "postag[:2]": postag[:2]}
    for offset, name in ((-1, "-1"), (1, "+1")):
        if 0 <= i + offset < len(sent):
            w, p = sent[i + offset]
            features.update({f"{name}:word.lower()": w.lower(),
                             f"{name}:word.istitle()": w.istitle(),
                             f"{name}:word.isupper()": w.isupper(), f"{name}:postag": p,
                             f"{name}:postag[:2]": p[:2]})
        else:
            features["BOS" if offset < 0 else "EOS"] = True
    return features


@pytest.fixture(scope="module")
def ner(corpus):
    train, y_train = corpus("conll2002", "esp", "train")
    test, y_test = corpus("conll2002", "esp", "testb")
    X_train = [[word2features(s, i) for i in range(len(s))] for s in train[:300]]
    X_test = [[word2features(s, i) for i in range(len(s))] for s in test[:200]]
    return X_train, y_train[:300], X_test, y_test[:200]


def test_tutorial_model_matches_sklearn_crfsuite(ner):
    X_train, y_train, X_test, y_test = ner
    kwargs = dict(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100,
                  all_possible_transitions=True)
    theirs = sklearn_crfsuite.CRF(**kwargs).fit(X_train, y_train)
    ours = CRF(**kwargs).fit(X_train, y_train)
    labels = [c for c in ours.classes_ if c != "O"]
    assert sorted(theirs.classes_) == ours.classes_
    f1 = [metrics.flat_f1_score(y_test, [list(p) for p in m.predict(X_test)],
                                average="weighted", labels=labels) for m in (theirs, ours)]
    assert f1[1] > 0.6 and abs(f1[0] - f1[1]) < 0.02, f1
    # The same model: nearly the same non-zero transitions and attributes (L1 zeros
    # after 100 iterations differ a little).
    ours_t, their_t = set(ours.transition_features_), set(theirs.transition_features_)
    assert len(ours_t ^ their_t) <= 0.1 * len(ours_t | their_t)
    ours_attrs, their_attrs = set(ours.attributes_), set(theirs.attributes_)
    assert len(ours_attrs & their_attrs) > 0.95 * len(their_attrs)
    assert ours.num_attributes_ == len(ours.attributes_)
    agree = np.mean([a == b for p, q in zip(ours.predict(X_test), theirs.predict(X_test))
                     for a, b in zip(p, q)])
    assert agree > 0.98
    assert len(ours.training_log_.iterations) == ours.training_log_.last_iteration["num"] == 100


def test_prior_mapping():
    assert crfsuite_prior(0.0, 0.0) == ("none", 1.0)
    assert crfsuite_prior(0.0, 0.25) == ("l2", 2.0)
    assert crfsuite_prior(0.5, 0.0) == ("l1", 2.0)
    prior, C = crfsuite_prior(0.1, 0.1)
    assert isinstance(prior, ElasticNetPrior)
    assert prior.l1_ratio == pytest.approx(1 / 3) and C == pytest.approx(10 / 3)
    X, y = make_toy_chunks(30, seed=1)
    crf = CRF(c1=0.1, c2=0.1).fit(X, y)
    tagger = crf.estimator_
    assert tagger.boundary_potentials is False and tagger.C == pytest.approx(10 / 3)
    assert not np.any(tagger.start_) and not np.any(tagger.end_)
    # the default (c1=0, c2=1): CRFsuite's L2 objective, L-BFGS with epsilon 1e-5
    default = CRF().fit(X, y).estimator_
    assert (default.prior, default.C, default.tol) == ("l2", 0.5, 1e-5)
    assert default.solver.epsilon == 1e-5 and default.solver.max_corrections == 6
    mapped = CRF(num_memories=3, epsilon=1e-4, max_linesearch=7, delta=1e-3, min_freq=1,
                 all_possible_states=True, max_iterations=5).fit(X, y).estimator_
    assert (mapped.solver.max_corrections, mapped.solver.epsilon,
            mapped.solver.max_linesearch) == (3, 1e-4, 7)
    assert (mapped.tol, mapped.min_freq, mapped.all_possible_states, mapped.max_iter) == (
        1e-3, 2, True, 5)


@pytest.mark.parametrize("params, loss, solver_name", [
    ({"algorithm": "l2sgd", "c2": 0.5, "max_iterations": 3}, "cll", "sgd"),
    ({"algorithm": "ap", "max_iterations": 3}, "perceptron", None),
    ({"algorithm": "pa", "c": 0.5, "averaging": False, "max_iterations": 3}, "mira", None),
])
def test_online_algorithms(params, loss, solver_name):
    X, y = make_toy_chunks(30, seed=2)
    crf = CRF(**params).fit(X, y)
    tagger = crf.estimator_
    assert tagger.loss == loss and tagger.solver == solver_name
    assert len(crf.training_log_.iterations) == tagger.n_iter_ <= 3
    assert crf.score(X, y) > 0.7
    if params["algorithm"] == "l2sgd":
        assert (tagger.prior, tagger.C, tagger.average) == ("l2", 1.0, False)
    if params["algorithm"] == "pa":
        assert (tagger.C, tagger.average) == (0.5, False)


def test_refusals_name_every_option():
    X, y = make_toy_chunks(10, seed=3)
    with pytest.raises(ValueError, match="algorithm='arow' .AROW. is not offered"):
        CRF(algorithm="arow").fit(X, y)
    with pytest.raises(ValueError) as info:
        CRF(algorithm="pa", c1=0.1, pa_type=2, error_sensitive=False, epsilon=0.5,
            trainer_cls=object).fit(X, y)
    message = str(info.value)
    for part in ("c1=0.1 is not a parameter of algorithm='pa'", "pa_type=2", "error_sensitive",
                 "epsilon=0.5", "trainer_cls"):
        assert part in message
    with pytest.raises(ValueError, match="period=5.*linesearch='Backtracking'|linesearch"
                                         "='Backtracking'.*period=5"):
        CRF(period=5, linesearch="Backtracking").fit(X, y)
    with pytest.raises(ValueError, match="calibration_eta=0.1 is not a parameter"):
        CRF(calibration_eta=0.1).fit(X, y)
    with pytest.raises(ValueError, match="is not one of"):
        CRF(algorithm="newton").fit(X, y)
    with pytest.raises(ValueError, match="Pass both X_dev and y_dev"):
        CRF().fit(X, y, X_dev=X)
    # CRFsuite's defaults, given explicitly, are accepted
    CRF(algorithm="l2sgd", period=10, calibration_samples=1000, max_iterations=1).fit(X, y)
    with pytest.raises(NotFittedError):
        CRF().predict(X)


def test_methods_and_attributes():
    X, y = make_toy_chunks(40, seed=4)
    crf = CRF(c2=0.05).fit(X, y)
    tagger = crf.estimator_
    assert crf.predict(X) == tagger.predict(X)
    assert crf.predict_single(X[3]) == tagger.predict([X[3]])[0]
    marginals = crf.predict_marginals(X[:5])
    for dicts, array in zip(marginals, tagger.predict_marginals(X[:5])):
        assert [list(d) for d in dicts] == [crf.classes_] * len(dicts)
        np.testing.assert_allclose([list(d.values()) for d in dicts], array)
    assert crf.predict_marginals_single(X[0]) == marginals[0]
    assert crf.score(X, y) == metrics.flat_accuracy_score(y, crf.predict(X))
    assert crf.state_features_ == tagger.state_features_
    assert crf.transition_features_ == tagger.transition_features_
    assert crf.classes_ == tagger.classes_.tolist()
    assert crf.size_ > 0 and crf.training_log_.featgen_num_features == tagger.n_parameters_
    first = crf.training_log_.iterations[0]
    assert {"num", "loss", "time", "feature_norm", "active_features", "scores"} <= set(first)
    assert first["loss"] == tagger.loss_curve_[0]
    again = pickle.loads(pickle.dumps(crf))
    assert again.predict(X) == crf.predict(X) and again.estimator_.callback is None


def test_development_set_is_logged_per_iteration():
    X, y = make_toy_chunks(60, seed=5)
    crf = CRF(max_iterations=15).fit(X[:40], y[:40], X[40:], y[40:])
    last = crf.training_log_.last_iteration
    assert last["item_accuracy_float"] == pytest.approx(crf.score(X[40:], y[40:]))
    assert set(last["scores"]) == set(crf.classes_)
    score = last["scores"]["B-NP"]
    assert score.ref == sum(s.count("B-NP") for s in y[40:])
    assert 0 <= last["avg_f1"] <= 1 and 0 <= last["instance_accuracy_float"] <= 1


def test_clone_and_search_over_c1_c2():
    X, y = make_toy_chunks(45, seed=6)
    crf = CRF(algorithm="lbfgs", max_iterations=20, all_possible_transitions=True)
    assert clone(crf).get_params() == crf.get_params()
    assert crf.set_params(c1=0.3).c1 == 0.3
    scorer = make_scorer(metrics.flat_f1_score, average="weighted",
                         labels=["B-NP", "I-NP", "B-VP", "I-VP"])
    search = RandomizedSearchCV(crf, {"c1": expon(scale=0.5), "c2": expon(scale=0.05)},
                                n_iter=2, cv=3, scoring=scorer, random_state=0).fit(X, y)
    assert set(search.best_params_) == {"c1", "c2"}
    best = search.best_estimator_
    assert best.estimator_.C == pytest.approx(1 / (best.c1 + 2 * best.c2))


def test_model_filename_both_ways(tmp_path):
    X, y = make_toy_chunks(30, seed=7)
    path = str(tmp_path / "model.crfsuite")
    crf = CRF(c2=0.1, model_filename=path).fit(X, y)
    tagger = pycrfsuite.Tagger()
    tagger.open(path)
    assert [tagger.tag(pycrfsuite.ItemSequence(x)) for x in X] == crf.predict(X)
    assert crf.size_ == (tmp_path / "model.crfsuite").stat().st_size
    deployed = CRF(model_filename=path)  # not fitted: reads the file
    assert deployed.predict(X) == crf.predict(X)
    # and sklearn-crfsuite opens the model this package trained
    theirs = sklearn_crfsuite.CRF(model_filename=path)
    assert [list(p) for p in theirs.predict(X)] == crf.predict(X)


def test_same_model_as_crftagger():
    X, y = make_toy_chunks(40, seed=8)
    crf = CRF(c1=0.05, c2=0.2, max_iterations=30).fit(X, y)
    prior, C = crfsuite_prior(0.05, 0.2)
    direct = CRFTagger(prior=prior, C=C, max_iter=30, boundary_potentials=False,
                       solver=crf.estimator_.solver).fit(X, y)
    np.testing.assert_array_equal(crf.estimator_.coef_, direct.coef_)
    assert ConvergenceWarning  # the module-level filter silences the max_iter warnings
