"""Every registered loss and prior: value against enumeration, gradient against finite differences.

Parametrised over the registries, so a new loss or prior is covered by adding
it to ``LOSSES`` / ``PRIORS``; a loss declares its definition by enumeration
(``BaseLoss.enumerated_loss``) and the public ``check_loss`` checks it.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose

from sklearn_crfloss import CRFTagger
from sklearn_crfloss._model._objective import CRFObjective
from sklearn_crfloss._model._parameters import ParameterLayout
from sklearn_crfloss._utils._registry import resolve
from sklearn_crfloss.losses import (
    LOSSES,
    BaseLoss,
    ConditionalLogLikelihood,
    MixedLoss,
    SoftmaxMargin,
    check_loss,
    get_loss,
    get_loss_tags,
)
from sklearn_crfloss.losses._check import _finite_differences
from sklearn_crfloss.priors import PRIORS, GaussianPrior, HyperbolicPrior, get_prior

from _oracle import random_problem


def named_loss(name, n_labels=3):
    """A registered loss with label names set, as CRFTagger.fit does (IOB2 chunk tags)."""
    loss = get_loss(name)
    if hasattr(loss, "set_classes"):
        loss.set_classes(np.array(["B-NP", "B-VP", "I-NP", "I-VP", "O"][-n_labels:]))
    return loss


# Five-point central differences of a scalar function (the checker's own).
finite_difference_gradient = _finite_differences


def small_objective(rng, loss, prior, *, n_features=5, n_labels=3, lengths=(1, 3, 4),
                    weighted=False, state_index=None):
    offsets = np.zeros(len(lengths) + 1, dtype=np.intp)
    np.cumsum(lengths, out=offsets[1:])
    n = offsets[-1]
    dense = rng.normal(size=(n, n_features)) * (rng.random((n, n_features)) < 0.6)
    X = sp.csr_matrix(dense)
    y = rng.integers(n_labels, size=n).astype(np.intp)
    w = rng.uniform(0.5, 2.0, size=len(lengths)) if weighted else None
    layout = ParameterLayout(n_features, n_labels, state_index)
    return BoundObjective(CRFObjective(X, y, offsets, layout, sample_weight=w), loss, prior, 0.7)


class BoundObjective:
    """``theta -> (value, grad)`` of one loss and prior on the objective's data."""

    def __init__(self, objective, loss, prior, C):
        self.objective, self.loss, self.prior, self.C = objective, loss, prior, C
        self.layout = objective.layout
        self.n_params = objective.n_params
        self.potentials = objective.potentials

    def __call__(self, theta):
        return self.objective.value_and_grad(theta, self.loss, self.prior, self.C)


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("classes, lengths", [
    (("B-NP", "I-NP", "O"), (1, 2, 5, 3)),
    (("I-NP", "I-VP", "O"), (2, 5, 1)),  # chunks of two types meet (conlleval)
])
def test_registered_loss_passes_check_loss(name, classes, lengths):
    # The public checker on every registered loss: its value against its own
    # definition by enumeration (unweighted and weighted), its gradient with
    # respect to the potentials against finite differences, on 3 random
    # problems; every loss must declare a definition (nothing skipped).
    report = check_loss(name, classes=classes, lengths=lengths, raise_on_failure=False)
    assert report.passed, str(report)
    assert not report.skipped, str(report)
    checks = {r.check for r in report.results}
    assert {"contract", "value", "value (weighted)", "gradient"} <= checks


@pytest.mark.parametrize("loss_name", sorted(LOSSES))
@pytest.mark.parametrize("prior_name", sorted(PRIORS))
@pytest.mark.parametrize("observed_only", [False, True])
def test_objective_gradient(loss_name, prior_name, observed_only):
    # The full objective (features -> potentials -> loss, + prior) against
    # finite differences in every parameter, at a random point.
    rng = np.random.default_rng(42)
    state_index = np.array([0, 2, 4, 5, 9, 13, 14], dtype=np.intp) if observed_only else None
    obj = small_objective(rng, named_loss(loss_name), get_prior(prior_name), weighted=True,
                          state_index=state_index)
    theta = rng.normal(scale=0.5, size=obj.n_params)
    value, grad = obj(theta)
    assert np.isfinite(value)
    fd = finite_difference_gradient(lambda t: obj(t)[0], theta)
    assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


def test_objective_pack_unpack_round_trip():
    rng = np.random.default_rng(0)
    obj = small_objective(rng, ConditionalLogLikelihood(), GaussianPrior(),
                          state_index=np.array([1, 3, 7], dtype=np.intp))
    theta = rng.normal(size=obj.n_params)
    W, T, s, e = obj.layout.unpack(theta)
    assert W.shape == (5, 3)
    assert np.count_nonzero(W) == 3
    assert_allclose(obj.layout.pack(W, T, s, e), theta)


@pytest.mark.parametrize("state_index", [None, np.array([0, 4, 5, 11, 14], dtype=np.intp)])
def test_unary_potentials_are_X_times_W(state_index):
    rng = np.random.default_rng(1)
    obj = small_objective(rng, ConditionalLogLikelihood(), GaussianPrior(),
                          state_index=state_index)
    rng = np.random.default_rng(1)  # the same X as small_objective drew
    dense = rng.normal(size=(8, 5)) * (rng.random((8, 5)) < 0.6)
    theta = np.random.default_rng(2).normal(size=obj.n_params)
    U = obj.potentials(theta)[0]
    assert_allclose(U, dense @ obj.layout.dense_weights(theta), atol=1e-12)


