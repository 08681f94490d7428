"""Online solvers: structured perceptron, 1-best MIRA and stochastic (sub)gradient descent.

They visit one sequence at a time in an order shuffled every epoch with
``random_state``. Every step goes through the loss's own
``value_and_grad`` on that one sequence (for the perceptron and MIRA the
structured hinge of :mod:`sklearn_crfloss.losses`, whose subgradient is the
features of the predicted path minus the gold ones) and touches only the
weight rows of the attributes present in the sequence, so an epoch costs
about one pass over the data. The parameters are dense: ``W``
(n_features, n_labels), transitions, start and end potentials
(``dense_states = True``).

- ``'perceptron'``: Collins (2002): if the Viterbi path differs from the gold
  one, add the gold features and subtract the predicted ones.
- ``'mira'``: 1-best MIRA with cost-augmented inference (Crammer et al.
  2006, the PA-I update): take the smallest step that makes the gold path
  win by the cost, clipped at ``C``: ``tau = min(C, hinge / ||df||^2)``;
  a hinge below ``1e-9`` (a tie left by an earlier step) is no mistake.
- ``'sgd'``: stochastic (sub)gradient descent on
  ``loss_i + ||theta||^2 / (2 C n)`` for any loss that is a sum over
  sequences. Step size ``eta_t = 1 / (lambda (t0 + t))`` with
  ``lambda = 1 / (C n)`` and ``t0`` such that ``eta_0 = eta0`` (Bottou's
  crfsgd, scikit-learn's ``learning_rate='optimal'``); without a prior
  ``eta_t = eta0 / sqrt(1 + t / n)``. The L2 shrinkage uses the scaled
  representation ``theta = a * V`` so a step stays sparse.

Averaging (``average=True``): the returned parameters are the mean of the
parameters after every example. Perceptron and MIRA keep it with the
``W - U / c`` trick (Daume III 2006); SGD, whose shrinkage rescales every
weight at every step, with the same idea on the scaled representation:
``sum_t a_t V_t = S V - B`` with ``S = sum_t a_t`` and ``B`` the sum of the
sparse steps ``D_t`` times ``S`` before them (Polyak-Ruppert averaging, as
in Bottou's ASGD), at no extra cost per step beyond the touched rows.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from ._base import BaseSolver

__all__ = ["MIRA", "SGD", "StructuredPerceptron"]


class _OnlineSolver(BaseSolver):
    """The epoch loop shared by the online solvers; subclasses define the step."""

    dense_states = True
    default_max_iter = 10

    def solve(self, objective, loss, prior, C, x0, monitor):
        # Docstring inherited.
        X, y, offsets = objective.X, objective.y, objective.offsets
        layout = objective.layout
        n_seq = offsets.shape[0] - 1
        weights = (np.ones(n_seq) if objective.sample_weight is None
                   else objective.sample_weight)
        params = [np.array(p, dtype=np.float64) for p in layout.unpack(x0)]
        self._start(params, prior, C, n_seq)
        rng = self.random_state
        if not isinstance(rng, np.random.Generator):
            rng = check_random_state(rng)
        for _ in range(monitor.max_iter):
            value = 0.0
            for i in rng.permutation(n_seq):
                a, b = offsets[i], offsets[i + 1]
                Xi = X[a:b]
                cols, local = np.unique(Xi.indices, return_inverse=True)
                Xs = sp.csr_matrix((Xi.data, local, Xi.indptr - Xi.indptr[0]),
                                   shape=(b - a, cols.shape[0]))
                value += self._step(params, loss, Xs, cols, y[a:b], weights[i], C)
            monitor.report(value, check=False)
        monitor.finish(True, f"ran {monitor.max_iter} epochs")
        return layout.pack(*self._result(params))

    def _potentials(self, params, Xs, cols, scale=1.0):
        W, T, s, e = params
        return (np.ascontiguousarray(scale * (Xs @ W[cols])), scale * T, scale * s, scale * e)


class _MistakeDriven(_OnlineSolver):
    """Perceptron and MIRA: update on a mistake of the (cost-augmented) Viterbi path."""

    def __init__(self, average=True, random_state=None):
        self.average = average
        self.random_state = random_state

    def check(self, loss, prior):
        # Docstring inherited.
        if getattr(loss, "default_solver", None) != self.name:
            raise ValueError(f"solver={self.name!r} trains loss={self.name!r} only, not "
                             f"{getattr(loss, 'name', loss)!r}.")

    def _start(self, params, prior, C, n_seq):
        self._sums = [np.zeros_like(p) for p in params] if self.average else None
        self._count = 1  # examples seen + 1

    def _step(self, params, loss, Xs, cols, gold, weight, C):
        unary, T, s, e = self._potentials(params, Xs, cols)
        hinge, dU, dT, ds, de = loss.value_and_grad(unary, T, s, e, gold,
                                                    np.array([0, gold.shape[0]]))
        if not dU.any():  # the predicted path is the gold one
            self._count += 1
            return 0.0
        G = Xs.T @ dU
        tau = self._tau(hinge, G, dT, ds, de, C)
        if tau is None:
            self._count += 1
            return 0.0
        tau *= weight
        for p, g, r in zip(params, (G, dT, ds, de), (cols, slice(None), slice(None),
                                                     slice(None))):
            p[r] -= tau * g
        if self._sums is not None:
            for q, g, r in zip(self._sums, (G, dT, ds, de),
                               (cols, slice(None), slice(None), slice(None))):
                q[r] -= self._count * tau * g
        self._count += 1
        return 1.0

    def _result(self, params):
        if self._sums is None:
            return params
        return [p - q / self._count for p, q in zip(params, self._sums)]


class StructuredPerceptron(_MistakeDriven):
    """The averaged structured perceptron rule (``solver='perceptron'``), Collins (2002).

    Trains ``loss='perceptron'`` only: on a mistake, add the gold path's
    features and subtract the predicted one's (step 1); no prior.

    Parameters
    ----------
    average : bool, default=True
        Return the average of the parameters over all steps.
    random_state : int, RandomState instance or None, default=None
        Shuffling of the sequences every epoch.

    References
    ----------
    M. Collins (2002). Discriminative training methods for hidden Markov
    models: theory and experiments with perceptron algorithms. EMNLP.
    """

    name = "perceptron"

    def _tau(self, hinge, G, dT, ds, de, C):
        return 1.0


class MIRA(_MistakeDriven):
    """1-best MIRA, PA-I (``solver='mira'``), Crammer et al. (2006).

    Trains ``loss='mira'`` only: with the cost-augmented hinge
    ``l = score(y) + cost(y_i, y) - score(y_i)`` of the predicted path and
    the feature difference ``df``, step ``tau = min(C, l / ||df||^2)``;
    no step, and no mistake counted in ``loss_curve_``, when ``l <= 1e-9``
    (a PA-I step leaves the gold path tied with the predicted one; below
    that, rounding decides which one Viterbi returns).

    Parameters
    ----------
    average : bool, default=True
    random_state : int, RandomState instance or None, default=None

    References
    ----------
    K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz, Y. Singer (2006).
    Online passive-aggressive algorithms. JMLR 7.
    """

    name = "mira"

    #: A hinge at or below this is a tie, not a mistake: a PA-I step puts
    #: the gold path exactly on the margin, where rounding decides which of
    #: the tied paths Viterbi returns.
    tie_tolerance = 1e-9

    def _tau(self, hinge, G, dT, ds, de, C):
        norm = float((G * G).sum() + (dT * dT).sum() + ds @ ds + de @ de)
        if hinge <= self.tie_tolerance or norm == 0:
            return None
        return min(C, hinge / norm)


class SGD(_OnlineSolver):
    """Stochastic (sub)gradient descent (``solver='sgd'``), one sequence per step.

    For any loss that sums over sequences, with the L2 prior (zero mean) or
    none; see the module docstring for the step sizes and averaging.

    Parameters
    ----------
    eta0 : float, default=0.1
        First step size.
    average : bool, default=True
        Polyak-Ruppert averaging of the iterates.
    random_state : int, RandomState instance or None, default=None

    References
    ----------
    L. Bottou (2012). Stochastic gradient descent tricks. Neural Networks:
    Tricks of the Trade, LNCS 7700.
    """

    name = "sgd"

    def __init__(self, eta0=0.1, average=True, random_state=None):
        self.eta0 = eta0
        self.average = average
        self.random_state = random_state

    def check(self, loss, prior):
        # Docstring inherited.
        from ..priors import GaussianPrior, NoPrior

        if getattr(loss, "default_solver", None) in ("perceptron", "mira"):
            raise ValueError(f"loss={loss.default_solver!r} is trained by its own online "
                             f"rule; leave solver=None.")
        ok = isinstance(prior, NoPrior) or (
            isinstance(prior, GaussianPrior) and not np.any(prior.mean)
            and not prior.feature_dependent)
        if not ok:
            raise ValueError("solver='sgd' supports prior='l2' (zero mean, not "
                             "feature-dependent) or 'none'.")

    def _start(self, params, prior, C, n_seq):
        from ..priors import NoPrior

        self._n_seq = n_seq
        self._lam = 0.0 if isinstance(prior, NoPrior) else 1.0 / (C * n_seq)
        self._t0 = 1.0 / (self._lam * self.eta0) if self._lam > 0 else 0.0
        self._t = 0
        self._scale = 1.0  # theta = scale * params
        if self.average:
            # sum_t theta_t = S V - B with S = sum_t scale_t and B = sum_t D_t S_{t-1};
            # A0 keeps the sum across scale folds.
            self._B = [np.zeros_like(p) for p in params]
            self._A0 = [np.zeros_like(p) for p in params]
            self._S = 0.0
            self._n_steps = 0

    def _step(self, params, loss, Xs, cols, gold, weight, C):
        lam, t = self._lam, self._t
        unary, T, s, e = self._potentials(params, Xs, cols, self._scale)
        eta = (1.0 / (lam * (self._t0 + t)) if lam > 0
               else self.eta0 / np.sqrt(1.0 + t / self._n_seq))
        self._t += 1
        v, dU, dT, ds, de = loss.value_and_grad(unary, T, s, e, gold,
                                                np.array([0, gold.shape[0]]))
        self._scale *= 1.0 - eta * lam
        if self._scale < 1e-9:  # fold the scale back into the parameters
            if self.average:
                for a0, bb, p in zip(self._A0, self._B, params):
                    a0 += self._S * p - bb
                    bb[...] = 0.0
                self._S = 0.0
            for p in params:
                p *= self._scale
            self._scale = 1.0
        step = -eta * weight / self._scale
        dW = step * (Xs.T @ dU)
        W = params[0]
        W[cols] += dW
        params[1] += step * dT
        params[2] += step * ds
        params[3] += step * de
        if self.average:
            S, B = self._S, self._B
            B[0][cols] += S * dW
            B[1] += (S * step) * dT
            B[2] += (S * step) * ds
            B[3] += (S * step) * de
            self._S += self._scale
            self._n_steps += 1
        return weight * v

    def _result(self, params):
        if self.average and self._n_steps:
            return [(a0 + self._S * p - bb) / self._n_steps
                    for a0, p, bb in zip(self._A0, params, self._B)]
        return [self._scale * p for p in params]
