"""The potentials of :class:`~sklearn_crfloss.LOPTagger`'s experts, with label bigrams.

An expert trained on columns that hold bigram attributes (observation-
dependent label bigrams) has transitions that depend on the position,
``T_a + sum_b x[t, b] B_ab``. The pool's transitions are their weighted sum,
``sum_a w_a T_a + sum_b x[t, b] sum_a w_a B_ab``: a CRF with the blocks
``sum_a w_a B_ab`` (:func:`pool_blocks`). To weigh the experts the pool
needs every expert's transitions on one table: the distinct sets of active
bigram attributes of *all* columns (one
:class:`~sklearn_crfloss._model._bigram_layout.BigramGroups`) refine those of each
expert, so every expert's table is indexed like the others
(:func:`expert_parts`).

A label expert (``experts='label'``) has free transitions only from or to
its labels; its blocks live in the same label space: they keep the shape
(n_bigram, n_labels, n_labels) of every expert's, and the objective it is
trained on (``_model``'s ``LabelExpertObjective``, from ``make_objective``)
keeps their other entries at 0. So the pool sums its blocks like those of
the other experts.
"""

import numpy as np

from .._model import BigramGroups, bigram_columns

__all__ = ["count_trained", "expert_parts", "normalised_weights", "pool_blocks"]


def _expert_bigrams(expert, cols, columns):
    """Positions in ``columns`` (the pool's bigram columns) of the expert's blocks."""
    if expert.bigram_coef_ is None:
        return np.zeros(0, dtype=np.intp)
    return np.searchsorted(columns, cols[bigram_columns(expert.attributes_)])


def count_trained(expert, labels):
    """``n_parameters_`` and ``sparsity_`` of a fitted label expert without its fixed block entries.

    The layout of a label expert with bigram blocks holds the blocks'
    entries outside its labels (kept at 0, not trained); its counts
    should not. Other experts are returned unchanged.

    Parameters
    ----------
    expert : CRFTagger
        Fitted.
    labels : array-like of int or None
        The expert's labels (None: not a label expert).

    Returns
    -------
    CRFTagger
        ``expert``, its counts corrected in place.
    """
    if labels is None or expert.bigram_coef_ is None:
        return expert
    mine = np.zeros(expert.transition_.shape[0], dtype=bool)
    mine[np.asarray(labels, dtype=np.intp)] = True
    n_fixed = expert.bigram_coef_.shape[0] * int(np.sum(~(mine[:, None] | mine[None, :])))
    n_zeros = round(expert.sparsity_ * expert.n_parameters_) - n_fixed
    expert.n_parameters_ -= n_fixed
    expert.sparsity_ = n_zeros / expert.n_parameters_
    return expert


def expert_parts(experts, groups, X, offsets, attributes):
    """``(unary, transition, start, end)`` of every expert on the rows of X.

    Parameters
    ----------
    experts : list of fitted CRFTagger
    groups : list of ndarray of intp
        The columns of X of each expert.
    X : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
    offsets : ndarray of intp of shape (n_sequences + 1,)
    attributes : ndarray of str of shape (n_features,)
        The names of X's columns.

    Returns
    -------
    list of tuple
        ``transition`` is the expert's (n_labels, n_labels) matrix if no
        column is a bigram attribute, else a
        :class:`~sklearn_crfloss.inference.PositionTransitions` with the
        same index for every expert.
    """
    columns = bigram_columns(attributes)
    if columns.shape[0] == 0:
        return [(_unary(e, X[:, cols]), e.transition_, e.start_, e.end_)
                for e, cols in zip(experts, groups)]
    shared = BigramGroups(X, offsets, columns)
    parts = []
    for e, cols in zip(experts, groups):
        blocks = np.zeros((columns.shape[0],) + e.transition_.shape)
        blocks[_expert_bigrams(e, cols, columns)] = (0.0 if e.bigram_coef_ is None
                                                     else e.bigram_coef_)
        parts.append((_unary(e, X[:, cols]), shared.transitions(e.transition_, blocks),
                      e.start_, e.end_))
    return parts


def _unary(expert, X):
    """An expert's unary potentials ``X @ coef_.T``, C-contiguous (as CRFTagger computes them)."""
    return np.ascontiguousarray(X @ expert.coef_.T)


def pool_blocks(experts, groups, weights, attributes):
    """The pool's blocks ``sum_a w_a B_ab`` and its bigram columns.

    Returns
    -------
    blocks : ndarray of shape (n_bigram, n_labels, n_labels) or None
        None if no column is a bigram attribute.
    columns : ndarray of intp of shape (n_bigram,)
    """
    columns = bigram_columns(attributes)
    if columns.shape[0] == 0:
        return None, columns
    L = experts[0].transition_.shape[0]
    blocks = np.zeros((columns.shape[0], L, L))
    for w, e, cols in zip(weights, experts, groups):
        if e.bigram_coef_ is not None:
            blocks[_expert_bigrams(e, cols, columns)] += w * e.bigram_coef_
    return blocks, columns


def normalised_weights(weights, n_experts, owner):
    """Expert weights checked and scaled to sum 1, without overflow.

    Checked as :meth:`~sklearn_crfloss.LOPTagger.fit` and ``with_weights``
    check the ``weights`` they are given, and as :func:`~sklearn_crfloss.io.load_model`
    checks the weights of a model file.

    Divided by their maximum before their sum, so that ``[1e308, 1e308]``
    gives ``[0.5, 0.5]`` (the sum alone would overflow to inf and the
    weights to 0).

    Parameters
    ----------
    weights : array-like of shape (n_experts,)
    n_experts : int
    owner : str
        What has the experts, as the message names it (e.g. ``'this pool'``).

    Returns
    -------
    ndarray of float64 of shape (n_experts,)
        Non-negative, summing to 1.

    Raises
    ------
    ValueError
        On a shape other than ``(n_experts,)``, a NaN, infinite or negative
        weight, or weights all 0.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n_experts,):
        raise ValueError(f"weights has shape {w.shape} but {owner} has {n_experts} experts "
                         f"(the monolithic one first): pass {n_experts} non-negative "
                         "weights, one per expert")
    if not np.isfinite(w).all() or np.any(w < 0) or not w.max() > 0:
        raise ValueError("weights must be finite, >= 0 (non-negative) and not all 0, got "
                         f"{w.tolist()}")
    w = w / w.max()
    return w / w.sum()
