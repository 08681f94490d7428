"""The training objective: potentials from features, loss, chain rule, prior.

This is the one place where features meet the CRF (the model is
scikit-learn's ``LinearModelLoss``): :class:`CRFObjective` binds the training
data once (the feature matrix in the kernels' CSR form, labels, offsets,
weights, the :class:`~sklearn_crfloss._params.ParameterLayout`) and
evaluates, for any loss and prior it is handed,

``f(theta) = loss(U, T, start, end) + prior(theta, C)``, ``U = X @ W``,

with the chain rule ``dW = X.T @ dU`` applied here, never inside a loss. The
two products run in the compiled kernels of ``sklearn_crfloss._potentials``
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
n_labels) array is built. Every other loss gets the unary potentials and
returns their gradient.

The objective holds no loss or prior: training stages (``init='cll'``, a
loss's annealing ``stages``) evaluate the same bound data with another loss.
"""

import numpy as np
import scipy.sparse as sp

from ._forward_backward import cll_features_batch, row_width, scratch_width
from ._potentials import pair_counts, pair_gradient, pair_potentials
from .inference import _exp_potentials, _SumProductAccumulators
from .losses._base import gold_counts
from .losses._likelihood import ConditionalLogLikelihood
from ._vectorize import column_counts

__all__ = ["CRFObjective"]


def _kernel_csr(M):
    """(indptr as intp, indices as int32, data, binary) for the feature kernels.

    ``binary``: every stored value is 1, and ``data`` is a one-element
    placeholder (the kernels do not read it): no float64 copy of X's values.
    """
    if M.shape[1] >= 2**31:
        raise ValueError(f"at most 2**31 - 1 feature columns are supported, got {M.shape[1]}")
    binary = bool(np.all(M.data == 1.0))
    data = np.ones(1) if binary else np.ascontiguousarray(M.data, dtype=np.float64)
    return (np.ascontiguousarray(M.indptr, dtype=np.intp),
            np.ascontiguousarray(M.indices, dtype=np.int32), data, binary)


class _StateWeights:
    """How the kernels store the free state weights: hybrid dense rows and compact entries.

    An attribute with more than ``COLD_MAX = 3`` free labels gets a dense
    row of ``Lp = row_width(n_labels)`` doubles in ``W_hot`` (zeros where a
    pair is not free), rows ordered by decreasing attribute frequency so
    that the rows most tokens use share the cache; its potentials and
    gradient are whole-row vector operations. Every other attribute keeps
    its weights where they sit in ``theta`` (CRFsuite's per-attribute
    feature lists), its labels packed in its ``code`` (see
    ``_chain.pxd: gather_token``). On CoNLL-2000 14,364 of 338,500
    attributes are dense (2.8 MB) and cover 67 % of the stored features.

    Parameters
    ----------
    state_index : ndarray of intp
        The layout's sorted flat indices ``attribute * n_labels + label``.
    n_features, n_labels : int
    frequency : ndarray of int of shape (n_features,)
        Stored features per attribute (the order of the dense rows).
    """

    COLD_MAX = 3

    def __init__(self, state_index, n_features, n_labels, frequency):
        L = n_labels
        attribute = state_index // L
        label = state_index % L
        first = np.searchsorted(state_index, np.arange(n_features) * L)
        count = np.bincount(attribute, minlength=n_features)
        # Labels are packed in 8 bits: with more than 256 labels every
        # attribute with a free pair is dense.
        hot = count > (self.COLD_MAX if L <= 256 else 0)
        hot_attributes = np.flatnonzero(hot)
        hot_attributes = hot_attributes[np.argsort(-frequency[hot_attributes], kind="stable")]
        n_hot = hot_attributes.shape[0]
        row = np.zeros(n_features, dtype=np.int64)
        row[hot_attributes] = np.arange(n_hot)
        code = first.astype(np.int64) | (np.minimum(count, self.COLD_MAX).astype(np.int64) << 32)
        for q in range(self.COLD_MAX):
            has = ~hot & (count > q)
            code[has] |= label[first[has] + q].astype(np.int64) << (34 + 8 * q)
        code[hot_attributes] = -(np.arange(n_hot, dtype=np.int64) + 1)
        self.code = code
        self.n_state = state_index.shape[0]
        self.Lp = row_width(L)
        self.hot_index = np.flatnonzero(hot[attribute])
        self.hot_position = row[attribute[self.hot_index]] * self.Lp + label[self.hot_index]
        self.n_hot = n_hot
        self.W_hot = np.zeros((max(n_hot, 1), self.Lp))

    def weights(self, state):
        """``(code, w, W_hot)`` for the kernels, W_hot filled from ``state`` (theta's state block)."""
        self.W_hot.ravel()[self.hot_position] = state[self.hot_index]
        return self.code, state, self.W_hot

    def accumulators(self, n_threads):
        """Zeroed per-thread gradient accumulators: compact (n_threads, n_state), dense rows."""
        return (np.zeros((n_threads, self.n_state)),
                np.zeros((n_threads,) + self.W_hot.shape))

    def gradient(self, acc, hot_acc, out):
        """Sum the threads' accumulators into ``out`` (the state block of the gradient)."""
        acc.sum(axis=0, out=out)
        out[self.hot_index] = hot_acc.sum(axis=0).ravel()[self.hot_position]
        return out


