"""QuickProp (``solver='quickprop'``), Fahlman (1988): the optimiser of Suzuki et al. (2006)."""

from numbers import Real

import numpy as np

from .._utils import Interval
from ._batch import StepRuleSolver

__all__ = ["QuickProp"]


class QuickProp(StepRuleSolver):
    """Full-batch QuickProp (``solver='quickprop'``), Fahlman (1988), section 5.

    Every parameter takes its own secant (one-dimensional Newton) step: the
    objective along parameter ``k`` is taken to be a parabola through the
    last two partial derivatives ``g_k(t - 1)``, ``g_k(t)``, and the step
    jumps to its minimum, ``dw_k(t) = dw_k(t - 1) g_k(t) / (g_k(t - 1) -
    g_k(t))``. As in Fahlman's reference program (with ``slope = -g``):

    * a parameter whose last step was 0 (the first iteration) takes a
      gradient step ``-epsilon g_k``;
    * otherwise, if the slope has not shrunk to at most ``mu / (1 + mu)``
      of its last value in the direction of the last step (no minimum
      ahead, or one farther than ``mu`` last steps), the step is ``mu``
      times the last one (the maximum growth factor), else the secant step
      above;
    * the gradient term ``-epsilon g_k`` is added when the slope still
      points the way of the last step.

    Suzuki et al. (2006, section 5.1 and footnote 2) trained MCE and MCE-F
    with QuickProp after ten iterations of online GPD (the schedule
    ``solver=[('sgd', 10), 'quickprop']``, see :class:`Schedule`). There is
    no line search: each iteration costs one objective evaluation, and a
    discontinuous objective (``loss='mce_f'``) never stops the run.

    The learning rate is made scale-free: ``epsilon_abs = epsilon /
    max_k |g_k(0)|``, so that the first step moves the parameter of largest
    partial derivative by ``epsilon`` (the objectives are sums over
    thousands of sequences, whose gradients have no fixed scale; Fahlman
    divided by the number of training cases for the same reason). The prior
    must be differentiable (``'l2'``, ``'hyperbolic'``, ``'none'``); for
    ``'l1'`` use ``solver='owlqn'``.

    Safeguards (Fahlman's, section 5, and a backtracking test): the maximum
    growth factor ``mu`` above; a step that raises the objective is halved
    until it does not (at most 5 times), and if none of the halved steps
    lowers it, a plain gradient step of the same length is tried and
    halved (at most 10 times). The objective therefore never rises from one
    iteration to the next. Training stops after ``max_iter`` iterations,
    when the objective improved by less than ``tol`` (relative) over 10
    iterations, or where no gradient step lowers it.

    Parameters
    ----------
    epsilon : float, default=0.01
        Gradient-descent learning rate, ``> 0``, relative to the largest
        partial derivative at the starting point (above).
    mu : float, default=1.75
        Maximum growth factor of a step over the last one, ``> 0``
        (Fahlman's value).

    References
    ----------
    S. E. Fahlman (1988). An empirical study of learning speed in
    back-propagation networks. Technical report CMU-CS-88-162, Carnegie
    Mellon University. Section 5 (the quickprop algorithm).
    J. Suzuki, E. McDermott, H. Isozaki (2006). Training conditional random
    fields with multivariate evaluation measures. ACL. Section 5.1.

    Examples
    --------
    Five epochs of SGD, then QuickProp with a smaller growth factor, for at
    most 40 iterations:

    >>> from sklearn_crfloss import CRFTagger
    >>> from sklearn_crfloss.solvers import QuickProp
    >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "runs"}]]
    >>> y = [["B-NP", "I-NP"], ["B-NP", "I-NP", "B-VP"]]
    >>> solver = [("sgd", 5), QuickProp(mu=1.5)]
    >>> crf = CRFTagger(solver=solver, max_iter=40, random_state=0).fit(X, y)
    >>> 5 < crf.n_iter_ <= 45
    True
    """

    name = "quickprop"

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "mu": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, epsilon=0.01, mu=1.75):
        self.epsilon = epsilon
        self.mu = mu

    def _start(self, grad):
        top = float(np.max(np.abs(grad))) if grad.shape[0] else 0.0
        self._eps = float(self.epsilon) / top if top > 0 else float(self.epsilon)
        self._prev_step = np.zeros(grad.shape[0])
        self._prev_slope = np.zeros(grad.shape[0])

    def _step(self, grad):
        mu = float(self.mu)
        shrink = mu / (1.0 + mu)
        slope = -grad
        prev_step, prev_slope = self._prev_step, self._prev_slope
        pos = prev_step > 0
        neg = prev_step < 0
        # The gradient term: always after a zero step, else when the slope
        # still points the way of the last step.
        step = np.where((~pos & ~neg) | (pos & (slope > 0)) | (neg & (slope < 0)),
                        self._eps * slope, 0.0)
        grow = (pos & (slope >= shrink * prev_slope)) | (neg & (slope <= shrink * prev_slope))
        denom = prev_slope - slope
        secant = (pos | neg) & ~grow & (denom != 0)
        step[grow] += mu * prev_step[grow]
        step[secant] += slope[secant] / denom[secant] * prev_step[secant]
        self._slope = slope
        return step

    def _commit(self, taken, factor, fallback):
        self._prev_step = taken
        self._prev_slope = self._slope
