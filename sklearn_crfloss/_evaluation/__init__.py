"""Scores of predictions: segment and token metrics, label pairs, significance tests.

The public faces are :mod:`sklearn_crfloss.metrics` and
:mod:`sklearn_crfloss.segments`.
"""

from ._segment_metrics import (chunk_table, hamming_loss, segment_counts, segment_f1_score,
                               segment_precision_score, segment_recall_score, segment_report,
                               sequence_accuracy, token_accuracy)
from ._significance import mcnemar_test, paired_bootstrap_test, PairedTestResult
from ._token_metrics import (check_scorer_call, flat_accuracy_score, flat_classification_report,
                             flat_f1_score, flat_fbeta_score, flat_precision_score,
                             flat_recall_score)

__all__ = ["PairedTestResult", "check_scorer_call", "chunk_table",
           "flat_accuracy_score", "flat_classification_report", "flat_f1_score",
           "flat_fbeta_score", "flat_precision_score", "flat_recall_score",
           "hamming_loss", "mcnemar_test", "paired_bootstrap_test", "segment_counts",
           "segment_f1_score", "segment_precision_score", "segment_recall_score",
           "segment_report", "sequence_accuracy", "token_accuracy"]
