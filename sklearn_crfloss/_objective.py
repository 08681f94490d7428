"""The training objective: potentials from features, loss, chain rule, prior.

This is the one place where features meet the CRF: the unary potentials
``U = X @ W`` of the whole corpus, the loss on the potentials, the chain
rule ``dW = X.T @ dU``, and the prior on the flat parameter vector. The two
products run in the compiled kernels of ``sklearn_crfloss._features`` (rows
of X in parallel for U, columns for dW) on a dense ``W`` whose entries
outside the trained (attribute, label) pairs stay 0: contiguous rows of
``n_labels`` weights vectorise better than CRFsuite-style per-pair lists.
"""

import numpy as np
import scipy.sparse as sp

from ._potentials import dense_gradient, dense_potentials

__all__ = ["CRFObjective", "FreeParameterObjective"]


def _kernel_csr(M):
    """(indptr as intp, indices as int32, data, binary) for the feature kernels."""
    if M.shape[1] >= 2**31:
        raise ValueError(f"at most 2**31 - 1 feature columns are supported, got {M.shape[1]}")
    data = np.ascontiguousarray(M.data, dtype=np.float64)
    return (np.ascontiguousarray(M.indptr, dtype=np.intp),
            np.ascontiguousarray(M.indices, dtype=np.int32),
            data, bool(np.all(data == 1.0)))


