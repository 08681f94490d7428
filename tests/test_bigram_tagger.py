"""CRFTagger with observation-dependent label bigrams (CRF++ 'B' lines with macros)."""

import itertools
import pickle
import warnings

import numpy as np
import pytest
from conftest import make_switch_data
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from sklearn_crfloss import CRFTagger
from sklearn_crfloss._model._bigram_layout import BigramGroups, BigramLayout
from sklearn_crfloss._model._objective import CRFObjective
from sklearn_crfloss._data._vectorize import SequenceVectorizer
from sklearn_crfloss.features import TemplateFeatures
from sklearn_crfloss.io import export_crfsuite, load_model, save_model
from sklearn_crfloss.losses import (ConditionalLogLikelihood, JensenRiskBound,
                                    LabelwiseAccuracyLoss, PointwiseLoss, Risk, SoftmaxMargin)

TEMPLATE = "U00:%x[0,0]\nU01:%x[0,1]\nB\nB01:%x[0,1]\n"


def _switch_data(n=60, length=8, seed=0):
    """A and B, kept or flipped as column 1 says (:func:`conftest.make_switch_data`)."""
    return make_switch_data(n, length, seed, ["A", "B"],
                            lambda prev, op: prev if op == "keep" else {"A": "B", "B": "A"}[prev])


def _fit(template, X, y, **params):
    features = TemplateFeatures(template).fit([])
    return features, CRFTagger(C=10.0, **params).fit(features.transform(X), y)


def test_template_writes_bigram_keys_after_the_first_token():
    feats = TemplateFeatures(["U00:%x[0,0]", "B01:%x[0,1]", "B02:%x[-1,1]/%x[0,1]",
                              "b:pos=%x[0,1]", "*:w=%x[0,0]", "B"]).fit([])
    assert feats.keys_ == ["U00", "~B01", "~B02", "~b:pos=", "*:w=", "~*:w="]
    out = feats.transform([[("He", "PRP"), ("runs", "VBZ")]])[0]
    assert out[0] == {"U00": "He", "*:w=": "He"}  # no incoming edge: no bigram keys
    assert out[1] == {"U00": "runs", "~B01": "VBZ", "~B02": "PRP/VBZ", "~b:pos=": "VBZ",
                      "*:w=": "runs", "~*:w=": "runs"}


def test_bigram_template_learns_what_one_matrix_cannot():
    X, y = _switch_data()
    Xt, yt = _switch_data(seed=1)
    plain_f, plain = _fit("U00:%x[0,0]\nU01:%x[0,1]\nB\n", X, y)
    f, crf = _fit(TEMPLATE, X, y)
    assert plain.bigram_coef_ is None and plain.bigram_attributes_ is None
    plain_acc = plain.score(plain_f.transform(Xt), yt)
    acc = crf.score(f.transform(Xt), yt)
    assert acc == 1.0 and plain_acc < 0.8, (acc, plain_acc)
    # 'start' is only at first tokens, which have no bigram keys
    assert crf.bigram_coef_.shape == (2, 2, 2)
    assert crf.bigram_attributes_.tolist() == ["~B01:flip", "~B01:keep"]


# (risk, jrb, pointwise and labelwise: their objective is checked above; their
# marginals' VJP runs in NumPy per token with bigram attributes, too slow here)
@pytest.mark.parametrize("params", [{"loss": "softmax_margin"}, {"solver": "owlqn"},
                                    {"early_stopping": True, "random_state": 0}])
def test_other_supported_settings_learn_the_bigrams(params):
    X, y = _switch_data()
    Xt, yt = _switch_data(seed=1)
    f, crf = _fit(TEMPLATE, X, y, **params)
    assert crf.score(f.transform(Xt), yt) > 0.95  # one transition matrix: below 0.8


def test_transition_features_keys():
    X, y = _switch_data()
    _, crf = _fit(TEMPLATE, X, y)
    items = crf.transition_features_
    plain = {k: v for k, v in items.items() if len(k) == 2}
    assert plain and all(set(k) <= {"A", "B"} for k in plain)
    bigram = {k: v for k, v in items.items() if len(k) == 3}
    assert bigram[("~B01:keep", "A", "A")] > bigram[("~B01:keep", "A", "B")]
    assert bigram[("~B01:flip", "A", "B")] > bigram[("~B01:flip", "A", "A")]
    k = crf.bigram_attributes_.tolist().index("~B01:flip")
    assert bigram[("~B01:flip", "B", "A")] == crf.bigram_coef_[k, 1, 0]


