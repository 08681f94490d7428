"""iRprop- (``solver='rprop'``): resilient backpropagation, Igel & Husken (2000)."""

from numbers import Real

import numpy as np

from .._utils import Interval
from ._batch import StepRuleSolver

__all__ = ["Rprop"]


class Rprop(StepRuleSolver):
    """Full-batch iRprop- (``solver='rprop'``), Igel & Husken (2000), Fig. 3.

    Every parameter ``k`` has its own step size ``Delta_k``, adapted from the
    signs of its last two partial derivatives only (never their magnitude,
    so the scale of the objective does not matter), and moves by
    ``-sign(g_k) Delta_k``:

    * ``g_k(t - 1) g_k(t) > 0``: ``Delta_k = min(eta_plus Delta_k, delta_max)``;
    * ``g_k(t - 1) g_k(t) < 0`` (the last step jumped over a minimum along
      ``k``): ``Delta_k = max(eta_minus Delta_k, delta_min)`` and ``g_k(t)``
      is set to 0, so that the parameter does not move in this iteration and
      its step size is not changed again in the next one (the ``-`` of
      iRprop-: no weight backtracking);
    * otherwise ``Delta_k`` is kept.

    Backtracking: a step that raises the objective is halved until it does
    not (at most 5 times; the step sizes ``Delta_k`` shrink by the same
    factor), and if none does, a plain gradient step of the same length is
    tried and halved (at most 10 times), after which every ``Delta_k`` is
    multiplied by ``eta_minus`` and the sign memory cleared. The objective
    therefore never rises from one iteration to the next. An iteration that
    needs no backtracking costs one objective evaluation. The prior must be
    differentiable (``'l2'``, ``'hyperbolic'``, ``'none'``); for ``'l1'``
    use ``solver='owlqn'``. Training stops after ``max_iter`` iterations,
    when the objective improved by less than ``tol`` (relative) over 10
    iterations, or where no gradient step lowers it.

    Parameters
    ----------
    delta0 : float, default=0.01
        Initial step size of every parameter, ``> 0`` (the paper: 0.0125;
        CRF weights are of order 1, as the paper's network weights).
    eta_plus : float, default=1.2
        Step-size growth factor, ``> 1`` (the paper's value).
    eta_minus : float, default=0.5
        Step-size shrink factor, in ``(0, 1)`` (the paper's value).
    delta_min : float, default=0.0
        Smallest step size, ``>= 0`` (the paper: 0).
    delta_max : float, default=50.0
        Largest step size, ``> 0`` (the paper: 50).

    References
    ----------
    C. Igel, M. Husken (2000). Improving the Rprop learning algorithm.
    Proceedings of the Second International ICSC Symposium on Neural
    Computation (NC 2000), pp. 115-121. Section 3 and Fig. 3 (iRprop-).
    M. Riedmiller, H. Braun (1993). A direct adaptive method for faster
    backpropagation learning: the RPROP algorithm. IEEE ICNN.

    Examples
    --------
    >>> from sklearn_crfloss import CRFTagger
    >>> from sklearn_crfloss.solvers import Rprop
    >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "runs"}]]
    >>> y = [["B-NP", "I-NP"], ["B-NP", "I-NP", "B-VP"]]
    >>> crf = CRFTagger(solver="rprop", max_iter=50).fit(X, y)
    >>> crf.n_iter_ <= 50
    True
    """

    name = "rprop"

    _parameter_constraints: dict = {
        "delta0": [Interval(Real, 0, None, closed="neither")],
        "eta_plus": [Interval(Real, 1, None, closed="neither")],
        "eta_minus": [Interval(Real, 0, 1, closed="neither")],
        "delta_min": [Interval(Real, 0, None, closed="left")],
        "delta_max": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, delta0=0.01, eta_plus=1.2, eta_minus=0.5, delta_min=0.0,
                 delta_max=50.0):
        self.delta0 = delta0
        self.eta_plus = eta_plus
        self.eta_minus = eta_minus
        self.delta_min = delta_min
        self.delta_max = delta_max

    def _start(self, grad):
        self._delta = np.full(grad.shape[0], float(self.delta0))
        self._prev = np.zeros(grad.shape[0])

    def _step(self, grad):
        g = grad.copy()
        sign_change = self._prev * g
        up = sign_change > 0
        down = sign_change < 0
        delta = self._delta.copy()
        delta[up] = np.minimum(delta[up] * self.eta_plus, self.delta_max)
        delta[down] = np.maximum(delta[down] * self.eta_minus, self.delta_min)
        g[down] = 0.0
        self._pending = (g, delta)
        return -np.sign(g) * delta

    def _commit(self, taken, factor, fallback):
        g, delta = self._pending
        if fallback:  # the sign rule's step raised the objective: start afresh, smaller
            self._delta = np.maximum(self._delta * self.eta_minus, self.delta_min)
            self._prev = np.zeros_like(g)
        else:
            self._delta = np.maximum(delta * factor, self.delta_min)
            self._prev = g
