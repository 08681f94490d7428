"""How the fused kernels store the free state weights and sum their gradient.

:class:`StateWeights` holds the hybrid layout the feature kernels read (dense
rows for attributes with many free labels, packed codes for the others);
:class:`DenseRowAccumulators`, :class:`RoundBuffers` and :class:`KeptPairSums`
are the zeroed accumulators that :class:`~sklearn_crfloss._model._objective.CRFObjective`
keeps between evaluations of the fused conditional log-likelihood, summed in
an order that does not depend on the number of threads.
"""

import threading

import numpy as np

from .._chain import accumulator_blocks, Accumulators, order_entries, row_width
from ._parameters import index_dtype

__all__ = ["DenseRowAccumulators", "KeptPairSums", "RoundBuffers", "STRETCH", "StateWeights",
           "blocks_touching"]


class StateWeights:
    """How the kernels store the free state weights: hybrid dense rows and compact entries.

    An attribute with more than ``COLD_MAX = 3`` free labels gets a dense
    row of ``Lp = row_width(n_labels)`` doubles in ``W_hot`` (zeros where a
    pair is not free), rows ordered by decreasing attribute frequency so
    that the rows most tokens use share the cache; its potentials and
    gradient are whole-row vector operations. Every other attribute keeps
    its weights where they sit in ``theta`` (CRFsuite's per-attribute
    feature lists), its labels packed in its ``code`` (see
    ``_chain.pxd: gather_token``). On CoNLL-2000 a few percent of the
    attributes are dense and cover most of the stored features.

    Parameters
    ----------
    state_index : ndarray of int32 or intp
        The layout's sorted flat indices ``attribute * n_labels + label``
        (``ParameterLayout.state_index``: below ``n_features * n_labels``).
    n_features, n_labels : int
    frequency : ndarray of int of shape (n_features,)
        Stored features per attribute (the order of the dense rows).
    """

    COLD_MAX = 3

    def __init__(self, state_index, n_features, n_labels, frequency):
        L = n_labels
        # The searched values in state_index's dtype (int32 for most
        # layouts): no copy of it in another.
        dtype = np.promote_types(state_index.dtype, index_dtype(n_features * L))
        # In place where it can: these arrays have one entry per attribute.
        code = np.searchsorted(state_index, np.arange(0, (n_features + 1) * L, L, dtype=dtype)
                               ).astype(np.int64)
        count = np.diff(code)
        code = code[:-1]
        # Labels are packed in 8 bits: with more than 256 labels every
        # attribute with a free pair is dense.
        hot = count > (self.COLD_MAX if L <= 256 else 0)
        for q in range(self.COLD_MAX):
            has = np.flatnonzero(~hot & (count > q))
            first = code[has] & 0xFFFFFFFF  # the low bits: the first weight
            code[has] |= (state_index[first + q] % L).astype(np.int64) << (34 + 8 * q)
        np.minimum(count, self.COLD_MAX, out=count)
        count <<= 32
        code |= count
        del count
        # Dense rows in decreasing attribute frequency: hot attribute
        # hot_attributes[i] gets row row_of[i].
        hot_attributes = np.flatnonzero(hot)
        row_of = np.empty(hot_attributes.shape[0], dtype=np.int64)
        row_of[np.argsort(-frequency[hot_attributes], kind="stable")] = np.arange(
            hot_attributes.shape[0])
        first = np.searchsorted(state_index, (hot_attributes * L).astype(dtype))
        n_pairs = np.searchsorted(state_index, (hot_attributes * L + L).astype(dtype)) - first
        # The free pairs of the dense rows: where they sit in theta and in W_hot
        # (int32 where the indices fit, as the state index).
        self.hot_index = (np.repeat(first - np.cumsum(n_pairs) + n_pairs, n_pairs)
                          + np.arange(int(n_pairs.sum()))).astype(dtype)
        self.Lp = row_width(L)
        self.hot_position = (np.repeat(row_of, n_pairs) * self.Lp + state_index[self.hot_index] % L
                             ).astype(index_dtype(row_of.shape[0] * self.Lp))
        code[hot_attributes] = -(row_of + 1)
        self.code = code
        self.n_state = state_index.shape[0]
        self.n_hot = hot_attributes.shape[0]
        self.W_hot = np.zeros((max(self.n_hot, 1), self.Lp))

    def order(self, csr, in_place=False):
        """``csr`` with each row's entries partitioned by attribute class.

        Within each row, stably: the dense-row attributes, the compact ones
        with 1, 2 and 3 free labels, then those with none (``_potentials.
        order_entries``, one compiled pass). The feature kernels branch on
        each entry's class, at random in column order (CoNLL-2000), and
        predictably in this one: one CLL evaluation there took 0.83 times
        the time (benchmarks/README.md). The matrix is the same, its rows'
        sums only reordered.

        Parameters
        ----------
        csr : tuple
            ``(indptr, indices, data, binary)`` (``kernel_csr``).
        in_place : bool, default=False
            Reorder ``indices`` and ``data`` themselves (the caller's
            arrays, no one else's) where they are writeable (not, e.g.,
            joblib's memory maps), else copies of them.

        Returns
        -------
        csr : tuple
            The ordered ``(indptr, indices, data, binary)``, the index and
            value arrays made read-only (a sort in place would undo the
            order).
        """
        indptr, indices, data, binary = csr
        if not (in_place and indices.flags.writeable and (binary or data.flags.writeable)):
            indices = indices.copy()
            data = data if binary else data.copy()
        order_entries(indptr, indices, data, binary, self.code)
        indices.flags.writeable = False
        data.flags.writeable = False
        return indptr, indices, data, binary

    def weights(self, state):
        """``(code, w, W_hot)`` for the kernels, W_hot filled from ``state`` (theta's state block)."""
        self.W_hot.ravel()[self.hot_position] = state[self.hot_index]
        return self.code, state, self.W_hot

    def accumulators(self, n_threads, out, hot_acc=None, blocks=None):
        """Zeroed gradient accumulators: compact (n_acc, n_state), dense rows (n_acc, ...).

        ``n_acc``: ``accumulator_blocks(n_threads, ...)``, blocks of
        sequences summed in block order, so that the gradient does not
        depend on ``n_threads``; with a single accumulator it is ``out``
        itself (the state block of the gradient, of shape (n_state,)).
        ``hot_acc``: zeroed dense-row accumulators to use (of shape
        (n_acc, ...)) instead of new ones; ``blocks``: compact ones (the
        caller zeroes those it reads).
        """
        n_acc = self.n_blocks(n_threads)
        if n_acc == 1:
            out[:] = 0.0
            acc = out[np.newaxis]
        else:
            acc = np.zeros((n_acc, self.n_state)) if blocks is None else blocks
        if hot_acc is None:
            hot_acc = np.zeros((n_acc,) + self.W_hot.shape)
        return acc, hot_acc

    def n_blocks(self, n_threads):
        """The number of accumulators of :meth:`accumulators`."""
        return accumulator_blocks(n_threads, self.n_state + self.W_hot.size)

    def gradient(self, acc, hot_acc, out):
        """Sum the threads' accumulators into ``out`` (the state block of the gradient).

        The dense rows are added in block order, or, when under a quarter
        of their entries are free (many labels), their free pairs are
        gathered from each block and added in block order: the same sums
        without reading the rest of the rows.
        """
        if not np.may_share_memory(acc, out):  # else acc is out (one thread)
            acc.sum(axis=0, out=out)
        if 4 * self.hot_position.shape[0] > self.W_hot.size:
            out[self.hot_index] = hot_acc.sum(axis=0).ravel()[self.hot_position]
            return out
        hot = hot_acc[0].reshape(-1)[self.hot_position]
        for block in hot_acc[1:]:
            hot += block.reshape(-1)[self.hot_position]
        out[self.hot_index] = hot
        return out

    def put_hot(self, hot_sum, out):
        """Copy the free pairs of the summed dense rows ``hot_sum`` (n_hot, Lp) into ``out``.

        ``out`` is the state block of the gradient whose compact entries are
        summed already (:class:`RoundBuffers`).
        """
        out[self.hot_index] = hot_sum.reshape(-1)[self.hot_position]
        return out


