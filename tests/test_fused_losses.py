"""The fused kernels of softmax-margin, risk, labelwise, pointwise and mixed.

The objective evaluates these losses in one pass over the features
(each loss's ``fused_value_and_grad``, sklearn_crfloss/losses/_fused.py);
every test compares that path with the general one (potentials handed to
the loss's ``value_and_grad``, which check_loss verifies against
enumeration and finite differences, chain rule applied after), with the definitions by enumeration, and with finite
differences of the objective itself.
"""

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_crfloss import CRFTagger
from sklearn_crfloss._model._objective import CRFObjective
from sklearn_crfloss._model._parameters import ParameterLayout
from sklearn_crfloss.losses import (BaseLoss, HammingCost, LabelwiseAccuracyLoss, MixedLoss,
                                    PointwiseLoss, Risk,
                                    SoftmaxMargin, check_loss, get_loss_tags)
from sklearn_crfloss.losses._check import enumerate_paths
from sklearn_crfloss.priors import GaussianPrior

from test_losses import finite_difference_gradient
from test_objective import make_objective


class GeneralSoftmaxMargin(SoftmaxMargin):
    """Softmax-margin through the general path (only the exact class is fused)."""


class GeneralRisk(Risk):
    """Risk through the general path."""


class GeneralLabelwise(LabelwiseAccuracyLoss):
    """Labelwise accuracy through the general path."""


class GeneralPointwise(PointwiseLoss):
    """Pointwise loss through the general path."""


class GeneralMixed(MixedLoss):
    """The λ-mixed loss through the general path."""


class DiagonalCost:
    """A cost with a non-zero diagonal: the gold path's cost counts in the gold score."""

    def matrix(self, classes):
        n = len(classes)
        return np.arange(1.0, n * n + 1.0).reshape(n, n) / n


#: (fused loss, the same loss by the general path), built per test.
PAIRS = {
    "softmax_margin": lambda: (SoftmaxMargin(cost_scale=2.0), GeneralSoftmaxMargin(cost_scale=2.0)),
    "softmax_margin_diag": lambda: (SoftmaxMargin(cost=DiagonalCost()),
                                    GeneralSoftmaxMargin(cost=DiagonalCost())),
    "risk": lambda: (Risk(cost_scale=3.0), GeneralRisk(cost_scale=3.0)),
    "risk_diag": lambda: (Risk(cost=DiagonalCost()), GeneralRisk(cost=DiagonalCost())),
    "labelwise": lambda: (LabelwiseAccuracyLoss(alpha=5.0), GeneralLabelwise(alpha=5.0)),
    "labelwise_identity": lambda: (LabelwiseAccuracyLoss(q="identity"),
                                   GeneralLabelwise(q="identity")),
    "labelwise_log": lambda: (LabelwiseAccuracyLoss(q="log"), GeneralLabelwise(q="log")),
    "pointwise": lambda: (PointwiseLoss(), GeneralPointwise()),
    "mixed": lambda: (MixedLoss(lam=0.25), GeneralMixed(lam=0.25)),
    "mixed_half": lambda: (MixedLoss(), GeneralMixed()),
    "mixed_markov2": lambda: (MixedLoss(markov_order=2), GeneralMixed(markov_order=2)),
}


def token_weighted(objective, rng):
    """The objective with random per-token weights (zeros included)."""
    weights = rng.uniform(0.0, 2.0, size=objective.n_tokens)
    weights[::5] = 0.0
    objective.token_weight = weights
    return objective


@pytest.mark.parametrize("name", sorted(PAIRS))
@pytest.mark.parametrize("n_labels", [6, 13])
@pytest.mark.parametrize("binary,weighted", [(True, False), (False, True)])
def test_fused_loss_matches_general_path(name, n_labels, binary, weighted):
    rng = np.random.default_rng(0)
    objective, theta, _ = make_objective(rng, n_labels=n_labels, n_features=20, binary=binary,
                                         weighted=weighted)
    fused, general = PAIRS[name]()
    assert fused.fused_value_and_grad(objective, theta) is not None
    assert general.fused_value_and_grad(objective, theta) is None
    value, grad = objective.loss_value_and_grad(theta, fused)
    ref_value, ref_grad = objective.loss_value_and_grad(theta, general)
    assert_allclose(value, ref_value, rtol=1e-12)
    assert_allclose(grad, ref_grad, rtol=1e-11, atol=1e-12 * np.abs(ref_grad).max())


