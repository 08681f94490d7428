"""The training data of :class:`~sklearn_crfloss.dask.DaskCRFTagger`, laid out on the workers.

The vectorised partitions are redistributed once, so that each worker
holds one :class:`~sklearn_crfloss._model._objective.CRFObjective` over a fixed
share of the sequences, served by a dask actor (:class:`Evaluator`).
Every evaluation of the objective is one call of each actor, made by the
client directly (not through the scheduler): the parameters that the
worker's sequences use sent once to each worker, one reply from each with
the entries of its gradient that can be non-zero (the state parameters of
the attributes its sequences hold, about 70 % of them with the CRF++
template on CoNLL-2000 for each of 2 workers, and the transitions).

Which sequences a worker holds makes the sums exact. The batch kernels add
sequence ``k`` (its global index in X) into block ``(k // CHUNK) %
N_BLOCKS`` (8 sequences a chunk, 4 blocks) and add the blocks in block
order, so that ``CRFTagger(n_jobs=1)`` and ``n_jobs=2`` give the same sums,
rounding included. With at most ``N_BLOCKS`` workers, each worker holds
whole blocks (worker ``i`` the blocks ``array_split(range(4), n)[i]``), its
chunks at the positions they have in X modulo ``8 * 4`` (the other blocks'
chunks replaced by 8 one-token sequences of weight 0, which add exact
zeros), and returns its blocks (the worker holding block 0 their sum, in
block order; each restricted to the entries that are not exact zeros): the
client adds them in block order and obtains, for the conditional log-likelihood, the value and
gradient that one process computes (bitwise, when the observed counts are
integers: binary features, no or integer sample weights). With more
workers each holds every ``n``-th chunk and returns its summed loss and
gradient (the same objective, up to the order of the additions).
"""

import numpy as np
import scipy.sparse as sp

from .._chain import (CHUNK, N_BLOCKS, Accumulators, exp_potentials, kernel_threads,
                      row_width)
from .._model import CRFObjective
from ..losses import get_loss_tags
from ..priors import get_prior_tags

__all__ = ["DistributedObjective", "Evaluator", "ParameterMixing", "WorkerData",
           "assign_groups", "select_sequences", "touched_parameters"]

#: Times dask retries a failed task of a fit.
RETRIES = 3


def assign_groups(n_workers):
    """How the chunks of X are dealt to the workers.

    Parameters
    ----------
    n_workers : int

    Returns
    -------
    n_groups : int
        Chunk ``c`` belongs to group ``c % n_groups``.
    groups : list of ndarray
        The groups of each worker (consecutive).
    pad : bool
        Whether a worker's chunks keep their positions modulo
        ``CHUNK * n_groups`` (the exact layout: ``n_workers <= N_BLOCKS``).
    """
    n_groups = max(N_BLOCKS, n_workers)
    groups = [g for g in np.array_split(np.arange(n_groups), n_workers) if g.size]
    return n_groups, groups, n_groups == N_BLOCKS


