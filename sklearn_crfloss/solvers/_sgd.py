"""Stochastic gradient descent for CRFs (``solver='sgd'``): Bottou's crfsgd and crfasgd.

The training objective ``sum_i w_i loss_i(theta) + ||theta||^2 / (2 C)`` is
``n`` times the mean of ``w_i loss_i + lam / 2 ||theta||^2`` with
``lam = 1 / (C n)``; SGD steps on one sequence (or a small minibatch) at a
time, in an order shuffled every epoch with ``random_state``:

``theta <- (1 - eta_t lam |B|) theta - eta_t grad sum_{i in B} w_i loss_i``,
``eta_t = eta0 / (1 + eta0 lam t) ** power_t`` (``t``: sequences seen).

Tricks of L. Bottou, "Stochastic gradient descent tricks" (2012), as his
crfsgd/crfasgd programs implement them:

- the L2 shrinkage is a scalar: ``theta = a V``, so a step touches only the
  weights of the attributes present in the sequence;
- ``eta0='auto'``: the first step size is calibrated on a sample of the
  training sequences (crfsgd's ``adjustEta``): one pass over the sample with
  a constant step for each candidate (0.1, doubled while the sample
  objective decreases, then halved from 0.05 until ten candidates have
  decreased it), the best candidate halved;
- averaging (ASGD, crfasgd): the returned parameters are the mean of the
  iterates after averaging started, kept without a dense pass per step
  (``sum_k a_k V_k = S V - B``; see ``_ext/_sgd.pyx``).

Two paths, the same update:

- compiled per-sequence loop (``_ext/_sgd.pyx``) for the losses whose
  per-sequence gradient a chain kernel gives directly:
  ``'cll'`` (forward-backward), ``'softmax_margin'`` (forward-backward on the
  cost-augmented potentials) and ``'max_margin'`` (Viterbi on the
  cost-augmented potentials);
- generic path for every other loss with a batch ``value_and_grad``
  (``'risk'``, ``'jrb'``, ``'pointwise'``, ``'mixed'``, ``'labelwise'``,
  ``'mce'``, ``'mce_f'``, and user losses): minibatches of ``batch_size``
  sequences, potentials and the scaled sparse step compiled, the gradient
  from the loss's own ``value_and_grad`` on the minibatch.

Observation-dependent label bigrams (a layout with bigram blocks): the
blocks are kept in the same scaled representation (``_sgd_blocks.py``);
every edge with active bigram attributes gets its own matrix
``T + sum_b x[t, b] B_b``, in the compiled loop and in the generic path
alike, and the step reaches the blocks active in the sequence.
"""

from numbers import Integral, Real
from types import SimpleNamespace

import warnings

import numpy as np

from .._data import column_counts
from .._model import kernel_csr, pack_blocks, split_bigram_columns
from .._utils import Interval, StrOptions, validate_parameter_constraints
from ..exceptions import PotentialMagnitudeError, UndefinedLossError
from ..losses import get_loss_tags
from ..priors import get_prior_tags
from ._base import BaseSolver
from ._monitor import diverged, take_sequences
from ._online import random_generator
from ._sgd_blocks import ScaledBlocks
from ._sgd_loops import batch_potentials, sgd_pass, sgd_step
from ._sgd_state import may_fold, SGDState

__all__ = ["SGD"]

_KIND_SUM, _KIND_MAX = 0, 1
_KINDS = {"sum": _KIND_SUM, "max": _KIND_MAX}


def _compiled_kind(loss, n_labels):
    """(kind, cost matrix or None) of the compiled loop for ``loss``, or (None, None).

    The loss's record declares its step (``sgd_step``, ``sgd_cost``: exact
    classes only, a subclass may change ``value_and_grad``).
    """
    tags = get_loss_tags(loss)
    if tags.sgd_step is None:
        return None, None
    cost = tags.sgd_cost
    if cost is None:
        return _KINDS[tags.sgd_step], None
    if cost.shape != (n_labels, n_labels):
        return None, None  # not prepared for these labels: the generic path
    return _KINDS[tags.sgd_step], np.ascontiguousarray(cost, dtype=np.float64)


