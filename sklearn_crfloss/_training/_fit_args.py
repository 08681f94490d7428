"""The arguments of ``fit`` after ``X, y``: a given validation set, keyword-only weights.

``fit(X, y, *, X_val=None, y_val=None, sample_weight_val=None, ...)`` follows
scikit-learn's :class:`~sklearn.ensemble.HistGradientBoostingClassifier`:
the validation set replaces the random hold-out of early stopping.
:func:`keyword_only_after_y` turns sklearn-crfsuite's positional
``fit(X, y, X_dev, y_dev)`` into a message that names the keywords, and
:func:`check_validation_set` checks and vectorises the validation set with
the training data's vectoriser.
"""

import functools
import sys
import threading
import warnings
from functools import partial

import numpy as np

from .._chain import kernel_threads
from .._data import check_sample_weight, check_sequences, encode_known_labels
from .._model import CRFObjective
from ..decoding import decode
from ..solvers import HeldOutScore

__all__ = ["FIT_DOC", "ValidationSet", "check_validation_set", "keyword_only_after_y",
           "validation_score"]

#: The Parameters of ``CRFTagger.fit`` (``fill_doc`` markers).
FIT_DOC = {
    "fit_x_y": """\
X : list of sequences
    Each sequence is a list of per-token feature dicts or a 2-D array /
    sparse matrix of shape (n_tokens_i, n_features). The attributes of a
    feature dict are named as python-crfsuite names them (see
    :func:`~sklearn_crfloss.features.crfsuite_attributes`): str -> str is
    the one-hot attribute ``'key:value'``; str -> number a numeric
    attribute ``'key'`` of that value; str -> bool ``'key'`` of value 0 or
    1; str -> list of str one attribute ``'key:item'`` per item; str ->
    dict the attributes of the inner dict, prefixed by ``'key:'``
    (``{"shape": {"upper": True}}`` is ``'shape:upper'``).
y : list of sequences of hashable labels
    ``len(y[i]) == len(X[i])``; at least two distinct labels.""",
    "fit_validation": """\
X_val : list of sequences or None, default=None
    A validation set (e.g. a development set), of the kind of ``X``,
    scored after every iteration (epoch) of the training of ``loss``
    (``scoring``; ``validation_scores_``, ``best_validation_score_``).
    With ``early_stopping=True`` it replaces the random
    ``validation_fraction`` of ``X`` (which is then all trained on) and
    decides when to stop; without, the scores are only recorded and the
    fit is the same as without ``X_val``. Needs ``y_val``.
y_val : list of sequences of labels or None, default=None
    The labels of ``X_val``, among those of ``y``.
sample_weight_val : array-like of shape (n_val_sequences,), default=None
    Non-negative weight of each validation sequence in the validation
    score (``scoring='loss'``; ``'accuracy'`` weights each token by its
    sequence's weight; not available with ``scoring='f1'``).""",
}

_MESSAGE = (
    "{name}.fit takes X and y positionally and everything else by keyword; got {n} "
    "more positional argument(s). Pass a development set as fit(X, y, X_val=X_dev, "
    "y_val=y_dev) and weights as sample_weight=..., token_weight=...")


#: Packages whose frames a warning of ``fit`` is not attributed to.
_INTERNAL = ("sklearn_crfloss", "sklearn", "joblib")


def _caller_frame():
    """The innermost frame of the call stack outside :data:`_INTERNAL` packages."""
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.split(".", 1)[0] not in _INTERNAL:
            return frame
        frame = frame.f_back
    return None


def _warn_at(frame, caught):
    """Issue the recorded warnings again, attributed to ``frame``'s line."""
    for w in caught:
        if frame is None:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            continue
        module = frame.f_globals.get("__name__", "__main__")
        registry = frame.f_globals.setdefault("__warningregistry__", {})
        warnings.warn_explicit(w.message, w.category, frame.f_code.co_filename, frame.f_lineno,
                               module=module, registry=registry)


def keyword_only_after_y(fit):
    """Decorator of a public ``fit(self, X, y, *, ...)``: the user's view of the call.

    Two things: sklearn-crfsuite's positional ``fit(X, y, X_dev, y_dev)``
    habit meets a TypeError that names the keywords (not Python's "takes 3
    positional arguments"); and the warnings issued during ``fit`` (a
    :class:`~sklearn.exceptions.ConvergenceWarning` of a solver, ...) are
    attributed to the line that called ``fit`` (the first frame outside
    this package, scikit-learn and joblib: the user's ``fit`` or
    ``search.fit`` line), not to the package's internals, whatever their
    depth. The warnings filters apply as usual. Warnings are recorded and
    issued again in the main thread only (``warnings.catch_warnings`` is
    process-wide); a ``fit`` in another thread warns from where they arise.
    The signature (``inspect.signature``, the documentation) stays ``fit``'s.

    Parameters
    ----------
    fit : callable
        The method.

    Returns
    -------
    callable
    """
    @functools.wraps(fit)
    def checked_fit(self, *args, **kwargs):
        if len(args) > 2:
            raise TypeError(_MESSAGE.format(name=type(self).__name__, n=len(args) - 2))
        if threading.current_thread() is not threading.main_thread():
            return fit(self, *args, **kwargs)
        caught = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                return fit(self, *args, **kwargs)
        finally:  # after catch_warnings restored the filters and the display
            _warn_at(_caller_frame(), caught)

    return checked_fit


