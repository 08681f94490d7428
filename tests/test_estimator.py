"""CRFTagger: scikit-learn behaviour, fitted attributes, warm start, persistence."""

import pickle
import re
import subprocess
import sys
import warnings
from pathlib import Path

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.feature_extraction import DictVectorizer, FeatureHasher
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score, cross_validate
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils import estimator_checks, get_tags

from sklearn_crfloss import CRFTagger, LOPTagger
from sklearn_crfloss._data._hashing import hashed_pairs
from sklearn_crfloss.inference import forward_backward, sequence_scores
from sklearn_crfloss.losses import ConditionalLogLikelihood, MixedLoss
from sklearn_crfloss.priors import GaussianPrior
from sklearn_crfloss.metrics import (
    hamming_scorer,
    segment_f1_scorer,
    token_accuracy,
    token_accuracy_scorer,
)

from _oracle import brute_force
from conftest import make_toy_chunks

CHECKS = [
    "check_no_attributes_set_in_init",
    "check_parameters_default_constructible",
    "check_get_params_invariance",
    "check_set_params",
    "check_estimator_repr",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_estimator_cloneable",
    "check_param_validation",
    "check_estimator_tags_renamed",
    "check_valid_tag_types",
    "check_mixin_order",
    "check_estimators_unfitted",
]


@pytest.fixture(scope="module")
def fitted_toy():
    """The toy chunks and a default CRFTagger fitted on them; tests only read it."""
    X, y = make_toy_chunks()
    return X, y, CRFTagger().fit(X, y)


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("estimator", [CRFTagger(), LOPTagger()], ids=type)
def test_sklearn_estimator_checks(check, estimator):
    getattr(estimator_checks, check)(type(estimator).__name__, estimator)


def test_the_quickstart_lists_the_checks_that_run():
    # The documented list of applicable checks is the one run above.
    text = (Path(__file__).resolve().parents[1] / "doc" / "quickstart.rst").read_text()
    section = text[text.index("scikit-learn's estimator checks"):]
    assert re.findall(r"^   \* - ``(check_\w+)``", section, flags=re.M) == CHECKS


def test_fit_predict_and_attributes(toy_chunks):
    X, y = toy_chunks
    crf = CRFTagger(C=10.0)
    assert crf.fit(X, y) is crf
    L = len(crf.classes_)
    assert list(crf.classes_) == sorted({lab for s in y for lab in s})
    assert crf.coef_.shape == (L, crf.n_features_in_)
    assert crf.attributes_.shape == (crf.n_features_in_,)
    assert crf.transition_.shape == (L, L)
    assert crf.start_.shape == crf.end_.shape == (L,)
    assert crf.n_iter_ == len(crf.loss_curve_) >= 1
    assert crf.converged_
    assert np.all(np.diff(crf.loss_curve_) <= 1e-9)
    assert crf.objective_ == crf.loss_curve_[-1]
    pred = crf.predict(X)
    assert len(pred) == len(X)
    assert all(type(p) is list and len(p) == len(x) for p, x in zip(pred, X))
    assert crf.score(X, y) > 0.8


@pytest.fixture(scope="module")
def array_toy():
    """Short toy sequences as dense arrays and a CRFTagger fitted on them.

    With array input the unary potentials are ``X_i @ coef_.T`` by the
    definition of ``coef_``, so tests can rebuild them without private
    methods. Sequences have at most 4 tokens (5 ** 4 label sequences), so
    enumeration is cheap. Tests only read the model.
    """
    Xd, y = make_toy_chunks(40, seed=4, max_len=4)
    vec = DictVectorizer(sparse=False).fit([tok for seq in Xd for tok in seq])
    X = [vec.transform(seq) for seq in Xd]
    crf = CRFTagger(C=1.0).fit(X, y)
    unary = np.vstack(X) @ crf.coef_.T
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    return X, crf, unary, offsets


