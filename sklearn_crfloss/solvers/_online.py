"""Mistake-driven online solvers: the structured perceptron and 1-best MIRA.

They visit one sequence at a time in an order shuffled every epoch with
``random_state``. Every step goes through the loss's own
``value_and_grad`` on that one sequence (the structured hinge of
:mod:`sklearn_crfloss.losses`, whose subgradient is the features of the
predicted path minus the gold ones) and touches only the weight rows of the
attributes present in the sequence, so an epoch costs about one pass over
the data. The parameters are dense: ``W`` (n_features, n_labels),
transitions, start and end potentials (``dense_states = True``), and the
blocks of the bigram attributes (observation-dependent label bigrams),
which give every edge of the sequence its own matrix
``T + sum_b x[t, b] B_b`` (``_bigram_rows.py``).

- ``'perceptron'``: Collins (2002): if the Viterbi path differs from the gold
  one, add the gold features and subtract the predicted ones.
- ``'mira'``: 1-best MIRA with cost-augmented inference (Crammer et al.
  2006, the PA-I update): take the smallest step that makes the gold path
  win by the cost, clipped at ``C``: ``tau = min(C, hinge / ||df||^2)``;
  a hinge below ``1e-9`` (a tie left by an earlier step) is no mistake.

Training stops after an epoch without a mistake (no update: the weights
are a fixed point of the rule, the data are separated), which counts as
convergence; ``max_iter`` epochs with mistakes do not converge (a
:class:`~sklearn.exceptions.ConvergenceWarning` says so).

Averaging (``average=True``): the returned parameters are the mean of the
parameters after every example, kept with the ``W - U / c`` trick (Daume III
2006). Stochastic gradient descent (``solver='sgd'``) is in
:mod:`sklearn_crfloss.solvers._sgd`; both shuffle with
:func:`random_generator`.
"""


import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from .._model import (local_chain, local_columns, local_transitions, pack_blocks,
                      split_bigram_columns)
from ..losses import get_loss_tags
from ._base import BaseSolver
from ._monitor import diverged
from ._rollback import RowCheckpoint, rng_state, set_rng_state

__all__ = ["MIRA", "OnlineState", "StructuredPerceptron", "random_generator"]


