"""The training objective: potentials from features, loss, chain rule, prior.

This is the one place where features meet the CRF (the model is
scikit-learn's ``LinearModelLoss``): :class:`CRFObjective` binds the training
data once (the feature matrix in the kernels' CSR form, labels, offsets,
weights, the :class:`~sklearn_crfloss._model._parameters.ParameterLayout`) and
evaluates, for any loss and prior it is handed,

``f(theta) = loss(U, T, start, end) + prior(theta, C)``, ``U = X @ W``,

with the chain rule ``dW = X.T @ dU`` applied here, never inside a loss. The
two products run in the compiled kernels of ``sklearn_crfloss._chain._potentials``
on the free state weights as they sit in ``theta`` (CRFsuite's per-attribute
feature lists: no dense ``W`` or ``dW`` of shape (n_attributes, n_labels),
no copy of ``theta``), both from the CSR rows of X (one pass over the
features per product, no CSC copy).

The conditional log-likelihood (``ConditionalLogLikelihood``, the loss of
``init='cll'`` too) takes a fused path: one kernel
(``_forward_backward.cll_features_batch``) gathers each sequence's unary
rows from the features, runs the scaled forward-backward and scatters the
expected counts back into the gradient, and the observed counts are
computed once per objective (CRFsuite's feature frequencies): no (n_tokens,
n_labels) array is built. With observation-dependent label bigrams its twin
``_positions.position_cll_features_batch`` reads the table of distinct
transition matrices (``BigramGroups``) per edge and sums the pair marginals
per matrix, which the chain rule takes to the shared matrix and the blocks.
Every other loss gets the unary potentials and returns their gradient.

The objective holds no loss or prior: training stages (``init='cll'``, a
loss's annealing ``stages``) evaluate the same bound data with another loss.
"""

import numpy as np
import scipy.sparse as sp

from .._chain import (accumulator_blocks, Accumulators, cll_features_batch, exp_potentials,
                      exp_tables, pair_counts, pair_gradient, pair_potentials,
                      position_cll_features_batch, position_scratch_width, scratch_width)
from .._data import column_counts
from ..losses import get_loss_tags, gold_counts
from ..priors import get_prior_tags
from ._accumulators import DenseRowAccumulators, KeptPairSums, RoundBuffers, StateWeights
from ._bigram_layout import BigramGroups

__all__ = ["CRFObjective", "LabelExpertObjective", "add_prior", "fused_evaluation",
           "kernel_csr"]


def fused_evaluation(loss, tags, objective, theta, out=None):
    """The loss's fused evaluation at ``theta`` (None: it has none here), into ``out``.

    A loss that declares ``LossTags.fused_out`` writes the gradient into
    ``out``; the gradient of another is copied into it.

    Parameters
    ----------
    loss : loss object
        Declaring ``fused_evaluation`` (``tags``).
    tags : LossTags
    objective : CRFObjective
    theta : ndarray of float64 of shape (n_params,)
    out : ndarray of float64 of shape (n_params,) or None, default=None

    Returns
    -------
    (float, ndarray) or None
        The value and the gradient (``out`` if given), or None.
    """
    if tags.fused_out:
        return loss.fused_value_and_grad(objective, theta, out=out)
    fused = loss.fused_value_and_grad(objective, theta)
    if fused is None or out is None:
        return fused
    out[:] = fused[1]
    return fused[0], out


def add_prior(prior, theta, C, grad):
    """Add the prior's gradient at ``theta`` to ``grad`` in place; its value.

    In place by the prior when it declares ``PriorTags.adds_gradient``
    (``value_and_add_grad``), else ``grad += prior.value_and_grad(theta,
    C)[1]``: the same sums either way.

    Parameters
    ----------
    prior : prior object
    theta : ndarray of float64 of shape (n_params,)
    C : float
    grad : ndarray of float64 of shape (n_params,)
        The loss's gradient (changed in place).

    Returns
    -------
    float
        The prior's value.
    """
    if get_prior_tags(prior).adds_gradient:
        return prior.value_and_add_grad(theta, C, grad)
    p_value, p_grad = prior.value_and_grad(theta, C)
    grad += p_grad
    return p_value