def test_predict_marginals_match_kernel_and_sum_to_one(array_toy):
    X, crf, unary, offsets = array_toy
    L = len(crf.classes_)
    marg = crf.predict_marginals(X)
    assert [m.shape for m in marg] == [(len(x), L) for x in X]
    assert_allclose(np.concatenate(marg).sum(axis=1), 1.0, atol=1e-12)
    # They are the kernel's on the model's potentials ...
    fb = forward_backward(unary, crf.transition_, crf.start_, crf.end_, offsets)
    assert_allclose(np.concatenate(marg), fb.marginals, rtol=1e-12, atol=1e-15)
    # ... and those of p(y | x) by enumerating every label sequence.
    oracle = brute_force(unary, crf.transition_, crf.start_, crf.end_, offsets)
    assert_allclose(np.concatenate(marg), oracle["marginals"], rtol=1e-9, atol=1e-12)


def test_decode_scores_are_viterbi_scores(array_toy):
    X, crf, unary, offsets = array_toy
    labels, scores = crf.decode(X)
    assert scores.shape == (len(X),)
    assert labels == crf.predict(X)
    path = np.searchsorted(crf.classes_, np.concatenate(labels))
    # Each score is the score of its decoded path ...
    assert_allclose(scores, sequence_scores(unary, crf.transition_, crf.start_, crf.end_,
                                            path, offsets), rtol=1e-12)
    # ... and the maximum over all n_classes ** length label sequences.
    oracle = brute_force(unary, crf.transition_, crf.start_, crf.end_, offsets)
    assert_allclose(scores, oracle["score"], rtol=1e-12)
    assert_array_equal(path, oracle["path"])


def test_empty_sequence_in_predict_returns_empty_array(fitted_toy):
    X, y, crf = fitted_toy
    pred = crf.predict([[], X[0], []])
    assert pred[0] == [] and pred[2] == []
    assert pred[1] == crf.predict([X[0]])[0]
    assert crf.predict([]) == []
    assert crf.predict_marginals([[]])[0].shape == (0, len(crf.classes_))


def test_not_fitted_raises():
    with pytest.raises(NotFittedError):
        CRFTagger().predict([[{"a": 1}]])


def test_clone_params_repr_html(toy_chunks):
    crf = CRFTagger(C=0.5, loss=ConditionalLogLikelihood(), max_iter=7)
    c2 = clone(crf)
    assert c2.get_params()["C"] == 0.5 and c2.max_iter == 7
    assert c2.loss is not crf.loss
    assert "loss" in crf.get_params(deep=True)
    crf.set_params(C=3.0)
    assert crf.C == 3.0
    assert "CRFTagger" in repr(crf) and "C=0.5" in repr(c2)
    assert "CRFTagger" in crf._repr_html_()
    tags = get_tags(crf)
    assert tags.input_tags.two_d_array is False
    assert tags.target_tags.required is True


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_nested_parameters_of_a_loss_name(toy_chunks):
    # set_params(loss='mixed', loss__lam=...) sets the loss object the name
    # stands for, so get_params, clone, fit and a grid over both agree.
    X, y = toy_chunks
    crf = CRFTagger(max_iter=5).set_params(loss="mixed", loss__lam=0.3)
    assert isinstance(crf.loss, MixedLoss) and crf.loss.lam == 0.3
    assert crf.get_params()["loss__lam"] == 0.3
    copy = clone(crf)
    assert copy.loss is not crf.loss and copy.get_params()["loss__lam"] == 0.3
    expected = CRFTagger(max_iter=5, loss=MixedLoss(lam=0.3)).fit(X, y)
    assert_array_equal(crf.fit(X, y).coef_, expected.coef_)
    # A name already in place, and the prior, work the same way.
    assert CRFTagger(loss="mixed").set_params(loss__lam=0.8).loss.lam == 0.8
    prior = CRFTagger().set_params(prior__mean=0.5).prior
    assert isinstance(prior, GaussianPrior) and prior.mean == 0.5
    assert CRFTagger().set_params(loss="mixed").loss == "mixed"  # no nested ones: a name
    search = GridSearchCV(CRFTagger(max_iter=3), {"loss": ["mixed"], "loss__lam": [0.2, 0.8]},
                          cv=2).fit(X, y)
    assert search.best_estimator_.loss.lam in (0.2, 0.8)


