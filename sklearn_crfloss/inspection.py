"""Model inspection: the weights as sklearn-crfsuite shows them, and per-token explanations.

A fitted :class:`~sklearn_crfloss.CRFTagger` scores a label sequence ``y``
of a sequence ``x`` of ``n`` tokens as

    score(y) = start_[y_0] + sum_t coef_[y_t] . x_t
               + sum_{t>0} transition_[y_{t-1}, y_t] + end_[y_{n-1}]

(``p(y | x)`` is proportional to ``exp(score(y))``). The functions here read
those arrays back in the terms of the attribute names and labels:

- :func:`state_features` and :func:`transition_features`: the non-zero
  weights as dicts ``{(attribute, label): weight}`` and
  ``{(from_label, to_label): weight}``, sklearn-crfsuite's
  ``state_features_`` and ``transition_features_`` (the estimator exposes
  them under those names);
- :func:`top_state_features`: the largest positive or negative state weights;
- :func:`explain_token`: why one token got its label rather than another,
  as a sum of per-attribute contributions and the transition, start and end
  terms (:class:`TokenExplanation`).

See :doc:`/user_guide/inspection` for examples.
"""

from dataclasses import dataclass, field

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._utils import fill_doc
from .decoding import apply_allowed
from .inference import sequence_scores

__all__ = ["TokenExplanation", "explain_token", "state_features", "top_state_features",
           "transition_features"]


def _label_list(crf):
    """``classes_`` as Python objects (str, int, ...), for dict keys."""
    return crf.classes_.tolist()


_PARAMETERS = """Parameters
----------
crf : CRFTagger
    A fitted tagger."""
_RAISES = """Raises
------
sklearn.exceptions.NotFittedError
    If ``crf`` is not fitted."""


# The parameters and results of top_state_features and explain_token, shared
# with the CRFTagger methods of the same purpose (fill_doc markers).
TOP_STATE_FEATURES_DOC = {
    "top_parameters": """n : int, default=10
    How many to return (fewer if fewer weights have that sign).
label : label or None, default=None
    Only the weights of this label (one of ``classes_``); None: all labels.
sign : {'positive', 'negative', 'absolute'}, default='positive'
    ``'positive'``: the largest weights above 0, largest first;
    ``'negative'``: the smallest weights below 0, most negative first;
    ``'absolute'``: the largest ``|weight|``, non-zero only.""",
    "top_returns": """Returns
-------
list of ((str, label), float)
    ``((attribute, label), weight)`` pairs, the items of ``state_features_``
    in the order described above (ties in attribute, then label order).

Raises
------
ValueError
    On an unknown ``label`` or ``sign``, or ``n < 0``.
sklearn.exceptions.NotFittedError
    If the tagger is not fitted.""",
}
EXPLAIN_DOC = {
    "explain_parameters": """x : sequence
    One sequence, as an element of the ``X`` of :meth:`CRFTagger.fit`.
token : int
    Position in ``x`` (negative counts from the end).
against : label or None, default=None
    The label to compare with (one of ``classes_``, different from the
    decoded one); None: the runner-up.""",
    "explain_returns": """Returns
-------
TokenExplanation
    The decoded label, the label it is compared with, their score
    difference and its per-attribute and chain terms.

Raises
------
ValueError
    If ``token`` is out of range, ``against`` is not a class or equals
    the decoded label, or there is a single class.
sklearn.exceptions.NotFittedError
    If the tagger is not fitted.""",
}


def _nonzero_items(matrix, row_names, col_names):
    """``{(row_names[i], col_names[j]): matrix[i, j]}`` for the non-zero entries, row-major."""
    rows, cols = np.nonzero(matrix)
    return {(row_names[i], col_names[j]): w
            for i, j, w in zip(rows.tolist(), cols.tolist(), matrix[rows, cols].tolist())}


@fill_doc(parameters=_PARAMETERS, raises=_RAISES)
def state_features(crf):
    """The non-zero state weights as ``{(attribute, label): weight}``.

    sklearn-crfsuite's ``CRF.state_features_``: one entry per (attribute,
    label) pair whose weight ``coef_[label, attribute]`` is not 0.

    {parameters}

    Returns
    -------
    dict of {(str, label): float}
        Keys ``(attributes_[a], classes_[j])`` in attribute order, then label
        order; ``attributes_`` names are ``'key:value'`` or ``'key'``, as
        sklearn-crfsuite's (python-crfsuite's names), labels are Python objects
        (``str`` for string labels).

    {raises}
    """
    check_is_fitted(crf)
    return _nonzero_items(crf.coef_.T, [str(a) for a in crf.attributes_], _label_list(crf))


