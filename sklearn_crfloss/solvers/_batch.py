"""The loop shared by the full-batch first-order solvers (Rprop, QuickProp).

Each iteration takes one step computed from the gradient at the current
point (and the solver's own per-parameter state), evaluates the objective
there and reports it: no line search, so a discontinuous objective (the
MCE-F loss, whose terms jump where a sentence's best incorrect output
changes) never stops the run, it only makes a step worse. Since no step is
guaranteed to descend, the solvers return the point of the lowest objective
seen (the starting point included), not the last one.
"""

import numpy as np

from ._base import BaseSolver

__all__ = []


class _StepRuleSolver(BaseSolver):
    """Full-batch solver with a per-parameter step rule and no line search.

    Subclasses define ``_start(grad)`` (the state before the first step)
    and ``_step(grad) -> ndarray`` (the step to add to the parameters,
    computed from the gradient at the current point).
    """

    def check(self, loss, prior):
        # Docstring inherited.
        super().check(loss, prior)
        if hasattr(prior, "parametrisation") and prior.parametrisation(1) is not None:
            raise ValueError(
                f"solver={self.name!r} needs a prior that is differentiable everywhere; "
                f"prior={getattr(prior, 'name', prior)!r} is not at 0 (its subgradient "
                "makes the weights oscillate around 0 instead of reaching it): use "
                "solver='owlqn' or 'lbfgs'.")

    def solve(self, objective, loss, prior, C, x0, monitor):
        # Docstring inherited.
        x = np.array(x0, dtype=np.float64)
        value, grad = objective.value_and_grad(x, loss, prior, C)
        if not np.isfinite(value):
            raise ValueError(f"solver={self.name!r}: the objective is {value} at the "
                             "starting point.")
        self._start(grad)
        best_x, best_value = x, value  # no step is guaranteed to descend
        for _ in range(monitor.max_iter):
            step = self._step(grad)
            x_new = x + step
            new_value, new_grad = objective.value_and_grad(x_new, loss, prior, C)
            if not (np.isfinite(new_value) and np.all(np.isfinite(new_grad))):
                monitor.finish(False, f"the objective became {new_value} after a step; "
                               "the point of the lowest objective is returned (try a smaller first "
                               "step)", solver=type(self).__name__)
                return best_x
            x, value, grad = x_new, new_value, new_grad
            if value < best_value:
                best_x, best_value = x, value
            if monitor.report(value, theta=x, **{"|grad|": float(np.linalg.norm(grad)),
                                        "|step|": float(np.linalg.norm(step))}):
                monitor.finish(True, "the objective stopped improving",
                               solver=type(self).__name__)
                return best_x
        monitor.finish(False, f"reached max_iter={monitor.max_iter}",
                       solver=type(self).__name__)
        return best_x
