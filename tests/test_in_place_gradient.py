"""The gradient written in place: into the solver's own vector, the prior added to it.

``CRFObjective.value_and_grad(..., out=g)`` writes the loss's gradient into
``g`` (the log-likelihood's fused kernel directly, ``LossTags.fused_out``)
and the prior adds its own into it (``PriorTags.adds_gradient``): the same
bits as the evaluation into new arrays, without an array of ``n_params``
for either; ``minimize_liblbfgs(grad_out=True)`` hands libLBFGS's gradient
vector to the function.
"""

import inspect
import tracemalloc

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from sklearn_crfloss import CRFTagger
from sklearn_crfloss._model._objective import CRFObjective
from sklearn_crfloss.losses import LOSSES, ConditionalLogLikelihood, get_loss_tags
from sklearn_crfloss.priors import GaussianPrior, get_prior, get_prior_tags
from sklearn_crfloss.solvers import ConvergenceMonitor, minimize_liblbfgs

from conftest import make_toy_chunks
from test_losses import named_loss
from test_objective import GenericCLL, make_objective


def assert_same_bits(a, b):
    """Equal to the bit (signed zeros and NaN payloads included)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert_array_equal(a.view(np.int64), b.view(np.int64))


class DuckPrior:
    """A prior object with ``value_and_grad`` only (no record, no in-place add)."""

    def value_and_grad(self, theta, C):
        return float(np.sum(np.cosh(theta))) / C, np.sinh(theta) / C


def old_way(objective, theta, loss, prior, C):
    """The evaluation into new arrays: the loss's gradient, ``+=`` the prior's."""
    value, grad = objective.loss_value_and_grad(theta, loss)
    p_value, p_grad = prior.value_and_grad(theta, C)
    grad += p_grad
    return value + p_value, grad


def priors(n_params):
    rng = np.random.default_rng(7)
    return {"l2": get_prior("l2"), "l2-mean": GaussianPrior(mean=rng.normal(size=n_params)),
            "l1": get_prior("l1"), "elasticnet": get_prior("elasticnet"),
            "hyperbolic": get_prior("hyperbolic"), "none": get_prior("none"),
            "duck": DuckPrior()}


@pytest.mark.parametrize("prior_name", ["l2", "l2-mean", "l1", "elasticnet", "hyperbolic",
                                        "none", "duck"])
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_value_and_grad_into_out_gives_the_same_bits(prior_name, fused, n_threads):
    rng = np.random.default_rng(1)
    objective, theta, _ = make_objective(rng, n_threads=n_threads, weighted=True)
    theta[::5] = 0.0  # signed zeros and subgradients at 0
    theta[1::7] = -0.0
    loss = ConditionalLogLikelihood() if fused else GenericCLL()
    prior = priors(objective.n_params)[prior_name]
    ref_value, ref_grad = old_way(objective, theta, loss, prior, 0.7)
    out = np.full(objective.n_params, np.nan)
    value, grad = objective.value_and_grad(theta, loss, prior, 0.7, out=out)
    assert grad is out
    assert_same_bits(value, ref_value)
    assert_same_bits(out, ref_grad)
    value, grad = objective.value_and_grad(theta, loss, prior, 0.7)  # a new array
    assert_same_bits(value, ref_value)
    assert_same_bits(grad, ref_grad)


def test_label_expert_and_softmax_margin_write_into_out():
    # A fused loss that does not declare fused_out (softmax-margin): its
    # gradient is copied into out; a label expert projects out itself.
    rng = np.random.default_rng(2)
    objective, theta, _ = make_objective(rng, labels=[0, 2, 5], n_labels=6)
    loss = named_loss("softmax_margin", n_labels=5)
    loss.set_classes(np.array(["B-NP", "B-VP", "I-NP", "I-VP", "O", "B-PP"]))
    assert get_loss_tags(loss).fused_evaluation and not get_loss_tags(loss).fused_out
    prior = get_prior("l2")
    ref_value, ref_grad = old_way(objective, theta, loss, prior, 2.0)
    out = np.empty(objective.n_params)
    value, grad = objective.value_and_grad(theta, loss, prior, 2.0, out=out)
    assert grad is out
    assert_same_bits(value, ref_value)
    assert_same_bits(out, ref_grad)


def test_gaussian_prior_adds_in_place_without_a_parameter_sized_array():
    n = 200_000
    theta = np.random.default_rng(3).normal(size=n)
    theta[::3] = -0.0
    base = np.random.default_rng(4).normal(size=n)
    prior = get_prior("l2")
    assert get_prior_tags(prior).adds_gradient
    value, grad = prior.value_and_grad(theta, 0.3)
    expected = base + grad
    out = base.copy()
    tracemalloc.start()
    try:
        got = prior.value_and_add_grad(theta, 0.3, out)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * n // 8  # a chunk's temporary, not an array of n doubles
    assert_same_bits(got, value)
    assert_same_bits(out, expected)


def test_in_place_evaluation_allocates_no_gradient_array():
    # The same evaluation into out=: its traced peak is lower by (at least)
    # the gradient's n_params doubles, the prior's included.
    rng = np.random.default_rng(5)
    objective, theta, _ = make_objective(rng, n_features=4000, n_labels=5,
                                         lengths=(30, 50, 20, 40), state_index=None)
    loss, prior = ConditionalLogLikelihood(), get_prior("l2")
    objective.value_and_grad(theta, loss, prior, 1.0)  # first evaluation: counts, kept rows
    out = np.empty(objective.n_params)
    peaks = {}
    for into in (None, out):
        tracemalloc.start()
        try:
            objective.value_and_grad(theta, loss, prior, 1.0, out=into)
            peaks[into is None] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peaks[True] - peaks[False] >= 8 * objective.n_params


def test_fused_out_is_declared_exactly_by_the_losses_that_take_out():
    for name in sorted(LOSSES):
        loss = named_loss(name)
        takes = "out" in inspect.signature(loss.fused_value_and_grad).parameters
        assert takes == get_loss_tags(loss).fused_out, name
    assert get_loss_tags(ConditionalLogLikelihood()).fused_out
    assert not get_loss_tags(GenericCLL()).fused_out  # a subclass may change value_and_grad


def test_undeclared_priors_do_not_add_in_place():
    assert not get_prior_tags(DuckPrior()).adds_gradient
    assert all(get_prior_tags(prior).adds_gradient
               for name, prior in priors(3).items() if name != "duck")


@pytest.mark.parametrize("returns_g", [True, False])
def test_liblbfgs_hands_its_gradient_vector_to_the_function(returns_g):
    a = np.array([1.0, 3.0, 0.5, 2.0])
    seen = []

    def plain(x):
        return float(np.sum(a * (x - 1) ** 4)), 4 * a * (x - 1) ** 3

    def into(x, g):
        seen.append(g.shape)
        value, grad = plain(x)
        if not returns_g:  # another array: copied into libLBFGS's vector
            return value, grad
        g[:] = grad
        return value, g

    ref = minimize_liblbfgs(plain, np.zeros(4), ConvergenceMonitor(1e-9, 30))
    got = minimize_liblbfgs(into, np.zeros(4), ConvergenceMonitor(1e-9, 30), grad_out=True)
    assert seen and set(seen) == {(4,)}
    assert_same_bits(got, ref)


def test_each_stage_gives_the_free_heap_back_before_its_solve(monkeypatch):
    from sklearn_crfloss._training import _stages

    calls = []
    real = _stages.run_stage

    def counted(*args, **kwargs):
        calls.append("stage")
        return real(*args, **kwargs)

    monkeypatch.setattr(_stages, "release_free_heap", lambda: calls.append("trim"))
    monkeypatch.setattr(_stages, "run_stage", counted)
    X, y = make_toy_chunks(20, seed=1)
    CRFTagger(loss="mce", init="cll", max_iter=3).fit(X, y)
    # a trim after the start's evaluation, and one when the solver's first
    # call (given a vector of its own, as L-BFGS gives) takes the start's
    # answer: the CLL stage by L-BFGS, the MCE stage by SGD
    assert calls == ["stage", "trim", "trim", "stage", "trim"]


def test_a_fit_is_the_same_with_the_gradient_in_place():
    # The CLL + L2 fit through libLBFGS against one whose objective returns
    # new arrays (the evaluation without out=, the prior's gradient added).

    class NewArrays(CRFObjective):
        def value_and_grad(self, theta, loss, prior, C, out=None):
            value, grad = old_way(self, theta, loss, prior, C)
            if out is not None:
                out[:] = grad
            return value, grad

    X, y = make_toy_chunks(40, seed=2)
    crf = CRFTagger(max_iter=25, tol=0.0).fit(X, y)
    from sklearn_crfloss._model import _factory

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_factory, "CRFObjective", NewArrays)
        ref = CRFTagger(max_iter=25, tol=0.0).fit(X, y)
    assert_same_bits(crf.coef_, ref.coef_)
    assert_same_bits(crf.transition_, ref.transition_)


@pytest.mark.parametrize("numeric", [False, True])
def test_fit_keeps_no_reference_to_its_matrix_past_the_objective(monkeypatch, numeric):
    # fit hands its vectorised matrix over to the objective (which keeps an
    # indicator matrix's columns and row pointers only, see test_objective):
    # no frame holds it through training or while the fitted state is built.
    import weakref

    from sklearn_crfloss import _tagger

    refs, alive = [], []
    make = _tagger.make_objective

    def watched(X, *args, **kwargs):
        refs.append(weakref.ref(X))
        return make(X, *args, **kwargs)

    monkeypatch.setattr(_tagger, "make_objective", watched)
    monkeypatch.setattr(_tagger, "release_free_heap", lambda: alive.append(refs[0]() is not None))
    X, y = make_toy_chunks(30, seed=3)
    if numeric:
        X = [[{**token, "x": 0.5 + k % 3} for k, token in enumerate(seq)] for seq in X]
    crf = CRFTagger(max_iter=5).fit(X, y)
    assert alive == [False, False]  # after the objective's set-up, after training
    assert len(crf.predict(X[:3])) == 3  # (the fitted state is complete)


def test_liblbfgs_returns_the_last_accepted_point_after_an_error_of_its_own(monkeypatch):
    # No copy of the point is kept through the solve: when libLBFGS stops on
    # an error of its own (PyLBFGS raises and frees its vector), the point of
    # the last accepted iteration is computed again, the same to the bit.
    import lbfgs
    from sklearn.exceptions import ConvergenceWarning

    real, seen = lbfgs.fmin_lbfgs, []
    a = np.array([1.0, 3.0, 0.5, 2.0])

    def fun(x):
        return float(np.sum(a * (x - 1) ** 4)), 4 * a * (x - 1) ** 3

    def failing_after_3(f, x0, progress=None, **kwargs):
        if seen:  # the replay
            seen.append(("replay", kwargs["max_iterations"]))
            return real(f, x0, progress, **kwargs)

        def checked(x, g, fx, xnorm, gnorm, step, k, ls):
            stop = progress(x, g, fx, xnorm, gnorm, step, k, ls)
            if k == 3:  # as a line search error after iteration 3 would
                seen.append(x.copy())
                return 1
            return stop

        return real(f, x0, checked, **kwargs)

    monkeypatch.setattr(lbfgs, "fmin_lbfgs", failing_after_3)
    monitor = ConvergenceMonitor(0.0, 50)
    with pytest.warns(ConvergenceWarning):
        x = minimize_liblbfgs(fun, np.zeros(4), monitor)
    assert seen[1] == ("replay", 3) and monitor.n_iter == 3 and not monitor.converged
    assert_same_bits(x, seen[0])