class CRFObjective:
    """Training data bound for repeated evaluations of ``loss + prior``.

    Parameters
    ----------
    X : scipy.sparse matrix of shape (n_tokens, n_features)
        Features of all tokens of the training batch.
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

    Attributes
    ----------
    n_params : int
        ``layout.n_params``.
    """

    def __init__(self, X, y, offsets, layout, *, sample_weight=None, token_weight=None,
                 n_threads=1):
        X = sp.csr_matrix(X, dtype=np.float64)
        if X.shape[1] != layout.n_features:
            raise ValueError(f"X has {X.shape[1]} columns, the layout {layout.n_features}")
        self.X = X
        self.n_tokens, self.n_features = X.shape
        L = layout.n_labels
        self.layout = layout
        self._csr = _kernel_csr(X)
        self._weights = _StateWeights(layout.state_index, self.n_features, L, column_counts(X))
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

    def _state(self, theta):
        """The free state weights of ``theta`` as the kernels read them (a view)."""
        return np.ascontiguousarray(theta[:self.layout.n_state], dtype=np.float64)

    def potentials(self, theta):
        """``(U, transition, start, end)`` at ``theta``; U of shape (n_tokens, n_labels).

        U is a buffer that the next call overwrites.
        """
        if self._unary is None:
            self._unary = np.empty((self.n_tokens, self.n_labels))
        pair_potentials(*self._csr, *self._weights.weights(self._state(theta)), self._unary,
                        self.n_threads)
        return (self._unary, *self.layout.unpack_tail(theta))

    def observed_counts(self):
        """The weighted gold counts of every free parameter, shape (n_params,).

        ``theta @ observed_counts()`` is ``sum_i w_i score(y_i)``; computed once.
        """
        if self._observed is None:
            token_weight, trans, start, end = gold_counts(
                self.y, self.offsets, self.n_labels, self.sample_weight)
            if token_weight is None:
                token_weight = np.ones(self.n_tokens)
            L = self.n_labels
            state_index = self.layout.state_index
            state = np.zeros(self.layout.n_state)
            pair_counts(*self._csr,
                        np.searchsorted(state_index, np.arange(self.n_features + 1) * L),
                        np.ascontiguousarray(state_index % L, dtype=np.int32),
                        np.ascontiguousarray(self.y, dtype=np.intp),
                        np.ascontiguousarray(token_weight, dtype=np.float64), state)
            self._observed = np.concatenate([state, self.layout.pack_tail(trans, start, end)])
        return self._observed

    def _cll_value_and_grad(self, theta):
        """The conditional log-likelihood and its gradient by the fused kernel.

        ``sum_i w_i log Z_i - theta . observed`` and ``expected - observed``.
        """
        layout = self.layout
        L = self.n_labels
        transition, start, end = layout.unpack_tail(theta)
        transition = np.ascontiguousarray(transition, dtype=np.float64)
        start = np.ascontiguousarray(start, dtype=np.float64)
        end = np.ascontiguousarray(end, dtype=np.float64)
        exp_trans, _, exp_start, exp_end, shifts = _exp_potentials(transition, start, end)
        n_seq = self.offsets.shape[0] - 1
        weights = (np.ones(n_seq) if self.sample_weight is None
                   else np.ascontiguousarray(self.sample_weight, dtype=np.float64))
        log_z = np.empty(n_seq)
        grad_acc, hot_acc = self._weights.accumulators(self.n_threads)
        acc = _SumProductAccumulators(self.n_threads, L)
        max_length = int(np.diff(self.offsets).max())
        scratch = np.empty((self.n_threads, scratch_width(L, max_length)))
        n_fallback = cll_features_batch(
            *self._csr, *self._weights.weights(self._state(theta)), transition, start, end,
            exp_trans, exp_start, exp_end, self.offsets, weights, log_z, grad_acc, hot_acc,
            acc.pair, acc.direct, acc.boundary, scratch, max_length, shifts[1], shifts[2], shifts[0],
            self.n_threads,
        )
        observed = self.observed_counts()
        value = float(np.dot(weights, log_z)) - float(np.dot(theta, observed))
        grad = np.empty(self.n_params)
        self._weights.gradient(grad_acc, hot_acc, grad[:layout.n_state])
        grad[layout.n_state:] = layout.pack_tail(*acc.counts(exp_trans, n_fallback))
        grad -= observed
        return value, grad

    def loss_value_and_grad(self, theta, loss):
        """Value and gradient of ``loss`` alone (no prior) at ``theta``.

        Parameters
        ----------
        theta : ndarray of float64 of shape (n_params,)
        loss : object with ``value_and_grad`` (the loss contract of
            :class:`~sklearn_crfloss.losses.BaseLoss`)

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)
        """
        if type(loss) is ConditionalLogLikelihood:
            return self._cll_value_and_grad(theta)
        unary, T, start, end = self.potentials(theta)
        extra = {}
        if self.token_weight is not None and getattr(loss, "supports_token_weight", False):
            extra["token_weight"] = self.token_weight
        value, d_unary, d_T, d_start, d_end = loss.value_and_grad(
            unary, T, start, end, self.y, self.offsets,
            sample_weight=self.sample_weight, n_threads=self.n_threads, **extra,
        )
        grad = np.empty(self.n_params)
        n_state = self.layout.n_state
        grad_acc, hot_acc = self._weights.accumulators(self.n_threads)
        pair_gradient(*self._csr, self._weights.code,
                      np.ascontiguousarray(d_unary, dtype=np.float64), grad_acc, hot_acc,
                      self.n_threads)
        self._weights.gradient(grad_acc, hot_acc, grad[:n_state])
        grad[n_state:] = self.layout.pack_tail(d_T, d_start, d_end)
        return value, grad

    def value_and_grad(self, theta, loss, prior, C):
        """Value and gradient of ``loss(theta) + prior(theta, C)``.

        Parameters
        ----------
        theta : ndarray of float64 of shape (n_params,)
        loss : loss object
        prior : object with ``value_and_grad(theta, C)``
        C : float

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)
        """
        value, grad = self.loss_value_and_grad(theta, loss)
        p_value, p_grad = prior.value_and_grad(theta, C)
        grad += p_grad
        return value + p_value, grad