class DenseRowAccumulators:
    """The fused CLL kernel's dense-row accumulators, kept zeroed between evaluations.

    New ones at every evaluation cost their size (n_blocks x ``W_hot``, 180
    MB at 500 labels, where every attribute is dense) in page faults and
    zeroing. The kernel adds sequence ``k`` into block ``(k // 8) %
    n_blocks`` and touches only the rows of the attributes of those
    sequences: after an evaluation, :meth:`release` zeroes these rows of
    each block. One evaluation holds them at a time; :meth:`take` gives
    None to another (which then allocates its own).
    """

    def __init__(self, weights, csr, offsets):
        self.state_weights, self.csr, self._offsets = weights, csr, offsets
        self._lock = threading.Lock()
        self._acc = self._rows = None

    def __getstate__(self):
        return self.state_weights, self.csr, self._offsets

    def __setstate__(self, state):
        self.__init__(*state)

    def take(self, n_blocks):
        """The zeroed accumulators of shape (n_blocks, n_hot, Lp), or None if in use."""
        if not self._lock.acquire(blocking=False):
            return None
        if self._acc is None or self._acc.shape[0] != n_blocks:
            self._acc = np.zeros((n_blocks,) + self.state_weights.W_hot.shape)
            self._rows = self._block_rows(n_blocks)
        return self._acc

    def release(self, acc):
        """Zero what the kernel wrote and give the accumulators back (if ``acc`` are they)."""
        if acc is None or acc is not self._acc:
            return
        for block, rows in zip(acc, self._rows):
            if rows is None:
                block.fill(0.0)
            else:
                block[rows] = 0.0
        self._lock.release()

    def _block_rows(self, n_blocks):
        """Per block, the dense rows of the attributes of its sequences (None: over half)."""
        code = self.state_weights.code
        n_hot = self.state_weights.W_hot.shape[0]
        hot = np.flatnonzero(code < 0)
        touched = np.zeros((n_blocks, n_hot), dtype=bool)
        touched[:, -code[hot] - 1] = blocks_touching(self.csr, self._offsets, n_blocks,
                                                      code.shape[0])[:, hot]
        half = n_hot // 2
        return [None if r.shape[0] > half else r
                for r in (np.flatnonzero(t) for t in touched)]


