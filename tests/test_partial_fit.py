"""CRFTagger.partial_fit: one epoch per call, the online solver's run continued across calls."""

import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.solvers import SGD

from conftest import make_toy_chunks

CLASSES = ["O", "B-NP", "I-NP", "B-VP", "I-VP"]


def _fit_quietly(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter reached: no convergence
        return est.fit(X, y)


def _assert_same_model(a, b, rtol=1e-10):
    assert_array_equal(a.classes_, b.classes_)
    coef = a.coef_
    if a.attributes_.shape != b.attributes_.shape:
        # partial_fit keeps every hashing column (its size is fixed by the first
        # call), fit only those that occur; the others stay 0.
        where = {name: k for k, name in enumerate(a.attributes_.tolist())}
        used = np.array([where[name] for name in b.attributes_.tolist()])
        rest = np.setdiff1d(np.arange(coef.shape[1]), used)
        assert not np.any(coef[:, rest])
        coef = coef[:, used]
    else:
        assert_array_equal(a.attributes_, b.attributes_)
    assert_allclose(coef, b.coef_, rtol=rtol, atol=1e-12)
    assert_allclose(a.transition_, b.transition_, rtol=rtol, atol=1e-12)
    assert_allclose(a.start_, b.start_, rtol=rtol, atol=1e-12)
    assert_allclose(a.end_, b.end_, rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("params", [
    {"loss": "cll"},                      # compiled SGD loop, eta0 calibrated
    {"loss": "softmax_margin", "average": False},
    {"loss": "risk"},                     # generic minibatch path
    {"loss": "cll", "feature_hashing": 64},
    {"loss": "perceptron"},
    {"loss": "mira"},
])
def test_one_call_is_one_epoch_of_fit(params):
    X, y = make_toy_chunks(80, seed=3)
    rule = params["loss"] if params["loss"] in ("perceptron", "mira") else "sgd"
    full = _fit_quietly(CRFTagger(solver=rule, max_iter=1, init=None, random_state=0, **params),
                        X, y)
    part = CRFTagger(random_state=0, **params).partial_fit(X, y, classes=CLASSES)
    _assert_same_model(part, full)
    assert part.n_iter_ == 1 and not part.converged_
    assert part.predict(X) == full.predict(X)


@pytest.mark.parametrize("params", [
    {"loss": "cll", "prior": "none", "solver": SGD(eta0=0.05, power_t=0.0, random_state=1)},
    {"loss": "cll", "prior": "none", "solver": SGD(eta0=0.05, power_t=0.0, average=False, random_state=1)},
    {"loss": "perceptron"},
    {"loss": "mira", "average": False},
])
def test_calls_continue_the_run(params):
    # With a constant step and no prior, three calls on the training set are
    # the three epochs of fit: the same shuffles, scale, averaging and step
    # count carried from one call to the next.
    X, y = make_toy_chunks(60, seed=4)
    rule = params["loss"] if params["loss"] in ("perceptron", "mira") else None
    full = _fit_quietly(CRFTagger(max_iter=3, random_state=1, **dict(params, solver=params.get(
        "solver", rule))), X, y)
    part = CRFTagger(random_state=1, **params)
    for _ in range(3):
        part.partial_fit(X, y, classes=CLASSES)
    _assert_same_model(part, full)
    # A fresh run on the last batch alone is another model.
    fresh = CRFTagger(random_state=1, **params).partial_fit(X, y, classes=CLASSES)
    assert np.abs(fresh.coef_ - part.coef_).max() > 1e-3
    assert part.n_iter_ == 3 and len(part.loss_curve_) == 3


def test_vocabulary_grows_and_predict_works_between_calls():
    X, y = make_toy_chunks(40, seed=5)
    Xa = [[dict(tok, src="a") for tok in x] for x in X[:20]]
    Xb = [[dict(tok, src="b") for tok in x] for x in X[20:]]
    crf = CRFTagger(random_state=0).partial_fit(Xa, y[:20], classes=CLASSES)
    before = crf.attributes_.tolist()
    assert "src:a" in before and "src:b" not in before
    predicted = crf.predict(Xb)  # unseen attributes are ignored
    assert [len(p) for p in predicted] == [len(x) for x in Xb]
    crf.partial_fit(Xb, y[20:])
    after = crf.attributes_.tolist()
    assert after[:len(before)] == before and "src:b" in after
    assert crf.coef_.shape == (5, len(after))
    assert crf.predict(Xb) is not None
    # The weights of the new attribute were trained, not left at 0.
    assert np.abs(crf.coef_[:, after.index("src:b")]).max() > 0


def test_hashing_fixes_the_size_and_labels_subset_is_fine():
    X, y = make_toy_chunks(40, seed=6)
    crf = CRFTagger(feature_hashing=128, random_state=0)
    only_np = [i for i, s in enumerate(y) if set(s) <= {"O", "B-NP", "I-NP"}]
    crf.partial_fit([X[i] for i in only_np], [y[i] for i in only_np], classes=CLASSES)
    assert crf.coef_.shape == (5, 128)
    crf.partial_fit(X, y)
    assert crf.coef_.shape == (5, 128)
    assert_array_equal(crf.classes_, sorted(CLASSES))


def test_bad_input_is_refused_and_leaves_the_model():
    X, y = make_toy_chunks(30, seed=7)
    crf = CRFTagger(random_state=0)
    with pytest.raises(ValueError, match="classes must be given"):
        crf.partial_fit(X, y)
    assert not hasattr(crf, "coef_")
    with pytest.raises(ValueError, match="two distinct"):
        crf.partial_fit(X, y, classes=["O"])
    with pytest.raises(ValueError, match="Sequence 0: label"):
        crf.partial_fit(X, y, classes=["O", "B-NP"])
    assert not hasattr(crf, "coef_")
    crf.partial_fit(X, y, classes=CLASSES)
    coef = crf.coef_.copy()
    bad = [list(s) for s in y]
    bad[3][0] = "B-PP"
    with pytest.raises(ValueError, match="Sequence 3: label 'B-PP'"):
        crf.partial_fit(X, bad)
    with pytest.raises(ValueError, match="differs from the first call"):
        crf.partial_fit(X, y, classes=["O", "B-NP", "I-NP"])
    arrays = [np.ones((len(s), 3)) for s in y]
    with pytest.raises(ValueError, match="fitted on dict sequences"):
        crf.partial_fit(arrays, y)
    assert_array_equal(crf.coef_, coef)
    assert crf.n_iter_ == 1
    with pytest.raises(ValueError, match="online solver"):
        CRFTagger(solver="lbfgs").partial_fit(X, y, classes=CLASSES)
    with pytest.raises(ValueError, match="min_freq"):
        CRFTagger(min_freq=2).partial_fit(X, y, classes=CLASSES)
    with pytest.raises(ValueError, match="prior"):
        CRFTagger(prior="l1").partial_fit(X, y, classes=CLASSES)


def test_fit_starts_anew_and_the_model_pickles():
    X, y = make_toy_chunks(40, seed=8)
    crf = CRFTagger(random_state=0)
    crf.partial_fit(X, y, classes=CLASSES).partial_fit(X, y)
    _fit_quietly(crf.set_params(solver="sgd", max_iter=1), X, y)
    fitted = crf.coef_.copy()
    with pytest.warns(UserWarning, match="partial_fit starts anew"):
        crf.partial_fit(X, y, classes=CLASSES)  # a new run: classes needed again
    assert crf.n_iter_ == 1
    assert_allclose(crf.coef_, fitted, rtol=1e-10, atol=1e-12)
    again = pickle.loads(pickle.dumps(crf))
    again.partial_fit(X, y)
    crf.partial_fit(X, y)
    _assert_same_model(again, crf)


def test_partial_fit_on_a_loaded_model_warns_that_it_starts_anew(tmp_path):
    from sklearn_crfloss.io import load_model, save_model

    X, y = make_toy_chunks(40, seed=8)
    crf = CRFTagger(random_state=0)
    crf.partial_fit(X, y, classes=CLASSES).partial_fit(X, y)
    save_model(crf, tmp_path / "model")
    loaded = load_model(tmp_path / "model")
    with pytest.warns(UserWarning, match="warm_start=True"):
        loaded.partial_fit(X, y, classes=CLASSES)
    assert loaded.n_iter_ == 1  # from zero, as the warning says
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        loaded.partial_fit(X, y)  # the run it started continues: no warning


def test_array_input():
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(int(n), 4)) for n in rng.integers(1, 6, size=30)]
    y = [["a" if row[0] > 0 else "b" for row in x] for x in X]
    crf = CRFTagger(random_state=0)
    for _ in range(5):
        crf.partial_fit(X, y, classes=["a", "b"])
    assert crf.score(X, y) > 0.9
    with pytest.raises(ValueError, match="features, expected 4"):
        crf.partial_fit([np.ones((2, 3))], [["a", "b"]])