def test_gaussian_prior_value_and_gradient():
    rng = np.random.default_rng(0)
    theta = rng.normal(size=20)
    value, grad = GaussianPrior().value_and_grad(theta, 2.0)
    assert_allclose(value, theta @ theta / 4.0)
    assert_allclose(grad, theta / 2.0)
    mean = rng.normal(size=20)
    value, grad = GaussianPrior(mean=mean).value_and_grad(theta, 2.0)
    assert_allclose(value, (theta - mean) @ (theta - mean) / 4.0)
    assert_allclose(grad, (theta - mean) / 2.0)


def test_cll_gradient_is_marginals_minus_gold():
    rng = np.random.default_rng(3)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(2, 3))
    from sklearn_crfloss.inference import forward_backward

    _, dU, _, _, _ = ConditionalLogLikelihood().value_and_grad(U, T, s, e, y, off)
    expected = forward_backward(U, T, s, e, off).marginals
    expected[np.arange(len(y)), y] -= 1
    assert_allclose(dU, expected, atol=1e-14)


def test_registries_resolve_names_and_objects():
    assert isinstance(get_loss("cll"), BaseLoss)
    loss = ConditionalLogLikelihood()
    copy = get_loss(loss)
    assert type(copy) is ConditionalLogLikelihood and copy is not loss
    with pytest.raises(ValueError, match="Unknown loss 'nope'"):
        get_loss("nope")
    with pytest.raises(TypeError, match="value_and_grad"):
        get_loss(3)
    with pytest.raises(ValueError, match="Unknown prior"):
        get_prior("l3")
    for name, cls in LOSSES.items():
        assert cls.name == name
    for name, cls in PRIORS.items():
        assert cls.name == name


def test_resolve_returns_fresh_validated_objects():
    # A registered function (a decoder, a solver rule) is returned as it is.
    def rule():
        return None

    assert resolve("rule", {"rule": rule}, "solver", method="__call__") is rule
    with pytest.raises(ValueError, match=r"Unknown solver 'other'; choose one of \['rule'\]"):
        resolve("other", {"rule": rule}, "solver", method="__call__")
    with pytest.raises(TypeError, match="not a class"):
        get_loss(MixedLoss)
    # An object is copied without its fitted state; the caller's stays as it was.
    loss = SoftmaxMargin(cost_scale=2.0).set_classes(np.array(["a", "b"]))
    copy = get_loss(loss)
    assert copy.cost_scale == 2.0 and not hasattr(copy, "classes_")
    assert loss.cost_matrix_.shape == (2, 2)
    prior = GaussianPrior(mean=0.5)
    assert get_prior(prior) is not prior and get_prior(prior).mean == 0.5


@pytest.mark.parametrize("registry", [LOSSES, PRIORS], ids=["losses", "priors"])
def test_every_registered_class_constrains_every_hyperparameter(registry):
    for name, cls in registry.items():
        params = cls().get_params(deep=False)
        assert set(cls._parameter_constraints) == set(params), name
        assert resolve(name, registry, "x").get_params() == params  # defaults are valid


@pytest.mark.parametrize("crf, match", [
    (CRFTagger(loss=MixedLoss(lam=2.0)), "'lam' parameter of MixedLoss"),
    (CRFTagger(loss=MixedLoss()).set_params(loss__lam=-0.5), "'lam' parameter of MixedLoss"),
    (CRFTagger(prior=HyperbolicPrior(beta=-1.0)), "'beta' parameter of HyperbolicPrior"),
])
def test_fit_refuses_invalid_loss_and_prior_hyperparameters(crf, match):
    X = [np.eye(3)[[0, 1, 2]], np.eye(3)[[2, 1]]]
    y = [["a", "b", "a"], ["a", "b"]]
    with pytest.raises(ValueError, match=match):
        crf.fit(X, y)
    assert not hasattr(crf, "coef_")


def _along_line_violations(loss, rng, n_lines=30):
    """Number of random lines in potential space on which the loss is not convex."""
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(3, 4))
    shapes = [U.shape, T.shape, s.shape, e.shape]
    sizes = [int(np.prod(sh)) for sh in shapes]

    def f(x):
        parts = np.split(x, np.cumsum(sizes)[:-1])
        return loss.value_and_grad(*[np.ascontiguousarray(p.reshape(sh))
                                     for p, sh in zip(parts, shapes)], y, off)[0]

    bad = 0
    ts = np.linspace(0, 1, 11)
    for _ in range(n_lines):
        a, b = rng.normal(scale=2, size=(2, sum(sizes)))
        vals = np.array([f((1 - t) * a + t * b) for t in ts])
        bad += bool(np.any(np.diff(vals, 2) < -1e-9))
    return bad


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_convex_flag_holds_along_random_lines(name):
    # The class flag `convex` is a claim about the loss as a function of the
    # potentials (linear in the parameters): check it both ways.
    loss = named_loss(name)
    bad = _along_line_violations(loss, np.random.default_rng(11))
    if get_loss_tags(loss).convex:
        assert bad == 0
    else:
        assert bad > 0