def select_sequences(shard, start, n_groups, groups):
    """The sequences of one partition that fall in ``groups``.

    Parameters
    ----------
    shard : tuple
        ``(X, y, offsets, sample_weight)`` of a vectorised partition.
    start : int
        Global index of its first sequence.
    n_groups : int
    groups : ndarray of int

    Returns
    -------
    tuple
        ``(X, y, lengths, sample_weight or None, global_index)`` of the
        selected sequences, in order.
    """
    X, y, offsets, weights = shard
    lengths = np.diff(offsets)
    index = start + np.arange(lengths.shape[0])
    keep = np.isin((index // CHUNK) % n_groups, groups)
    tokens = np.repeat(keep, lengths)
    return (X[tokens], y[tokens], lengths[keep], None if weights is None else weights[keep],
            index[keep])


class WorkerData:
    """One worker's share of the training data, bound for evaluations.

    Parameters
    ----------
    pieces : list of tuple
        :func:`select_sequences` of every partition, in partition order.
    layout : ParameterLayout
    n_groups : int
    groups : ndarray of int
        The groups this worker holds.
    pad : bool
        Keep the chunks' positions modulo ``CHUNK * n_groups`` (one-token
        sequences of weight 0 where the other workers' chunks are).
    n_jobs : int or None
        Kernel threads on this worker.

    Attributes
    ----------
    objective : CRFObjective or None
        None if the worker holds no sequence.
    global_index : ndarray of intp
        Global index of each of its sequences.
    sample_weight : ndarray or None
        Their weights.
    real : ndarray of intp
        Their positions among the objective's sequences.
    """

    def __init__(self, pieces, layout, n_groups, groups, pad, n_jobs):
        self.groups = np.asarray(groups)
        self.layout = layout
        self.first = int(self.groups[0]) == 0
        self.global_index = np.concatenate([p[4] for p in pieces]).astype(np.intp)
        lengths = np.concatenate([p[2] for p in pieces]).astype(np.intp)
        weighted = any(p[3] is not None for p in pieces)
        self.sample_weight = (np.concatenate([np.ones(p[2].shape[0]) if p[3] is None
                                              else np.asarray(p[3], np.float64) for p in pieces])
                              if weighted else None)
        n_real = lengths.shape[0]
        self.theta = None  # the parameters of the last evaluation (those it reads)
        # The exact evaluations' block sums and replies, kept: new ones would
        # cost their pages at every evaluation (dask's workers give freed
        # memory back to the system at once: MALLOC_TRIM_THRESHOLD_).
        self._blocks = self._replies = None
        if n_real == 0:
            self.objective, self.real = None, np.zeros(0, np.intp)
            self.touched = [np.zeros(0, np.intp)] * (1 + self.groups.shape[0])
            self.take = np.arange(layout.n_state, layout.n_params)
            return
        X = sp.vstack([p[0] for p in pieces], format="csr")
        y = np.concatenate([p[1] for p in pieces]).astype(np.intp)
        self.touched = touched_parameters(X, np.repeat(self.global_index // CHUNK % n_groups,
                                                       lengths), self.groups, layout)
        self.take = np.concatenate([self.touched[0],
                                    np.arange(layout.n_state, layout.n_params)])
        if pad:
            chunk = self.global_index // CHUNK
            other = ~np.isin(np.arange(chunk[-1] + 1) % n_groups, self.groups)
            pads = CHUNK * np.concatenate([[0], np.cumsum(other)])
            self.real = np.arange(n_real) + pads[chunk]
            all_lengths = np.ones(n_real + pads[chunk[-1]], dtype=np.intp)
            all_lengths[self.real] = lengths
            offsets = np.concatenate([[0], np.cumsum(all_lengths)]).astype(np.intp)
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            position = (np.repeat(offsets[self.real] - starts, lengths)
                        + np.arange(X.shape[0]))
            row_nnz = np.zeros(offsets[-1], dtype=np.int64)
            row_nnz[position] = np.diff(X.indptr)
            X = sp.csr_matrix((X.data, X.indices, np.concatenate([[0], np.cumsum(row_nnz)])),
                              shape=(offsets[-1], X.shape[1]))
            full_y = np.zeros(offsets[-1], dtype=np.intp)
            full_y[position] = y
            y = full_y
            weights = np.zeros(all_lengths.shape[0])
            weights[self.real] = 1.0 if self.sample_weight is None else self.sample_weight
        else:
            self.real = np.arange(n_real)
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
            weights = self.sample_weight
        self.objective = CRFObjective(X, y, offsets, layout, sample_weight=weights,
                                      n_threads=kernel_threads(n_jobs))

    def __getstate__(self):  # a copy starts without the kept buffers
        return {**self.__dict__, "_blocks": None, "_replies": None}

    def describe(self):
        """What the client needs to send and to add this worker's evaluations.

        Returns
        -------
        tuple
            ``(global_index, sample_weight, observed counts, n_blocks, take,
            state_index)``: ``take`` the entries of ``theta`` that
            :meth:`evaluate` reads, in the order it reads them, and
            ``state_index`` the state parameters of each of the exact
            reply's ``state`` vectors. The observed counts and ``n_blocks``
            are None if the worker holds no sequence, the observed counts
            also with label bigrams (the exact sums are not made then).
        """
        state_index = self._state_index()
        if self.objective is None:
            return (self.global_index, self.sample_weight, None, None, self.take, state_index)
        observed = None if self.layout.n_bigram else self.objective.observed_counts()
        return (self.global_index, self.sample_weight, observed, self.objective.n_blocks,
                self.take, state_index)

    def _state_index(self):
        """The state parameters of each of the exact reply's ``state`` vectors."""
        return self.touched[:1] if self.first else self.touched[1:]

    def evaluate(self, values, loss, exact):
        """This worker's part of the loss and gradient.

        Parameters
        ----------
        values : ndarray of float64 of shape (take.shape[0],)
            ``theta[take]``: the parameters its sequences use (the state
            parameters of the attributes they hold, then every transition
            and boundary parameter); the others do not enter its part.
        loss : loss object
        exact : bool
            Return the conditional log-likelihood's blocks (every worker
            holds whole blocks, as many as one process sums).

        Returns
        -------
        dict
            For the conditional log-likelihood with ``exact``: ``blocks``
            (the groups held), ``log_z`` of its sequences, ``state`` (the
            blocks' sum in block order, if this worker holds block 0; else
            each block), each restricted to the state parameters the blocks
            touch (``describe``'s ``state_index``: the others are exact
            zeros), ``pair``, ``direct``, ``boundary`` of its blocks and
            ``n_fallback``; the ``state`` vectors are this worker's own,
            overwritten by its next evaluation. Otherwise ``value`` and
            ``grad``, the gradient restricted to ``take``.
        """
        layout = self.layout
        if self.theta is None:
            self.theta = np.zeros(layout.n_params)
        self.theta[self.take] = values
        theta = self.theta
        if exact and get_loss_tags(loss).cll_blocks:
            if self.objective is None:  # exact zeros in every block
                L = layout.n_labels
                Lp, nb = row_width(L), self.groups.shape[0]
                return {"blocks": self.groups, "log_z": np.zeros(0),
                        "state": [np.zeros(0)] * (1 if self.first else nb),
                        "pair": np.zeros((nb, L, Lp)), "direct": np.zeros((nb, L, L)),
                        "boundary": np.zeros((nb, 2, Lp)), "n_fallback": 0}
            held = slice(self.groups[0], self.groups[-1] + 1)  # consecutive blocks: views
            if self._blocks is None:
                self._blocks = np.zeros((self.objective.n_blocks, layout.n_state))
                self._replies = [np.empty(index.shape[0]) for index in self._state_index()]
            else:
                self._blocks[held] = 0.0
            log_z, state, pair, direct, boundary, n_fallback = self.objective.cll_blocks(
                theta, self._blocks, held)
            mine = state[held]
            if self.first:  # blocks 0, 1, ...: their sum in block order, in place
                for block in mine[1:]:
                    mine[0] += block
                mine = mine[:1]
            for block, index, out in zip(mine, self._state_index(), self._replies):
                np.take(block, index, out=out, mode="clip")  # "raise" would copy
            return {"blocks": self.groups, "log_z": log_z[self.real], "state": self._replies,
                    "pair": pair[held], "direct": direct[held], "boundary": boundary[held],
                    "n_fallback": n_fallback}
        if self.objective is None:
            return {"value": 0.0, "grad": np.zeros(self.take.shape[0])}
        value, grad = self.objective.loss_value_and_grad(theta, loss)
        return {"value": value, "grad": grad[self.take]}


def touched_parameters(X, token_group, groups, layout):
    """The state parameters whose attribute occurs in some of the tokens.

    A sequence's part of the loss reads, and its gradient is non-zero
    (exactly) on, only the state parameters of the attributes its tokens
    hold (and the transition and boundary parameters).

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
    token_group : ndarray of int of shape (n_tokens,)
        The group (block) of each token's sequence.
    groups : ndarray of int
    layout : ParameterLayout

    Returns
    -------
    list of ndarray of intp
        Sorted indices into ``theta``: those of all the tokens, then those of
        each group's tokens.
    """
    attribute = layout.state_index // layout.n_labels
    nnz_group = np.repeat(token_group, np.diff(X.indptr))
    touched = []
    for mask in [slice(None)] + [nnz_group == g for g in groups]:
        present = np.zeros(X.shape[1], dtype=bool)
        present[X.indices[mask]] = True
        touched.append(np.flatnonzero(present[attribute]))
    return touched


def _shard_epoch(sgd, theta, loss, prior, C, n_total, seen, eta0, seed, data):
    """One SGD epoch over a worker's sequences: ``(theta, value, n_sequences, eta0)``."""
    n = data.global_index.shape[0]
    if data.objective is None:
        return theta, 0.0, 0, eta0
    theta, value, eta0 = sgd.shard_epoch(data.objective, loss, prior, C, theta, n_total, seen,
                                         eta0, np.random.default_rng(seed))
    return theta, value, n, eta0


class Evaluator:
    """A worker's :class:`WorkerData`, evaluated at the client's call (a dask actor).

    An actor's methods are called from the client directly, not through the
    scheduler as tasks are: one message to the worker and its reply per
    evaluation.

    Parameters
    ----------
    data : WorkerData
    """

    def __init__(self, data):
        self.data = data

    def evaluate(self, theta, loss, exact):
        """:meth:`WorkerData.evaluate`."""
        return self.data.evaluate(theta, loss, exact)


def _describe(data):
    return data.describe()


class DistributedObjective:
    """A :class:`~sklearn_crfloss._model._objective.CRFObjective` whose data sit on dask workers.

    Parameters
    ----------
    client : dask.distributed.Client
    parts : list of (str, dask.distributed.Future)
        The worker each :class:`WorkerData` was made for and its future,
        in group order.
    layout : ParameterLayout
    n_sequences : int
        Sequences in X.
    pad : bool
        Whether the workers hold the exact layout (:func:`assign_groups`).

    Attributes
    ----------
    n_params : int
    n_evaluations : int
        Evaluations so far (one call of every worker's :class:`Evaluator` each).
    """

    def __init__(self, client, parts, layout, n_sequences, pad):
        self.client = client
        self.parts = parts
        self.layout = layout
        self.n_params = layout.n_params
        self.n_evaluations = 0
        self._actors = None  # (futures, actors), made at the first evaluation
        described = client.gather([self._submit(_describe, part) for part in parts])
        self.sample_weight = None
        if any(d[1] is not None for d in described):
            self.sample_weight = np.ones(n_sequences)
            for index, weights, *_ in described:
                if weights is not None:
                    self.sample_weight[index] = weights
        self._index = [d[0] for d in described]
        # The entries of theta each worker reads; those of its exact reply's vectors.
        self._take = [d[4] for d in described]
        self._state_index = [d[5] for d in described]
        # Integer counts when the features are binary and the weights whole.
        self.observed = np.zeros(self.n_params)
        for _, _, observed, *_ in described:
            if observed is not None:
                self.observed += observed
        self.n_sequences = n_sequences
        self._weights = (np.ones(n_sequences) if self.sample_weight is None
                         else self.sample_weight)
        #: Whether the CLL sums are those of one process (see the module's notes).
        self.exact = (pad and layout.n_bigram == 0
                      and all(d[3] in (None, N_BLOCKS) for d in described))

    def _evaluators(self):
        """One :class:`Evaluator` actor per part, on the worker holding its data."""
        client = self.client
        futures = []
        for _, data in self.parts:
            holders = list(client.who_has([data]).get(data.key) or ())
            futures.append(client.submit(Evaluator, data, actor=True, pure=False,
                                         workers=holders or None,
                                         allow_other_workers=bool(holders)))
        with client.as_current():  # the actors call through this client
            return futures, client.gather(futures)

    def _call(self, method, args, reduce):
        """``method`` of every part's :class:`Evaluator`, the replies reduced as they come.

        The calls go from this client to the workers directly (for their
        duration the client's ``direct_to_workers`` is set, unless the
        client was made with ``direct_to_workers=False``): through the
        scheduler a call and its reply take a detour. Each call is sent as
        soon as its arguments are made, and ``reduce`` starts while the
        workers compute. If a worker is lost, its actor with it, new actors
        are made on the holders of the data, which dask recomputes from
        their graph if need be, and the calls and the reduction are made
        again (at most ``RETRIES`` times).

        Parameters
        ----------
        method : str
        args : callable
            ``args(i)``: the arguments of part ``i``'s call.
        reduce : callable
            ``reduce(replies)``: ``replies`` yields the replies in part
            order (each when it has come); its result is returned.
        """
        client = self.client
        direct = client.direct_to_workers
        for attempt in range(RETRIES + 1):
            try:
                if self._actors is None:
                    self._actors = self._evaluators()
                if direct is None:
                    client.direct_to_workers = True
                calls = [getattr(actor, method)(*args(i))
                         for i, actor in enumerate(self._actors[1])]
                return reduce(call.result() for call in calls)
            except (OSError, RuntimeError):  # the actor's worker is gone
                self._actors = None
                if attempt == RETRIES:
                    raise
            finally:
                client.direct_to_workers = direct

    def _submit(self, fn, part, *args):
        worker, future = part
        return self.client.submit(fn, *args, future, pure=False, retries=RETRIES,
                                  workers=[worker], allow_other_workers=True)

    def loss_value_and_grad(self, theta, loss, out=None):
        """Sum over the workers of ``loss``'s value and gradient at ``theta``.

        Each worker's :class:`Evaluator` is called once, directly, with the
        entries of ``theta`` that its sequences use, and replies with its
        part of the loss and gradient (the entries that can be non-zero);
        the client adds the replies in a fixed order (the conditional
        log-likelihood's blocks in block order, see the module's notes), so
        that the sum does not depend on which worker answers first, nor on a
        worker lost and replaced.

        Parameters
        ----------
        theta : ndarray of float64 of shape (n_params,)
        loss : loss object
        out : ndarray of float64 of shape (n_params,) or None, default=None
            The array to copy the gradient into; None: the sum's own.

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)
            ``out`` if given.
        """
        self.n_evaluations += 1
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        exact = self.exact and get_loss_tags(loss).cll_blocks
        value, grad = self._call("evaluate", lambda i: (theta[self._take[i]], loss, exact),
                                 (lambda replies: self._cll(theta, replies)) if exact
                                 else self._sum)
        if out is None:
            return value, grad
        out[:] = grad
        return value, out

    def _sum(self, replies):
        """A loss's value and gradient: the sum of the workers' replies (zero elsewhere)."""
        value, grad = 0.0, np.zeros(self.n_params)
        for reply, take in zip(replies, self._take):
            value += reply["value"]
            grad[take] += reply["grad"]
        return value, grad

    def _cll(self, theta, replies):
        """The CLL value and gradient from the workers' blocks, as one process adds them.

        What does not need the replies is computed first, while the workers
        compute; then each reply is added as it comes, in block order.
        """
        layout = self.layout
        transition, start, end = (np.ascontiguousarray(a, dtype=np.float64)
                                  for a in layout.unpack_tail(theta))
        exp_trans = exp_potentials(transition, start, end)[0]
        observed_score = float(np.dot(theta, self.observed))
        log_z = np.empty(self.n_sequences)
        grad = np.zeros(self.n_params)
        state = grad[:layout.n_state]
        acc = Accumulators(1, layout.n_labels)
        n_fallback, first = 0, True
        for index, state_index, reply in zip(self._index, self._state_index, replies):
            log_z[index] = reply["log_z"]
            # Blocks in block order; 0 + x is x and a block is exactly 0
            # where it is not sent: the sums of one process.
            for touched, block in zip(state_index, reply["state"]):
                if first:  # onto zeros
                    state[touched] = block
                    first = False
                else:  # each index once: as ``state[touched] += block``, faster
                    np.add.at(state, touched, block)
            blocks = reply["blocks"]
            acc.pair[blocks], acc.direct[blocks] = reply["pair"], reply["direct"]
            acc.boundary[blocks] = reply["boundary"]
            n_fallback += reply["n_fallback"]
        value = float(np.dot(self._weights, log_z)) - observed_score
        grad[layout.n_state:] = layout.pack_tail(*acc.counts(exp_trans, n_fallback))
        grad -= self.observed
        return value, grad

    # ``loss + prior`` and its gradient, the prior added in this process.
    value_and_grad = CRFObjective.value_and_grad


class ParameterMixing:
    """SGD on a dask cluster by iterative parameter mixing (McDonald et al. 2010).

    A batch-solver-like object for :func:`~sklearn_crfloss._training._stages.train_stages`:
    every epoch, each worker runs one epoch of ``sgd`` over the sequences it
    holds, from the mixed parameters (:meth:`SGD.shard_epoch
    <sklearn_crfloss.solvers.SGD.shard_epoch>`), and the client mixes the
    workers' parameters, each weighted by its share of the sequences.

    Parameters
    ----------
    sgd : SGD
        The estimator's SGD (step size, ``power_t``, ``batch_size``,
        ``average``, ``random_state``).

    Attributes
    ----------
    eta0_ : float
        The first step size (calibrated on the first worker's sequences for
        ``eta0='auto'``).

    Notes
    -----
    With ``average`` (the default), the parameters returned are the mean of
    the mixed parameters of the epochs after the first (an average of the
    iterates at the end of each epoch, not of every step as single-process
    ASGD does); else the last mixed parameters. The reported objective of an
    epoch is the sum of the workers' losses, each sequence's before its own
    step, plus the penalty of the mixed parameters.

    References
    ----------
    R. McDonald, K. Hall, G. Mann (2010). Distributed training strategies for
    the structured perceptron. NAACL. Section 3, Figure 2 (iterative
    parameter mixing).
    """

    name = "sgd"
    unit = "epoch"
    dense_states = False

    def __init__(self, sgd):
        self.sgd = sgd
        self.default_max_iter = sgd.default_max_iter

    def check(self, loss, prior):
        """As :meth:`SGD.check <sklearn_crfloss.solvers.SGD.check>`."""
        self.sgd.check(loss, prior)

    def solve(self, objective, loss, prior, C, x0, monitor):
        """Train by iterative parameter mixing on ``objective``'s workers.

        Parameters
        ----------
        objective : DistributedObjective
        loss, prior, C, x0, monitor
            As for a solver's ``solve``.

        Returns
        -------
        ndarray of float64 of shape (n_params,)
        """
        from sklearn.utils import check_random_state

        sgd = self.sgd
        self.check(loss, prior)
        n_total = objective.n_sequences
        seeds = check_random_state(sgd.random_state).randint(2**31 - 1, size=len(objective.parts))
        theta = np.array(x0, dtype=np.float64)
        eta0 = None if sgd.eta0 == "auto" else float(sgd.eta0)
        if eta0 is None:  # calibrated on the first worker's sequences
            eta0 = objective.client.gather(objective._submit(
                _shard_epoch, objective.parts[0], sgd, theta, loss, prior, C, n_total, 0, None,
                [seeds[0], 0]))[3]
        self.eta0_ = eta0
        lam = 0.0 if get_prior_tags(prior).zero else 1.0 / (C * n_total)
        average = sgd.average is not False
        total, n_averaged, stopped = None, 0, False
        for epoch in range(monitor.max_iter):
            replies = objective.client.gather([
                objective._submit(_shard_epoch, part, sgd, theta, loss, prior, C, n_total,
                                  epoch * n_total, eta0, [seed, epoch + 1])
                for part, seed in zip(objective.parts, seeds)])
            mixed = np.zeros_like(theta)
            value = 0.0
            for part_theta, part_value, n, _ in replies:
                mixed += (n / n_total) * part_theta
                value += part_value
            theta = mixed
            value += 0.5 * lam * n_total * float(np.dot(theta, theta))
            if average and epoch >= 1:
                total = theta.copy() if total is None else total + theta
                n_averaged += 1
            eta = eta0 / (1.0 + eta0 * (lam or 1.0 / n_total) * (epoch + 1) * n_total)
            if monitor.report(value, theta=lambda: self._result(theta, total, n_averaged),
                              check=False, eta=eta):
                stopped = True
                break
        monitor.finish(stopped, f"reached max_iter={monitor.max_iter} epochs without "
                       "early stopping", solver="SGD")
        return self._result(theta, total, n_averaged)

    @staticmethod
    def _result(theta, total, n_averaged):
        return theta if total is None else total / n_averaged
