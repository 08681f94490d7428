"""The bigram blocks of an SGD run (observation-dependent label bigrams).

:class:`~sklearn_crfloss.solvers.SGD` keeps the blocks ``B`` of the bigram
attributes (shape (n_bigram, L, L)) in its scaled representation, beside
the state weights: ``theta_B = a V_B``, the same scale ``a``, folds and
averaging corrections (see ``_ext/_sgd.pyx``). The compiled loop reads the
bigram rows of X as their own CSR; the generic path (minibatches through
the loss's ``value_and_grad``) gives every token of the minibatch its own
matrix and applies the chain rule to the active blocks.
"""

import numpy as np

from .._model import local_chain, local_columns, local_transitions

__all__ = ["ScaledBlocks"]


class ScaledBlocks:
    """The blocks ``V_B`` of a run, their averaging corrections and the bigram rows.

    Parameters
    ----------
    X_bigram : scipy.sparse.csr_matrix of float64 of shape (n_tokens, n_bigram)
        The bigram rows (:func:`~sklearn_crfloss._model._bigram_rows.split_bigram_columns`).
    B : ndarray of float64 of shape (n_bigram * n_labels ** 2,)
        ``V_B``, updated in place (an SGD run's copy of the starting blocks,
        or :class:`~sklearn_crfloss.solvers._sgd_state.SGDState`'s array).
    BB : ndarray of float64 of shape (n_bigram * n_labels ** 2,) or (0,)
        The averaging corrections (empty: no averaging), updated in place.
    n_labels : int
    max_len : int
        The longest sequence (scratch of the compiled loop).
    """

    def __init__(self, X_bigram, B, BB, n_labels, max_len):
        self.L = L = n_labels
        self.rows = X_bigram
        data = X_bigram.data
        binary = data.shape[0] == 0 or (data.min() == 1 and data.max() == 1)
        self.B, self.BB = B, BB
        self.kernel = dict(bptr=np.ascontiguousarray(X_bigram.indptr, dtype=np.intp),
                           bind=np.ascontiguousarray(X_bigram.indices, dtype=np.int32),
                           bdata=np.zeros(0) if binary else np.ascontiguousarray(data),
                           B=self.B, BB=self.BB, E=np.empty(max(max_len, 1) * L * L))

    def transitions(self, tail, a, rows):
        """The minibatch's token-wise :class:`PositionTransitions` at scale ``a``.

        Parameters
        ----------
        tail : ndarray of shape (n_labels ** 2 + 2 n_labels,)
            ``V``'s tail (the shared matrix first).
        a : float
        rows : ndarray of intp
            The minibatch's rows of X.

        Returns
        -------
        transitions : PositionTransitions
        rows_local, cols
            The rows' bigram entries on their own columns, for :meth:`chain`.
        """
        L = self.L
        rows_local, cols = local_columns(self.rows[rows])
        T = local_transitions(tail[:L * L].reshape(L, L), self.B.reshape(-1, L, L),
                              rows_local, cols)
        np.multiply(T.table, a, out=T.table)
        return T, rows_local, cols

    def chain(self, d_table, rows_local, cols):
        """``(d_transition, kwargs of sgd_step)``: the gradient of the shared matrix and blocks."""
        d_T, d_blocks = local_chain(d_table, rows_local)
        return d_T, dict(B=self.B, BB=self.BB, block_index=cols,
                         d_blocks=np.ascontiguousarray(d_blocks.reshape(cols.shape[0], -1)))

    def value(self, state, averaged):
        """The blocks of ``theta``: averaged (``(S V - B) / n_avg``) or ``a V``."""
        a, _, S, n_avg, _ = state
        B = (S * self.B - self.BB) / n_avg if averaged else a * self.B
        return B.reshape(-1, self.L, self.L)
