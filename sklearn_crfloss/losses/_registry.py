"""The registry of loss names (``CRFTagger(loss=...)``) and :func:`get_loss`."""

from .._utils import RESOLVER_DOC, fill_doc, resolve
from ._cost import JensenRiskBound, Risk, SoftmaxMargin
from ._likelihood import ConditionalLogLikelihood
from ._margin import MIRA, MaxMargin, StructuredPerceptron
from ._marginal import LabelwiseAccuracyLoss, MixedLoss, PointwiseLoss
from ._mce import MinimumClassificationError, SegmentFScoreMCE

__all__ = ["LOSSES", "get_loss"]

#: Registry of loss names accepted by ``CRFTagger(loss=...)``.
LOSSES = {
    "cll": ConditionalLogLikelihood,
    "softmax_margin": SoftmaxMargin,
    "jrb": JensenRiskBound,
    "risk": Risk,
    "max_margin": MaxMargin,
    "perceptron": StructuredPerceptron,
    "mira": MIRA,
    "labelwise": LabelwiseAccuracyLoss,
    "mixed": MixedLoss,
    "pointwise": PointwiseLoss,
    "mce": MinimumClassificationError,
    "mce_f": SegmentFScoreMCE,
}


@fill_doc(resolver=RESOLVER_DOC.format(what="loss", registry="LOSSES", base="BaseLoss"))
def get_loss(loss):
    """Resolve a loss name or object into a validated loss object.

    {resolver}

    Examples
    --------
    >>> from sklearn_crfloss.losses import MixedLoss, get_loss
    >>> try:
    ...     get_loss(MixedLoss(lam=1.5))
    ... except ValueError as exc:
    ...     print(exc)  # doctest: +ELLIPSIS
    The 'lam' parameter of MixedLoss must be a float in the range [0...]. Got 1.5 instead.
    """
    return resolve(loss, LOSSES, "loss")