def test_under_warnings_as_errors_inside_pipeline():
    pipe = Pipeline([("id", FunctionTransformer()), ("crf", CRFTagger())])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clone(pipe)
        repr(pipe)
        params = pipe.get_params(deep=True)
        get_tags(pipe)
    assert "crf__C" in params and "crf__loss" in params


def test_pickle_and_joblib_round_trip_in_fresh_process(fitted_toy, tmp_path):
    X, y, crf = fitted_toy
    expected = crf.predict(X)
    path = tmp_path / "model.joblib"
    joblib.dump(crf, path)
    pickle.dump((X, expected), open(tmp_path / "data.pkl", "wb"))
    again = pickle.loads(pickle.dumps(crf))
    assert all(np.array_equal(a, b) for a, b in zip(again.predict(X), expected))
    code = (
        "import joblib, pickle, sys, numpy as np\n"
        f"crf = joblib.load({str(path)!r})\n"
        f"X, expected = pickle.load(open({str(tmp_path / 'data.pkl')!r}, 'rb'))\n"
        "pred = crf.predict(X)\n"
        "sys.exit(0 if all(np.array_equal(a, b) for a, b in zip(pred, expected)) else 3)\n"
    )
    # cwd away from the checkout: "python -c" puts the cwd first on sys.path.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_pipeline_gridsearch_with_segment_f1(toy_chunks):
    # The search (in two worker processes) scores each C as a serial
    # cross_val_score on the same folds does; C=0.01 flattens the model, so
    # C=10 wins; the refitted pipeline is a fresh fit with C=10.
    X, y = toy_chunks
    pipe = Pipeline([("id", FunctionTransformer()), ("crf", CRFTagger(max_iter=300))])
    cv = KFold(3)
    grid = [0.01, 10.0]
    gs = GridSearchCV(pipe, {"crf__C": grid}, scoring=segment_f1_scorer, cv=cv, n_jobs=2)
    gs.fit(X, y)
    recomputed = [cross_val_score(clone(pipe).set_params(crf__C=C), X, y, cv=cv,
                                  scoring=segment_f1_scorer).mean() for C in grid]
    assert_allclose(gs.cv_results_["mean_test_score"], recomputed, rtol=1e-12)
    assert recomputed[1] > recomputed[0] + 0.1
    assert gs.best_params_ == {"crf__C": 10.0}
    assert gs.best_score_ == max(recomputed)
    fresh = clone(pipe).set_params(crf__C=10.0).fit(X, y)
    assert_allclose(gs.best_estimator_["crf"].coef_, fresh["crf"].coef_, rtol=1e-12)
    pred = gs.predict(X[:4])
    assert pred == fresh.predict(X[:4])


def test_cross_val_score_and_cross_validate(toy_chunks):
    X, y = toy_chunks
    crf = CRFTagger(max_iter=50)
    scores = cross_val_score(crf, X, y, cv=3)
    assert scores.shape == (3,) and np.all((scores > 0.5) & (scores <= 1.0))
    res = cross_validate(crf, X, y, cv=KFold(3), scoring={"f1": segment_f1_scorer,
                                                           "hamming": hamming_scorer})
    assert np.all(res["test_f1"] > 0.3)
    assert np.all(res["test_hamming"] <= 0.0)


