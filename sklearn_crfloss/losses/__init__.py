"""Training losses of :class:`~sklearn_crfloss.CRFTagger`.

Each loss family lives in its own module and registers its classes in
:data:`LOSSES` under the name accepted by ``CRFTagger(loss=...)``. To add a
loss: subclass :class:`BaseLoss`, implement ``value_and_grad`` on potentials,
declare the hyperparameters' ranges in ``_parameter_constraints``, declare
its capabilities (:class:`LossTags`, returned by ``__loss_tags__``), declare its definition by enumeration
(:meth:`BaseLoss.enumerated_loss`), add it to :data:`LOSSES`, and
:func:`check_loss` (run on every registered loss by ``tests/test_losses.py``)
checks its value against that definition and its gradient against finite
differences. A loss of one's own, not registered, is checked the same way
with ``check_loss(MyLoss())``.
"""

from ._base import BaseLoss, get_loss_tags, gold_counts, LossTags
from ._check import (check_loss, enumerate_paths, loss_by_enumeration, LossCheckError,
                     LossCheckReport, LossCheckResult)
from ._cost import CostSensitiveLoss, HammingCost, JensenRiskBound, LabelCost, Risk, SoftmaxMargin
from ._likelihood import ConditionalLogLikelihood
from ._margin import MIRA, MaxMargin, StructuredPerceptron
from ._marginal import LabelwiseAccuracyLoss, MixedLoss, PointwiseLoss
from ._mce import MinimumClassificationError, SegmentFScoreMCE
from ._registry import LOSSES, get_loss

__all__ = ["LOSSES", "BaseLoss", "ConditionalLogLikelihood", "CostSensitiveLoss", "HammingCost",
           "JensenRiskBound", "LabelCost", "LabelwiseAccuracyLoss", "MIRA", "MaxMargin",
           "MinimumClassificationError", "MixedLoss", "PointwiseLoss", "Risk",
           "SegmentFScoreMCE", "SoftmaxMargin", "StructuredPerceptron", "get_loss",
           # the declared capabilities of a loss
           "LossTags", "get_loss_tags",
           # checking a loss (the loss author's tools)
           "LossCheckError", "LossCheckReport", "LossCheckResult", "check_loss",
           "enumerate_paths", "loss_by_enumeration"]
