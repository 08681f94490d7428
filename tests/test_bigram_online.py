"""Observation-dependent label bigrams in SGD, the margin losses, the mixed loss and the
online rules: values by enumeration, steps against finite differences of the enumeration."""

import itertools
import warnings

import numpy as np
import pytest
from test_bigram_tagger import TEMPLATE, _fit, _objective, _switch_data

from sklearn_crfloss import CRFTagger, LOPTagger
from sklearn_crfloss._model._bigram_layout import model_transitions
from sklearn_crfloss._lop._experts import expert_parts
from sklearn_crfloss._model._objective import CRFObjective
from sklearn_crfloss.features import TemplateFeatures
from sklearn_crfloss.inference import PositionTransitions
from sklearn_crfloss.losses import (ConditionalLogLikelihood, MaxMargin, MIRA, MixedLoss,
                                    SoftmaxMargin, StructuredPerceptron)
from sklearn_crfloss.lop import _pool_nll
from sklearn_crfloss.solvers._sgd import _compiled_kind, _ScaledModel

X_TINY = [[("a", "p"), ("b", "q"), ("a", "q"), ("b", "p")], [("b", "p")],
          [("a", "q"), ("a", "p"), ("b", "q")]]
Y_TINY = [["X", "Y", "Z", "X"], ["Y"], ["Z", "X", "Y"]]
CLASSES = np.array(["X", "Y", "Z"])


def _prepared(loss):
    if hasattr(loss, "set_classes"):
        loss.set_classes(CLASSES)
    return loss


def _enumerated(objective, theta, loss, seqs=None):
    """sum_i w_i loss_i over the sequences ``seqs`` (all if None), by enumeration."""
    unary, T, start, end = objective.potentials(theta)
    unary, dense = unary.copy(), T.dense()
    offsets, y = objective.offsets, objective.y
    w = objective.sample_weight
    total = 0.0
    for k in range(offsets.shape[0] - 1) if seqs is None else seqs:
        a, b = offsets[k], offsets[k + 1]
        paths = np.array(list(itertools.product(range(unary.shape[1]), repeat=b - a)))
        scores = np.array([start[p[0]] + end[p[-1]] + unary[np.arange(a, b), p].sum()
                           + sum(dense[a + t, p[t - 1], p[t]] for t in range(1, b - a))
                           for p in paths])
        total += w[k] * loss.enumerated_loss(paths, scores, y[a:b])
    return total


def _numeric_grad(f, theta, eps=1e-6):
    return np.array([(f(theta + eps * e) - f(theta - eps * e)) / (2 * eps)
                     for e in np.eye(theta.shape[0])])


LOSSES = [MixedLoss(lam=0.3), MaxMargin(cost_scale=2.0), StructuredPerceptron(), MIRA()]


@pytest.mark.parametrize("loss", LOSSES, ids=["mixed", "max_margin", "perceptron", "mira"])
def test_objective_value_by_enumeration_and_gradient_by_finite_differences(loss):
    """The losses' value_and_grad with PositionTransitions, through the bigram chain rule."""
    objective, layout, theta, *_ = _objective(X_TINY, Y_TINY)
    loss = _prepared(loss)
    value, grad = objective.loss_value_and_grad(theta, loss)
    assert value == pytest.approx(_enumerated(objective, theta, loss), rel=1e-10)
    numeric = _numeric_grad(lambda t: _enumerated(objective, t, loss), theta)
    np.testing.assert_allclose(grad, numeric, atol=1e-6)
    assert np.abs(grad[layout.n_base:]).max() > 1e-3  # the blocks get a (sub)gradient


def _sgd_model(loss, objective, theta, average_start=None):
    kind, cost = _compiled_kind(loss, objective.n_labels)
    return _ScaledModel(objective, theta, loss, kind, cost, average_start)


@pytest.mark.parametrize("loss", [ConditionalLogLikelihood(), SoftmaxMargin(cost_scale=2.0),
                                  MaxMargin(cost_scale=2.0)],
                         ids=["cll", "softmax_margin", "max_margin"])
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "generic"])
def test_sgd_step_is_the_enumerated_gradient(loss, compiled):
    """One step on one sequence: theta - eta * (gradient of the enumerated loss)."""
    objective, layout, theta, *_ = _objective(X_TINY, Y_TINY, seed=1)
    loss = _prepared(loss)
    eta = 0.1
    for i in (0, 2):  # sequences with bigram attributes on their edges
        model = _sgd_model(loss, objective, theta)
        assert model.blocks is not None and (model.kind is not None)
        order = np.array([i], dtype=np.intp)
        value = (model.run(order, (eta, 0.0, 1.0, 0.0)) if compiled
                 else model.generic_step(order, (eta, 0.0, 1.0, 0.0)))
        assert value == pytest.approx(_enumerated(objective, theta, loss, [i]), rel=1e-10)
        numeric = _numeric_grad(lambda t: _enumerated(objective, t, loss, [i]), theta)
        step = model.theta(averaged=False) - theta
        np.testing.assert_allclose(step, -eta * numeric, atol=1e-7)
        assert np.abs(step[layout.n_base:]).max() > 1e-4  # the blocks moved


