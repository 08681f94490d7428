"""Token-level ("flat") metrics under sklearn-crfsuite's names, and their scorers.

Each ``flat_*`` function checks that ``y_true`` and ``y_pred`` are lists of
label sequences of the same lengths, concatenates the sequences and calls
the scikit-learn metric of the same name with the keyword arguments given,
as ``sklearn_crfsuite.metrics`` does. Re-exported by
:mod:`sklearn_crfloss.metrics`.

:func:`check_scorer_call` lets :meth:`CRFTagger.predict
<sklearn_crfloss.CRFTagger.predict>` refuse to feed a scikit-learn scorer
built on a flat-label metric (``scoring="f1"``, ``"accuracy"``, ...), which
would otherwise fail inside scikit-learn with a message about multi-label
data (``cross_val_score`` turns it into ``nan`` scores).
"""

import sys

import numpy as np
from sklearn import metrics as _skm

from ._label_pairs import encode_pair

__all__ = [
    "check_scorer_call",
    "flat_accuracy_score",
    "flat_classification_report",
    "flat_f1_score",
    "flat_fbeta_score",
    "flat_precision_score",
    "flat_recall_score",
]

_FLAT_DOC = """{summary}

    ``sklearn.metrics.{target}`` of the concatenated label sequences, as
    ``sklearn_crfsuite.metrics.{name}``.

    Parameters
    ----------
    y_true : list of (list or ndarray of shape (n_tokens_i,))
        Gold label sequences.
    y_pred : list of (list or ndarray of shape (n_tokens_i,))
        Predicted label sequences, with the same lengths as ``y_true``.
    {extra}**kwargs
        Passed to :func:`sklearn.metrics.{target}` (``labels``, ``average``,
        ``zero_division``, ...). ``sample_weight``, if given, holds one
        weight per sequence (applied to each of its tokens) or one per
        token.

    Returns
    -------
    {returns}

    Raises
    ------
    ValueError
        If the inputs are not lists of label sequences of the same lengths
        (the message names the sequence), ``sample_weight`` has neither one
        weight per sequence nor one per token, or scikit-learn's function
        rejects an argument.

    See Also
    --------
    sklearn_crfloss.metrics.segment_f1_score : whole-chunk (conlleval) scores.

    Examples
    --------
    >>> from sklearn_crfloss.metrics import {name}
    >>> y_true = [["B-PER", "I-PER", "O"], ["O"]]
    >>> y_pred = [["B-PER", "O", "O"], ["O"]]
    >>> {example}
    {output}
    """


def _flatten(y_true, y_pred, kwargs):
    """The concatenated labels of both (checked) and the kwargs with per-token weights."""

    _, _, offsets, _ = encode_pair(y_true, y_pred)
    flat_true = [label for seq in y_true for label in seq]
    flat_pred = [label for seq in y_pred for label in seq]
    weight = kwargs.get("sample_weight")
    if weight is not None:
        weight = np.asarray(weight, dtype=np.float64)
        lengths = np.diff(offsets)
        if weight.shape == lengths.shape:
            weight = np.repeat(weight, lengths)
        elif weight.shape != (len(flat_true),):
            raise ValueError(
                f"sample_weight must have one weight per sequence ({lengths.shape[0]}) or "
                f"one per token ({len(flat_true)}), got shape {weight.shape}.")
        kwargs = {**kwargs, "sample_weight": weight}
    return flat_true, flat_pred, kwargs


def _flat_metric(metric):
    """The ``flat_*`` version of the scikit-learn metric ``metric``."""
    def flat(y_true, y_pred, **kwargs):
        flat_true, flat_pred, kwargs = _flatten(y_true, y_pred, kwargs)
        return metric(flat_true, flat_pred, **kwargs)

    flat.__name__ = flat.__qualname__ = f"flat_{metric.__name__}"
    return flat


flat_accuracy_score = _flat_metric(_skm.accuracy_score)
flat_precision_score = _flat_metric(_skm.precision_score)
flat_recall_score = _flat_metric(_skm.recall_score)
flat_f1_score = _flat_metric(_skm.f1_score)