def _objective(X, y, seed=0):
    """A bound objective with bigram blocks and a random theta on tiny data."""
    feats = TemplateFeatures(["U00:%x[0,0]", "B01:%x[0,1]", "B02:%x[-1,0]/%x[0,1]"]).fit([])
    F = feats.transform(X)
    vec = SequenceVectorizer()
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in y])]).astype(np.intp)
    Xc = vec.fit_transform("dict", [t for s in F for t in s], offsets)
    classes = np.unique(np.concatenate(y))
    y_enc = np.searchsorted(classes, np.concatenate(y)).astype(np.intp)
    cols = np.flatnonzero([a.startswith("~") for a in vec.attributes])
    layout = BigramLayout(Xc.shape[1], classes.shape[0], None, cols)
    w = np.linspace(0.5, 2.0, len(y))
    objective = CRFObjective(Xc, y_enc, offsets, layout, sample_weight=w)
    theta = np.random.default_rng(seed).normal(size=layout.n_params)
    return objective, layout, theta, y_enc, offsets, w


@pytest.mark.parametrize("loss", [ConditionalLogLikelihood(), SoftmaxMargin(cost_scale=2.0),
                                  Risk(), JensenRiskBound(), PointwiseLoss(),
                                  LabelwiseAccuracyLoss()],
                         ids=["cll", "softmax_margin", "risk", "jrb", "pointwise", "labelwise"])
def test_objective_value_by_enumeration_and_gradient_by_finite_differences(loss):
    X = [[("a", "p"), ("b", "q"), ("a", "q")], [("b", "p")], [("a", "q"), ("a", "p")]]
    y = [["X", "Y", "Z"], ["Y"], ["Z", "X"]]
    objective, layout, theta, y_enc, offsets, w = _objective(X, y)
    assert layout.n_bigram > 0
    if hasattr(loss, "set_classes"):
        loss.set_classes(np.array(["X", "Y", "Z"]))
    value, grad = objective.loss_value_and_grad(theta, loss)
    unary, T, start, end = objective.potentials(theta)
    unary, dense = unary.copy(), T.dense()
    expected = 0.0
    for k, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        paths = np.array(list(itertools.product(range(3), repeat=b - a)))
        scores = np.array([start[p[0]] + end[p[-1]] + unary[np.arange(a, b), p].sum()
                           + sum(dense[a + t, p[t - 1], p[t]] for t in range(1, b - a))
                           for p in paths])
        expected += w[k] * loss.enumerated_loss(paths, scores, y_enc[a:b])
    assert value == pytest.approx(expected, rel=1e-10)
    eps = 1e-6
    numeric = np.array([
        (objective.loss_value_and_grad(theta + eps * e, loss)[0]
         - objective.loss_value_and_grad(theta - eps * e, loss)[0]) / (2 * eps)
        for e in np.eye(layout.n_params)])
    np.testing.assert_allclose(grad, numeric, atol=1e-6)
    # the blocks get a gradient (the chain rule reaches them)
    assert np.abs(grad[layout.n_base:]).max() > 1e-3


def test_groups_share_matrices():
    X, y = _switch_data(n=20)
    objective, layout, theta, *_ = _objective(X, y)
    groups = objective.bigram
    assert isinstance(groups, BigramGroups)
    assert groups.rows.shape[0] < objective.n_tokens / 4  # distinct sets of bigram attributes
    T = groups.transitions(np.zeros((2, 2)), layout.bigram_weights(theta))
    assert T.table.shape == (groups.rows.shape[0], 2, 2)


def test_predict_paths_and_persistence(tmp_path):
    X, y = _switch_data()
    Xt, _ = _switch_data(n=10, seed=2)
    f, crf = _fit(TEMPLATE, X, y)
    Ft = f.transform(Xt)
    pred = crf.predict(Ft)
    log_p = crf.sequence_log_proba(Ft)
    marg = crf.predict_marginals(Ft)
    assert all(np.allclose(m.sum(axis=1), 1.0) for m in marg)
    # the decoded labels are the marginals' argmax here (a near-deterministic model)
    assert [list(crf.classes_[m.argmax(axis=1)]) for m in marg] == pred
    assert crf.set_params(decoder="mea").predict(Ft) == pred
    crf.set_params(decoder="viterbi")
    for model in (pickle.loads(pickle.dumps(crf)), _saved(crf, tmp_path)):
        np.testing.assert_array_equal(model.bigram_coef_, crf.bigram_coef_)
        assert model.predict(Ft) == pred
        np.testing.assert_allclose(model.sequence_log_proba(Ft), log_p, rtol=1e-12)
        assert model.transition_features_ == crf.transition_features_
    nbest = crf.predict_nbest(Ft, n_best=3)
    assert [lists[0][0] for lists in nbest] == pred
    np.testing.assert_allclose([lists[0][1] for lists in nbest], log_p, rtol=1e-10)
    with pytest.raises(ValueError, match="observation-dependent label bigrams"):
        crf.explain(Ft[0], 1)