def _report_undefined(counts, batch, monitor, often=0.05):
    """Say how many minibatch steps the loss was undefined on; warn if often.

    ``counts`` is ``[enlarged, skipped, steps]`` of :meth:`_ScaledModel.run`.
    Returns ``(enlarged, skipped)``.
    """
    enlarged, skipped, steps = counts
    if enlarged or skipped:
        text = (f"the loss was undefined on {enlarged + skipped} of {steps} minibatches of "
                f"{batch} sequence(s) ({enlarged} stepped on a larger minibatch, {skipped} "
                "skipped to the end of their epoch)")
        if monitor.verbose:
            print(f"  SGD: {text}", flush=True)
        if enlarged + skipped > often * steps:
            warnings.warn(
                f"solver='sgd': {text}. Pass solver=SGD(batch_size=...) with larger "
                "minibatches or a smaller eta0, or start from a fit (init='cll').",
                UserWarning, stacklevel=3)
    return enlarged, skipped


class _ScaledModel:
    """The parameters of one SGD run in the scaled representation, and its two paths.

    ``W`` (n_features, L) and ``tail`` = [T.ravel(), start, end] hold ``V``;
    ``state`` = [a, t, S, n_avg, n_folds]: scale, sequences seen, sum of the
    scales and number of the averaged iterates, folds of the scale into V; ``BW``, ``Btail`` the averaging
    corrections (``sum of averaged iterates = S V - B``).
    """

    def __init__(self, objective, x0, loss, kind, cost, average_start, resume=None):
        layout = objective.layout

        # Minibatches on which the loss was undefined: [enlarged, skipped, steps].
        self.undefined = [0, 0, 0]
        X = objective.stored_X  # int8 indicators stay int8: no float64 copy
        L = layout.n_labels
        self.blocks = None  # observation-dependent label bigrams (ScaledBlocks)
        if layout.n_bigram:
            X, X_bigram = split_bigram_columns(X, objective.offsets, layout.bigram_columns)
        self.layout = layout
        self.L = L
        self.loss = loss
        self.trusted = get_loss_tags(loss).trusted_evaluation  # value_and_grad_trusted
        self.kind = kind
        self.cost = np.zeros((0, L)) if cost is None else cost
        # The rows of W are kept by decreasing attribute frequency (the
        # columns of X relabelled to match): the rows most steps touch sit
        # together in cache (benchmarks/README.md). A
        # resumed model (SGDState, partial_fit) keeps its rows in place.
        order = (np.argsort(-column_counts(X), kind="stable") if resume is None
                 else np.arange(X.shape[1]))
        self.rank = np.empty_like(order)
        self.rank[order] = np.arange(order.shape[0])
        indptr, indices, data, binary = kernel_csr(X)
        # intp row pointers: the SGD kernels are compiled for those only.
        self.csr = (np.ascontiguousarray(indptr, dtype=np.intp),
                    np.ascontiguousarray(self.rank[indices], dtype=np.int32), data, binary)
        self.y = np.ascontiguousarray(objective.y, dtype=np.intp)
        self.offsets = np.ascontiguousarray(objective.offsets, dtype=np.intp)
        n_seq = self.offsets.shape[0] - 1
        self.sample_weight = objective.sample_weight
        self.weights = (np.ones(n_seq) if objective.sample_weight is None
                        else np.ascontiguousarray(objective.sample_weight, dtype=np.float64))
        self.token_weight = (objective.token_weight
                             if get_loss_tags(loss).supports_token_weight else None)
        if resume is not None:
            self.W, self.tail, self.mask, self.BW, self.Btail, self.state = (
                resume.W, resume.tail, resume.mask, resume.BW, resume.Btail, resume.state)
            self.tail_mask = np.ones(L * L + 2 * L)
            self.average_start = average_start
            self._allocate_scratch()
            if layout.n_bigram:
                self.blocks = ScaledBlocks(X_bigram, resume.B, resume.BB, L,
                                           self._int_scratch.shape[0] // L)
            return
        W, T, s, e = layout.unpack(x0)
        self.W = np.ascontiguousarray(W[order])
        self.tail = np.concatenate([np.ravel(T), s, e])
        if layout.all_states:
            self.mask = np.zeros((0, L), dtype=np.uint8)
        else:
            self.mask = np.zeros((layout.n_features, L), dtype=np.uint8)
            index = layout.state_index
            self.mask[self.rank[index // L], index % L] = 1
        tail_mask = np.zeros(L * L + 2 * L)
        tail_mask[layout.tail_index] = 1.0
        self.tail_mask = tail_mask
        self.average_start = average_start
        if average_start is None:
            self.BW, self.Btail = np.zeros((0, L)), np.zeros(0)
        else:
            self.BW, self.Btail = np.zeros_like(self.W), np.zeros_like(self.tail)
        self.state = np.array([1.0, 0.0, 0.0, 0.0, 0.0])
        self._allocate_scratch()
        if layout.n_bigram:
            B = layout.bigram_weights(x0).ravel().copy()
            self.blocks = ScaledBlocks(X_bigram, B, np.zeros_like(B) if average_start is not None
                                       else np.zeros(0), L, self._int_scratch.shape[0] // L)

    def _allocate_scratch(self):
        L = self.L
        lengths = np.diff(self.offsets)
        max_len = max(int(lengths.max(initial=0)), 1)
        self._scratch = np.empty((3 * max_len + 4 * L + 7) * L)
        self._int_scratch = np.empty(max_len * L, dtype=np.int32)
        self._path_scratch = np.empty(max_len, dtype=np.intp)

    # -------------------------------------------------------------- steps

    def run(self, order, schedule, update=True, batch_size=1):
        """Visit ``order`` (step on each sequence or minibatch, or only
        evaluate with ``update=False``); return the summed weighted losses."""
        if self.kind is not None and batch_size == 1:
            return self._run_compiled(order, schedule, update)
        total, k, n = 0.0, 0, order.shape[0]
        while k < n:
            size = batch_size
            while True:
                try:
                    total += self.generic_step(order[k:k + size], schedule, update)
                    self.undefined[0] += size > batch_size
                    break
                except UndefinedLossError:
                    # A loss that is not a sum over sequences (an F-score) can
                    # be undefined on a few badly fitted sequences: the step is
                    # taken on a minibatch twice as large, up to the end of the
                    # order; past it, these sequences are skipped this pass
                    # (an evaluation is then undefined: inf).
                    if k + size >= n:
                        self.undefined[1] += 1
                        if not update:
                            return np.inf
                        break
                    size *= 2
            self.undefined[2] += 1
            k += size
        return total

    def _run_compiled(self, order, schedule, update):
        eta0, lam, lam_s, power = schedule
        total, first = 0.0, 0
        avg_start = np.inf if self.average_start is None else float(self.average_start)
        while first < order.shape[0]:
            stop, value = sgd_pass(
                *self.csr, self.y, self.offsets, self.weights, order, first, self.W,
                self.mask, self.tail, self.tail_mask, self.BW, self.Btail, self.cost,
                self.kind, self.state, eta0, lam, lam_s, power, avg_start, update,
                self._scratch, self._int_scratch, self._path_scratch,
                **({} if self.blocks is None else self.blocks.kernel))
            total += value
            if stop < order.shape[0]:
                # The scaled pass underflowed: the loss's own value_and_grad
                # (log-space fallback) steps on this sequence.
                total += self.generic_step(order[stop:stop + 1], schedule, update)
            first = stop + 1
        return total

    def generic_step(self, seqs, schedule, update=True):
        """One step on the minibatch ``seqs`` through ``loss.value_and_grad``."""
        seqs = np.ascontiguousarray(seqs, dtype=np.intp)
        L = self.L
        rows, local = take_sequences(self.offsets, seqs)
        a = self.state[0]
        unary = np.empty((rows.shape[0], L))
        batch_potentials(*self.csr, self.offsets, seqs, self.W, a, unary)
        tail = a * self.tail
        transition, extra, bigram = tail[:L * L].reshape(L, L), {}, None
        if self.blocks is not None:  # one matrix per token
            transition, *bigram = self.blocks.transitions(self.tail, a, rows)
        if self.token_weight is not None:
            extra["token_weight"] = self.token_weight[rows]
        # Built here from checked data: a loss may skip checking it again.
        value_and_grad = (self.loss.value_and_grad_trusted if self.trusted
                          else self.loss.value_and_grad)
        try:
            value, d_unary, d_T, d_start, d_end = value_and_grad(
                unary, transition, tail[L * L:L * L + L], tail[L * L + L:],
                self.y[rows], local,
                sample_weight=None if self.sample_weight is None else self.weights[seqs],
                **extra)
        except PotentialMagnitudeError:
            raise  # weights grown out of range: the training stage's divergence
        except ValueError as exc:
            # A loss that is not a sum over sequences (an F-score) may be
            # undefined on a small minibatch (run() enlarges it).
            kind = UndefinedLossError if isinstance(exc, UndefinedLossError) else ValueError
            raise kind(
                f"solver='sgd': the loss is undefined on a minibatch of {seqs.shape[0]} "
                f"sequence(s) ({exc}). Pass solver=SGD(batch_size=...) with larger "
                "minibatches.") from exc
        if update:
            eta0, lam, lam_s, power = schedule
            eta = eta0 / (1.0 + eta0 * lam_s * self.state[1]) ** power
            blocks = {}
            if bigram is not None:
                d_T, blocks = self.blocks.chain(d_T, *bigram)
            d_tail = np.concatenate([d_T, d_start, d_end], axis=None)  # each raveled
            avg_start = np.inf if self.average_start is None else float(self.average_start)
            sgd_step(*self.csr, self.y, self.offsets, seqs, self.W, self.mask, self.tail,
                     self.tail_mask, self.BW, self.Btail,
                     np.ascontiguousarray(d_unary, dtype=np.float64), d_tail, self.state,
                     eta, lam, avg_start, **blocks)
        return float(value)

    # -------------------------------------------------------- parameters

    def squared_norm(self):
        """``||theta||^2`` of the current iterate.

        Sums of products (``einsum``), not BLAS dots: a dot this long wakes
        a multi-threaded BLAS's threads, which then spin beside the epochs
        (in ``partial_fit`` and on a dask worker too, where no solver-wide
        BLAS limit applies).
        """
        b = np.zeros(0) if self.blocks is None else self.blocks.B
        return self.state[0] ** 2 * sum(float(np.einsum("i,i->", v, v))
                                        for v in (self.W.ravel(), self.tail, b))

    def theta(self, averaged=True):
        """The flat parameters: the average of the iterates if averaging has
        begun (and ``averaged``), else the current iterate."""
        a, _, S, n_avg, _ = self.state
        averaged = averaged and self.average_start is not None and n_avg > 0
        if averaged:
            W = (S * self.W - self.BW) / n_avg
            tail = (S * self.tail - self.Btail) / n_avg
        else:
            W, tail = a * self.W, a * self.tail
        L = self.L
        return pack_blocks(self.layout, W[self.rank], tail[:L * L].reshape(L, L),
                           tail[L * L:L * L + L], tail[L * L + L:],
                           None if self.blocks is None else self.blocks.value(self.state,
                                                                              averaged))

    def save(self, rows):
        """What :meth:`restore` needs to undo a calibration trial on ``rows``."""
        return (self.W[rows].copy(), self.tail.copy(), self.state.copy(),
                self.W.copy() if np.any(self.W) else None,
                None if self.blocks is None else self.blocks.B.copy())

    def restore(self, rows, saved):
        """Undo the steps since :meth:`save`: only ``rows`` of W changed,
        unless the scale was folded into every row."""
        W_rows, tail, state, full, blocks = saved
        if self.state[4] != state[4]:
            if full is None:
                self.W[:] = 0.0
            else:
                np.copyto(self.W, full)
        else:
            self.W[rows] = W_rows
        self.tail[:] = tail
        self.state[:] = state
        if blocks is not None:
            self.blocks.B[:] = blocks


class SGD(BaseSolver):
    """Stochastic gradient descent (``solver='sgd'``), L. Bottou's crfsgd/crfasgd.

    For every loss with a batch ``value_and_grad`` (all registered losses but
    the perceptron and MIRA, which have their own rules) and the L2 prior
    (zero mean, not feature-dependent) or none. One step per sequence (or per
    minibatch of ``batch_size`` sequences) in an order shuffled every epoch,
    ``max_iter`` epochs. See the module docstring for the update, the
    compiled and generic paths and the calibration of ``eta0``.

    Parameters
    ----------
    eta0 : 'auto' or float, default='auto'
        First step size. ``'auto'``: calibrated on 1,000 sequences
        (``n_calibration``) drawn with ``random_state`` (crfsgd's procedure):
        candidate steps from 0.1 up and down by factors of 2, each kept only
        if one pass over the sample lowers its objective by more than
        ``min_decrease`` (1e-6, relative) and leaves it finite; if none does,
        the smallest candidate is used and a ``UserWarning`` names it.
    average : bool or int, default=True
        Return the average of the iterates (ASGD) instead of the last one.
        True: averaging starts after one epoch (crfasgd's default ``-a 1``);
        an int ``k >= 1``: once ``k`` sequences have been seen (scikit-learn's
        ``SGDClassifier(average=k)``). If training ends before averaging
        starts, the last iterate is returned.
    power_t : float or None, default=None
        Exponent of the step size schedule
        ``eta_t = eta0 / (1 + eta0 lam t) ** power_t``. None: 1 (crfsgd)
        without averaging, 0.75 (crfasgd) with averaging.
    batch_size : 'auto' or int, default='auto'
        Sequences per step. ``'auto'``: 1 for the losses of the compiled loop
        (``'cll'``, ``'softmax_margin'``, ``'max_margin'``), 4 for the others
        (``generic_batch_size``: on CoNLL-2000, minibatches of 1 cost more
        time per epoch than minibatches of 4 for the same test F1, and
        larger ones lose accuracy on ``'mce'``; the figures are in
        ``benchmarks/README.md``). The
        calibrated ``eta0`` shrinks with the minibatch, about in inverse
        proportion to its size. An int > 1 sends every loss through
        the generic path. A loss that is not a sum over sequences
        (``'mce_f'``) can be undefined on a small minibatch (an
        :class:`~sklearn_crfloss.exceptions.UndefinedLossError`: for MCE-F,
        every gold segment misclassified by a wide margin); that step is
        then taken on a minibatch twice as large (again, up to the end of
        the epoch's order, past which those sequences are skipped for the
        epoch). ``n_undefined_batches_`` counts them, and a ``UserWarning``
        naming larger minibatches, a smaller ``eta0`` or a fitted start as
        the remedy is given once per run when more than 5% of the steps
        needed it.
    random_state : int, RandomState instance, Generator or None, default=None
        Order of the sequences every epoch and the calibration sample.

    Attributes
    ----------
    eta0_ : float
        The first step size used by the last :meth:`solve`.
    n_undefined_batches_ : tuple of (int, int)
        Of the last :meth:`solve`: how many minibatch steps were taken on a
        larger minibatch because the loss was undefined on theirs, and how
        many were skipped (see ``batch_size``).

    Notes
    -----
    The objective reported per epoch (``loss_curve_``) is the sum of the
    weighted losses of the sequences seen in the epoch, each at the
    parameters before its own step, plus the penalty of the current
    iterate at the end of the epoch: an estimate, not the objective of the
    returned (averaged) parameters. The solver therefore returns its last
    (averaged) iterate, not the one of the lowest reported value: finding
    the best epoch would cost a full objective evaluation per epoch.
    :class:`~sklearn_crfloss.CRFTagger` evaluates the objective at the
    start and at the returned parameters of every stage and keeps the start
    if training raised it. A non-finite epoch objective (a step size far too
    large) stops training with a ``ValueError``. With ``prior='none'`` there is no
    shrinkage and the schedule uses ``lam = 1 / n`` (as with ``C = 1``).

    References
    ----------
    L. Bottou (2012). Stochastic gradient descent tricks. Neural Networks:
    Tricks of the Trade, LNCS 7700, sections 5.1-5.3 and 6 (the crfsgd and
    crfasgd programs of the sgd-2.0 distribution).
    W. Xu (2011). Towards optimal one pass large scale learning with
    averaged stochastic gradient descent. arXiv:1107.2490.
    """

    name = "sgd"
    unit = "epoch"
    dense_states = False
    default_max_iter = 10

    #: Minibatch size of the generic path with ``batch_size='auto'``.
    generic_batch_size = 4
    #: Sample size of the ``eta0='auto'`` calibration (crfsgd's).
    n_calibration = 1000
    #: Relative decrease of the sample objective a calibration step must reach.
    min_decrease = 1e-6

    _parameter_constraints: dict = {
        "eta0": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "average": ["boolean", Interval(Integral, 1, None, closed="left")],
        "power_t": [None, Interval(Real, 0, None, closed="left")],
        "batch_size": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state", np.random.Generator],
    }

    def __init__(self, eta0="auto", average=True, power_t=None, batch_size="auto",
                 random_state=None):
        self.eta0 = eta0
        self.average = average
        self.power_t = power_t
        self.batch_size = batch_size
        self.random_state = random_state

    def __solver_tags__(self):
        # Docstring inherited.
        tags = super().__solver_tags__()
        tags.online = tags.takes_bigrams = tags.shard_epochs = True
        # early stopping's patience in epochs, measured with averaging
        # (benchmarks/early_stopping_patience.py)
        tags.n_iter_no_change = 15
        return tags

    def new_state(self, n_features, n_labels, all_states):
        """The state of a run of :meth:`partial_solve` (``partial_fit``), before any batch.

        Parameters
        ----------
        n_features, n_labels : int
        all_states : bool
            Whether every (attribute, label) pair is trained, or those
            observed.

        Returns
        -------
        SGDState
        """
        return SGDState(n_features, n_labels, all_states, bool(self.average))

    def parameters_of(self, state):
        """``(W, transition, start, end, blocks)`` of ``state``: averaged once averaging began."""
        return state.parameters()

    def check(self, loss, prior):
        # Docstring inherited.
        super().check(loss, prior)
        tags = get_prior_tags(prior)
        if not (tags.zero or tags.weight_decay):
            raise ValueError(
                "solver='sgd' applies the prior as a scale of the weights: it supports "
                f"prior='l2' (zero mean, not feature-dependent) or 'none', not {prior!r}.")
        validate_parameter_constraints(self._parameter_constraints, self.get_params(deep=False),
                                       caller_name=type(self).__name__)

    def _average_start(self, n_seq):
        if isinstance(self.average, (bool, np.bool_)):
            return n_seq if self.average else None
        return int(self.average)

    def _start(self, objective, x0, loss, average_start):
        """The scaled model of a run from ``x0`` and its minibatch size."""
        kind, cost = _compiled_kind(loss, objective.layout.n_labels)
        batch = self.batch_size
        if batch == "auto":
            batch = 1 if kind is not None else self.generic_batch_size
        return _ScaledModel(objective, x0, loss, kind, cost, average_start), batch

    def solve(self, objective, loss, prior, C, x0, monitor):
        # Docstring inherited.
        self.check(loss, prior)
        n_seq = objective.offsets.shape[0] - 1
        model, batch = self._start(objective, x0, loss, self._average_start(n_seq))
        rng = random_generator(self.random_state)
        lam = 0.0 if get_prior_tags(prior).zero else 1.0 / (C * n_seq)
        lam_s = lam if lam > 0 else 1.0 / n_seq
        power = (self.power_t if self.power_t is not None
                 else (0.75 if model.average_start is not None else 1.0))
        eta0 = (self._calibrate(model, rng, lam, lam_s, batch, monitor)
                if self.eta0 == "auto" else float(self.eta0))
        self.eta0_ = eta0
        schedule = (eta0, lam, lam_s, power)
        stopped = False
        model.undefined = [0, 0, 0]  # the epochs' own, not the calibration's
        for _ in range(monitor.max_iter):
            value = model.run(rng.permutation(n_seq), schedule, batch_size=batch)
            if lam > 0:
                value += 0.5 * lam * n_seq * model.squared_norm()
            eta = eta0 / (1.0 + eta0 * lam_s * model.state[1]) ** power
            if monitor.report(value, theta=model.theta, check=False, eta=eta):
                stopped = True
                break
        self.n_undefined_batches_ = _report_undefined(model.undefined, batch, monitor)
        # Only early stopping ends SGD before max_iter: reaching it is not
        # convergence (finish warns, but in a fixed-length non-final stage).
        monitor.finish(stopped, f"reached max_iter={monitor.max_iter} epochs without "
                       "early stopping", solver="SGD")
        return model.theta()

    def shard_epoch(self, objective, loss, prior, C, theta, n_total, seen, eta0, rng):
        """One epoch over a shard of the data from ``theta`` (iterative parameter mixing).

        The step of :class:`~sklearn_crfloss.dask.DaskCRFTagger`'s SGD
        (McDonald et al. 2010, Figure 2, with SGD for the perceptron): every
        worker runs one epoch over its sequences from the mixed parameters,
        and the client averages the results. The schedule is that of a
        single run over all ``n_total`` sequences: ``lam = 1 / (C
        n_total)``, ``seen`` sequences before the epoch; no averaging of
        the iterates within the epoch (the mixing averages them).

        Parameters
        ----------
        objective : CRFObjective
            The shard.
        loss, prior, C
            As for :meth:`solve`.
        theta : ndarray of float64 of shape (n_params,)
            The mixed parameters to start from.
        n_total : int
            Sequences of all shards.
        seen : int
            Sequences the whole run has seen before this epoch.
        eta0 : float or None
            The first step size; None: calibrated here on the shard
            (``eta0='auto'``, see the class) and nothing else is done.
        rng : numpy.random.Generator
            The order of the sequences (and the calibration sample).

        Returns
        -------
        theta : ndarray of float64 of shape (n_params,)
            The parameters after the epoch (``theta`` itself after a
            calibration).
        value : float
            The summed weighted losses of the shard's sequences, each before
            its step (0 after a calibration).
        eta0 : float
        """
        self.check(loss, prior)
        n_seq = objective.offsets.shape[0] - 1
        model, batch = self._start(objective, theta, loss, None)
        lam = 0.0 if get_prior_tags(prior).zero else 1.0 / (C * n_total)
        lam_s = lam if lam > 0 else 1.0 / n_total
        if eta0 is None:
            return theta, 0.0, self._calibrate(model, rng, lam, lam_s, batch,
                                               SimpleNamespace(verbose=0))
        model.state[1] = seen
        power = 1.0 if self.power_t is None else self.power_t
        value = model.run(rng.permutation(n_seq), (eta0, lam, lam_s, power), batch_size=batch)
        return model.theta(averaged=False), value, eta0

    def partial_solve(self, X, y, offsets, sample_weight, loss, prior, C, state, verbose=0,
                      bigram_columns=()):
        """One epoch over a batch, continuing the run held in ``state`` (``partial_fit``).

        Every sequence seen counts as a new one: after batches of ``N``
        sequences in all, ``lam = 1 / (C N)`` (the prior of a fit on all of
        them). The first call calibrates ``eta0`` (if ``'auto'``) on its
        batch and, with ``average=True``, averaging starts after it.

        Parameters
        ----------
        X : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
            ``n_features`` equal to ``state.W.shape[0]``.
        y : ndarray of intp of shape (n_tokens,)
        offsets : ndarray of intp of shape (n_sequences + 1,)
        sample_weight : ndarray of shape (n_sequences,) or None
        loss, prior, C
            As for :meth:`solve`.
        state : SGDState
            Updated in place (grown to the batch's attributes, which it
            observes, see :meth:`SGDState.observe`).
        verbose : int, default=0
        bigram_columns : array-like of int, default=()
            The columns of X that are bigram attributes, in the order of
            ``state``'s blocks.

        Returns
        -------
        float
            The summed weighted losses of the batch (each before its
            step) plus the penalty of the current iterate.

        Raises
        ------
        ValueError
            If the objective or the parameters are not finite after the
            epoch (a step size too large, features or weights of a huge
            magnitude); ``state`` is then put back as it was.
        """
        self.check(loss, prior)
        n_seq = offsets.shape[0] - 1
        L = state.W.shape[1]
        kind, cost = _compiled_kind(loss, L)
        batch = self.batch_size
        if batch == "auto":
            batch = 1 if kind is not None else self.generic_batch_size
        lam = 0.0 if get_prior_tags(prior).zero else 1.0 / (C * (state.n_seen + n_seq))
        self._check_step(state, lam, 1 if kind is not None else batch)
        # (the generic path may enlarge a minibatch up to the rest of the batch)
        whole = may_fold(state, n_seq, lam, 1 if kind is not None else n_seq)
        saved = state.checkpoint(np.unique(X.indices), whole)
        try:
            state.grow(X.shape[1], len(bigram_columns))
            state.observe(X, y)
            value = self._partial_epoch(X, y, offsets, sample_weight, loss, prior, C, state,
                                        verbose, bigram_columns, kind, cost, batch)
            if not (np.isfinite(value) and state.finite(saved)):
                raise diverged("partial_fit", f"the objective of the batch is {value}" if not
                               np.isfinite(value) else "the parameters are not finite after "
                               "the batch")
        except BaseException:
            state.rollback(saved)
            raise
        return value

    def _check_step(self, state, lam, batch):
        """Refuse a given ``eta0`` whose first step of the batch zeroes the weights.

        A step multiplies the weights by ``1 - eta lam m`` (the L2 prior's
        shrinkage, for ``m`` sequences): at ``eta lam m >= 1`` it is clipped
        to 0, every step discards all the previous ones and the weights
        only grow with ``eta`` (to ``1e50`` and beyond, or not finite). A
        calibrated ``eta0='auto'`` is chosen to lower the objective.
        """
        if self.eta0 == "auto" or lam == 0.0:
            return
        eta0 = float(self.eta0)
        power = (self.power_t if self.power_t is not None
                 else (0.75 if state.BW.shape[0] else 1.0))
        lam_s = lam if lam > 0 else 1.0 / max(state.n_seen, 1)
        eta = eta0 / (1.0 + eta0 * lam_s * state.state[1]) ** power
        if eta * lam * batch >= 1.0:
            raise ValueError(
                f"partial_fit: eta0={self.eta0!r} is too large: the step size at this "
                f"batch, {eta:.3g}, times the L2 prior's 1 / (C n) = {lam:.3g} is at least "
                "1, so every step would set the weights to zero before its gradient step "
                "and training diverges. Lower eta0 (or leave eta0='auto', calibrated on "
                "the first batch). The estimator was left as it was.")

    def _partial_epoch(self, X, y, offsets, sample_weight, loss, prior, C, state, verbose,
                       bigram_columns, kind, cost, batch):
        """The epoch of :meth:`partial_solve` over a batch, on its state in place."""
        n_seq = offsets.shape[0] - 1
        L = state.W.shape[1]
        if state.rng is None:
            state.rng = random_generator(self.random_state)
            state.average_start = self._average_start(n_seq) if state.BW.shape[0] else None
        columns = np.asarray(bigram_columns, dtype=np.intp)
        data = SimpleNamespace(stored_X=X, y=y, offsets=offsets, sample_weight=sample_weight,
                               token_weight=None, layout=SimpleNamespace(
                                   n_labels=L, n_bigram=columns.shape[0],
                                   bigram_columns=columns))
        model = _ScaledModel(data, None, loss, kind, cost, state.average_start, resume=state)
        state.n_seen += n_seq
        lam = 0.0 if get_prior_tags(prior).zero else 1.0 / (C * state.n_seen)
        lam_s = lam if lam > 0 else 1.0 / state.n_seen
        power = (self.power_t if self.power_t is not None
                 else (0.75 if state.average_start is not None else 1.0))
        if state.eta0 is None:
            state.eta0 = (self._calibrate(model, state.rng, lam, lam_s, batch,
                                          SimpleNamespace(verbose=verbose))
                          if self.eta0 == "auto" else float(self.eta0))
        value = model.run(state.rng.permutation(n_seq), (state.eta0, lam, lam_s, power),
                          batch_size=batch)
        return value + 0.5 * lam * n_seq * model.squared_norm()

    def _calibrate(self, model, rng, lam, lam_s, batch, monitor):
        """crfsgd's ``adjustEta``: the best constant step on a sample (halved
        without averaging); the smallest candidate tried if none lowers the
        sample's objective (crfsgd would take 1)."""
        n_seq = model.offsets.shape[0] - 1
        sample = np.sort(rng.choice(n_seq, size=min(n_seq, int(self.n_calibration)),
                                    replace=False))
        # The weight rows the sample touches: saved and restored around each trial.
        lo, hi = model.csr[0][model.offsets[sample]], model.csr[0][model.offsets[sample + 1]]
        rows = np.unique(np.concatenate([model.csr[1][a:b] for a, b in zip(lo, hi)]
                                        or [np.zeros(0, dtype=np.int32)]))
        saved = model.save(rows)
        average_start, model.average_start = model.average_start, None
        n_s = sample.shape[0]

        def sample_objective():
            value = model.run(sample, (0.0, lam, lam_s, 0.0), update=False, batch_size=batch)
            return value + 0.5 * lam * n_s * model.squared_norm()

        start_obj = sample_objective()
        best_eta, best_obj = None, start_obj
        eta, seed, factor = 0.1, 0.1, 2.0
        smallest = eta
        to_test, phase2, trials = 10, False, 0
        while (to_test > 0 or not phase2) and trials < 40:
            trials += 1
            smallest = min(smallest, eta)
            model.run(sample, (eta, lam, lam_s, 0.0), batch_size=batch)
            obj = sample_objective()
            model.restore(rows, saved)
            # A step must lower the sample's objective by more than rounding:
            # one that leaves it unchanged (a step far too small for badly
            # scaled features) or non-finite is refused.
            okay = bool(np.isfinite(obj)) and start_obj - obj > self.min_decrease * max(
                abs(start_obj), 1.0)
            if monitor.verbose > 1:
                print(f"  calibration: eta {eta:.3e}  sample objective {obj:.6e}"
                      f"{'' if okay else ' (too large)'}", flush=True)
            if okay:
                to_test -= 1
                if obj < best_obj:
                    best_eta, best_obj = eta, obj
            if not phase2:
                if okay:
                    eta *= factor
                else:
                    phase2, eta = True, seed
            if phase2:
                eta /= factor
        model.average_start = average_start
        if best_eta is None:
            warnings.warn(
                f"eta0='auto': no step from {smallest:.3g} to 0.1 lowered the objective of "
                f"a sample of {n_s} sequences by more than {self.min_decrease:g} (relative) "
                f"from {start_obj:.6g}; using eta0={smallest:.3g}, which may leave the "
                "parameters almost unchanged. Numeric feature values far from the 0/1 of "
                "indicators are the usual cause (scale them); or set eta0 yourself.",
                UserWarning, stacklevel=2)
            return smallest
        # crfsgd halves the best candidate "on the safe side"; averaging
        # removes the noise of the larger step (on CoNLL-2000 the best
        # candidate reached a given test F1 sooner than its half did).
        return best_eta if average_start is not None else best_eta / factor