@pytest.mark.parametrize("name", ["labelwise", "labelwise_identity", "pointwise", "mixed",
                                  "mixed_markov2"])
def test_fused_loss_takes_token_weights(name):
    rng = np.random.default_rng(1)
    objective, theta, _ = make_objective(rng, weighted=True, binary=False)
    token_weighted(objective, rng)
    fused, general = PAIRS[name]()
    value, grad = objective.loss_value_and_grad(theta, fused)
    ref_value, ref_grad = objective.loss_value_and_grad(theta, general)
    unweighted = objective.loss_value_and_grad(theta, PAIRS[name]()[0])[0]
    objective.token_weight = None
    assert not np.isclose(unweighted, objective.loss_value_and_grad(theta, fused)[0])
    assert_allclose(value, ref_value, rtol=1e-12)
    assert_allclose(grad, ref_grad, rtol=1e-11, atol=1e-12 * np.abs(ref_grad).max())


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_fused_loss_values_match_enumeration(name):
    # The value on the potentials U = X @ W against the loss's definition by
    # enumeration of every label sequence (3 labels, sequences of up to 5).
    rng = np.random.default_rng(2)
    objective, theta, _ = make_objective(rng, n_labels=3, n_features=9, lengths=(1, 4, 5, 2),
                                         binary=False, weighted=True, state_index=None)
    fused = PAIRS[name]()[0].set_classes(np.arange(3))
    value, _ = objective.loss_value_and_grad(theta, fused)
    unary, transition, start, end = (np.array(a) for a in objective.potentials(theta))
    offsets, y = objective.offsets, objective.y
    paths, scores, gold = [], [], []
    for k in range(offsets.shape[0] - 1):
        p, s = enumerate_paths(unary[offsets[k]:offsets[k + 1]], transition, start, end)
        paths.append(p)
        scores.append(s)
        gold.append(y[offsets[k]:offsets[k + 1]])
    expected = fused.enumerated_batch_loss(paths, scores, gold,
                                           sample_weight=objective.sample_weight)
    assert_allclose(value, expected, rtol=1e-10)


@pytest.mark.parametrize("name", ["softmax_margin_diag", "risk", "labelwise", "pointwise",
                                  "mixed"])
def test_fused_objective_gradient_matches_finite_differences(name):
    rng = np.random.default_rng(3)
    objective, theta, _ = make_objective(rng, n_features=7, lengths=(1, 3, 4), weighted=True,
                                         binary=False)
    loss, prior = PAIRS[name]()[0], GaussianPrior()

    def fun(t):
        return objective.value_and_grad(t, loss, prior, 0.7)

    assert_allclose(fun(theta)[1], finite_difference_gradient(lambda t: fun(t)[0], theta),
                    rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["softmax_margin", "risk", "labelwise", "labelwise_log",
                                  "mixed"])
def test_fused_loss_falls_back_on_sequences_the_scaled_passes_cannot_do(name):
    # Weights of magnitude ~500: some sequences leave the scaled passes
    # (potentials' range past MAX_RANGE); they are computed in log space.
    rng = np.random.default_rng(4)
    objective, theta, _ = make_objective(rng, binary=False, weighted=True, scale=500.0,
                                         lengths=(1, 4, 7, 3, 9, 2, 5, 6))
    fused, general = PAIRS[name]()
    value, grad = objective.loss_value_and_grad(theta, fused)
    ref_value, ref_grad = objective.loss_value_and_grad(theta, general)
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    assert_allclose(value, ref_value, rtol=1e-9, atol=1e-9)
    assert_allclose(grad, ref_grad, rtol=1e-8, atol=1e-8 * np.abs(ref_grad).max())


@pytest.mark.parametrize("name", ["softmax_margin", "risk", "labelwise", "mixed"])
def test_fused_loss_does_not_depend_on_the_number_of_threads(name):
    # Block accumulators: bitwise the same sums for 1, 2 and 4 threads.
    results = []
    for n_threads in (1, 2, 4):
        rng = np.random.default_rng(5)
        objective, theta, _ = make_objective(rng, n_labels=13, n_features=20, binary=False,
                                             weighted=True, n_threads=n_threads,
                                             lengths=tuple(range(1, 40)))
        results.append(objective.loss_value_and_grad(theta, PAIRS[name]()[0]))
    for value, grad in results[1:]:
        assert value == results[0][0]
        assert_array_equal(grad, results[0][1])