class CRFObjective:
    """Objective ``f(theta) = loss(potentials(theta)) + prior(theta, C)``.

    The parameter vector packs, in order: the state weights (the entries
    ``state_index`` of the C-ordered matrix ``W`` of shape
    (n_features, n_labels), sorted), the transitions (``n_labels**2``, C
    order), the start and the end potentials (``n_labels`` each).

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
        Features of all tokens of the training batch.
    y : ndarray of intp of shape (n_tokens,)
        Gold label index of every token.
    offsets : ndarray of intp of shape (n_sequences + 1,)
        Sequence boundaries (no empty sequence).
    n_labels : int
    loss : object with ``value_and_grad``
    prior : object with ``value_and_grad``
    C : float
    sample_weight : ndarray of shape (n_sequences,) or None
    state_index : ndarray of intp or None
        Sorted flat indices into ``W`` of the state weights the model owns;
        the others are fixed at 0. None: all of them.
    n_threads : int
    token_weight : ndarray of shape (n_tokens,) or None
        Per-token weights, passed to the loss as ``token_weight=`` when not
        None (losses with ``supports_token_weight = True``).
    """

    def __init__(self, X, y, offsets, n_labels, loss, prior, C, sample_weight=None,
                 state_index=None, n_threads=1, token_weight=None):
        X = sp.csr_matrix(X, dtype=np.float64)
        self.n_tokens, self.n_features = X.shape
        if state_index is None:
            state_index = np.arange(self.n_features * n_labels, dtype=np.intp)
        self.state_index = np.ascontiguousarray(state_index, dtype=np.intp)
        self._all_states = self.state_index.shape[0] == self.n_features * n_labels
        if self._all_states:
            # W is theta's own memory: no copy, no reordering.
            self._W = None
            self._row_index = self.state_index
        else:
            # Internally the rows of W (and the columns of X) are sorted by
            # decreasing attribute frequency, so the rows most tokens use sit
            # together and stay in cache; theta keeps the caller's order.
            order = np.argsort(-np.bincount(X.indices, minlength=self.n_features),
                               kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(order.shape[0])
            X = X[:, order]
            self._row_index = (rank[self.state_index // n_labels] * n_labels
                               + self.state_index % n_labels)
            self._W = np.zeros((self.n_features, n_labels))
        self._csr = _kernel_csr(X)
        self._csc = _kernel_csr(X.T.tocsr())
        # Buffers reused by every evaluation: dW and the unary potentials.
        self._dW = np.empty((self.n_features, n_labels))
        self._unary = np.empty((self.n_tokens, n_labels))
        self.y = y
        self.offsets = offsets
        self.n_labels = n_labels
        self.loss = loss
        self.prior = prior
        self.C = C
        self.sample_weight = sample_weight
        self.n_threads = n_threads
        self.token_weight = token_weight
        self.n_state = self.state_index.shape[0]
        self.n_params = self.n_state + n_labels * n_labels + 2 * n_labels

    def unpack(self, theta):
        """Split ``theta`` into ``(state, transition, start, end)`` views."""
        L = self.n_labels
        k = self.n_state
        return (theta[:k], theta[k:k + L * L].reshape(L, L),
                theta[k + L * L:k + L * L + L], theta[k + L * L + L:])

    def dense_weights(self, theta):
        """The state weights of ``theta`` as a dense ``W`` of shape (n_features, n_labels)."""
        W = np.zeros(self.n_features * self.n_labels)
        W[self.state_index] = theta[:self.n_state]
        return W.reshape(self.n_features, self.n_labels)

    def pack(self, W, transition, start, end):
        """A flat parameter vector from a dense ``W`` and the other potentials."""
        W = np.asarray(W, dtype=np.float64)
        return np.concatenate(
            [W.ravel()[self.state_index], np.ravel(transition), start, end]
        ).astype(np.float64)

    def potentials(self, theta):
        """``(U, transition, start, end)`` at ``theta``; U of shape (n_tokens, n_labels).

        U is a buffer that the next call overwrites.
        """
        state, T, start, end = self.unpack(theta)
        if self._all_states:
            W = state.reshape(self.n_features, self.n_labels)
        else:
            W = self._W
            W.ravel()[self._row_index] = state
        dense_potentials(*self._csr, W, self._unary, self.n_threads)
        return self._unary, T, start, end

    def loss_value_and_grad(self, theta):
        """Value and gradient of the loss alone (no prior) at ``theta``.

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)
        """
        unary, T, start, end = self.potentials(theta)
        extra = {} if self.token_weight is None else {"token_weight": self.token_weight}
        value, d_unary, d_T, d_start, d_end = self.loss.value_and_grad(
            unary, T, start, end, self.y, self.offsets,
            sample_weight=self.sample_weight, n_threads=self.n_threads, **extra,
        )
        grad = np.empty(self.n_params)
        dense_gradient(*self._csc, np.ascontiguousarray(d_unary, dtype=np.float64),
                       self._dW, self.n_threads)
        grad[:self.n_state] = self._dW.ravel()[self._row_index]
        grad[self.n_state:] = np.concatenate([np.ravel(d_T), d_start, d_end])
        return value, grad

    def __call__(self, theta):
        """Value and gradient of the objective at ``theta``.

        Returns
        -------
        value : float
        grad : ndarray of shape (n_params,)
        """
        value, grad = self.loss_value_and_grad(theta)
        p_value, p_grad = self.prior.value_and_grad(theta, self.C)
        grad += p_grad
        return value + p_value, grad


class FreeParameterObjective:
    """``g(z) = loss(to_theta(z)) + penalty(z, C)``: the objective in a prior's variables.

    For priors whose ``parametrisation(n_params)`` is not None (see
    :mod:`sklearn_crfloss.priors`), e.g. the Laplacian's split
    ``theta = z+ - z-`` with ``z >= 0``. Minimise it with ``bounds``.

    Parameters
    ----------
    objective : CRFObjective
    parametrisation : sklearn_crfloss.priors.Parametrisation
    """

    def __init__(self, objective, parametrisation):
        self.objective = objective
        self.parametrisation = parametrisation
        self.bounds = parametrisation.bounds

    def __call__(self, z):
        """Value and gradient in ``z``."""
        par = self.parametrisation
        value, grad = self.objective.loss_value_and_grad(par.to_theta(z))
        p_value, p_grad = par.penalty(z, self.objective.C)
        return value + p_value, par.chain(grad, z) + p_grad
