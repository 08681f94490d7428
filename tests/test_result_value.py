"""The objective at a stage's result: the solver's last evaluation when it was there.

libLBFGS accepts a step at its last evaluation, so when it stops on the
monitor's rule, ``max_iter`` or its gradient test, the point it returns is
the one it evaluated last and that evaluation's value is the objective at
the result, bit for bit: ``run_stage`` does not evaluate it again. After a
failed line search (libLBFGS goes back to the previous point), with early
stopping (the best held-out score's parameters) or another solver, it does.
"""

import numpy as np
import pytest

from sklearn_crfloss._model._objective import CRFObjective
from sklearn_crfloss._training._stages import _Watched, run_stage
from sklearn_crfloss.losses import ConditionalLogLikelihood
from sklearn_crfloss.priors import get_prior
from sklearn_crfloss.solvers import ConvergenceMonitor, LBFGS, minimize_liblbfgs, OWLQN

from test_objective import make_objective


class Recorded(CRFObjective):
    """The objective, with a copy of every point it is evaluated at."""

    def value_and_grad(self, theta, loss, prior, C, out=None):
        self.points.append(np.array(theta))
        return super().value_and_grad(theta, loss, prior, C, out=out)


def recorded_objective():
    # (Data whose run from zero ends in a failed line search that tried a
    # point off the result, test_failed_line_search_evaluates_the_result_again.)
    rng = np.random.default_rng(2)
    objective, _, _ = make_objective(rng, n_labels=4, lengths=(3, 6, 2, 8, 5, 4) * 3)
    objective.__class__ = Recorded
    objective.points = []
    return objective


def run(objective, monitor, solver=None, reuse=True, monkeypatch=None):
    """run_stage of CLL + L2 from zero; (theta, value, evaluations)."""
    if not reuse:
        monkeypatch.setattr(ConvergenceMonitor, "record_result_value", lambda *args: None)
    objective.points.clear()
    loss, prior = ConditionalLogLikelihood(), get_prior("l2")
    theta, value = run_stage(solver or LBFGS(), objective, loss, prior, 1.0,
                             np.zeros(objective.n_params), monitor, stage="test")
    n = len(objective.points)
    fresh = objective.value_and_grad(theta, loss, prior, 1.0)[0]
    assert value == fresh  # bit for bit
    return theta, value, n


def held_out(scores):
    """A validation score function giving ``scores`` in turn."""
    it = iter(scores)
    return lambda theta: next(it)


#: (monitor, solver, stop_reason, message) of each way libLBFGS stops at its last evaluation
STOPS = {
    "max_iter": (lambda: ConvergenceMonitor(0.0, 4), LBFGS, "max_iter", "maximum number"),
    "tol": (lambda: ConvergenceMonitor(1e-2, 200, period=2), LBFGS, "converged",
            "stopped improving"),
    "gradient_test": (lambda: ConvergenceMonitor(0.0, 500), lambda: OWLQN(epsilon=1e-3),
                      "converged", "gradient norm"),
}


@pytest.mark.parametrize("stop", sorted(STOPS))
def test_stage_value_is_the_last_evaluation(stop, monkeypatch):
    make_monitor, solver, reason, message = STOPS[stop]
    objective = recorded_objective()
    monitor = make_monitor()
    theta, value, n = run(objective, monitor, solver())
    assert monitor.stop_reason == reason and message in monitor.message
    assert np.array_equal(objective.points[n - 1], theta)  # evaluated last, not again
    ref_theta, ref_value, ref_n = run(objective, make_monitor(), solver(), reuse=False,
                                      monkeypatch=monkeypatch)
    assert ref_n == n + 1  # evaluated once more at the result
    assert np.array_equal(ref_theta, theta) and ref_value == value


def test_failed_line_search_evaluates_the_result_again():
    objective = recorded_objective()
    monitor = ConvergenceMonitor(0.0, 500)
    theta, _, n = run(objective, monitor)
    assert "rounding precision" in monitor.message  # a line search that failed at the optimum
    assert np.array_equal(objective.points[n - 1], theta)
    assert not np.array_equal(objective.points[n - 2], theta)


