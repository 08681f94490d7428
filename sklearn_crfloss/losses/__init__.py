"""Training losses of :class:`~sklearn_crfloss.CRFTagger`.

Each loss family lives in its own module and registers its classes in
:data:`LOSSES` under the name accepted by ``CRFTagger(loss=...)``. To add a
loss: subclass :class:`BaseLoss`, implement ``value_and_grad`` on potentials,
declare the hyperparameters' ranges in ``_parameter_constraints``, set the
class flags, add it to :data:`LOSSES`, and the oracle and gradient tests
(``tests/test_losses.py``) cover it through the registry.
"""

from .._registry import resolve
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
    """Resolve a loss name or object into a validated loss object.

    A thin call to :func:`sklearn_crfloss._registry.resolve` with
    :data:`LOSSES`. :class:`~sklearn_crfloss.CRFTagger` calls it at the start
    of ``fit``; call it too before using a loss's ``value_and_grad``
    directly, since that method does not check the hyperparameters.

    Parameters
    ----------
    loss : str or object with ``value_and_grad``
        A name in :data:`LOSSES` or a loss instance.

    Returns
    -------
    BaseLoss or object
        A new instance for a name, else an unfitted copy of ``loss``
        (``sklearn.base.clone``), so that ``set_classes`` never changes the
        caller's object; its hyperparameters checked against its
        ``_parameter_constraints``.

    Raises
    ------
    ValueError
        If ``loss`` is an unknown name, or a hyperparameter is out of its
        range (scikit-learn's ``InvalidParameterError``, which names it).
    TypeError
        If ``loss`` is neither a string nor an object with a
        ``value_and_grad`` method.

    Examples
    --------
    >>> from sklearn_crfloss.losses import MixedLoss, get_loss
    >>> try:
    ...     get_loss(MixedLoss(lam=1.5))
    ... except ValueError as exc:
    ...     print(exc)
    The 'lam' parameter of MixedLoss must be a float in the range [0, 1]. Got 1.5 instead.
    """
    return resolve(loss, LOSSES, "loss")
