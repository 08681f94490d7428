"""The loop shared by the full-batch first-order solvers (Rprop, QuickProp).

Each iteration proposes one step computed from the gradient at the current
point (and the solver's own per-parameter state) and accepts it only if the
objective does not rise: a step that raises it (or makes it non-finite) is
halved up to ``max_halvings`` times, and if none of those lowers the
objective, steps along the negative gradient (of the proposed step's
length) are tried, halved up to ``2 * max_halvings`` times (Fahlman's
fall-back to a plain gradient step). The objective therefore never rises
from one iteration to the next, and a run ends at a point where no step
along the negative gradient lowers it (a local minimum at that precision),
on the monitor's relative-improvement rule, or after ``max_iter``
iterations. A discontinuous objective (the MCE-F loss, whose terms jump
where a sentence's best incorrect output changes) is handled the same way:
a step across a jump that raises the objective is shortened.
"""

import numpy as np

from ..exceptions import UndefinedLossError
from ..priors import get_prior_tags
from ._base import BaseSolver, prior_name

__all__ = []


class StepRuleSolver(BaseSolver):
    """Full-batch solver with a per-parameter step rule and a backtracking safeguard.

    Subclasses define ``_start(grad)`` (the state before the first step),
    ``_step(grad) -> ndarray`` (the proposed step, computed from the
    gradient at the current point; the solver's state is not changed yet)
    and ``_commit(taken, factor, fallback)`` (update the state with the
    step actually taken: the proposal times ``factor``, or a gradient step
    if ``fallback``).
    """

    #: Halvings of a proposed step before the gradient fall-back.
    max_halvings = 5

    def __solver_tags__(self):
        # Docstring inherited; early stopping's patience measured with Rprop
        # (benchmarks/early_stopping_patience.py), applied to QuickProp too.
        tags = super().__solver_tags__()
        tags.takes_bigrams = tags.trains_label_experts = True
        tags.n_iter_no_change = 40
        return tags

    def check(self, loss, prior):
        # Docstring inherited.
        super().check(loss, prior)
        tags = get_prior_tags(prior)
        if not tags.smooth:
            raise ValueError(
                f"solver={self.name!r} needs a prior that is differentiable everywhere; "
                f"prior={prior_name(tags, prior)!r} is not at 0 (its subgradient "
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
        solver = type(self).__name__
        for _ in range(monitor.max_iter):
            step = self._step(grad)
            found = self._descend(objective, loss, prior, C, x, value, grad, step)
            if found is None:
                monitor.finish(
                    True, "no step along the negative gradient lowers the objective (down to "
                    f"2^-{2 * self.max_halvings} of the proposed step): a local minimum at this "
                    "precision", solver=solver)
                return x
            if found is False:
                monitor.finish(
                    False, "the objective is not finite at any trial step (down to "
                    f"2^-{2 * self.max_halvings} of the proposed step); the last point is "
                    "returned (try a smaller first step)", solver=solver, reason="stalled")
                return x
            x, value, new_grad, taken, factor, fallback, n_evals = found
            self._commit(taken, factor, fallback)
            grad = new_grad
            if monitor.report(value, theta=x, grad_norm=float(np.linalg.norm(grad)),
                              **{"|step|": float(np.linalg.norm(taken)), "evals": n_evals}):
                monitor.finish(True, "the objective stopped improving", solver=solver)
                return x
        monitor.finish(False, f"reached max_iter={monitor.max_iter}", solver=solver)
        return x

    def _descend(self, objective, loss, prior, C, x, value, grad, step):
        """The first trial along ``step`` (halved), then along ``-grad``, that does not rise.

        Returns ``(x, value, grad, taken, factor, fallback, n_evals)``; None if
        every trial raised the objective, False if none was finite (a trial
        where the loss is undefined, an ``UndefinedLossError``, counts as not
        finite).
        """
        n_evals, any_finite = 0, False
        gnorm = float(np.linalg.norm(grad))
        length = float(np.linalg.norm(step))
        directions = [(step, self.max_halvings, False)]
        if gnorm > 0 and length > 0:
            directions.append((-grad * (length / gnorm), 2 * self.max_halvings, True))
        for direction, halvings, fallback in directions:
            factor = 1.0
            for _ in range(halvings + 1):
                taken = factor * direction
                trial = x + taken
                n_evals += 1
                try:
                    new_value, new_grad = objective.value_and_grad(trial, loss, prior, C)
                except UndefinedLossError:
                    # A loss that is not a sum over sequences (an F-score) can
                    # be undefined at a trial point: a step too far, as inf is.
                    new_value, new_grad = np.inf, grad
                finite = bool(np.isfinite(new_value) and np.all(np.isfinite(new_grad)))
                any_finite = any_finite or finite
                if finite and new_value <= value:
                    return trial, float(new_value), new_grad, taken, factor, fallback, n_evals
                factor *= 0.5
        return None if any_finite else False