def test_softmax_margin_cost_columns_follow_the_cost():
    # The widened features are kept per cost: a new cost matrix gives a new value.
    rng = np.random.default_rng(6)
    objective, theta, _ = make_objective(rng, binary=False)
    values = [objective.loss_value_and_grad(theta, SoftmaxMargin(cost=HammingCost(m)))[0]
              for m in (1.0, 5.0, 1.0)]
    assert values[0] < values[1]
    assert values[0] == values[2]


class ThroughFeatures(BaseLoss):
    """A loss evaluated by the objective on one-hot token features (the fused path).

    Token t has the single feature t, so its unary row is that feature's
    weight row: the objective's gradient with respect to the weights is the
    loss's gradient with respect to the potentials, which check_loss
    compares with enumeration and finite differences.
    """

    def __init__(self, inner=None):
        self.inner = inner

    def set_classes(self, classes):
        self.inner.set_classes(classes)
        return self

    def __loss_tags__(self):
        return dataclasses.replace(get_loss_tags(self.inner), stages=None)

    def value_and_grad(self, unary, transition, start, end, y, offsets, sample_weight=None,
                       n_threads=1, token_weight=None):
        n, L = unary.shape
        layout = ParameterLayout(n, L)
        objective = CRFObjective(sp.identity(n, format="csr"), np.asarray(y, dtype=np.intp),
                                 np.asarray(offsets, dtype=np.intp), layout,
                                 sample_weight=sample_weight, token_weight=token_weight,
                                 n_threads=n_threads)
        theta = layout.pack(unary, transition, start, end)
        assert self.inner.fused_value_and_grad(objective, theta) is not None
        value, grad = objective.loss_value_and_grad(theta, self.inner)
        return (value, *layout.unpack(grad))

    def enumerated_batch_loss(self, *args, **kwargs):
        return self.inner.enumerated_batch_loss(*args, **kwargs)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_fused_losses_pass_check_loss(name):
    # check_loss on the fused path: the value against enumeration, the
    # gradient against finite differences, weights included.
    report = check_loss(ThroughFeatures(PAIRS[name]()[0]), n_problems=2)
    assert report.passed, str(report)


def test_softmax_margin_with_a_cost_on_the_diagonal_matches_its_definition():
    # Eq. 6 subtracts the plain gold score: a cost object whose diagonal is
    # not 0 used to get its gold path's cost subtracted too.
    report = check_loss(SoftmaxMargin(cost=DiagonalCost()), n_problems=2,
                        raise_on_failure=False)
    assert report.passed, str(report)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_tagger_trained_with_a_fused_loss_matches_the_general_path():
    rng = np.random.default_rng(7)
    words = ["a", "b", "c", "d"]
    X = [[{"w": words[i]} for i in rng.integers(4, size=n)] for n in rng.integers(1, 8, size=30)]
    y = [["X" if t["w"] in "ab" else "Y" for t in s] for s in X]
    fused = CRFTagger(loss=Risk(), init="cll", max_iter=15).fit(X, y)
    general = CRFTagger(loss=GeneralRisk(), init="cll", max_iter=15).fit(X, y)
    assert_allclose(fused.coef_, general.coef_, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("lam,expected", [(0.0, "pointwise"), (1.0, "cll")])
def test_fused_mixed_loss_at_its_ends_is_pointwise_or_cll(lam, expected):
    # λ = 0 is the pointwise loss, λ = 1 the log-likelihood (its own kernel).
    rng = np.random.default_rng(8)
    objective, theta, _ = make_objective(rng, weighted=True, binary=False)
    token_weighted(objective, rng)
    value, grad = MixedLoss(lam=lam).fused_value_and_grad(objective, theta)
    if expected == "pointwise":
        ref_value, ref_grad = objective.loss_value_and_grad(theta, GeneralPointwise())
    else:
        ref_value, ref_grad = objective.cll_value_and_grad(theta)
    assert_allclose(value, ref_value, rtol=1e-12)
    assert_allclose(grad, ref_grad, rtol=1e-11, atol=1e-12 * np.abs(ref_grad).max())