@pytest.mark.parametrize("names", [
    {"O": ("o", 0), "B-NP": ("b", 1), "I-NP": ("i", 2), "B-VP": ("b", 3), "I-VP": ("i", 4)},
    {"O": 0, "B-NP": "B-NP", "I-NP": 1, "B-VP": "B-VP", "I-VP": 2},
])
def test_classes_keep_the_labels_as_given(names):
    # Tuples are not flattened, ints not turned into strings: the labels
    # of partial_fit are those of fit, in the same order.
    X, y = make_toy_chunks(40, seed=2)
    y = [[names[label] for label in s] for s in y]
    classes = list(names.values())
    online = CRFTagger(random_state=0).partial_fit(X, y, classes=classes[::-1])
    online.partial_fit(X, y, classes=classes)  # the same labels, in any order
    batch = CRFTagger(solver="sgd", max_iter=1, random_state=0).fit(X, y)
    assert online.classes_.tolist() == batch.classes_.tolist()
    assert all(type(a) is type(b) for a, b in zip(online.classes_.tolist(), classes)
               if a == b)
    assert {label for s in online.predict(X) for label in s} <= set(classes)
    with pytest.raises(ValueError, match="differs from the first call"):
        online.partial_fit(X, y, classes=classes[:-1])


@pytest.mark.parametrize("classes, error, match", [
    (["a"], ValueError, "at least two distinct labels"),
    (["a", "a"], ValueError, "at least two distinct labels"),
    (["a", ["b"]], TypeError, r"classes\[1\] = \['b'\] of type list is not hashable"),
    (["a", float("nan")], ValueError, "NaN"),
    (["a", None], ValueError, "None"),
    ("ab", TypeError, "list of labels"),
])
def test_bad_classes_are_named(classes, error, match):
    X, y = make_toy_chunks(10, seed=2)
    with pytest.raises(error, match=match):
        CRFTagger().partial_fit(X, y, classes=classes)