@fill_doc(parameters=_PARAMETERS, raises=_RAISES)
def transition_features(crf):
    """The non-zero transition weights as ``{(from_label, to_label): weight}``.

    sklearn-crfsuite's ``CRF.transition_features_``. The start and end
    potentials (``start_``, ``end_``), which CRFsuite does not have, are not
    included.

    {parameters}

    Returns
    -------
    dict of {(label, label): float}
        In ``classes_`` order of the first, then the second label.

    {raises}
    """
    check_is_fitted(crf)
    labels = _label_list(crf)
    items = _nonzero_items(crf.transition_, labels, labels)
    blocks = getattr(crf, "bigram_coef_", None)
    if blocks is not None:  # observation-dependent label bigrams
        for name, block in zip(crf.bigram_attributes_.tolist(), blocks):
            items.update({(name, *pair): w for pair, w in
                          _nonzero_items(block, labels, labels).items()})
    return items


@fill_doc(**TOP_STATE_FEATURES_DOC)
def top_state_features(crf, n=10, *, label=None, sign="positive"):
    """The ``n`` largest positive (or negative) state weights.

    Parameters
    ----------
    crf : CRFTagger
        A fitted tagger.
    {top_parameters}

    {top_returns}

    Notes
    -----
    ``sign='positive'`` gives the list of sklearn-crfsuite's idiom
    ``Counter(crf.state_features_).most_common(n)`` (when at least ``n``
    weights are positive).
    """
    if sign not in ("positive", "negative", "absolute"):
        raise ValueError(f"sign must be 'positive', 'negative' or 'absolute', got {sign!r}")
    if int(n) != n or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    check_is_fitted(crf)
    if label is not None and label not in _label_list(crf):
        raise ValueError(f"label {label!r} is not one of classes_ {_label_list(crf)}")
    items = [(key, w) for key, w in state_features(crf).items()
             if label is None or key[1] == label]
    if sign == "positive":
        items = sorted((it for it in items if it[1] > 0), key=lambda it: -it[1])
    elif sign == "negative":
        items = sorted((it for it in items if it[1] < 0), key=lambda it: it[1])
    else:
        items = sorted(items, key=lambda it: -abs(it[1]))
    return items[:int(n)]


@dataclass
class TokenExplanation:
    """Why token ``token`` got ``label`` rather than ``runner_up``.

    Let ``y`` be the decoded sequence (:meth:`CRFTagger.predict`) and ``y'``
    the same sequence with ``runner_up`` at ``token``. Then
    ``score(y) - score(y')``, the log-odds ``log p(y | x) - log p(y' | x)``,
    is the sum of

    - one term per attribute active at the token, ``x[token, a] *
      (coef_[label, a] - coef_[runner_up, a])`` (:attr:`attributes`);
    - the terms of the chain that involve the token (:attr:`transitions`):
      ``'previous'``, ``transition_[y[token-1], label] -
      transition_[y[token-1], runner_up]`` (not at the first token);
      ``'next'``, ``transition_[label, y[token+1]] -
      transition_[runner_up, y[token+1]]`` (not at the last token);
      ``'start'``, ``start_[label] - start_[runner_up]`` (first token only);
      ``'end'``, ``end_[label] - end_[runner_up]`` (last token only).

    Attributes
    ----------
    token : int
        The token's position in the sequence.
    label : label
        Its decoded label.
    runner_up : label
        The label it is compared with.
    score_difference : float
        ``score(y) - score(y')``; equals :meth:`total`.
    attributes : dict of {str: float}
        The attributes active at the token (those of ``attributes_``; values
        unseen in training have no column and no contribution), largest
        contribution first.
    transitions : dict of {str: float}
        The chain terms, keys among ``'previous'``, ``'next'``, ``'start'``,
        ``'end'``.
    previous_label, next_label : label or None
        ``y[token - 1]`` and ``y[token + 1]`` (None at the ends).
    """

    token: int
    label: object
    runner_up: object
    score_difference: float
    attributes: dict = field(default_factory=dict)
    transitions: dict = field(default_factory=dict)
    previous_label: object = None
    next_label: object = None

    def total(self):
        """Sum of all contributions.

        Returns
        -------
        float
            ``sum(attributes.values()) + sum(transitions.values())``, which
            equals :attr:`score_difference` up to rounding.
        """
        return float(sum(self.attributes.values()) + sum(self.transitions.values()))

    def __str__(self):
        rows = [f"token {self.token}: {self.label!r} rather than {self.runner_up!r}, "
                f"score difference {self.score_difference:+.4f}"]
        rows += [f"  {value:+.4f}  {name}" for name, value in self.attributes.items()]
        rows += [f"  {value:+.4f}  <{name}>" for name, value in self.transitions.items()]
        return "\n".join(rows)


