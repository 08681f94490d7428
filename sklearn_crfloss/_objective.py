"""The training objective: potentials from features, loss, chain rule, prior.

This is the one place where features meet the CRF (the model is
scikit-learn's ``LinearModelLoss``): :class:`CRFObjective` binds the training
data once (the feature matrix in the kernels' CSR and CSC forms, labels,
offsets, weights, the :class:`~sklearn_crfloss._params.ParameterLayout`) and
evaluates, for any loss and prior it is handed,

``f(theta) = loss(U, T, start, end) + prior(theta, C)``, ``U = X @ W``,

with the chain rule ``dW = X.T @ dU`` applied here, never inside a loss. The
two products run in the compiled kernels of ``sklearn_crfloss._potentials``
(rows of X in parallel for U, columns for dW) on a dense ``W`` whose entries
outside the layout's state weights stay 0: contiguous rows of ``n_labels``
weights vectorise better than CRFsuite-style per-pair lists.

The objective holds no loss or prior: training stages (``init='cll'``, a
loss's annealing ``stages``) evaluate the same bound data with another loss.
"""

import numpy as np
import scipy.sparse as sp

from ._potentials import dense_gradient, dense_potentials

__all__ = ["CRFObjective"]


def _kernel_csr(M):
    """(indptr as intp, indices as int32, data, binary) for the feature kernels."""
    if M.shape[1] >= 2**31:
        raise ValueError(f"at most 2**31 - 1 feature columns are supported, got {M.shape[1]}")
    data = np.ascontiguousarray(M.data, dtype=np.float64)
    return (np.ascontiguousarray(M.indptr, dtype=np.intp),
            np.ascontiguousarray(M.indices, dtype=np.int32),
            data, bool(np.all(data == 1.0)))


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
        if layout.all_states:
            # W is theta's own memory: no copy, no reordering.
            self._W = None
            self._row_index = layout.state_index
            Xk = X
        else:
            # Internally the rows of W (and the columns of X) are sorted by
            # decreasing attribute frequency, so the rows most tokens use sit
            # together and stay in cache; theta keeps the layout's order.
            order = np.argsort(-np.bincount(X.indices, minlength=self.n_features), kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(order.shape[0])
            Xk = X[:, order]
            self._row_index = rank[layout.state_index // L] * L + layout.state_index % L
            self._W = np.zeros((self.n_features, L))
        self._csr = _kernel_csr(Xk)
        self._csc = _kernel_csr(Xk.T.tocsr())
        # Buffers reused by every evaluation: dW and the unary potentials.
        self._dW = np.empty((self.n_features, L))
        self._unary = np.empty((self.n_tokens, L))
        self.y = y
        self.offsets = offsets
        self.n_labels = L
        self.sample_weight = sample_weight
        self.token_weight = token_weight
        self.n_threads = n_threads
        self.n_params = layout.n_params

    def potentials(self, theta):
        """``(U, transition, start, end)`` at ``theta``; U of shape (n_tokens, n_labels).

        U is a buffer that the next call overwrites.
        """
        layout = self.layout
        state = theta[:layout.n_state]
        if self._W is None:
            W = state.reshape(self.n_features, self.n_labels)
        else:
            W = self._W
            W.ravel()[self._row_index] = state
        dense_potentials(*self._csr, W, self._unary, self.n_threads)
        return (self._unary, *layout.unpack_tail(theta))

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
        dense_gradient(*self._csc, np.ascontiguousarray(d_unary, dtype=np.float64),
                       self._dW, self.n_threads)
        grad[:n_state] = self._dW.ravel()[self._row_index]
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
