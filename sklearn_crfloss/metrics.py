"""Sequence-labelling metrics: conlleval segment F1, token and sequence accuracy.

Every metric here takes ``y_true`` and ``y_pred`` as **lists of label
sequences** (one list or 1-D array of hashable labels per sequence, usually
strings); the first axis is the sequence, as everywhere in
:mod:`sklearn_crfloss`. Segment metrics count the chunks ``(start, end,
type)`` of the package's one chunk decoder (:mod:`sklearn_crfloss.segments`,
which documents the tagging schemes ``scheme`` and ``mode``), also used by the
training losses that need segments. Token metrics compare the concatenated
labels with :mod:`sklearn.metrics`; the ``flat_*`` functions are
sklearn-crfsuite's (scikit-learn's metric of the concatenated labels, keyword
arguments passed on). :func:`paired_bootstrap_test` and
:func:`mcnemar_test` test whether two taggers differ on one test set.

Counting
--------
A predicted chunk is correct when a gold chunk has the same start, end and
type. Sentences are separated as by conlleval's blank line (an ``O``/``O``
token), so no chunk crosses a sequence boundary whenever labels have a
prefix and a non-empty type. :func:`segment_counts` reproduces conlleval's
found / gold / correct counts exactly, also for degenerate labels (see its
Notes). Scores are fractions in ``[0, 1]``, not percentages.

The reference for every count is ``conlleval.pl`` (CoNLL-2000, version
2004-01-26; see :mod:`sklearn_crfloss.segments`).
"""

from sklearn.metrics import make_scorer

from ._evaluation import (hamming_loss, segment_counts, segment_f1_score,
                               segment_precision_score, segment_recall_score, segment_report,
                               sequence_accuracy, token_accuracy)

__all__ = [
    "segment_counts",
    "segment_precision_score",
    "segment_recall_score",
    "segment_f1_score",
    "segment_report",
    "token_accuracy",
    "hamming_loss",
    "sequence_accuracy",
    "segment_f1_scorer",
    "segment_precision_scorer",
    "segment_recall_scorer",
    "hamming_scorer",
    "token_accuracy_scorer",
    "sequence_accuracy_scorer",
    "flat_accuracy_score",
    "flat_precision_score",
    "flat_recall_score",
    "flat_f1_score",
    "flat_fbeta_score",
    "flat_classification_report",
    "flat_accuracy_scorer",
    "flat_precision_scorer",
    "flat_recall_scorer",
    "flat_f1_scorer",
    "PairedTestResult",
    "paired_bootstrap_test",
    "mcnemar_test",
]


# ---------------------------------------------------------------------------
# Scorers (for GridSearchCV, cross_validate, ...): scorer(estimator, X, y)
# ---------------------------------------------------------------------------

#: Micro segment F1 (conlleval scheme); greater is better.
segment_f1_scorer = make_scorer(segment_f1_score)
#: Micro segment precision (conlleval scheme).
segment_precision_scorer = make_scorer(segment_precision_score)
#: Micro segment recall (conlleval scheme).
segment_recall_scorer = make_scorer(segment_recall_score)
#: Negated Hamming loss (so that a search maximises it); values are <= 0.
hamming_scorer = make_scorer(hamming_loss, greater_is_better=False)
#: Flat token accuracy.
token_accuracy_scorer = make_scorer(token_accuracy)
#: Whole-sequence accuracy.
sequence_accuracy_scorer = make_scorer(sequence_accuracy)

# sklearn-crfsuite's flat metrics (sklearn_crfloss/_flat.py).
from ._evaluation import (flat_accuracy_score, flat_classification_report,  # noqa: E402
                    flat_f1_score, flat_fbeta_score, flat_precision_score, flat_recall_score)

#: Flat token accuracy, as :func:`flat_accuracy_score`.
flat_accuracy_scorer = make_scorer(flat_accuracy_score)
#: Flat token precision, weighted average over the labels.
flat_precision_scorer = make_scorer(flat_precision_score, average="weighted", zero_division=0)
#: Flat token recall, weighted average over the labels.
flat_recall_scorer = make_scorer(flat_recall_score, average="weighted", zero_division=0)
#: Flat token F1, weighted average over the labels (for other labels or
#: averages: ``make_scorer(flat_f1_score, average=..., labels=...)``).
flat_f1_scorer = make_scorer(flat_f1_score, average="weighted", zero_division=0)


# ---------------------------------------------------------------------------
# Significance tests (sklearn_crfloss/_significance.py, which reads the counts
# of _segment_metrics.py)
# ---------------------------------------------------------------------------

from ._evaluation import PairedTestResult, mcnemar_test, paired_bootstrap_test  # noqa: E402
