"""Position-dependent transition potentials (observation-dependent label bigrams).

A CRF++ template line such as ``B01:%x[0,1]`` gives every token a *bigram
attribute* (here the POS tag of the token) whose weights form an
``(n_labels, n_labels)`` block: the transition potential of the edge
``(t - 1, t)`` is the shared dense matrix plus the blocks of the bigram
attributes active at ``t``. This module holds the potentials' form and the
kernels' wrappers; :mod:`sklearn_crfloss.inference` dispatches to them.

Transitions that vary with the position are stored compactly as a
:class:`PositionTransitions`: a table of ``K`` distinct matrices and, per
token, the index of the matrix of the edge into it (many positions share
one: on CoNLL-2000 a template keyed on POS tags has about a thousand
distinct matrices for 211,727 tokens).
"""

from typing import NamedTuple

import numpy as np

from ._dispatch import position_forward_backward_batch, position_viterbi_batch

__all__ = ["PositionTransitions", "position_forward_backward", "position_gold_counts",
           "position_scores", "position_viterbi"]

class PositionTransitions(NamedTuple):
    """Transition potentials that depend on the position.

    The edge from token ``t - 1`` to token ``t`` has the potentials
    ``table[index[t]]``; ``index`` at the first token of a sequence is not
    read. ``PositionTransitions(T, np.arange(n_tokens))`` with ``T`` of
    shape (n_tokens, n_labels, n_labels) is the plain T x L x L form.

    Attributes
    ----------
    table : ndarray of float64 of shape (n_matrices, n_labels, n_labels)
        The distinct transition matrices; ``table[k][i, j]`` scores label
        ``i`` followed by label ``j``.
    index : ndarray of intp of shape (n_tokens,)
        Row of ``table`` of the edge into each token, in ``[0, n_matrices)``.
    """

    table: np.ndarray
    index: np.ndarray

    @classmethod
    def from_dense(cls, transitions):
        """The (n_tokens, n_labels, n_labels) form: one matrix per token."""
        transitions = np.asarray(transitions, dtype=np.float64)
        return cls(transitions, np.arange(transitions.shape[0], dtype=np.intp))

    def dense(self):
        """The (n_tokens, n_labels, n_labels) array ``table[index]``."""
        return self.table[self.index]

    def checked(self, n_tokens, n_labels):
        """C-contiguous float64 table and intp index; ValueError on a shape or index mismatch."""
        table = np.ascontiguousarray(self.table, dtype=np.float64)
        index = np.ascontiguousarray(self.index, dtype=np.intp)
        if table.ndim != 3 or table.shape[1:] != (n_labels, n_labels) or table.shape[0] < 1:
            raise ValueError(f"PositionTransitions.table must have shape (n_matrices, "
                             f"{n_labels}, {n_labels}), got {table.shape}")
        if index.shape != (n_tokens,):
            raise ValueError(f"PositionTransitions.index must have shape ({n_tokens},) (one "
                             f"entry per token), got {index.shape}")
        if n_tokens and (index.min() < 0 or index.max() >= table.shape[0]):
            raise ValueError(f"PositionTransitions.index must lie in [0, {table.shape[0]})")
        return PositionTransitions(table, index)


def position_forward_backward(unary, transition, start, end, offsets, sample_weight=None):
    """Forward-backward with :class:`PositionTransitions` (checked inputs).

    Returns
    -------
    log_z : ndarray of shape (n_sequences,)
    marginals : ndarray of shape (n_tokens, n_labels)
    table_counts : ndarray of shape (n_matrices, n_labels, n_labels)
        Weighted expected counts of each table entry (summed over the
        positions that use it).
    start_counts, end_counts : ndarray of shape (n_labels,)
    n_fallback : int
        Sequences computed in log space (the scaled pass would underflow).
    """
    n_seq = offsets.shape[0] - 1
    weights = (np.ones(n_seq) if sample_weight is None
               else np.ascontiguousarray(sample_weight, dtype=np.float64))
    if weights.shape != (n_seq,):
        raise ValueError(f"sample_weight must have shape {(n_seq,)} (one weight per "
                         f"sequence), got {weights.shape}")
    marginals = np.zeros_like(unary)
    log_z = np.zeros(n_seq)
    counts = np.zeros_like(transition.table)
    boundary = np.zeros((2, unary.shape[1]))
    n_fallback = position_forward_backward_batch(unary, transition.table, transition.index,
                                                 start, end, offsets, weights, marginals, log_z,
                                                 counts, boundary)
    return log_z, marginals, counts, boundary[0], boundary[1], int(n_fallback)


def position_viterbi(unary, transition, start, end, offsets):
    """Viterbi paths and scores with :class:`PositionTransitions` (checked inputs)."""
    path = np.zeros(unary.shape[0], dtype=np.intp)
    score = np.zeros(offsets.shape[0] - 1)
    position_viterbi_batch(unary, transition.table, transition.index, start, end, offsets,
                           path, score)
    return path, score


def _inner(offsets, n_tokens):
    """Positions that have an incoming edge (all but the first of each sequence)."""
    first = np.zeros(n_tokens, dtype=bool)
    first[offsets[:-1][np.diff(offsets) > 0]] = True
    return np.flatnonzero(~first)


def position_gold_counts(transition, y, offsets, sample_weight=None):
    """Weighted counts of the gold label pairs per table entry.

    Parameters
    ----------
    transition : PositionTransitions
    y : ndarray of intp of shape (n_tokens,)
    offsets : ndarray of intp of shape (n_sequences + 1,)
    sample_weight : ndarray of shape (n_sequences,) or None, default=None

    Returns
    -------
    ndarray of float64 of shape (n_matrices, n_labels, n_labels)
        ``counts[k, a, b]``: the weighted number of edges with matrix ``k``
        whose gold labels are ``a`` then ``b``.
    """
    K, L, _ = transition.table.shape
    inner = _inner(offsets, y.shape[0])
    weights = None
    if sample_weight is not None:
        weights = np.repeat(np.asarray(sample_weight, dtype=np.float64),
                            np.diff(offsets))[inner]
    flat = (np.asarray(transition.index)[inner] * L + y[inner - 1]) * L + y[inner]
    return np.bincount(flat, weights=weights, minlength=K * L * L).astype(
        np.float64).reshape(K, L, L)


def position_scores(unary, transition, start, end, y, offsets):
    """``score(y)`` of each sequence with :class:`PositionTransitions` (checked inputs)."""
    n_seq = offsets.shape[0] - 1
    lengths = np.diff(offsets)
    seq = np.repeat(np.arange(n_seq), lengths)
    per_token = unary[np.arange(y.shape[0]), y]
    inner = _inner(offsets, y.shape[0])
    per_token[inner] += transition.table[transition.index[inner], y[inner - 1], y[inner]]
    # float64 also when every sequence is empty (bincount then returns int64)
    score = np.bincount(seq, weights=per_token, minlength=n_seq).astype(np.float64)
    nonempty = lengths > 0
    score[nonempty] += start[y[offsets[:-1][nonempty]]] + end[y[offsets[1:][nonempty] - 1]]
    return score