def test_early_stopping_evaluates_the_kept_parameters(monkeypatch):
    objective = recorded_objective()
    def make():
        return ConvergenceMonitor(0.0, 50, validation=held_out([1.0, 2.0] + [0.0] * 48),
                                  n_iter_no_change=2)

    monitor = make()
    theta, value, n = run(objective, monitor)
    assert monitor.early_stopped and monitor.best_iter == 2
    assert not np.array_equal(objective.points[n - 2], theta)
    assert np.array_equal(objective.points[n - 1], theta)  # evaluated again: the best's
    ref = run(objective, make(), reuse=False, monkeypatch=monkeypatch)
    assert ref[2] == n and ref[1] == value


def test_scipy_backend_evaluates_the_result_again():
    objective = recorded_objective()
    theta, _, n = run(objective, ConvergenceMonitor(0.0, 4), solver=LBFGS(backend="scipy"))
    assert np.array_equal(objective.points[n - 1], theta)
    assert np.array_equal(objective.points[n - 2], theta)


def test_liblbfgs_records_its_result_unless_it_went_back():
    def smooth(x):
        return float(np.sum((x - 1.0) ** 4)), 4.0 * (x - 1.0) ** 3

    def kinked(x):  # |x - 1|: the line search fails
        return float(np.abs(x - 1.0).sum()), np.sign(x - 1.0)

    monitor = ConvergenceMonitor(0.0, 3)
    x = minimize_liblbfgs(smooth, np.array([3.0, -2.0]), monitor)
    assert monitor.result_value(x.copy()) is None  # another array
    monitor = ConvergenceMonitor(0.0, 3)
    x = minimize_liblbfgs(smooth, np.array([3.0, -2.0]), monitor)
    assert monitor.result_value(x) == smooth(x)[0]
    assert monitor.result_value(x) is None  # forgotten once read
    monitor = ConvergenceMonitor(0.0, 50)
    with pytest.warns(UserWarning):
        x = minimize_liblbfgs(kinked, np.array([3.3, -2.0]), monitor)
    assert monitor.stop_reason == "stalled" and monitor.result_value(x) is None


class Quadratic:
    n_params = 2

    def __init__(self):
        self.calls = 0

    def value_and_grad(self, theta, loss, prior, C, out=None):
        self.calls += 1
        return float(np.sum(theta ** 2)) * C, 2.0 * C * theta


def test_watched_reuses_only_its_last_evaluation_with_the_same_arguments():
    loss, prior, x = object(), object(), np.array([1.0, 2.0])
    cases = {"same": (lambda w: None, loss, prior, 1.0, 5.0, 0),
             "not recorded": (lambda w: None, loss, prior, 1.0, None, 1),
             "other value": (lambda w: None, loss, prior, 1.0, 4.0, 1),
             "other prior": (lambda w: None, loss, object(), 1.0, 5.0, 1),
             "other C": (lambda w: None, loss, prior, 2.0, 5.0, 1),
             "attribute read": (lambda w: w.n_params, loss, prior, 1.0, 5.0, 1)}
    for name, (between, *args, recorded, more) in cases.items():
        objective = Quadratic()
        watched = _Watched(objective)
        assert watched.value_and_grad(x, loss, prior, 1.0)[0] == 5.0
        between(watched)
        value = watched.result_value(x, *args, recorded)
        assert objective.calls == 1 + more, name
        assert value == float(np.sum(x ** 2)) * args[2], name


@pytest.mark.parametrize("returned", [True, False])
def test_monitor_stop_returns_the_point_reported_last(returned, monkeypatch):
    # PyLBFGS hands the point back at the stop (libLBFGS's code 2); if it
    # raised instead (code 1 here), the point is computed again, bit for bit.
    import sklearn_crfloss.solvers._owlqn as owlqn
    if not returned:
        monkeypatch.setattr(owlqn, "_STOP", 1)
    calls = []

    def fun(x):
        calls.append(np.array(x))
        return float(np.sum(np.cosh(x - 1.0))), np.sinh(x - 1.0)

    reported = []
    monitor = ConvergenceMonitor(1e-3, 100, period=2,
                                 on_params=lambda k, theta, value: reported.append(theta))
    x = minimize_liblbfgs(fun, np.array([3.0, -2.0, 0.5]), monitor)
    assert monitor.stop_reason == "converged" and "stopped improving" in monitor.message
    assert np.array_equal(x, reported[-1]) and np.array_equal(x, calls[-1])
    distinct = len({c.tobytes() for c in calls})
    assert distinct == len(calls) if returned else distinct < len(calls)  # the replay's
    assert monitor.result_value(x) == fun(x)[0]