@pytest.mark.parametrize("loss", [ConditionalLogLikelihood(), MaxMargin(cost_scale=2.0)],
                         ids=["cll", "max_margin"])
def test_sgd_scaling_folds_and_averaging_cover_the_blocks(loss):
    """Ten steps with a strong L2 shrinkage (the scale is folded into V) and
    averaging from the third: the naive update on theta, summed explicitly."""
    objective, layout, theta, *_ = _objective(X_TINY, Y_TINY, seed=2)
    loss = _prepared(loss)
    offsets = objective.offsets
    eta, lam = 0.3, 3.1  # the scale falls by 1 - eta lam = 0.07 a step
    order = np.array([0, 2, 1, 2, 0, 0, 2, 1, 2, 0], dtype=np.intp)
    model = _sgd_model(loss, objective, theta, average_start=2)
    model.run(order, (eta, lam, 1.0, 0.0))
    assert model.state[4] >= 1  # folded at least once
    single = [CRFObjective(objective.stored_X[offsets[i]:offsets[i + 1]], objective.y[
        offsets[i]:offsets[i + 1]], np.array([0, offsets[i + 1] - offsets[i]]), layout,
        sample_weight=objective.sample_weight[i:i + 1]) for i in range(3)]
    current, total, n_avg = theta.copy(), np.zeros_like(theta), 0
    for k, i in enumerate(order):
        grad = single[i].loss_value_and_grad(current, loss)[1]
        current = (1.0 - eta * lam) * current - eta * grad
        if k >= 2:
            total += current
            n_avg += 1
    np.testing.assert_allclose(model.theta(averaged=False), current, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.theta(), total / n_avg, rtol=1e-9, atol=1e-12)


# (risk and mixed on fewer sequences: their marginals' VJP runs in NumPy per
# token with bigram attributes)
@pytest.mark.parametrize("params, n", [
    ({"solver": "sgd"}, 60), ({"solver": "sgd", "loss": "softmax_margin"}, 60),
    ({"solver": "sgd", "loss": "risk", "init": "cll"}, 15),
    ({"loss": "max_margin"}, 60), ({"loss": "perceptron"}, 60), ({"loss": "mira"}, 60),
    ({"loss": "mixed", "max_iter": 20}, 15)],
    ids=["sgd", "sgd-softmax_margin", "sgd-generic-risk", "max_margin", "perceptron", "mira",
         "mixed"])
def test_route_learns_the_bigrams(params, n):
    X, y = _switch_data(n=n)
    Xt, yt = _switch_data(seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter reached
        f, crf = _fit(TEMPLATE, X, y, random_state=0, **params)
    assert crf.bigram_coef_.shape == (2, 2, 2)
    assert crf.score(f.transform(Xt), yt) > 0.95  # one transition matrix: below 0.8


# (max-margin with a fixed step: with eta0='auto' its one epoch here raises the
# objective, and fit keeps the start; partial_fit has no such rule)
@pytest.mark.parametrize("loss, params", [("cll", {}), ("max_margin", {"eta0": 0.05}),
                                          ("perceptron", {}), ("mira", {})])
def test_partial_fit_one_call_is_one_epoch_of_fit(loss, params):
    X, y = _switch_data(n=20)
    F = TemplateFeatures(TEMPLATE).fit_transform(X)
    rule = loss if loss in ("perceptron", "mira") else "sgd"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter reached
        full = CRFTagger(loss=loss, solver=rule, max_iter=1, random_state=0, **params).fit(F, y)
    part = CRFTagger(loss=loss, random_state=0, **params).partial_fit(F, y, classes=["A", "B"])
    assert part.bigram_attributes_.tolist() == full.bigram_attributes_.tolist()
    np.testing.assert_allclose(part.bigram_coef_, full.bigram_coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(part.transition_, full.transition_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(part.coef_, full.coef_, rtol=1e-10, atol=1e-12)
    assert np.abs(part.bigram_coef_).max() > 1e-3


@pytest.mark.parametrize("loss", ["cll", "perceptron"])
def test_partial_fit_grows_the_blocks(loss):
    """A later batch brings a new bigram attribute: its block is added, the old one kept."""
    X, y = _switch_data(n=60)
    Xt, yt = _switch_data(seed=1)
    features = TemplateFeatures(TEMPLATE).fit([])
    F, Ft = features.transform(X), features.transform(Xt)
    first_batch = features.transform([[("A", "start"), ("w", "keep"), ("w", "keep")],
                                      [("B", "start"), ("w", "keep")]])
    crf = CRFTagger(loss=loss, C=10.0, random_state=0)
    crf.partial_fit(first_batch, [["A", "A", "A"], ["B", "B"]], classes=["A", "B"])
    assert crf.bigram_attributes_.tolist() == ["~B01:keep"]
    first = crf.bigram_coef_.copy()
    crf.predict(Ft)  # works between calls
    for _ in range(3):
        crf.partial_fit(F, y)
    assert crf.bigram_attributes_.tolist() == ["~B01:keep", "~B01:flip"]
    assert crf.bigram_coef_.shape == (2, 2, 2) and not np.allclose(crf.bigram_coef_[0], first)
    assert crf.score(Ft, yt) > 0.95


def _vectorised(crf, F):
    """A fitted tagger's feature matrix and offsets of the sequences F."""
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in F])]).astype(np.intp)
    return crf._features.transform([t for s in F for t in s], offsets), offsets