class ValidationSet:
    """A checked, vectorised validation set.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
    y : ndarray of intp of shape (n_tokens,)
        Indices into the training ``classes``.
    offsets : ndarray of intp of shape (n_sequences + 1,)
    sample_weight : ndarray of float64 of shape (n_sequences,) or None
    """

    def __init__(self, X, y, offsets, sample_weight):
        self.X, self.y, self.offsets, self.sample_weight = X, y, offsets, sample_weight


def _named(name, exc):
    return type(exc)(f"{name}: {exc}")


def check_validation_set(features, classes, X_val, y_val, sample_weight_val, kind, *,
                         scoring=None):
    """Check ``X_val``, ``y_val``, ``sample_weight_val`` against the fitted training state.

    Parameters
    ----------
    features : SequenceVectorizer
        Fitted on the training data.
    classes : ndarray of shape (n_classes,)
        The training labels.
    X_val, y_val, sample_weight_val
        As ``fit`` received them.
    kind : {'dict', 'array'}
        The kind of the training sequences.
    scoring : str or None, default=None
        The estimator's (``'f1'`` has no sequence weights).

    Returns
    -------
    ValidationSet or None
        None if neither ``X_val`` nor ``y_val`` is given.

    Raises
    ------
    ValueError
        If only one of ``X_val``, ``y_val`` is given,
        ``sample_weight_val`` comes with ``scoring='f1'``, or the set is
        inconsistent (the message names ``X_val``/``y_val`` and the
        sequence).
    TypeError
        If ``X_val`` or ``y_val`` is not a list of sequences.
    """
    if X_val is None and y_val is None:
        if sample_weight_val is not None:
            raise ValueError("sample_weight_val is given without X_val and y_val.")
        return None
    if X_val is None or y_val is None:
        given, missing = ("X_val", "y_val") if y_val is None else ("y_val", "X_val")
        raise ValueError(f"{given} is given but {missing} is not: pass both.")
    if sample_weight_val is not None and scoring == "f1":
        raise ValueError("sample_weight_val weights scoring='loss' or 'accuracy'; the segment "
                         "F1 of scoring='f1' has no sequence weights.")
    try:
        _, tokens, offsets = check_sequences(
            X_val, kind=kind, n_features=features.n_input if kind == "array" else None)
    except (TypeError, ValueError) as exc:
        raise _named("X_val", exc) from exc
    lengths = np.diff(offsets)
    try:
        y = encode_known_labels(y_val, lengths, classes)
    except (TypeError, ValueError) as exc:
        raise _named("y_val", exc) from exc
    try:
        weight = check_sample_weight(sample_weight_val, lengths.shape[0])
    except ValueError as exc:
        raise _named("sample_weight_val", exc) from exc
    return ValidationSet(features.transform(tokens, offsets), y, offsets, weight)


class _WeightedAccuracy(HeldOutScore):
    """Token accuracy of the validation set, each token weighted by its sequence's weight."""

    def __init__(self, *args, sample_weight, **kwargs):
        super().__init__(*args, **kwargs)
        self.token_weight = np.repeat(sample_weight, np.diff(self.objective.offsets))

    def __call__(self, theta):
        obj = self.objective
        path, _ = self.decode(*obj.potentials(theta), obj.offsets)
        total = self.token_weight.sum()
        return float(np.dot(path == obj.y, self.token_weight) / total) if total else 1.0


def validation_score(held_out, layout, classes, loss, scoring, *, decoder, constraints,
                     n_jobs):
    """The held-out score of early stopping (:class:`~sklearn_crfloss.solvers.HeldOutScore`).

    Parameters
    ----------
    held_out : ValidationSet or tuple
        The given validation set, or ``(X, y, offsets)`` of the sequences
        held out at random.
    layout : ParameterLayout
        The training layout.
    classes : ndarray of shape (n_classes,)
    loss : loss object
        The training loss (``scoring='loss'``).
    scoring : {'f1', 'accuracy', 'loss'}
        The held-out score (the estimator's ``scoring`` resolved for the
        training labels).
    decoder, constraints, n_jobs
        The estimator's parameters of those names (the decoding of the
        held-out sequences).

    Returns
    -------
    HeldOutScore
        Weighted by the validation set's ``sample_weight`` if it has one
        (``'loss'``: the weighted loss; ``'accuracy'``: each token weighted
        by its sequence's weight).
    """
    n_threads = kernel_threads(n_jobs)
    weight = getattr(held_out, "sample_weight", None)
    if isinstance(held_out, ValidationSet):
        held_out = (held_out.X, held_out.y, held_out.offsets)
    objective = CRFObjective(*held_out, layout, sample_weight=weight, n_threads=n_threads)
    args = (objective, scoring, classes,
            partial(decode, decoder, constraints, classes,
                    n_threads=n_threads), loss)
    if weight is not None and scoring == "accuracy":
        return _WeightedAccuracy(*args, sample_weight=weight)
    return HeldOutScore(*args)