def random_generator(random_state):
    """A numpy Generator from ``random_state`` (int, RandomState, Generator or None).

    A Generator is used as is (its state advances); anything else goes
    through :func:`sklearn.utils.check_random_state`.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    return check_random_state(random_state)


class _OnlineSolver(BaseSolver):
    """The epoch loop shared by the online solvers; subclasses define the step."""

    unit = "epoch"
    dense_states = True
    default_max_iter = 10

    def __solver_tags__(self):
        # Docstring inherited.
        tags = super().__solver_tags__()
        tags.online = tags.takes_bigrams = True
        return tags

    def new_state(self, n_features, n_labels, all_states):
        """A new :class:`OnlineState` for :meth:`partial_solve` (``all_states`` is ignored:
        the online rules train every (attribute, label) pair)."""
        return OnlineState(n_features, n_labels)

    def solve(self, objective, loss, prior, C, x0, monitor):
        # Docstring inherited.
        X, y, offsets = objective.X, objective.y, objective.offsets
        layout = objective.layout
        n_seq = offsets.shape[0] - 1
        weights = (np.ones(n_seq) if objective.sample_weight is None
                   else objective.sample_weight)
        params = [np.array(p, dtype=np.float64) for p in layout.unpack(x0)]
        Xb = None
        if layout.n_bigram:  # observation-dependent label bigrams: their blocks follow
            params.append(np.array(layout.bigram_weights(x0)))
            X, Xb = split_bigram_columns(X, offsets, layout.bigram_columns)
        # Potentials outside the layout (no start/end, a label expert's) stay 0.
        self._tail_masks = None if layout.full_tail else layout.tail_masks()
        self._start(params, prior, C, n_seq)
        rng = random_generator(self.random_state)
        # Each sequence's rows on its own columns, built once for all epochs.
        blocks = [local_columns(X[offsets[i]:offsets[i + 1]])
                  + (() if Xb is None else local_columns(Xb[offsets[i]:offsets[i + 1]]))
                  for i in range(n_seq)]
        value = None  # mistakes (updates) of the last epoch
        active = np.flatnonzero(weights > 0)  # a sequence of weight 0 takes no part
        for _ in range(monitor.max_iter):
            value = 0.0
            for i in rng.permutation(active):
                value += self._step(params, loss, *blocks[i], y[offsets[i]:offsets[i + 1]],
                                    weights[i], C)
            if monitor.report(value, theta=lambda: pack_blocks(layout, *self._result(params)),
                              check=False):
                break
            if value == 0:  # no update in a whole epoch: a fixed point of the rule
                break
        if value == 0:  # (finish reports early stopping as such)
            monitor.finish(True, f"epoch {monitor.n_iter} made no mistake", solver=self.name)
        else:
            monitor.finish(False, f"reached max_iter={monitor.max_iter}, the last epoch "
                           f"with {value:g} mistakes", solver=self.name)
        return pack_blocks(layout, *self._result(params))

    def partial_solve(self, X, y, offsets, sample_weight, loss, prior, C, state, verbose=0,
                      bigram_columns=()):
        """One epoch over a batch, continuing the run held in ``state`` (``partial_fit``).

        The arguments of :meth:`SGD.partial_solve
        <sklearn_crfloss.solvers.SGD.partial_solve>`, with an
        :class:`OnlineState` (grown to the batch's attributes); returns the
        number of mistakes (updates) in the batch.

        Raises
        ------
        ValueError
            If the parameters are not finite after the epoch (features of a
            huge magnitude); ``state`` is then put back as it was.
        """
        self.check(loss, prior)
        saved = state.checkpoint(np.unique(X.indices))
        try:
            state.grow(X.shape[1], len(bigram_columns))
            value = self._partial_epoch(X, y, offsets, sample_weight, loss, prior, C, state,
                                        bigram_columns)
            if not (np.isfinite(value) and state.finite(saved)):
                raise diverged("partial_fit", "the parameters are not finite after the batch")
        except BaseException:
            state.rollback(saved)
            raise
        return value

    def _partial_epoch(self, X, y, offsets, sample_weight, loss, prior, C, state,
                       bigram_columns):
        """The epoch of :meth:`partial_solve` over a batch, on its state in place."""
        self._tail_masks = None  # partial_fit trains the start and end potentials
        n_seq = offsets.shape[0] - 1
        if state.rng is None:
            state.rng = random_generator(self.random_state)
            self._start(state.params, prior, C, n_seq)
            state.sums, state.count = self._sums, self._count
        self._sums, self._count = state.sums, state.count
        weights = np.ones(n_seq) if sample_weight is None else sample_weight
        X = sp.csr_matrix(X, dtype=np.float64)
        Xb = None
        if len(bigram_columns):
            X, Xb = split_bigram_columns(X, offsets, np.asarray(bigram_columns, dtype=np.intp))
        value = 0.0
        for i in state.rng.permutation(n_seq):
            rows = slice(offsets[i], offsets[i + 1])
            value += self._step(state.params, loss, *local_columns(X[rows]),
                                *(() if Xb is None else local_columns(Xb[rows])), y[rows],
                                weights[i], C)
        state.count = self._count
        return value

    def parameters_of(self, state):
        """``(W, transition, start, end)`` of ``state``: averaged if ``average``."""
        self._sums, self._count = state.sums, state.count
        return tuple(np.array(p) for p in self._result(state.params))

    def _potentials(self, params, Xs, cols, Xb=None, bcols=None):
        W, T, s, e = params[:4]
        if Xb is not None:  # one transition matrix per token (bigram blocks)
            T = local_transitions(T, params[4], Xb, bcols)
        return np.ascontiguousarray(Xs @ W[cols]), T, s, e


class OnlineState:
    """What :meth:`_OnlineSolver.partial_solve` carries from one call to the next.

    Parameters
    ----------
    n_features, n_labels : int

    Attributes
    ----------
    params : list of ndarray
        ``[W (n_features, n_labels), transition, start, end]``, dense, and
        the blocks (n_bigram, n_labels, n_labels) of the bigram attributes
        once there are any.
    sums, count
        The averaging sums and step count (set by the first call).
    rng : numpy.random.Generator or None
    """

    def __init__(self, n_features, n_labels):
        L = n_labels
        self.params = [np.zeros((n_features, L)), np.zeros((L, L)), np.zeros(L), np.zeros(L)]
        self.sums, self.count, self.rng = None, 1, None

    def grow(self, n_features, n_bigram=0):
        """Add zero rows for new attributes, zero blocks for new bigram attributes."""
        L = self.params[0].shape[1]
        if n_bigram:
            for arrays in [self.params] + ([] if self.sums is None else [self.sums]):
                if len(arrays) == 4:
                    arrays.append(np.zeros((0, L, L)))
                arrays[4] = np.concatenate(
                    [arrays[4], np.zeros((n_bigram - arrays[4].shape[0], L, L))])
        extra = n_features - self.params[0].shape[0]
        if extra > 0:
            L = self.params[0].shape[1]
            self.params[0] = np.concatenate([self.params[0], np.zeros((extra, L))])
            if self.sums is not None:
                self.sums[0] = np.concatenate([self.sums[0], np.zeros((extra, L))])

    def observe(self, X, y):
        """Nothing to record: the perceptron and MIRA train every pair they see."""

    def checkpoint(self, rows):
        """What :meth:`rollback` needs to undo a call that touches the weight ``rows``."""
        saved = RowCheckpoint(rows)
        for k, p in enumerate(self.params):
            (saved.save_rows if k == 0 else saved.save)(f"params{k}", p)
        for k, p in enumerate(self.sums or ()):
            (saved.save_rows if k == 0 else saved.save)(f"sums{k}", p)
        saved.scalars = (len(self.params), None if self.sums is None else len(self.sums),
                         self.count, self.rng, rng_state(self.rng))
        return saved

    def rollback(self, saved):
        """Put the state back as :meth:`checkpoint` found it."""
        n_params, n_sums, self.count, self.rng, rng = saved.scalars
        self.params = [saved.restore(f"params{k}", p) for k, p in enumerate(self.params[:n_params])]
        self.sums = None if n_sums is None else [
            saved.restore(f"sums{k}", p) for k, p in enumerate(self.sums[:n_sums])]
        set_rng_state(self.rng, rng)

    def finite(self, saved):
        """Whether every weight a call from :meth:`checkpoint` may have changed is finite."""
        return (saved.finite("params0", self.params[0])
                and all(np.all(np.isfinite(p)) for p in self.params[1:]))


class _MistakeDriven(_OnlineSolver):
    """Perceptron and MIRA: update on a mistake of the (cost-augmented) Viterbi path."""

    def __init__(self, average=True, random_state=None):
        self.average = average
        self.random_state = random_state

    def __solver_tags__(self):
        # Docstring inherited.
        tags = super().__solver_tags__()
        tags.own_rule = True
        return tags

    def check(self, loss, prior):
        # Docstring inherited.
        tags = get_loss_tags(loss)
        if tags.default_solver != self.name:
            raise ValueError(f"solver={self.name!r} trains loss={self.name!r} only, not "
                             f"{tags.name or loss!r}.")

    def _start(self, params, prior, C, n_seq):
        self._sums = [np.zeros_like(p) for p in params] if self.average else None
        self._count = 1  # examples seen + 1

    def _step(self, params, loss, Xs, cols, *rest):
        *bigram, gold, weight, C = rest  # bigram: the sequence's (Xb, bcols), or none
        unary, T, s, e = self._potentials(params, Xs, cols, *bigram)
        hinge, dU, dT, ds, de = loss.value_and_grad(unary, T, s, e, gold,
                                                    np.array([0, gold.shape[0]]))
        if not dU.any():  # the predicted path is the gold one
            self._count += 1
            return 0.0
        grads, where = [Xs.T @ dU, dT, ds, de], [cols, slice(None), slice(None), slice(None)]
        if bigram:  # the token-wise matrices' gradient: to the shared matrix and the blocks
            grads[1], d_blocks = local_chain(dT, bigram[0])
            grads.append(d_blocks)
            where.append(bigram[1])
        if self._tail_masks is not None:
            grads[1:4] = (g * m for g, m in zip(grads[1:4], self._tail_masks))
        tau = self._tau(hinge, grads, C)
        if tau is None:
            self._count += 1
            return 0.0
        tau *= weight
        for p, g, r in zip(params, grads, where):
            p[r] -= tau * g
        if self._sums is not None:
            for q, g, r in zip(self._sums, grads, where):
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

    def _tau(self, hinge, grads, C):
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

    def _tau(self, hinge, grads, C):
        norm = float(sum((g * g).sum() for g in grads))
        if hinge <= self.tie_tolerance or norm == 0:
            return None
        return min(C, hinge / norm)