def _saved(crf, tmp_path):
    path = tmp_path / "bigram.crfl"
    save_model(crf, path)
    return load_model(path)


def test_crfsuite_export_refuses(tmp_path):
    X, y = _switch_data(n=20)
    _, crf = _fit(TEMPLATE, X, y, boundary_potentials=False)
    with pytest.raises(ValueError, match="transitions depend on the observations"):
        export_crfsuite(crf, tmp_path / "model.crfsuite")
    assert not (tmp_path / "model.crfsuite").exists()


class _UserLoss(ConditionalLogLikelihood):
    """A user's loss: the estimator cannot know that it takes position-dependent transitions."""

    name = "user_cll"


@pytest.mark.parametrize("params, match", [
    ({"loss": _UserLoss()}, "not supported by the loss 'user_cll'"),
    ({"feature_hashing": 64}, "cannot be hashed"),
])
def test_unsupported_options_refuse_and_leave_nothing_fitted(params, match):
    X, y = _switch_data(n=10)
    F = TemplateFeatures(TEMPLATE).fit_transform(X)
    crf = CRFTagger(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=match):
            crf.fit(F, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(crf)


def test_other_routes_refuse():
    X, y = _switch_data(n=10)
    F = TemplateFeatures(TEMPLATE).fit_transform(X)
    _, crf = _fit(TEMPLATE, X, y)
    with pytest.raises(ValueError, match="warm_start"):
        crf.set_params(warm_start=True).fit(F, y)
    assert crf.bigram_coef_.shape[1:] == (2, 2)  # the fitted model is kept


def test_refit_without_bigrams_clears_them():
    X, y = _switch_data(n=10)
    _, crf = _fit(TEMPLATE, X, y)
    assert crf.bigram_coef_ is not None
    crf.fit(TemplateFeatures("U00:%x[0,0]\nU01:%x[0,1]\n").fit_transform(X), y)
    assert crf.bigram_coef_ is None and crf.bigram_attributes_ is None
    assert all(len(k) == 2 for k in crf.transition_features_)


def test_prior_sees_the_blocks():
    """The L2 prior covers the blocks: a smaller C shrinks them."""
    X, y = _switch_data()
    F = TemplateFeatures(TEMPLATE).fit_transform(X)
    strong = CRFTagger(C=0.01).fit(F, y).bigram_coef_
    weak = CRFTagger(C=10.0).fit(F, y).bigram_coef_
    assert np.abs(strong).max() < np.abs(weak).max()


@pytest.mark.parametrize("names", [
    ["~B01:NN", "U00:a", "~", "", "a~b", "~~:x", "U01:~", "~B02:é", "\U0001F600~"],
    ["U00:a", "U01:b"],  # no bigram attribute
    ["~B01:a", "~B01:b"],  # only bigram attributes
    [],
])
def test_bigram_columns_equal_a_per_name_startswith(names):
    from sklearn_crfloss._data._vectorize import _PackedNames, pack_names
    from sklearn_crfloss._model._bigram_layout import bigram_columns
    expected = [k for k, name in enumerate(names) if str(name).startswith("~")]
    for form in (names, np.array(names, dtype=object), np.array(names, dtype=str),
                 _PackedNames(pack_names(names)), tuple(names)):
        got = bigram_columns(form)
        assert got.dtype == np.intp
        assert got.tolist() == expected
    mixed = [np.str_(name) for name in names] + [1, None]  # compared as str(item)
    assert bigram_columns(mixed).tolist() == expected


def test_bigram_columns_of_a_fitted_vectoriser():
    from sklearn_crfloss._model._bigram_layout import bigram_columns
    X = [[{"w": "a", "~B": "x"}, {"w": "b", "~B": "y", "n": 1.0}]]
    vec = SequenceVectorizer()
    vec.fit_transform("dict", [tok for seq in X for tok in seq], np.array([0, 2]))
    expected = [k for k, name in enumerate(vec.attributes) if name.startswith("~")]
    assert bigram_columns(vec.column_names).tolist() == expected == [3, 4]  # "~" sorts last
    assert bigram_columns(vec.attributes).tolist() == expected
