"""The flat parameter vector ``theta`` of a linear-chain CRF: which parameters exist and where.

A CRF over ``n_labels`` labels and ``n_features`` attribute columns has state
weights ``W`` (n_features, n_labels), transitions ``T`` (n_labels, n_labels),
start and end potentials (n_labels each). The optimisers see one flat vector
``theta`` that holds only the *free* parameters, in this order:

1. the state weights ``W.ravel()[state_index]`` (``state_index``: sorted
   flat indices ``attribute * n_labels + label``; CRFsuite's observed pairs
   by default, every pair with ``all_possible_states=True``);
2. the free transitions ``T.ravel()[tail_index[...]]``, then the free start
   and end potentials (all of them unless a label mask restricts them, as for
   the label experts of :class:`~sklearn_crfloss.LOPTagger`; none without
   boundary potentials, as in CRFsuite).

Parameters outside ``theta`` are fixed at 0. :class:`ParameterLayout` packs
and unpacks ``theta`` and remaps a previous fit onto new attributes and
labels (``warm_start``).
"""

import numpy as np
import scipy.sparse as sp

__all__ = ["ParameterLayout", "index_dtype", "observed_pairs"]


def index_dtype(n):
    """The integer dtype of indices up to ``n``: int32 when they fit, else intp.

    Parameters
    ----------
    n : int
        The bound of the indices (e.g. ``n_features * n_labels``); ``n``
        itself must fit too (a search bound).

    Returns
    -------
    numpy.dtype
        ``int32`` if ``n < 2**31``, else ``intp``.
    """
    return np.dtype(np.int32 if n < 2**31 else np.intp)


