"""Observation-dependent label bigrams in the estimator: parameters, chain rule, fitted state.

A feature-dict key that starts with ``BIGRAM_PREFIX``
(``"~"``; :class:`~sklearn_crfloss.features.TemplateFeatures` writes the CRF++
line ``B01:%x[0,1]`` as the key ``"~B01"``) makes a *bigram attribute*: it
is vectorised like any attribute (a column of the one CSR matrix, named
``"~B01:NN"``), but instead of state weights it has an
``(n_labels, n_labels)`` block of transition weights (dense, as in CRF++ and
Wapiti), added to the shared transition matrix on the edge into every token
where it is active:

``T_t = transition + sum_b x[t, b] * B[b]``.

:class:`BigramLayout` appends the blocks to ``theta`` (after the
transitions, start and end potentials); :class:`BigramGroups` binds the
bigram columns of a batch once: the distinct rows (sets of active bigram
attributes) give the table of a
:class:`~sklearn_crfloss.inference.PositionTransitions`, and the chain rule
from the table's gradient to ``transition`` and ``B`` is two products with
that small (n_distinct, n_bigram) matrix.
"""

import numpy as np
import scipy.sparse as sp

from .._chain import position_gold_counts, PositionTransitions
from .._data import BIGRAM_PREFIX, columns_with_prefix
from ..losses import LOSSES, get_loss_tags
from ._parameters import index_dtype, ParameterLayout

__all__ = ["BIGRAM_DOC", "BigramGroups", "BigramLayout", "bigram_columns", "bigram_state",
           "check_no_bigrams", "make_layout", "model_transitions", "saved_layout"]

#: The fitted attributes of CRFTagger's docstring that concern transitions.
BIGRAM_DOC = dict(transition_attributes="""\
transition_features_ : dict of {(label, label): float} or {(str, label, label): float}
    The non-zero transition weights, ``{(from_label, to_label):
    transition_[from, to]}``, as sklearn-crfsuite's
    ``transition_features_`` (``start_`` and ``end_`` are not included);
    with bigram attributes also ``{(attribute, from_label, to_label):
    bigram_coef_[b, from, to]}``.
bigram_coef_ : ndarray of shape (n_bigram, n_classes, n_classes) or None
    The transition weights of the observation-dependent label bigrams:
    ``bigram_coef_[b, i, j]`` is added to ``transition_[i, j]`` on the edge
    into every token where the attribute ``bigram_attributes_[b]`` is
    active. None without bigram attributes.
bigram_attributes_ : ndarray of object of shape (n_bigram,) or None
    The bigram attributes: those whose feature key starts with ``'~'``
    (:class:`~sklearn_crfloss.features.TemplateFeatures` writes CRF++'s
    ``B01:%x[0,1]`` as the key ``'~B01'``). None without them.""")



def bigram_columns(attributes):
    """Columns of the bigram attributes (names starting with ``BIGRAM_PREFIX``).

    Parameters
    ----------
    attributes : sequence of str of shape (n_features,)
        Column names (``attributes_``, a vectoriser's ``column_names``...).

    Returns
    -------
    ndarray of intp
    """
    return columns_with_prefix(attributes, BIGRAM_PREFIX)


def check_no_bigrams(features, where):
    """ValueError if the fitted vectoriser ``features`` has bigram attributes.

    For the training routes that do not take observation-dependent label
    bigrams (``where`` names the route in the message).
    """
    columns = bigram_columns(features.column_names)
    if columns.shape[0]:
        raise ValueError(
            f"{where} does not support observation-dependent label bigrams (feature keys "
            f"starting with {BIGRAM_PREFIX!r}, e.g. {features.column_names[columns[0]]!r}, from a "
            "template's 'B' lines with macros); use CRFTagger.fit.")