#: Stored features per stretch of :func:`blocks_touching` (its temporaries' length).
STRETCH = 1 << 18


def blocks_touching(csr, offsets, n_blocks, n_features):
    """Which attributes the sequences of each block of the fused CLL kernel hold.

    Sequence ``k`` belongs to block ``(k // 8) % n_blocks``. A stretch of
    about :data:`STRETCH` stored features at a time (whole tokens): the
    temporaries are as long as the stretch, not the matrix.

    Returns
    -------
    ndarray of bool of shape (n_blocks, n_features)
    """
    indptr, indices = csr[0], csr[1]
    token_block = ((np.arange(offsets.shape[0] - 1) // 8) % n_blocks).repeat(np.diff(offsets))
    first = int(offsets[0])  # tokens outside the sequences belong to no block
    touched = np.zeros((n_blocks, n_features), dtype=bool)
    bounds = np.searchsorted(indptr[first:offsets[-1] + 1],
                             np.arange(indptr[first], indptr[offsets[-1]], STRETCH),
                             side="right") - 1 + first
    bounds = np.unique(np.append(bounds, offsets[-1]))
    for start, stop in zip(bounds[:-1], bounds[1:]):
        blocks = token_block[start - first:stop - first].repeat(np.diff(indptr[start:stop + 1]))
        touched[blocks, indices[indptr[start]:indptr[stop]]] = True
    return touched


class RoundBuffers:
    """The fused CLL kernel's state buffers when it sums its blocks by rounds, kept zeroed.

    ``cll_features_batch`` with ``grad_out``: each of ``n_threads``
    threads fills one block of sequences at a time into its buffer (block 0
    straight into the outputs) and the blocks are added into the outputs in
    block order between rounds, the buffers zeroed again as they are read:
    the sums of the per-block accumulators of :meth:`StateWeights.accumulators`
    added in block order, with ``n_threads`` compact and dense-row buffers
    and one dense-row sum live instead of ``n_blocks`` of each, and no new
    pages per evaluation. One evaluation holds them at a time; :meth:`take`
    gives new ones to another.
    """

    #: The bit of a compact attribute's code that sends it straight into the gradient.
    OWN_BIT = 58

    def __init__(self, weights, csr, offsets):
        self.state_weights, self.csr, self._offsets = weights, csr, offsets
        self._lock = threading.Lock()
        self._bufs = None
        self._codes = {}

    def __reduce__(self):  # a copy starts with none kept (a lock does not pickle)
        return RoundBuffers, (self.state_weights, self.csr, self._offsets)

    def codes(self, n_blocks):
        """``(code, shared)`` for ``n_blocks`` blocks of sequences (computed once).

        ``code``: the state weights' codes, with :attr:`OWN_BIT` set on the
        compact attributes that the sequences of one block at most hold
        (their sums go straight into the gradient: 0 plus that block's, the
        same doubles); ``shared``: the compact entries of the others (sorted,
        intp), the ones added between rounds.
        """
        if n_blocks not in self._codes:
            code = self.state_weights.code
            n_touching = blocks_touching(self.csr, self._offsets, n_blocks,
                                         code.shape[0]).sum(axis=0)
            compact = code >= 0
            own = compact & (n_touching <= 1)
            round_code = code.copy()
            round_code[own] |= np.int64(1) << self.OWN_BIT
            others = np.flatnonzero(compact & (n_touching > 1))
            count = (code[others] >> 32) & 3
            shared = (np.repeat((code[others] & 0xFFFFFFFF) - np.cumsum(count) + count, count)
                      + np.arange(int(count.sum()))).astype(np.intp)
            self._codes = {n_blocks: (round_code, shared)}  # one block count at a time
        return self._codes[n_blocks]

    def _new(self, n_threads):
        w = self.state_weights
        return (np.zeros((n_threads, w.n_state)), np.zeros((n_threads,) + w.W_hot.shape),
                np.empty(w.W_hot.shape))

    def take(self, n_threads):
        """``(grad_buf, hot_buf, hot_sum)``: the buffers (zeroed) and the dense-row sum (zeroed)."""
        if not self._lock.acquire(blocking=False):
            bufs = self._new(n_threads)
        else:
            if self._bufs is None or self._bufs[0].shape[0] != n_threads:
                self._bufs = self._new(n_threads)
            bufs = self._bufs
        bufs[2].fill(0.0)
        return bufs

    def release(self, bufs):
        """Give the kept buffers back (if ``bufs`` are they); the kernel left them zeroed."""
        if bufs is self._bufs and self._lock.locked():
            self._lock.release()


class KeptPairSums:
    """The fused CLL kernel's per-matrix pair sums (label bigrams), kept between evaluations.

    ``Accumulators(n_threads, n_labels, n_matrices)``: new ones at every
    evaluation cost their size in page faults (4 blocks of hundreds of
    matrices with POS-keyed bigram lines); kept ones are zeroed in place,
    which is faster. One evaluation holds them at a time; :meth:`take` gives new
    ones to another.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._acc = None

    def __reduce__(self):  # a copy starts with none kept (a lock does not pickle)
        return KeptPairSums, ()

    def take(self, n_threads, n_labels, n_matrices):
        """Zeroed accumulators: the kept ones if free, else new ones."""
        if not self._lock.acquire(blocking=False):
            return Accumulators(n_threads, n_labels, n_matrices)
        acc = self._acc
        n_acc = accumulator_blocks(n_threads, Accumulators.n_values(n_labels, n_matrices))
        if acc is None or acc.pair.shape[:3] != (n_acc, n_matrices, n_labels):
            acc = self._acc = Accumulators(n_threads, n_labels, n_matrices)
        else:
            acc.pair.fill(0.0)
            acc.boundary.fill(0.0)
            acc.direct = np.zeros(acc.direct.shape)  # no pages touched unless written
        return acc

    def release(self, acc):
        """Give the kept accumulators back (if ``acc`` are they)."""
        if acc is self._acc and self._lock.locked():
            self._lock.release()