def test_two_labels_only():
    # O against everything else: the words of non-O tokens come from other
    # vocabularies (80 % of the time), so both labels are learnable.
    X, y = make_toy_chunks(n_sequences=60, seed=2)
    y = [["O" if lab == "O" else "X" for lab in s] for s in y]
    crf = CRFTagger().fit(X, y)
    assert crf.classes_.tolist() == ["O", "X"]
    assert crf.coef_.shape[0] == 2 and crf.transition_.shape == (2, 2)
    assert crf.start_.shape == crf.end_.shape == (2,)
    gold = np.concatenate(y)
    pred = np.concatenate(crf.predict(X))
    for label in ("O", "X"):  # each label predicted on most of its tokens
        assert np.mean(pred[gold == label] == label) > 0.8
    marg = crf.predict_marginals(X)
    assert all(m.shape == (len(x), 2) for m, x in zip(marg, X))
    assert_allclose(np.concatenate(marg).sum(axis=1), 1.0, atol=1e-12)
    res = cross_validate(CRFTagger(), X, y, cv=KFold(3),
                         scoring={"hamming": hamming_scorer, "accuracy": token_accuracy_scorer})
    # hamming_scorer is minus the token error rate.
    assert_allclose(res["test_hamming"], res["test_accuracy"] - 1.0, atol=1e-12)
    assert np.all(res["test_accuracy"] > 0.8)
    assert crf.score(X, y) == token_accuracy(y, crf.predict(X))


def test_array_and_sparse_input_give_the_same_model():
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(int(n), 4)) for n in rng.integers(1, 7, size=40)]
    y = [np.where(x[:, 0] > 0, "a", "b") for x in X]
    dense = CRFTagger(C=1.0).fit(X, y)
    sparse = CRFTagger(C=1.0).fit([sp.csr_matrix(x) for x in X], y)
    rows = CRFTagger(C=1.0).fit([x.tolist() for x in X], y)
    assert_allclose(dense.coef_, sparse.coef_, atol=1e-8)
    assert_allclose(dense.coef_, rows.coef_, atol=1e-8)
    assert dense.n_features_in_ == 4
    assert dense.score(X, y) > 0.9


def test_all_possible_states_trains_more_weights(toy_chunks):
    X, y = toy_chunks
    observed = CRFTagger().fit(X, y)
    full = CRFTagger(all_possible_states=True).fit(X, y)
    L = len(full.classes_)
    assert full.n_parameters_ == full.n_features_in_ * L + L * L + 2 * L
    assert observed.n_parameters_ < full.n_parameters_
    assert full.objective_ <= observed.objective_ + 1e-6


def test_min_freq_drops_rare_attributes(toy_chunks):
    X, y = toy_chunks
    all_ = CRFTagger().fit(X, y)
    cut = CRFTagger(min_freq=5).fit(X, y)
    assert cut.n_features_in_ < all_.n_features_in_
    counts = {}
    for s in X:
        for tok in s:
            for k, v in tok.items():
                key = f"{k}:{v}" if isinstance(v, str) else k
                counts[key] = counts.get(key, 0) + 1
    assert set(cut.attributes_) == {a for a, c in counts.items() if c >= 5}
    cut.predict(X)


def test_feature_hashing(toy_chunks):
    X, y = toy_chunks
    crf = CRFTagger(feature_hashing=2**10).fit(X, y)
    # Only the hashed columns that occur are kept (and named by their column).
    used = {f"hash_{k}" for k in np.unique(FeatureHasher(2**10, input_type="pair",
            alternate_sign=False).transform(hashed_pairs(
                [t for s in X for t in s], np.zeros(1, dtype=np.intp))).indices)}
    assert set(crf.attributes_) == used and crf.n_features_in_ == len(used) < 2**10
    assert crf.score(X, y) > 0.8


def test_sample_weight_integer_equals_duplication(toy_chunks):
    X, y = toy_chunks
    X, y = X[:20], y[:20]
    w = np.array([2 if i % 3 == 0 else 1 for i in range(20)])
    Xd = [x for x, k in zip(X, w) for _ in range(k)]
    yd = [s for s, k in zip(y, w) for _ in range(k)]
    a = CRFTagger(tol=1e-10).fit(X, y, sample_weight=w)
    b = CRFTagger(tol=1e-10).fit(Xd, yd)
    assert_allclose(a.objective_, b.objective_, rtol=1e-6)
    assert_allclose(a.coef_, b.coef_, atol=1e-4)