class BigramLayout(ParameterLayout):
    """A :class:`~sklearn_crfloss._model._parameters.ParameterLayout` with bigram weight blocks.

    ``theta`` is the base layout's vector followed by the blocks
    ``B.ravel()``, ``B`` of shape (n_bigram, n_labels, n_labels). The
    bigram columns get no state weights.

    Parameters
    ----------
    n_features, n_labels : int
    state_index : ndarray of int or None
        As for the base layout; pairs of bigram columns are dropped.
    bigram_columns : ndarray of intp
        Columns of X that are bigram attributes.
    boundary : bool, default=True
    labels : array-like of int or None, default=None
        As for the base layout (a label expert of
        :class:`~sklearn_crfloss.LOPTagger`): only the transitions from or to
        these labels are free. The blocks keep their full shape; their
        entries outside the free transitions stay 0 in training (the
        objective of ``make_objective``).

    Attributes
    ----------
    n_base : int
        Length of the base vector (state weights and tail).
    n_bigram : int
        Bigram attributes.
    """

    def __init__(self, n_features, n_labels, state_index, bigram_columns, boundary=True,
                 labels=None):
        L = n_labels
        is_bigram = np.zeros(n_features, dtype=bool)
        is_bigram[bigram_columns] = True
        if state_index is None:
            state_index = np.arange(n_features * L, dtype=index_dtype(n_features * L))
        state_index = np.asarray(state_index)
        super().__init__(n_features, L, state_index[~is_bigram[state_index // L]],
                         labels=labels, boundary=boundary)
        self.bigram_columns = np.asarray(bigram_columns, dtype=np.intp)
        self.n_bigram = self.bigram_columns.shape[0]
        self.n_base = self.n_params
        self.n_params = self.n_base + self.n_bigram * L * L

    def unpack_tail(self, theta):
        # Docstring inherited: the base layout's tail (the blocks follow it).
        return super().unpack_tail(theta[:self.n_base])

    def pack(self, W, transition, start, end):
        # Docstring inherited: the blocks are 0.
        return np.concatenate([super().pack(W, transition, start, end),
                               np.zeros(self.n_params - self.n_base)])

    def bigram_weights(self, theta):
        """The blocks of ``theta``, a view of shape (n_bigram, n_labels, n_labels)."""
        L = self.n_labels
        return theta[self.n_base:].reshape(self.n_bigram, L, L)

    def remap(self, *args, **kwargs):
        # Docstring inherited.
        raise ValueError("warm_start is not supported with observation-dependent label "
                         "bigrams (bigram attributes); fit from scratch.")


def make_layout(features, n_features, n_labels, state_index, *, labels, boundary, loss,
                solver_tags, warm, solvers_with):
    """The parameter layout of a fit: with bigram blocks if the attributes have any.

    Parameters
    ----------
    features : SequenceVectorizer
        The fitted vectoriser (its ``attributes`` name the bigram ones).
    n_features, n_labels : int
    state_index : ndarray of int or None
        The trained (attribute, label) pairs; None: all.
    labels : ndarray of bool or None
        A label expert's label mask (LOPTagger), or None.
    boundary : bool
        Whether start and end potentials are trained.
    loss : loss object
    solver_tags : SolverTags
        The solver's record (``takes_bigrams``; ``trains_label_experts``
        for a label expert).
    warm : bool
        Whether training continues a previous fit (``warm_start``).
    solvers_with : callable
        ``solvers_with(tag)``: the names of the registered solvers whose
        record sets ``tag`` (:func:`sklearn_crfloss.solvers.solvers_with`),
        for the message.

    Returns
    -------
    ParameterLayout or BigramLayout

    Raises
    ------
    ValueError
        With bigram attributes and a loss, solver or option that does not
        take them (nothing is fitted then).
    """
    columns = bigram_columns(features.column_names)
    if columns.shape[0] == 0:
        return ParameterLayout(n_features, n_labels, state_index, labels=labels,
                               boundary=boundary)
    problem = None
    if not get_loss_tags(loss).label_bigrams:  # declared by the loss (LossTags)
        problem = f"the loss {get_loss_tags(loss).name or type(loss).__name__!r}"
    elif not solver_tags.takes_bigrams:
        problem = f"the solver {solver_tags.name!r}"
    elif labels is not None and not solver_tags.trains_label_experts:
        problem = (f"the label experts of LOPTagger with the solver {solver_tags.name!r} (they "
                   "train the blocks with "
                   f"{', '.join(map(repr, solvers_with('trains_label_experts')))})")
    elif warm:
        problem = "warm_start=True"
    if problem is None:
        return BigramLayout(n_features, n_labels, state_index, columns, boundary, labels)
    remedy = (f"train them with loss {', '.join(map(repr, _bigram_loss_names()))} and "
              f"solver {', '.join(map(repr, solvers_with('takes_bigrams')))} "
              "(or a schedule of them)"
              if labels is None
              else "use another expert set")
    raise ValueError(
        f"Observation-dependent label bigrams (the {columns.shape[0]} feature keys starting "
        f"with {BIGRAM_PREFIX!r}, e.g. {features.column_names[columns[0]]!r}, from a template's "
        f"'B' lines with macros) are not supported by {problem}: {remedy}, or drop the "
        "bigram lines.")


def _bigram_loss_names():
    """The registered losses that take label bigrams (``LossTags.label_bigrams``)."""
    return [name for name, cls in LOSSES.items() if get_loss_tags(cls()).label_bigrams]


class BigramGroups:
    """The bigram columns of a batch, bound once: distinct rows and their chain rule.

    Parameters
    ----------
    X : scipy.sparse matrix of shape (n_tokens, n_features)
    offsets : ndarray of intp of shape (n_sequences + 1,)
    columns : ndarray of intp of shape (n_bigram,)
        The bigram columns of X.

    Attributes
    ----------
    rows : scipy.sparse.csr_matrix of shape (n_matrices, n_bigram)
        The distinct sets of active bigram attributes (with their values);
        the first token of a sequence has none (it has no incoming edge).
    index : ndarray of intp of shape (n_tokens,)
        Row of ``rows`` of every token.
    """

    def __init__(self, X, offsets, columns):
        Xb = sp.csr_matrix(sp.csr_matrix(X)[:, columns], dtype=np.float64)
        inner = np.ones(Xb.shape[0])
        inner[np.asarray(offsets[:-1])[np.diff(offsets) > 0]] = 0.0
        Xb = sp.csr_matrix(sp.diags(inner) @ Xb)
        Xb.eliminate_zeros()
        Xb.sum_duplicates()
        Xb.sort_indices()
        ptr, ind, val = Xb.indptr, Xb.indices, Xb.data
        seen = {}
        index = np.fromiter(
            (seen.setdefault(ind[a:b].tobytes() + val[a:b].tobytes(), len(seen))
             for a, b in zip(ptr[:-1].tolist(), ptr[1:].tolist())),
            dtype=np.intp, count=Xb.shape[0])
        first = np.zeros(len(seen), dtype=np.intp)
        first[index[::-1]] = np.arange(index.shape[0] - 1, -1, -1)
        self.rows = sp.csr_matrix(Xb[first]) if len(seen) else sp.csr_matrix((1, Xb.shape[1]))
        self.index = index

    def transitions(self, transition, blocks):
        """The :class:`~sklearn_crfloss.inference.PositionTransitions` of the batch.

        Parameters
        ----------
        transition : ndarray of shape (n_labels, n_labels)
        blocks : ndarray of shape (n_bigram, n_labels, n_labels)
        """
        L = transition.shape[0]
        K = self.rows.shape[0]
        table = np.asarray(self.rows @ np.asarray(blocks).reshape(-1, L * L)).reshape(K, L, L)
        table += transition
        return PositionTransitions(table, self.index)

    def gold_blocks(self, y, offsets, n_labels, sample_weight=None):
        """The weighted gold counts of the blocks' weights.

        Parameters
        ----------
        y : ndarray of intp of shape (n_tokens,)
        offsets : ndarray of intp of shape (n_sequences + 1,)
        n_labels : int
        sample_weight : ndarray of shape (n_sequences,) or None, default=None

        Returns
        -------
        ndarray of float64 of shape (n_bigram * n_labels**2,)
            ``blocks.ravel() @ gold_blocks(...)`` is the blocks' share of
            ``sum_i w_i score(y_i)``.
        """
        table = np.broadcast_to(0.0, (self.rows.shape[0], n_labels, n_labels))  # shape only
        return self.chain(position_gold_counts(PositionTransitions(table, self.index), y,
                                               offsets, sample_weight))[1]

    def chain(self, d_table):
        """The gradient of ``(transition, blocks)`` from that of the table.

        Returns
        -------
        d_transition : ndarray of shape (n_labels, n_labels)
        d_blocks : ndarray of shape (n_bigram * n_labels**2,)
        """
        K, L, _ = d_table.shape
        flat = d_table.reshape(K, L * L)
        return flat.sum(axis=0).reshape(L, L), np.asarray(self.rows.T @ flat).ravel()


def bigram_state(layout, theta, attributes):
    """The fitted ``bigram_attributes_`` and ``bigram_coef_`` (None, None without bigrams).

    Parameters
    ----------
    layout : ParameterLayout or BigramLayout
    theta : ndarray of float64 of shape (layout.n_params,)
    attributes : ndarray of str of shape (n_features,)
        The fitted ``attributes_``.

    Returns
    -------
    bigram_attributes : ndarray of object or None
    bigram_coef : ndarray of shape (n_bigram, n_labels, n_labels) or None
    """
    if layout.n_bigram:
        return attributes[layout.bigram_columns], np.array(layout.bigram_weights(theta))
    return None, None


def model_transitions(X, offsets, transition, bigram_coef, attributes):
    """A fitted tagger's transitions for the rows of X: ``transition_`` or position-dependent.

    Parameters
    ----------
    X : scipy.sparse matrix of shape (n_tokens, n_features)
        The vectorised sequences.
    offsets : ndarray of intp of shape (n_sequences + 1,)
    transition : ndarray of shape (n_labels, n_labels)
        The fitted ``transition_``.
    bigram_coef : ndarray of shape (n_bigram, n_labels, n_labels) or None
        The fitted ``bigram_coef_`` (None without bigram attributes, and in
        models of older versions).
    attributes : ndarray of str of shape (n_features,)
        The fitted ``attributes_``.

    Returns
    -------
    ndarray of shape (n_labels, n_labels) or PositionTransitions
    """
    if bigram_coef is None:
        return transition
    columns = bigram_columns(attributes)
    return BigramGroups(X, offsets, columns).transitions(transition, bigram_coef)


def saved_layout(blocks, attributes, n_labels, state_index, where):
    """The layout of a tagger read from a model file (with bigram blocks if it has them).

    Parameters
    ----------
    blocks : ndarray or None
        The file's ``bigram_coef`` array (None: the model has none).
    attributes : ndarray of str of shape (n_features,)
    n_labels : int
    state_index : ndarray of int
        The stored state weights' flat indices.
    where : str
        Names the record in the messages.

    Raises
    ------
    ValueError
        If the blocks do not match the bigram attributes and labels, or are
        not finite.
    """
    n_features = len(attributes)
    if blocks is None:
        return ParameterLayout(n_features, n_labels, state_index)
    columns = bigram_columns(attributes)
    shape = (columns.shape[0], n_labels, n_labels)
    if blocks.shape != shape or blocks.dtype != np.float64 or not np.isfinite(blocks).all():
        raise ValueError(f"{where}: bigram_coef must be finite float64 of shape {shape} "
                         f"({columns.shape[0]} bigram attributes, {n_labels} labels)")
    if np.any(np.isin(state_index // n_labels, columns)):
        raise ValueError(f"{where}: state weights of bigram attributes")
    return BigramLayout(n_features, n_labels, state_index, columns)