def observed_pairs(X, y, n_labels):
    """Flat indices ``attribute * n_labels + label`` of the pairs seen in training.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
    y : ndarray of intp of shape (n_tokens,)
        Gold label index of every token.
    n_labels : int

    Returns
    -------
    ndarray of int32 or intp
        Sorted, of dtype ``index_dtype(n_features * n_labels)``; a pair is
        observed if the attribute is stored (non-zero) at a token whose
        gold label is the label (CRFsuite's ``possible_states=0``).
    """
    X = sp.csr_matrix(X)
    seen = np.zeros(X.shape[1] * n_labels, dtype=bool)
    indptr = X.indptr
    # A few rows at a time: no (nnz,) temporary of the whole matrix.
    step = max(1, (1 << 16) * X.shape[0] // max(1, X.nnz))
    for start in range(0, X.shape[0], step):
        stop = min(start + step, X.shape[0])
        labels = np.repeat(y[start:stop], np.diff(indptr[start:stop + 1]))
        columns = X.indices[indptr[start]:indptr[stop]].astype(np.intp)
        seen[columns * n_labels + labels] = True
    return np.flatnonzero(seen).astype(index_dtype(seen.shape[0]))


class ParameterLayout:
    """Where each free parameter sits in ``theta``.

    Parameters
    ----------
    n_features : int
        Attribute columns (rows of ``W``).
    n_labels : int
    state_index : ndarray of int or None, default=None
        Sorted flat indices into ``W`` (n_features, n_labels) of the free
        state weights; None: all of them. Kept as ``index_dtype(n_features *
        n_labels)`` (int32 unless that product exceeds ``2**31``).
    labels : array-like of int or None, default=None
        If given, only the parameters that involve one of these label
        indices are free: state weights of these labels, transitions from or
        to them, and their start and end potentials (the label experts of
        Smith & Osborne 2005, section 4). None: no restriction.
    boundary : bool, default=True
        Whether the start and end potentials are free. False: they are fixed
        at 0 (a CRFsuite model has none).

    Attributes
    ----------
    state_index : ndarray of int32 or intp
        The free state weights' flat indices, sorted.
    n_state : int
        Free state weights (the first ``n_state`` entries of ``theta``).
    n_params : int
        Length of ``theta``.
    tail_index : ndarray of intp
        Indices into the concatenation ``[T.ravel(), start, end]`` (length
        ``n_labels**2 + 2 * n_labels``) of the free entries, in order.
    """

    #: Bigram attributes with weight blocks after the tail (none here; see
    #: ``_model._bigram_layout.BigramLayout``).
    n_bigram = 0
    #: Order of the label chain (2: ``_model._second_order.SecondOrderLayout``).
    order = 1

    def __init__(self, n_features, n_labels, state_index=None, labels=None, boundary=True):
        L = n_labels
        self.n_features = n_features
        self.n_labels = L
        dtype = index_dtype(n_features * L)
        if state_index is None:
            state_index = np.arange(n_features * L, dtype=dtype)
        state_index = np.ascontiguousarray(state_index, dtype=dtype)
        if labels is None:
            tail = np.arange(L * L + 2 * L, dtype=np.intp)
        else:
            mine = np.zeros(L, dtype=bool)
            mine[np.asarray(labels, dtype=np.intp)] = True
            state_index = state_index[mine[state_index % L]]
            tail = np.flatnonzero(np.concatenate([(mine[:, None] | mine[None, :]).ravel(),
                                                  mine, mine]))
        if not boundary:
            tail = tail[tail < L * L]
        self.state_index = state_index
        self.tail_index = tail.astype(np.intp)
        self.all_states = state_index.shape[0] == n_features * L
        self.full_tail = self.tail_index.shape[0] == L * L + 2 * L
        self.n_state = state_index.shape[0]
        self.n_params = self.n_state + self.tail_index.shape[0]

    def tail_masks(self):
        """1.0 where a transition, start or end potential is free, else 0.0.

        Returns
        -------
        transition : ndarray of float64 of shape (n_labels, n_labels)
        start, end : ndarray of float64 of shape (n_labels,)
        """
        L = self.n_labels
        mask = np.zeros(L * L + 2 * L)
        mask[self.tail_index] = 1.0
        return mask[:L * L].reshape(L, L), mask[L * L:L * L + L], mask[L * L + L:]

    def zeros(self):
        """A zero parameter vector, shape (n_params,)."""
        return np.zeros(self.n_params)

    def unpack_tail(self, theta):
        """``(transition, start, end)`` of ``theta``: views when all are free, else copies."""
        L = self.n_labels
        tail = theta[self.n_state:]
        if not self.full_tail:
            full = np.zeros(L * L + 2 * L)
            full[self.tail_index] = tail
            tail = full
        return tail[:L * L].reshape(L, L), tail[L * L:L * L + L], tail[L * L + L:]

    def pack_tail(self, transition, start, end):
        """The free entries of ``[transition.ravel(), start, end]``, shape (n_params - n_state,)."""
        tail = np.concatenate([np.ravel(transition), np.ravel(start), np.ravel(end)])
        return tail if self.full_tail else tail[self.tail_index]

    def dense_weights(self, theta):
        """The state weights of ``theta`` as a dense ``W`` of shape (n_features, n_labels)."""
        W = np.zeros(self.n_features * self.n_labels)
        W[self.state_index] = theta[:self.n_state]
        return W.reshape(self.n_features, self.n_labels)

    def unpack(self, theta):
        """``(W, transition, start, end)`` as arrays of their natural shapes."""
        return (self.dense_weights(theta), *self.unpack_tail(theta))

    def pack(self, W, transition, start, end):
        """The flat ``theta`` (float64) of dense potentials; entries outside the layout are dropped."""
        W = np.asarray(W, dtype=np.float64)
        return np.concatenate([W.ravel()[self.state_index],
                               self.pack_tail(transition, start, end)]).astype(np.float64)

    def restrict(self, full):
        """The entries of a vector over the full layout (all tail entries) that this layout keeps.

        Parameters
        ----------
        full : ndarray of shape (n_state + n_labels**2 + 2 * n_labels,)
            Indexed like ``theta`` of a layout with the same ``state_index``
            and every transition, start and end potential free.

        Returns
        -------
        ndarray of shape (n_params,)
        """
        return np.concatenate([full[:self.n_state], full[self.n_state:][self.tail_index]])

    def remap(self, attributes, classes, old_attributes, old_classes, coef, transition,
              start, end):
        """``theta`` holding a previous model's parameters, matched by attribute and label name.

        Parameters
        ----------
        attributes, classes : array-like
            Names of this layout's attribute columns and labels.
        old_attributes, old_classes : array-like
            Those of the previous model.
        coef : ndarray of shape (n_old_classes, n_old_features)
        transition : ndarray of shape (n_old_classes, n_old_classes)
        start, end : ndarray of shape (n_old_classes,)

        Returns
        -------
        ndarray of shape (n_params,)
            The previous values where attribute and label exist in both,
            0 for new ones.
        """
        old_cls = {c: i for i, c in enumerate(old_classes)}
        new_c = np.array([i for i, c in enumerate(classes) if c in old_cls], dtype=np.intp)
        old_c = np.array([old_cls[classes[i]] for i in new_c], dtype=np.intp)
        old_att = {a: i for i, a in enumerate(old_attributes)}
        new_a = np.array([i for i, a in enumerate(attributes) if a in old_att], dtype=np.intp)
        old_a = np.array([old_att[attributes[i]] for i in new_a], dtype=np.intp)
        L = self.n_labels
        W = np.zeros((self.n_features, L))
        T = np.zeros((L, L))
        s = np.zeros(L)
        e = np.zeros(L)
        W[np.ix_(new_a, new_c)] = np.asarray(coef).T[np.ix_(old_a, old_c)]
        T[np.ix_(new_c, new_c)] = np.asarray(transition)[np.ix_(old_c, old_c)]
        s[new_c] = np.asarray(start)[old_c]
        e[new_c] = np.asarray(end)[old_c]
        return self.pack(W, T, s, e)