def test_warm_start_continues_from_previous_fit(toy_chunks):
    X, y = toy_chunks
    crf = CRFTagger(warm_start=True, max_iter=5)
    with pytest.warns(ConvergenceWarning):
        crf.fit(X, y)
    first = crf.loss_curve_[-1]
    crf.set_params(max_iter=200)
    crf.fit(X, y)
    assert crf.loss_curve_[0] <= first + 1e-9
    # New attributes and labels are taken in, known ones keep their weights.
    X2 = X + [[{"w": "brand-new", "bias": 1.0}]]
    y2 = y + [["B-PP"]]
    crf.set_params(max_iter=1)
    with pytest.warns(ConvergenceWarning):
        crf.fit(X2, y2)
    assert "B-PP" in crf.classes_


def test_max_iter_raises_convergence_warning(toy_chunks):
    X, y = toy_chunks
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        crf = CRFTagger(max_iter=2).fit(X, y)
    assert not crf.converged_ and crf.n_iter_ == 2


def test_verbose_prints_one_line_per_iteration(toy_chunks, capsys):
    X, y = toy_chunks
    crf = CRFTagger(verbose=1).fit(X, y)
    lines = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("[loss='cll'] iter")]
    assert len(lines) == crf.n_iter_
    assert "objective" in lines[0] and "|grad|" in lines[0]


def test_callback_called_every_iteration(toy_chunks):
    X, y = toy_chunks
    seen = []
    crf = CRFTagger(callback=lambda it, f: seen.append((it, f))).fit(X, y)
    assert [it for it, _ in seen] == list(range(1, crf.n_iter_ + 1))
    assert [f for _, f in seen] == crf.loss_curve_


def test_n_jobs_gives_same_model(fitted_toy):
    X, y, a = fitted_toy
    assert a.n_jobs is None  # one thread
    b = CRFTagger(n_jobs=2).fit(X, y)
    assert_allclose(a.coef_, b.coef_, atol=1e-8)


def test_fitted_model_matches_cll_optimality(toy_chunks):
    # At the optimum of CLL + L2, the gradient vanishes: the expected
    # transition counts equal the gold counts minus transition_ / C.
    X, y = toy_chunks
    C = 2.0
    crf = CRFTagger(C=C, tol=1e-12, max_iter=2000).fit(X, y)
    marg = crf.predict_marginals(X)
    idx = {c: i for i, c in enumerate(crf.classes_)}
    gold_start = np.zeros(len(idx))
    for s in y:
        gold_start[idx[s[0]]] += 1
    expected_start = sum(m[0] for m in marg)
    assert_allclose(expected_start - gold_start + crf.start_ / C, 0.0, atol=1e-3)


class _ScaledCLL(ConditionalLogLikelihood):
    """A stand-in non-CLL loss (CLL times 2) to exercise init='cll'."""

    name = "scaled_cll"

    def value_and_grad(self, *args, **kwargs):
        value, *grads = super().value_and_grad(*args, **kwargs)
        return (2 * value, *[2 * g for g in grads])


def test_init_cll_runs_a_cll_fit_first(toy_chunks):
    X, y = toy_chunks
    crf = CRFTagger(loss=_ScaledCLL(), init="cll", C=1.0).fit(X, y)
    assert crf.init_n_iter_ > 0
    cold = CRFTagger(loss=_ScaledCLL(), C=1.0).fit(X, y)
    assert cold.init_n_iter_ == 0
    # Started at the CLL optimum, the second stage has far less to do.
    assert crf.n_iter_ < cold.n_iter_
    assert CRFTagger(init="cll").fit(X, y).init_n_iter_ == 0