def test_lop_pool_sums_the_experts_position_transitions():
    """The pool's matrix on every edge is the weighted sum of the experts' matrices."""
    X, y = _switch_data(n=30)
    Xt, yt = _switch_data(seed=1)
    features = TemplateFeatures(TEMPLATE).fit([])
    F, Ft = features.transform(X), features.transform(Xt)
    groups = [lambda a: a.startswith("~") or a.startswith("U00"),
              lambda a: not a.startswith("~")]
    lop = LOPTagger(experts=groups, weights=[0.2, 0.3, 0.5]).fit(F, y)
    assert [e.bigram_coef_ is not None for e in lop.experts_] == [True, True, False]
    assert lop.score(Ft, yt) == 1.0  # the bigrams' experts dominate the pool
    pool = lop.pool_
    Xc, offsets = _vectorised(pool, Ft)
    def transitions(model, X):
        return model_transitions(X, offsets, model.transition_, model.bigram_coef_,
                                 model.attributes_)

    got = transitions(pool, Xc).dense()
    expected = sum(w * np.broadcast_to(transitions(e, Xc[:, cols]).dense()
                                       if e.bigram_coef_ is not None else e.transition_,
                                       got.shape)
                   for w, e, cols in zip(lop.weights_, lop.experts_, lop.expert_columns_))
    np.testing.assert_allclose(got, expected, atol=1e-12)
    assert np.ptp(got[1:], axis=0).max() > 1e-3  # the transitions vary with the position


def test_lop_weight_gradient_with_position_transitions():
    X, y = _switch_data(n=20)
    features = TemplateFeatures(TEMPLATE).fit([])
    lop = LOPTagger(weights="fit").fit(features.transform(X), y)
    pool = lop.pool_
    Xc, offsets = _vectorised(pool, features.transform(X))
    y_enc = np.searchsorted(lop.classes_, np.concatenate(y)).astype(np.intp)
    parts = expert_parts(lop.experts_, lop.expert_columns_, Xc, offsets, pool.attributes_)
    assert isinstance(parts[0][1], PositionTransitions)
    w = np.array([0.6, 0.4])
    value, grad = _pool_nll(w, parts, y_enc, offsets)
    numeric = [(_pool_nll(w + 1e-6 * d, parts, y_enc, offsets)[0]
                - _pool_nll(w - 1e-6 * d, parts, y_enc, offsets)[0]) / 2e-6 for d in np.eye(2)]
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)


def test_sgd_large_potentials_step_through_the_log_space_fallback():
    """Potentials past the scaled pass's range: the sequence steps through the loss's
    value_and_grad (log space), with the same result as the generic path."""
    objective, layout, theta, *_ = _objective(X_TINY, Y_TINY, seed=3)
    theta = 400.0 * theta
    loss = ConditionalLogLikelihood()
    order = np.array([2], dtype=np.intp)
    compiled, generic = (_sgd_model(loss, objective, theta) for _ in range(2))
    calls, fallback = [], compiled.generic_step
    compiled.generic_step = lambda *args: calls.append(args) or fallback(*args)
    value = compiled.run(order, (1e-3, 0.0, 1.0, 0.0))
    assert len(calls) == 1 and np.isfinite(value)  # the compiled pass gave up
    assert value == pytest.approx(generic.generic_step(order, (1e-3, 0.0, 1.0, 0.0)),
                                  rel=1e-12)
    np.testing.assert_allclose(compiled.theta(averaged=False), generic.theta(averaged=False),
                               rtol=1e-12)
    assert value == pytest.approx(_enumerated(objective, theta, loss, [2]), rel=1e-9)
