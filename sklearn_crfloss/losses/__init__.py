"""Training losses of :class:`~sklearn_crfloss.CRFTagger`.

Each loss family lives in its own module and registers its classes in
:data:`LOSSES` under the name accepted by ``CRFTagger(loss=...)``. To add a
loss: subclass :class:`BaseLoss`, implement ``value_and_grad`` on potentials,
set the class flags, add it to :data:`LOSSES`, and the oracle and gradient
tests (``tests/test_losses.py``) cover it through the registry.
"""

from sklearn.base import clone

from ._base import BaseLoss
from ._cost import HammingCost, JensenRiskBound, LabelCost, Risk, SoftmaxMargin
from ._likelihood import ConditionalLogLikelihood
from ._margin import MIRA, MaxMargin, StructuredPerceptron
from ._marginal import LabelwiseAccuracyLoss, MixedLoss, PointwiseLoss
from ._mce import MinimumClassificationError, SegmentFScoreMCE

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

__all__ = ["LOSSES", "BaseLoss", "ConditionalLogLikelihood", "HammingCost",
           "JensenRiskBound", "LabelCost", "LabelwiseAccuracyLoss", "MIRA", "MaxMargin",
           "MinimumClassificationError", "MixedLoss", "PointwiseLoss", "Risk",
           "SegmentFScoreMCE", "SoftmaxMargin", "StructuredPerceptron", "get_loss"]


def get_loss(loss):
    """Resolve a loss name or object into a loss object.

    Parameters
    ----------
    loss : str or object with ``value_and_grad``
        A name in :data:`LOSSES` or a loss instance (returned as is).

    Returns
    -------
    BaseLoss or object
        A new instance for a name, else an unfitted copy of ``loss``
        (``sklearn.base.clone``), so that ``set_classes`` never changes the
        caller's object.

    Raises
    ------
    ValueError
        If ``loss`` is an unknown name.
    TypeError
        If ``loss`` is neither a string nor has a ``value_and_grad`` method.
    """
    if isinstance(loss, str):
        try:
            return LOSSES[loss]()
        except KeyError:
            raise ValueError(
                f"Unknown loss {loss!r}; choose one of {sorted(LOSSES)} or pass an object "
                "with a value_and_grad method."
            ) from None
    if not hasattr(loss, "value_and_grad"):
        raise TypeError(f"loss must be a string or have a value_and_grad method, got {loss!r}")
    return clone(loss, safe=False)