def flat_fbeta_score(y_true, y_pred, beta, **kwargs):
    flat_true, flat_pred, kwargs = _flatten(y_true, y_pred, kwargs)
    return _skm.fbeta_score(flat_true, flat_pred, beta=beta, **kwargs)


def flat_classification_report(y_true, y_pred, labels=None, **kwargs):
    flat_true, flat_pred, kwargs = _flatten(y_true, y_pred, kwargs)
    return _skm.classification_report(flat_true, flat_pred, labels=labels, **kwargs)


_SCORE_RETURNS = ("score : float or ndarray of float\n"
                  "        As scikit-learn's function returns it (an array with "
                  "``average=None``).")
_DOCS = {
    flat_accuracy_score: ("Fraction of tokens labelled correctly (flat accuracy).",
                          "accuracy_score", "", "accuracy : float",
                          "flat_accuracy_score(y_true, y_pred)", "0.75"),
    flat_precision_score: ("Token-level precision.", "precision_score", "", _SCORE_RETURNS,
                           "round(flat_precision_score(y_true, y_pred, average='micro'), 2)",
                           "0.75"),
    flat_recall_score: ("Token-level recall.", "recall_score", "", _SCORE_RETURNS,
                        "round(flat_recall_score(y_true, y_pred, average='micro'), 2)", "0.75"),
    flat_f1_score: ("Token-level F1 score (the sklearn-crfsuite tutorial's score).",
                    "f1_score", "", _SCORE_RETURNS,
                    "round(flat_f1_score(y_true, y_pred, average='weighted', "
                    "labels=['B-PER', 'I-PER'], zero_division=0), 2)", "0.5"),
    flat_fbeta_score: ("Token-level F-beta score.", "fbeta_score",
                       "beta : float\n        Weight of recall against precision.\n    ",
                       _SCORE_RETURNS,
                       "round(flat_fbeta_score(y_true, y_pred, beta=2, average='micro'), 2)",
                       "0.75"),
    flat_classification_report: (
        "Per-label token precision, recall and F1 as a text report.",
        "classification_report",
        "labels : array-like or None, default=None\n        The labels of the report's "
        "rows (None: all labels seen).\n    ",
        "report : str or dict\n        As scikit-learn's (a dict with ``output_dict=True``).",
        "print(flat_classification_report(y_true, y_pred, labels=['B-PER', 'I-PER'], "
        "zero_division=0))", "precision    recall  f1-score   support\n    ...")}
for _func, (_summary, _target, _extra, _returns, _example, _output) in _DOCS.items():
    _func.__doc__ = _FLAT_DOC.format(summary=_summary, target=_target, name=_func.__name__,
                                     extra=_extra, returns=_returns, example=_example,
                                     output=_output)
del _DOCS, _func, _summary, _target, _extra, _returns, _example, _output


def check_scorer_call(estimator):
    """Raise if a scikit-learn scorer of flat labels is calling ``estimator.predict``.

    A string ``scoring`` such as ``"f1"`` or ``"accuracy"`` scores the
    predictions with a :mod:`sklearn.metrics` function that expects one
    label per sample, not a list of label sequences. Looks at the few
    callers of ``predict`` for such a scorer (scikit-learn's scorers call
    ``predict`` through one helper).

    Parameters
    ----------
    estimator : object
        The sequence estimator whose ``predict`` runs (named in the message).

    Raises
    ------
    ValueError
        Naming the scorer's metric and this package's sequence scorers.
    """
    from sklearn.metrics._scorer import _BaseScorer

    frame = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            return
        scorer = frame.f_locals.get("self")
        if isinstance(scorer, _BaseScorer):
            func = getattr(scorer, "_score_func", None)
            module = getattr(func, "__module__", "") or ""
            if module.startswith("sklearn.metrics"):
                raise ValueError(
                    f"{type(estimator).__name__} predicts label sequences, but the scorer "
                    f"{scorer!r} (scikit-learn's {func.__name__}) expects one label per "
                    "sample. Use a scorer of sklearn_crfloss.metrics: segment_f1_scorer, "
                    "flat_f1_scorer, flat_accuracy_scorer, token_accuracy_scorer, ... (or "
                    "make_scorer(sklearn_crfloss.metrics.flat_f1_score, ...)).")
            return
        frame = frame.f_back