def kernel_csr(M):
    """(indptr as int32 or intp, indices as int32, data, binary) for the feature kernels.

    The row pointers are the matrix's own when they are int32 (scipy's for
    fewer than 2**31 stored entries: the kernels are compiled for both),
    else intp. ``binary``: every stored value is 1, and ``data`` is a
    one-element placeholder (the kernels do not read it): no float64 copy
    of X's values.
    """
    if M.shape[1] >= 2**31:
        raise ValueError(f"at most 2**31 - 1 feature columns are supported, got {M.shape[1]}")
    binary = bool(M.nnz == 0 or (M.data.min() == 1 and M.data.max() == 1))  # no (nnz,) temporary
    data = np.ones(1) if binary else np.ascontiguousarray(M.data, dtype=np.float64)
    indptr_dtype = np.int32 if M.indptr.dtype == np.int32 else np.intp
    return (np.ascontiguousarray(M.indptr, dtype=indptr_dtype),
            np.ascontiguousarray(M.indices, dtype=np.int32), data, binary)


class CRFObjective:
    """Training data bound for repeated evaluations of ``loss + prior``.

    Parameters
    ----------
    X : scipy.sparse matrix of shape (n_tokens, n_features)
        Features of all tokens of the training batch, of any numeric dtype
        (an int8 indicator matrix is not copied).
    y : ndarray of intp of shape (n_tokens,)
        Gold label index of every token.
    offsets : ndarray of intp of shape (n_sequences + 1,)
        Sequence boundaries (no empty sequence).
    layout : ParameterLayout
        Which parameters ``theta`` holds (``layout.n_features`` must equal
        X's width).
    sample_weight : ndarray of shape (n_sequences,) or None, default=None
    token_weight : ndarray of shape (n_tokens,) or None, default=None
        Per-token weights, passed to the losses that declare
        ``supports_token_weight = True`` (the others never see them).
    n_threads : int, default=1
    owns_features : bool, default=False
        Whether X's index and value arrays are handed over (no one else
        reads them): the objective then orders their rows in place (see
        ``csr``), else in its own copy. The matrix given is never modified
        otherwise.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix of float64
        The features (a property: converted once if given in another dtype).
    stored_X : scipy.sparse.csr_matrix
        The features as stored (a property: an int8 indicator matrix stays
        int8 until :attr:`X` is read), for a solver that keeps its own copy.
    y, offsets, sample_weight, token_weight, layout, n_threads
        The bound data, as given.
    n_tokens, n_features, n_labels, n_params : int
        The sizes (``n_params`` is ``layout.n_params``).
    csr : tuple
        ``(indptr, indices, data, binary)``: X in the kernels' CSR form
        (:func:`kernel_csr`), each row's entries ordered by attribute class
        (:meth:`StateWeights.order`; read-only): the same matrix, its column
        indices unsorted.
    state_weights : StateWeights
        How the kernels store the free state weights: ``code`` and ``W_hot``
        (the dense rows, ``Lp`` wide), ``accumulators`` for a kernel's
        gradient and ``gradient`` to sum them into the state block.
    bigram : BigramGroups or None
        The observation-dependent label bigrams of the batch; None without.

    Notes
    -----
    This is the interface that every evaluation path sees, as CRFsuite's
    ``encoder_t`` is its trainers': :meth:`loss_value_and_grad` asks the
    loss for its fused evaluation first (``fused_value_and_grad(objective,
    theta)``, in ``losses/``), which uses only the members above and
    :meth:`kernel_weights`, :meth:`sequence_weights`, :meth:`potentials`,
    :meth:`observed_counts`, :meth:`cll_value_and_grad` and :meth:`kept`;
    else the general path (``U = X @ W``, the loss's ``value_and_grad``,
    ``X.T @ dU``).
    """

    #: The fused CLL kernel sums its blocks by rounds (:class:`RoundBuffers`) on
    #: up to this many threads; with more, a round's blocks wait for each
    #: other, which cost more than the rounds saved (benchmarks/README.md).
    ROUNDS_MAX_THREADS = 1

    def __init__(self, X, y, offsets, layout, *, sample_weight=None, token_weight=None,
                 n_threads=1, owns_features=False):
        X = sp.csr_matrix(X)  # any numeric dtype: no float64 copy of an int8 indicator matrix
        if X.shape[1] != layout.n_features:
            raise ValueError(f"X has {X.shape[1]} columns, the layout {layout.n_features}")
        self.n_tokens, self.n_features = X.shape
        L = layout.n_labels
        self.layout = layout
        # Observation-dependent label bigrams: the distinct rows of the bigram columns.
        self.bigram = (BigramGroups(X, offsets, layout.bigram_columns) if layout.n_bigram
                       else None)
        self.state_weights = StateWeights(layout.state_index, self.n_features, L,
                                           column_counts(X))
        csr = kernel_csr(X)
        # In place where the arrays are the objective's: handed over, or
        # converted by kernel_csr (then not X's).
        own = owns_features or (csr[1] is not X.indices and (csr[3] or csr[2] is not X.data))
        self.csr = self.state_weights.order(csr, in_place=own)
        # An indicator matrix is not held: the kernels read its columns and
        # row pointers only, and :attr:`stored_X` builds it again if asked
        # (the caller that hands its matrix over frees its values).
        indptr, indices, data, binary = self.csr
        if binary:
            self._X = None
        elif indices is X.indices or data is X.data:  # X's arrays, ordered in place
            self._X = sp.csr_matrix((data, indices, indptr), shape=X.shape, copy=False)
        else:
            self._X = X
        self._X_dtype = X.dtype
        self._hot_acc = DenseRowAccumulators(self.state_weights, self.csr, offsets)
        self._pair_sums = KeptPairSums()  # label bigrams' per-matrix sums
        self._rounds = RoundBuffers(self.state_weights, self.csr, offsets)
        self.y = y
        self.offsets = offsets
        self.n_labels = L
        self.sample_weight = sample_weight
        self.token_weight = token_weight
        self.n_threads = n_threads
        self.n_params = layout.n_params
        # Allocated on first use and reused by every evaluation: the unary
        # potentials (losses other than CLL), the observed counts (CLL).
        self._unary = None
        self._observed = None
        self._kept = {}  # what a loss's fused evaluation derives from the data (kept())

    @property
    def n_blocks(self):
        """Blocks of sequences the fused CLL kernel sums apart (:meth:`cll_blocks`).

        0 if its state and transition sums have different block counts
        (with label bigrams the transition sums are one per distinct matrix).
        """
        n_matrices = None if self.bigram is None else self.bigram.rows.shape[0]
        state = self.state_weights.n_blocks(self.n_threads)
        pair = accumulator_blocks(self.n_threads,
                                  Accumulators.n_values(self.n_labels, n_matrices))
        return state if state == pair else 0

    @property
    def X(self):
        """The feature matrix as float64 CSR (a copy, made once, if it is stored otherwise)."""
        if self.stored_X.dtype != np.float64:
            self._X = sp.csr_matrix(self._X, dtype=np.float64)
        return self._X

    @property
    def stored_X(self):
        """The feature matrix as stored: CSR, of the dtype given (until :attr:`X` converts it).

        An indicator matrix (every stored value 1) is built again from the
        kernels' arrays when first read (the same matrix), and kept.
        """
        if self._X is None:
            indptr, indices = self.csr[0], self.csr[1]
            self._X = sp.csr_matrix((np.ones(indices.shape[0], dtype=self._X_dtype), indices,
                                     indptr), shape=(self.n_tokens, self.n_features))
        return self._X

    def _state(self, theta):
        """The free state weights of ``theta`` as the kernels read them (a view)."""
        return np.ascontiguousarray(theta[:self.layout.n_state], dtype=np.float64)

    def kernel_weights(self, theta):
        """``(code, w, W_hot)``: the state weights of ``theta`` as the feature kernels take them.

        ``w`` is theta's state block (a view), ``W_hot`` the dense rows
        (:attr:`state_weights`'s own buffer, filled from ``w``).
        """
        return self.state_weights.weights(self._state(theta))

    def kept(self, key, make):
        """What a loss's fused evaluation derives from the bound data, kept for the next one.

        ``make()`` when ``key`` (a hashable description, e.g. of a cost
        matrix) is not the one kept; one entry is kept at a time.
        """
        value = self._kept.get(key)
        if value is None:
            self._kept.clear()  # one at a time is kept
            value = self._kept[key] = make()
        return value

    def sequence_weights(self):
        """The weight of every sequence (ones without sample_weight), float64."""
        if self.sample_weight is None:
            return np.ones(self.offsets.shape[0] - 1)
        return np.ascontiguousarray(self.sample_weight, dtype=np.float64)

    def potentials(self, theta):
        """``(U, transition, start, end)`` at ``theta``; U of shape (n_tokens, n_labels).

        U is a buffer that the next call overwrites. With bigram attributes
        the transitions are a
        :class:`~sklearn_crfloss.inference.PositionTransitions`.
        """
        if self._unary is None:
            self._unary = np.empty((self.n_tokens, self.n_labels))
        pair_potentials(*self.csr, *self.kernel_weights(theta), self._unary,
                        self.n_threads)
        transition, start, end = self.layout.unpack_tail(theta)
        if self.bigram is not None:  # observation-dependent label bigrams
            transition = self.bigram.transitions(transition, self.layout.bigram_weights(theta))
        return self._unary, transition, start, end

    def observed_counts(self):
        """The weighted gold counts of every free parameter (computed once).

        Returns
        -------
        ndarray of float64 of shape (n_params,)
            ``theta @ observed_counts()`` is ``sum_i w_i score(y_i)``, the
            weighted score of the gold label sequences.
        """
        if self._observed is None:
            _, trans, start, end = gold_counts(self.y, self.offsets, self.n_labels,
                                               self.sample_weight)
            observed = np.empty(self.n_params)
            acc, hot_acc = self.state_weights.accumulators(1, observed[:self.layout.n_state])
            pair_counts(*self.csr, self.state_weights.code, acc[0], hot_acc[0],
                        np.ascontiguousarray(self.y, dtype=np.intp), self.offsets,
                        self.sequence_weights())
            self.state_weights.gradient(acc, hot_acc, observed[:self.layout.n_state])
            tail = self.layout.pack_tail(trans, start, end)
            observed[self.layout.n_state:self.layout.n_state + tail.shape[0]] = tail
            if self.bigram is not None:
                observed[self.layout.n_base:] = self.bigram.gold_blocks(
                    self.y, self.offsets, self.n_labels, self.sample_weight)
            self._observed = observed
        return self._observed

    def _cll_kernel(self, theta, state_out, extra_columns=None, kept_sums=False, blocks=None,
                    rounds=False):
        """Run the fused CLL kernel at ``theta``: log Z and the per-block sums, unreduced.

        ``state_out`` (the state block of a gradient) is the accumulator
        itself when there is a single block. With ``extra_columns`` (see
        :meth:`cll_value_and_grad`) the kernel runs on its widened features
        (softmax-margin); the returned dense-row accumulators then include
        the extra rows after the state weights' own. Without, they may be
        the objective's own: the caller gives them back
        (``self._hot_acc.release``). With label bigrams the transition sums
        and ``exp_trans`` are per distinct matrix (``_positions``), the sums
        the objective's own if ``kept_sums`` (given back by
        ``self._pair_sums.release``). With ``rounds`` (no label bigrams, no
        ``extra_columns``) on up to :attr:`ROUNDS_MAX_THREADS` threads the
        kernel sums the state blocks by rounds (:class:`RoundBuffers`):
        the compact sums land in ``state_out``, the returned accumulators
        are None and the round buffers, whose last holds the dense rows'
        sum (given back by ``self._rounds.release``).
        """
        L = self.n_labels
        transition, start, end = self.layout.unpack_tail(theta)
        transition = np.ascontiguousarray(transition, dtype=np.float64)
        start = np.ascontiguousarray(start, dtype=np.float64)
        end = np.ascontiguousarray(end, dtype=np.float64)
        if self.bigram is not None:
            return self._position_cll_kernel(theta, transition, start, end, state_out,
                                             kept_sums)
        exp_trans, exp_start, exp_end, shifts = exp_potentials(transition, start, end)
        weights = self.sequence_weights()
        log_z = np.empty(weights.shape[0])
        acc = Accumulators(self.n_threads, L)
        max_length = int(np.diff(self.offsets).max())
        scratch = np.empty((self.n_threads, scratch_width(L, max_length)))
        n_blocks = self.state_weights.n_blocks(self.n_threads)
        if (rounds and self.n_threads <= self.ROUNDS_MAX_THREADS
                and acc.pair.shape[0] % n_blocks == 0):
            code, shared = self._rounds.codes(n_blocks)
            _, w, W_hot = self.kernel_weights(theta)
            bufs = self._rounds.take(self.n_threads)
            state_out.fill(0.0)
            try:
                n_fallback = cll_features_batch(
                    *self.csr, code, w, W_hot, transition, start, end, exp_trans,
                    exp_start, exp_end, self.offsets, weights, log_z, bufs[0], bufs[1],
                    acc.pair, acc.direct, acc.boundary, scratch, max_length, shifts[1],
                    shifts[2], shifts[0], self.n_threads, grad_out=state_out, hot_out=bufs[2],
                    n_state_blocks=n_blocks, shared=shared)
            except BaseException:
                self._rounds.release(bufs)
                raise
            return weights, log_z, None, bufs, acc, exp_trans, n_fallback
        kept = None if extra_columns is not None else self._hot_acc.take(n_blocks)
        grad_acc, hot_acc = self.state_weights.accumulators(self.n_threads, state_out, kept,
                                                            blocks)
        csr, (code, w, W_hot), all_hot = self.csr, self.kernel_weights(theta), hot_acc
        if extra_columns is not None:
            csr, code = extra_columns.csr, extra_columns.code
            W_hot, all_hot = extra_columns.weights(W_hot, hot_acc)
        try:
            n_fallback = cll_features_batch(
                *csr, code, w, W_hot, transition, start, end,
                exp_trans, exp_start, exp_end, self.offsets, weights, log_z, grad_acc, all_hot,
                acc.pair, acc.direct, acc.boundary, scratch, max_length, shifts[1], shifts[2],
                shifts[0], self.n_threads,
            )
        except BaseException:
            self._hot_acc.release(kept)
            raise
        return weights, log_z, grad_acc, all_hot, acc, exp_trans, n_fallback

    def _position_cll_kernel(self, theta, transition, start, end, state_out, kept_sums):
        """:meth:`_cll_kernel` with label bigrams: the table of distinct matrices per edge."""
        L = self.n_labels
        table = self.bigram.transitions(transition, self.layout.bigram_weights(theta)).table
        exp_table, shifts, exp_start, exp_end, shift_boundary, t_range = exp_tables(
            table, start, end, padded=True)
        weights = self.sequence_weights()
        log_z = np.empty(weights.shape[0])
        kept = self._hot_acc.take(self.state_weights.n_blocks(self.n_threads))
        grad_acc, hot_acc = self.state_weights.accumulators(self.n_threads, state_out, kept)
        acc = (self._pair_sums.take if kept_sums else Accumulators)(self.n_threads, L,
                                                                     table.shape[0])
        max_length = int(np.diff(self.offsets).max())
        scratch = np.empty((self.n_threads, position_scratch_width(L, max_length)))
        try:
            n_fallback = position_cll_features_batch(
                *self.csr, *self.kernel_weights(theta), table, exp_table, shifts,
                self.bigram.index, start, end, exp_start, exp_end, self.offsets, weights, log_z,
                grad_acc, hot_acc, acc.pair, acc.direct, acc.boundary, scratch, max_length,
                shift_boundary, t_range, self.n_threads)
        except BaseException:
            self._hot_acc.release(kept)
            self._pair_sums.release(acc)
            raise
        return weights, log_z, grad_acc, hot_acc, acc, exp_table, n_fallback

    def cll_value_and_grad(self, theta, extra_columns=None, out=None):
        """The conditional log-likelihood and its gradient by the fused kernel.

        ``sum_i w_i log Z_i - theta . observed`` and ``expected - observed``
        (the log-likelihood's own fused evaluation, label bigrams included).

        Parameters
        ----------
        theta : ndarray of float64 of shape (n_params,)
        extra_columns : object or None, default=None
            Features widened by dense columns (softmax-margin's cost
            columns, ``losses/_fused.py``): its ``csr`` and ``code`` replace
            :attr:`csr` and ``state_weights.code``, and ``weights(W_hot,
            hot_acc)`` gives the dense rows (``W_hot`` first) and their
            accumulators; the gradient of the extra rows is dropped. Without
            label bigrams only.
        out : ndarray of float64 of shape (n_params,) or None, default=None
            The array to write the gradient into (e.g. the solver's own
            gradient vector); None: a new one.

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)
            ``out`` if given.
        """
        layout = self.layout
        grad = np.empty(self.n_params) if out is None else out
        weights, log_z, grad_acc, hot_acc, acc, exp_trans, n_fallback = self._cll_kernel(
            theta, grad[:layout.n_state], extra_columns, kept_sums=True,
            rounds=extra_columns is None)
        try:
            if grad_acc is None:  # summed by rounds: the dense rows' sum is the last buffer
                self.state_weights.put_hot(hot_acc[2], grad[:layout.n_state])
            else:
                self.state_weights.gradient(grad_acc,
                                            hot_acc[:, :self.state_weights.W_hot.shape[0]],
                                            grad[:layout.n_state])
            counts, d_start, d_end = acc.counts(exp_trans, n_fallback)
        finally:
            if grad_acc is None:
                self._rounds.release(hot_acc)
            else:
                self._hot_acc.release(hot_acc)
            self._pair_sums.release(acc)
        observed = self.observed_counts()
        value = float(np.dot(weights, log_z)) - float(np.dot(theta, observed))
        if self.bigram is not None:  # the chain rule to the shared matrix and the blocks
            counts, grad[layout.n_base:] = self.bigram.chain(counts)
        tail = layout.pack_tail(counts, d_start, d_end)
        grad[layout.n_state:layout.n_state + tail.shape[0]] = tail
        grad -= observed
        return value, grad

    def cll_blocks(self, theta, blocks=None, held=slice(None)):
        """The fused CLL kernel's sums at ``theta`` per block of sequences, unreduced.

        The kernel adds sequence ``k`` into block ``(k // 8) % n_blocks``
        (``n_blocks`` from ``accumulator_blocks``), and
        :meth:`loss_value_and_grad` adds the blocks in block order. Whoever
        holds the blocks of a larger batch (the sequences of this one, at
        the same positions modulo ``8 * n_blocks``) can add them in the same
        order and obtain the same sums, rounding included: this is how
        :class:`~sklearn_crfloss.dask.DaskCRFTagger` reproduces the
        objective of one process.

        Parameters
        ----------
        theta : ndarray of float64 of shape (n_params,)
        blocks : ndarray of float64 of shape (n_blocks, layout.n_state) or None
            Accumulators to add ``state`` into, zeroed by the caller (those
            blocks it reads), e.g. kept between evaluations; None: new ones.
        held : slice, default=slice(None)
            The blocks returned complete (the others lack their dense rows).

        Returns
        -------
        log_z : ndarray of shape (n_sequences,)
            ``log Z`` of every sequence.
        state : ndarray of shape (n_blocks, layout.n_state)
            Each block's expected counts of the state parameters, in
            ``theta``'s order.
        pair, direct, boundary : ndarray of shape (n_blocks, ...)
            The blocks of the transition and boundary sums
            (``_forward_backward.Accumulators``; with label bigrams one
            pair and direct sum per distinct matrix of ``self.bigram``).
        n_fallback : int
            Sequences computed in log space.
        """
        state = np.empty(self.layout.n_state)
        _, log_z, blocks, hot_acc, acc, _, n_fallback = self._cll_kernel(theta, state,
                                                                          blocks=blocks)
        w = self.state_weights  # the blocks are this evaluation's own: completed in place
        try:
            for block, hot in zip(blocks[held], hot_acc[held]):
                block[w.hot_index] = hot.reshape(-1)[w.hot_position]
        finally:
            self._hot_acc.release(hot_acc)
        return log_z, blocks, acc.pair, acc.direct, acc.boundary, n_fallback

    def loss_value_and_grad(self, theta, loss, out=None):
        """Value and gradient of ``loss`` alone (no prior) at ``theta``.

        Parameters
        ----------
        theta : ndarray of float64 of shape (n_params,)
        loss : object with ``value_and_grad`` (the loss contract of
            :class:`~sklearn_crfloss.losses.BaseLoss`)
        out : ndarray of float64 of shape (n_params,) or None, default=None
            The array to write the gradient into; None: a new one.

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)
            ``out`` if given.
        """
        tags = get_loss_tags(loss)
        if tags.fused_evaluation:  # the loss's own kernel on the features, if it has one
            fused = fused_evaluation(loss, tags, self, theta, out)
            if fused is not None:
                return fused
        unary, T, start, end = self.potentials(theta)
        extra = {}
        if self.token_weight is not None and tags.supports_token_weight:
            extra["token_weight"] = self.token_weight
        value, d_unary, d_T, d_start, d_end = loss.value_and_grad(
            unary, T, start, end, self.y, self.offsets,
            sample_weight=self.sample_weight, n_threads=self.n_threads, **extra,
        )
        grad = np.empty(self.n_params) if out is None else out
        n_state = self.layout.n_state
        self.state_gradient(d_unary, grad[:n_state])
        if self.bigram is not None:  # the chain rule to the shared matrix and the blocks
            d_T, grad[self.layout.n_base:] = self.bigram.chain(d_T)
        tail = self.layout.pack_tail(d_T, d_start, d_end)
        grad[n_state:n_state + tail.shape[0]] = tail
        return value, grad

    def state_gradient(self, d_unary, out):
        """The chain rule ``X.T @ d_unary`` to the free state weights, into ``out``.

        Parameters
        ----------
        d_unary : ndarray of shape (n_tokens, n_labels)
            Gradient with respect to the unary potentials.
        out : ndarray of float64 of shape (layout.n_state,)
            The state block of a gradient (overwritten).

        Returns
        -------
        out : ndarray
        """
        grad_acc, hot_acc = self.state_weights.accumulators(self.n_threads, out)
        pair_gradient(*self.csr, self.state_weights.code,
                      np.ascontiguousarray(d_unary, dtype=np.float64), grad_acc, hot_acc,
                      self.n_threads)
        return self.state_weights.gradient(grad_acc, hot_acc, out)

    def value_and_grad(self, theta, loss, prior, C, out=None):
        """Value and gradient of ``loss(theta) + prior(theta, C)``.

        The prior's gradient is added to the loss's in place, by the prior
        itself when it declares ``PriorTags.adds_gradient``
        (``value_and_add_grad``: no array of ``n_params`` for it).

        Parameters
        ----------
        theta : ndarray of float64 of shape (n_params,)
        loss : loss object
        prior : object with ``value_and_grad(theta, C)``
        C : float
        out : ndarray of float64 of shape (n_params,) or None, default=None
            The array to write the gradient into (the solver's own
            gradient vector); None: a new one.

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)
            ``out`` if given.
        """
        value, grad = self.loss_value_and_grad(theta, loss, out=out)
        return value + add_prior(prior, theta, C, grad), grad


