"""Batch solvers (Rprop, QuickProp, OWL-QN through libLBFGS) and schedules of solvers."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning

from sklearn_crfloss import CRFTagger
from sklearn_crfloss._model._objective import CRFObjective
from sklearn_crfloss._model._parameters import ParameterLayout
from sklearn_crfloss.losses import ConditionalLogLikelihood, get_loss, get_loss_tags
from sklearn_crfloss.priors import GaussianPrior, LaplacianPrior, get_prior
from sklearn_crfloss.solvers import (
    LBFGS,
    OWLQN,
    ConvergenceMonitor,
    QuickProp,
    Rprop,
    Schedule,
    default_solver,
    make_solver,
    minimize_liblbfgs,
)

from conftest import make_toy_chunks
from test_priors import _problem as random_chain_problem


def _problem(seed=0, n_features=8, n_labels=3, lengths=(2, 3, 4, 5, 3, 2, 6, 1)):
    X, y, offsets, n_labels = random_chain_problem(seed, n_features, n_labels, lengths)
    return CRFObjective(X, y, offsets, ParameterLayout(n_features, n_labels))


def _solve(solver, objective, prior, C, tol=0.0, max_iter=3000, x0=None):
    monitor = ConvergenceMonitor(tol, max_iter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        theta = solver.solve(objective, ConditionalLogLikelihood(), prior, C,
                             np.zeros(objective.n_params) if x0 is None else x0, monitor)
    return theta, monitor


class _Quadratic:
    """A stand-in objective: ``sum_k a_k (x_k - c_k)^2`` (loss and prior ignored)."""

    def __init__(self, a, c):
        self.a, self.c = np.asarray(a, float), np.asarray(c, float)
        self.n_params = self.a.shape[0]
        self.calls = 0

    def value_and_grad(self, x, loss, prior, C):
        self.calls += 1
        r = x - self.c
        return float(np.sum(self.a * r * r)), 2 * self.a * r


class _UndefinedBeyond(_Quadratic):
    """The quadratic, undefined (UndefinedLossError) where ``x[0] > limit``."""

    def __init__(self, a, c, limit):
        super().__init__(a, c)
        self.limit, self.undefined = limit, 0

    def value_and_grad(self, x, loss, prior, C):
        if x[0] > self.limit:
            from sklearn_crfloss.exceptions import UndefinedLossError

            self.undefined += 1
            raise UndefinedLossError("undefined here")
        return super().value_and_grad(x, loss, prior, C)


@pytest.mark.parametrize("solver", [QuickProp(epsilon=1.0), Rprop()])
def test_a_trial_step_where_the_loss_is_undefined_is_a_step_too_far(solver):
    # An F-score loss (MCE-F) can be undefined at a trial point: the batch
    # solvers shrink the step as for a non-finite value instead of raising.
    quad = _UndefinedBeyond([1.0, 1.0], [2.0, -1.0], limit=1.5)
    x, monitor = _solve(solver, quad, None, 1.0, max_iter=200)
    assert quad.undefined > 0  # the case was met
    assert x[0] <= 1.5 and quad.value_and_grad(x, None, None, 1.0)[0] < 5.0


# ------------------------------------------------------------ step rules


def test_quickprop_follows_fahlmans_rule_and_converges_on_a_quadratic():
    # First step: -epsilon g / max|g|. Second step, per coordinate, with the
    # slope s = -g: mu times the last step if s did not shrink below
    # mu / (1 + mu) of its last value (in the direction of the last step),
    # else the secant step (exact on a parabola); plus the gradient term when
    # s still points the way of the last step.
    quad = _Quadratic([1.0, 100.0, 150.0, 4.0], [1.0, 0.12, 0.01, -1.0])
    x, monitor = _solve(QuickProp(epsilon=0.1), quad, None, 1.0, max_iter=2)
    g0 = -2 * quad.a * quad.c
    eps = 0.1 / np.max(np.abs(g0))
    x1 = -eps * g0
    g1 = 2 * quad.a * (x1 - quad.c)
    s0, s1, shrink = -g0, -g1, 1.75 / 2.75
    grow = np.where(x1 > 0, s1 >= shrink * s0, s1 <= shrink * s0)
    step = np.where(grow, 1.75 * x1, x1 * g1 / (g0 - g1))
    step += np.where(np.sign(s1) == np.sign(x1), eps * s1, 0.0)
    assert grow.any() and not grow.all()  # both branches are exercised
    assert np.any(np.sign(s1) != np.sign(x1))  # one coordinate overshot its minimum
    assert_allclose(x, x1 + step, rtol=1e-12)
    # Where the slope changed sign, the secant step lands on the minimum.
    flipped = np.sign(s1) != np.sign(x1)
    assert_allclose(x[flipped], quad.c[flipped], rtol=1e-12)
    assert len(monitor.history) == 2 and quad.calls == 3
    # Run on: every coordinate converges to its minimum.
    x, _ = _solve(QuickProp(epsilon=0.1), _Quadratic(quad.a, quad.c), None, 1.0, max_iter=200)
    assert_allclose(x, quad.c, atol=1e-8)


def test_rprop_adapts_step_sizes_by_gradient_signs():
    # 1-D: steps grow by eta_plus while the sign holds; a step that would
    # raise the objective is halved; the first sign change skips one move
    # (iRprop-), then it moves back. The objective never rises.
    path = [0.0]
    monitor = ConvergenceMonitor(0.0, 12,
                                 on_params=lambda k, theta, value: path.append(float(theta[0])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        x = Rprop(delta0=0.1).solve(_Quadratic([1.0], [1.0]), None, None, 1.0, np.zeros(1),
                                    monitor)
    values = [(p - 1.0) ** 2 for p in path]
    assert np.all(np.diff(values) <= 0.0)
    assert float(x[0]) == path[-1] and values[-1] == min(values)
    steps = np.diff(path)
    assert_allclose(steps[:4], 0.1 * 1.2 ** np.arange(4))
    k = int(np.argmax(np.array(path) > 1.0))  # the step that overshot is steps[k - 1]
    assert steps[k] == 0.0 and steps[k + 1] < 0.0
    assert abs(steps[k + 1]) <= 0.5 * abs(steps[k - 1]) + 1e-15
    x, _ = _solve(Rprop(), _Quadratic([1.0, 3.0], [1.0, -0.5]), None, 1.0, max_iter=500)
    assert_allclose(x, [1.0, -0.5], atol=1e-6)


@pytest.mark.parametrize("solver", [Rprop(delta0=5.0), QuickProp(epsilon=5.0)], ids=repr)
def test_step_rule_solvers_never_raise_the_objective(solver):
    # Steps far too large at first: backtracking halves them (and falls back
    # to gradient steps) so that the objective decreases monotonically.
    quad = _Quadratic([1.0, 50.0, 0.1], [2.0, -0.3, 4.0])
    monitor = ConvergenceMonitor(1e-10, 300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        x = solver.solve(quad, None, None, 1.0, np.zeros(3), monitor)
    assert np.all(np.diff(monitor.history) <= 0.0)
    assert monitor.history[-1] == min(monitor.history)
    assert_allclose(x, quad.c, atol=1e-3)


def test_step_rule_solver_stops_at_a_non_finite_objective():
    class Blows(_Quadratic):
        def value_and_grad(self, x, loss, prior, C):
            v, g = super().value_and_grad(x, loss, prior, C)
            return (np.inf if self.calls > 3 else v), g

    quad = Blows([1.0, 1.0], [5.0, 5.0])
    monitor = ConvergenceMonitor(0.0, 50)
    with pytest.warns(ConvergenceWarning, match="not finite at any trial step"):
        x = Rprop().solve(quad, None, None, 1.0, np.zeros(2), monitor)
    assert np.all(np.isfinite(x)) and len(monitor.history) == 2
    assert monitor.stop_reason == "stalled" and not monitor.converged


# ------------------------------------------------------- the CRF optimum


@pytest.mark.parametrize("solver", [Rprop(), QuickProp(), OWLQN(epsilon=1e-10),
                                    Schedule([("rprop", 20), "quickprop"])], ids=repr)
def test_each_solver_reaches_the_lbfgs_optimum(solver):
    objective = _problem()
    prior = GaussianPrior()
    ref, _ = _solve(LBFGS(), objective, prior, 1.0)
    theta, monitor = _solve(solver, objective, prior, 1.0, tol=1e-12)
    f_ref = objective.value_and_grad(ref, ConditionalLogLikelihood(), prior, 1.0)[0]
    f = objective.value_and_grad(theta, ConditionalLogLikelihood(), prior, 1.0)[0]
    assert abs(f - f_ref) <= 1e-7 * abs(f_ref)
    assert_allclose(theta, ref, atol=2e-3)
    assert 5 < monitor.n_iter < 3000


def test_schedule_with_sgd_warm_up_reaches_the_lbfgs_optimum():
    X, y = make_toy_chunks(30, seed=2)
    ref = CRFTagger(tol=1e-12, max_iter=2000).fit(X, y)
    crf = CRFTagger(solver=[("sgd", 3), "quickprop"], tol=1e-12, max_iter=2000,
                    random_state=0).fit(X, y)
    assert crf.n_parameters_ == ref.n_parameters_  # SGD trains L-BFGS's layout
    assert crf.objective_ == pytest.approx(ref.objective_, rel=1e-7)
    assert_allclose(crf.coef_, ref.coef_, atol=2e-3)


# ------------------------------------------------------------------ OWL-QN


@pytest.mark.parametrize("feature_dependent", [False, True])
@pytest.mark.parametrize("C", [1.0, 5.0])
def test_owlqn_exact_zeros_satisfy_the_l1_optimality_condition(feature_dependent, C):
    # Prior ||w||_1 / C (times d_k if feature-dependent): at the optimum the
    # loss gradient is -d_k sign(w_k) / C where w_k != 0 and at most d_k / C
    # in magnitude where w_k == 0 (exactly).
    objective = _problem(1)
    prior = LaplacianPrior(feature_dependent=feature_dependent).bind(
        objective.X, objective.y, objective.offsets, objective.layout)
    theta, _ = _solve(OWLQN(epsilon=1e-10), objective, prior, C)
    grad = objective.loss_value_and_grad(theta, ConditionalLogLikelihood())[1]
    d = prior.value_and_grad(np.ones(objective.n_params), C)[1] * C
    nz = theta != 0
    assert 0 < nz.sum() < theta.shape[0]
    assert_allclose(grad[nz], -d[nz] * np.sign(theta[nz]) / C, atol=1e-5)
    assert np.all(np.abs(grad[~nz]) <= d[~nz] / C + 1e-5)
    # The same optimum as the L-BFGS-B split.
    split, _ = _solve(LBFGS(), objective, prior, C)
    value = objective.value_and_grad(theta, ConditionalLogLikelihood(), prior, C)[0]
    value_split = objective.value_and_grad(split, ConditionalLogLikelihood(), prior, C)[0]
    assert value <= value_split + 1e-6 * abs(value_split)
    assert_allclose(theta, split, atol=1e-3)


def test_prior_l1_trains_with_owlqn_by_default():
    X, y = make_toy_chunks(40, seed=3)
    assert default_solver(get_loss("cll"), get_prior("l1")) == "owlqn"
    assert default_solver(get_loss("cll"), get_prior("l2")) == "lbfgs"
    a = CRFTagger(prior="l1", C=0.5).fit(X, y)
    b = CRFTagger(prior="l1", C=0.5, solver="owlqn").fit(X, y)
    c = CRFTagger(prior="l1", C=0.5, solver="lbfgs").fit(X, y)  # the split, still reachable
    assert_array_equal(a.coef_, b.coef_)
    assert a.sparsity_ > 0.2
    assert a.objective_ == pytest.approx(c.objective_, rel=1e-5)


def test_liblbfgs_reraises_the_objectives_error_and_respects_max_iter():
    def fun(x):
        if fun.calls == 1:
            raise RuntimeError("boom")
        fun.calls += 1
        return float(x @ x), 2 * x

    fun.calls = 0
    with pytest.raises(RuntimeError, match="boom"):
        minimize_liblbfgs(fun, np.ones(3), ConvergenceMonitor(0.0, 100))
    monitor = ConvergenceMonitor(0.0, 2)
    with pytest.warns(ConvergenceWarning, match="maximum number of iterations"):
        minimize_liblbfgs(lambda x: (float(np.sum((x - 1) ** 4)), 4 * (x - 1) ** 3),
                          np.zeros(3), monitor)
    assert monitor.n_iter == 2


# --------------------------------------------------------------- schedules


def test_schedule_stages_resume_and_iterations_add_up():
    X, y = make_toy_chunks(30, seed=4)
    seen = []
    with pytest.warns(ConvergenceWarning, match=r"QuickProp \(stage .*quickprop 2/2\)") as rec:
        crf = CRFTagger(solver=[("rprop", 4), ("quickprop", 5)], tol=0.0,
                        callback=lambda k, v: seen.append(k)).fit(X, y)
    assert len(rec) == 1  # the first stage has its set length: no warning
    with pytest.warns(ConvergenceWarning):
        first = CRFTagger(solver="rprop", max_iter=4, tol=0.0).fit(X, y)
    with pytest.warns(ConvergenceWarning):
        second = first.set_params(solver="quickprop", max_iter=5, warm_start=True).fit(X, y)
    assert crf.n_iter_ == 9 and len(crf.loss_curve_) == 9
    assert seen == list(range(1, 10))
    # The second stage starts from the first stage's result.
    assert_allclose(crf.coef_, second.coef_, rtol=1e-12, atol=1e-14)
    assert_allclose(crf.loss_curve_[4:], second.loss_curve_, rtol=1e-12)


def test_default_mce_schedule_warms_up_from_zero_only():
    X, y = make_toy_chunks(30, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        zero = CRFTagger(loss="mce", init=None, max_iter=6, random_state=0).fit(X, y)
        fit = CRFTagger(loss="mce", init="cll", max_iter=6).fit(X, y)
        qp = CRFTagger(loss="mce", init="cll", max_iter=6, solver="quickprop").fit(X, y)
    # Ten SGD epochs, then QuickProp (which stops at once where no step descends).
    assert 10 <= zero.n_iter_ <= 10 + 6
    assert zero.n_parameters_ == fit.n_parameters_  # SGD trains the CLL layout
    assert fit.n_iter_ == 6  # from a CLL fit: QuickProp alone, on the CLL layout
    assert_array_equal(fit.coef_, qp.coef_)
    schedule = make_solver(get_loss_tags(get_loss("mce")).default_solver)
    assert schedule.for_start(from_zero=False).name == "quickprop"
    assert schedule.for_start(from_zero=True) is schedule
    any_start = make_solver(get_loss_tags(get_loss("mce_f")).default_solver)
    assert any_start.for_start(from_zero=False) is any_start  # the SGD epochs from a fit too


@pytest.mark.parametrize("solver,match", [
    ([], "at least one stage"),
    ([("sgd", 0), "lbfgs"], "int >= 1"),
    ([("sgd", 2.5), "lbfgs"], "int >= 1"),
    ([("sgd", 1, 2)], "pair"),
    ([["sgd"]], "cannot be a list"),
    (["nope"], "Unknown solver 'nope'"),
    (Schedule(["sgd", "lbfgs"], warm_up=2), "warm_up"),
])
def test_malformed_schedules_raise(solver, match):
    X, y = make_toy_chunks(10)
    with pytest.raises(ValueError, match=match):
        CRFTagger(solver=solver).fit(X, y)


@pytest.mark.parametrize("params,match", [
    (dict(solver="rprop", prior="l1"), "differentiable everywhere"),
    (dict(solver="quickprop", prior="l1"), "use solver='owlqn'"),
    (dict(solver="quickprop", loss="perceptron"), "own online rule"),
    (dict(solver="owlqn", loss="max_margin"), "OWL-QN does not apply"),
    (dict(solver="lbfgs", loss="max_margin"), "L-BFGS does not apply"),
    (dict(solver=[("sgd", 2), "lbfgs"], prior="l1"), "solver='sgd' .*supports"),
    (dict(solver=Rprop(delta0=-1.0)), "delta0"),
    (dict(solver=QuickProp(mu=0)), "mu"),
])
def test_bad_solver_loss_prior_combinations_raise(params, match):
    X, y = make_toy_chunks(10)
    with pytest.raises(ValueError, match=match):
        CRFTagger(**params).fit(X, y)


def test_make_solver_passes_estimator_parameters_to_named_stages_only():
    from sklearn_crfloss.solvers import SGD

    own = SGD(eta0=0.5)
    schedule = make_solver([("sgd", 2), (own, 3), "rprop"], eta0=0.05, random_state=7)
    (s1, n1), (s2, n2), (s3, n3) = schedule.stages_
    assert (s1.eta0, s1.random_state, n1) == (0.05, 7, 2)
    assert (s2.eta0, n2) == (0.5, 3) and s2 is not own
    assert isinstance(s3, Rprop) and n3 is None
    assert not schedule.dense_states and not make_solver(["rprop", "quickprop"]).dense_states
    assert make_solver([("perceptron", 2), "rprop"]).dense_states  # an online rule's layout
