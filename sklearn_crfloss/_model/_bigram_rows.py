"""Observation-dependent label bigrams in the online solvers and SGD: the rows of a batch.

The online solvers (perceptron, MIRA) and SGD step on one sequence (or a
small minibatch) at a time, so they do not use the distinct matrices of
:class:`~sklearn_crfloss._model._bigram_layout.BigramGroups`: they split the
feature matrix once into its state columns and its bigram columns
(:func:`split_bigram_columns`), and give every token of the sequences they
step on its own matrix ``T + sum_b x[t, b] B[b]`` (:func:`local_transitions`);
the transition gradient of such a token-wise
:class:`~sklearn_crfloss.inference.PositionTransitions` goes back to the
shared matrix (its sum over tokens) and to the blocks active in the
sequences (:func:`local_chain`).
"""

import numpy as np
import scipy.sparse as sp

from ..inference import PositionTransitions

__all__ = ["local_chain", "local_columns", "local_transitions", "pack_blocks",
           "split_bigram_columns"]


def split_bigram_columns(X, offsets, columns):
    """The state part and the bigram part of a feature matrix.

    Parameters
    ----------
    X : scipy.sparse matrix of shape (n_tokens, n_features)
    offsets : ndarray of intp of shape (n_sequences + 1,)
    columns : ndarray of intp of shape (n_bigram,)
        The bigram columns of X (sorted).

    Returns
    -------
    X_state : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
        X without the entries of the bigram columns (same dtype).
    X_bigram : scipy.sparse.csr_matrix of float64 of shape (n_tokens, n_bigram)
        The entries of the bigram columns, column ``b`` for ``columns[b]``,
        without those of the first token of each sequence (no incoming edge).
    """
    X = sp.csr_matrix(X)
    n_tokens = X.shape[0]
    block_of = np.full(X.shape[1], -1, dtype=np.intp)
    block_of[columns] = np.arange(len(columns))
    row = np.repeat(np.arange(n_tokens), np.diff(X.indptr))
    first = np.zeros(n_tokens, dtype=bool)
    first[np.asarray(offsets[:-1])[np.diff(offsets) > 0]] = True
    is_bigram = block_of[X.indices] >= 0

    def rows_of(keep, data, indices, width):
        indptr = np.concatenate([[0], np.cumsum(np.bincount(row[keep], minlength=n_tokens))])
        return sp.csr_matrix((data[keep], indices[keep], indptr), shape=(n_tokens, width))

    X_state = rows_of(~is_bigram, X.data, X.indices, X.shape[1])
    X_bigram = rows_of(is_bigram & ~first[row], X.data.astype(np.float64),
                       block_of[X.indices], len(columns))
    return X_state, X_bigram


def local_columns(rows):
    """``rows`` on its own columns: ``(rows_local, cols)`` with ``rows = rows_local`` on ``cols``.

    Parameters
    ----------
    rows : scipy.sparse.csr_matrix of shape (n, n_columns)

    Returns
    -------
    rows_local : scipy.sparse.csr_matrix of float64 of shape (n, len(cols))
    cols : ndarray of intp
        The columns with stored entries, sorted.
    """
    cols, local = np.unique(rows.indices, return_inverse=True)
    return (sp.csr_matrix((np.asarray(rows.data, dtype=np.float64), local.ravel(),
                           rows.indptr - rows.indptr[0]), shape=(rows.shape[0], cols.shape[0])),
            cols.astype(np.intp))


def local_transitions(transition, blocks, rows_local, cols):
    """One transition matrix per token: ``transition + sum_b x[t, b] blocks[cols[b]]``.

    Parameters
    ----------
    transition : ndarray of shape (n_labels, n_labels)
    blocks : ndarray of shape (n_bigram, n_labels, n_labels)
    rows_local, cols
        The tokens' bigram rows on their own columns (:func:`local_columns`).

    Returns
    -------
    PositionTransitions
        With a table of shape (n, n_labels, n_labels) and index ``arange(n)``.
    """
    L = transition.shape[0]
    n = rows_local.shape[0]
    table = np.asarray(rows_local @ blocks[cols].reshape(-1, L * L)).reshape(n, L, L)
    table += transition
    return PositionTransitions(table, np.arange(n, dtype=np.intp))


def local_chain(d_table, rows_local):
    """The gradient of the shared matrix and of the active blocks from a token-wise table's.

    Returns
    -------
    d_transition : ndarray of shape (n_labels, n_labels)
    d_blocks : ndarray of shape (len(cols), n_labels, n_labels)
        For the blocks ``cols`` of :func:`local_columns`.
    """
    n, L, _ = d_table.shape
    flat = d_table.reshape(n, L * L)
    return (flat.sum(axis=0).reshape(L, L),
            np.asarray(rows_local.T @ flat).reshape(rows_local.shape[1], L, L))


def pack_blocks(layout, W, transition, start, end, blocks=None):
    """``layout.pack`` with the bigram blocks (if any) in their place after the base vector."""
    theta = layout.pack(W, transition, start, end)
    if blocks is not None and layout.n_bigram:
        theta[layout.n_base:] = np.ravel(blocks)
    return theta