@fill_doc(**EXPLAIN_DOC)
def explain_token(crf, x, token, *, against=None):
    """Explain one token's decoded label as a sum of contributions.

    The token's label in the decoded sequence ``y`` (:meth:`CRFTagger.predict`,
    with the tagger's ``decoder`` and ``constraints``) is compared with
    ``against``, or by default with the runner-up: the label ``r`` that
    maximises the score of ``y`` with ``r`` at ``token`` (among the
    sequences that ``constraints`` allow, if any of them changes the label).
    The difference of the two sequences' scores is split into per-attribute
    and chain (transition, start, end) terms; see :class:`TokenExplanation`.

    Parameters
    ----------
    crf : CRFTagger
        A fitted tagger.
    {explain_parameters}

    {explain_returns}
    """
    return crf.explain(x, token, against=against)


def explain_vectorized(Xc, token, *, against, unary, decode_paths, labels, attributes,
                       coef, transition, start, end, allowed):
    """:func:`explain_token` on one vectorised sequence, from the fitted model's values.

    The estimator's :meth:`~sklearn_crfloss.CRFTagger.explain` calls this with
    its fitted arrays; the checks of ``token`` and ``against`` happen here.

    Parameters
    ----------
    Xc : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
        The sequence's feature rows (changed in place: duplicates summed).
    token : int
        The token to explain (negative counts from the end).
    against : label or None
        The label to compare with; None: the runner-up.
    unary : callable
        ``unary(Xc)``: the unary potentials, ndarray (n_tokens, n_labels).
    decode_paths : callable
        ``decode_paths(unary)``: the decoded label indices of every token.
    labels : list
        ``classes_`` as Python objects.
    attributes : ndarray of shape (n_features,)
        The attribute names.
    coef : ndarray of shape (n_labels, n_features)
    transition : ndarray of shape (n_labels, n_labels)
    start, end : ndarray of shape (n_labels,)
    allowed : ndarray of bool of shape (n_labels, n_labels) or None
        The transitions the decoding constraints allow (None: all).

    Returns
    -------
    TokenExplanation

    Raises
    ------
    ValueError
        If ``token`` is not a position of the sequence, the model has a
        single label, or ``against`` is not a label or is the decoded one.
    """
    Xc.sum_duplicates()  # one entry per active attribute
    n = Xc.shape[0]
    if int(token) != token or not -n <= token < n:
        raise ValueError(f"token must be an integer position in a sequence of {n} tokens, "
                         f"got {token!r}")
    t = int(token) % n
    if len(labels) < 2:
        raise ValueError("a tagger with a single class has no runner-up label")
    unary = unary(Xc)
    path = decode_paths(unary)
    W, T = coef, transition
    c = int(path[t])
    prev = int(path[t - 1]) if t > 0 else None
    nxt = int(path[t + 1]) if t < n - 1 else None

    def chain_terms(r, T, start, end):
        terms = {}
        if prev is not None:
            terms["previous"] = T[prev, c] - T[prev, r]
        if nxt is not None:
            terms["next"] = T[c, nxt] - T[r, nxt]
        if t == 0:
            terms["start"] = start[c] - start[r]
        if t == n - 1:
            terms["end"] = end[c] - end[r]
        return terms

    if against is None:
        # The runner-up minimises score(y) - score(y'), among the allowed y' if any.
        Tc, sc = apply_allowed(T, start, allowed)
        delta = np.array([np.inf if r == c else
                          unary[t, c] - unary[t, r] + sum(chain_terms(r, T, start, end).values())
                          for r in range(len(labels))])
        if allowed is not None:
            ok = np.array([r != c and np.isfinite(sum(chain_terms(r, Tc, sc, end).values()))
                           for r in range(len(labels))])
            if ok.any():
                delta[~ok] = np.inf
        r = int(np.argmin(delta))
    else:
        if against not in labels:
            raise ValueError(f"against={against!r} is not one of classes_ {labels}")
        r = labels.index(against)
        if r == c:
            raise ValueError(f"against={against!r} is the decoded label of token {t}; "
                             "compare with another label")
    cols = Xc.indices[Xc.indptr[t]:Xc.indptr[t + 1]]
    contrib = Xc.data[Xc.indptr[t]:Xc.indptr[t + 1]] * (W[c, cols] - W[r, cols])
    order = np.argsort(-contrib, kind="stable")
    by_attribute = {str(attributes[cols[k]]): float(contrib[k]) for k in order}
    transitions = {k: float(v) for k, v in chain_terms(r, T, start, end).items()}
    y = path.copy()
    y_alt = path.copy()
    y_alt[t] = r
    both = sequence_scores(np.vstack([unary, unary]), T, start, end,
                           np.concatenate([y, y_alt]), np.array([0, n, 2 * n]))
    return TokenExplanation(
        token=t, label=labels[c], runner_up=labels[r],
        score_difference=float(both[0] - both[1]), attributes=by_attribute,
        transitions=transitions,
        previous_label=None if prev is None else labels[prev],
        next_label=None if nxt is None else labels[nxt])