class LabelExpertObjective(CRFObjective):
    """The objective of a label expert whose layout has bigram blocks.

    The blocks' entries ``B[b, i, j]`` outside the expert's free
    transitions (neither ``i`` nor ``j`` one of its labels) start at 0 and
    get a zero gradient, loss and prior alone or together: the batch
    solvers (``SolverTags.trains_label_experts``), whose steps are made
    of gradients, keep them at 0. Parameters as :class:`CRFObjective`.
    """

    def __init__(self, X, y, offsets, layout, **kwargs):
        super().__init__(X, y, offsets, layout, **kwargs)
        self._fixed = np.flatnonzero(layout.tail_masks()[0].ravel() == 0.0)

    def _project(self, grad):
        L = self.n_labels
        grad[self.layout.n_base:].reshape(-1, L * L)[:, self._fixed] = 0.0
        return grad

    def loss_value_and_grad(self, theta, loss, out=None):
        # Docstring inherited.
        value, grad = super().loss_value_and_grad(theta, loss, out=out)
        return value, self._project(grad)

    def value_and_grad(self, theta, loss, prior, C, out=None):
        # Docstring inherited (the prior's gradient is projected too: a
        # non-zero prior mean would move the fixed entries).
        value, grad = super().value_and_grad(theta, loss, prior, C, out=out)
        return value, self._project(grad)

