"""The bound objective of a fit, of the class its layout needs."""

from ._objective import CRFObjective, LabelExpertObjective
from ._second_order import SecondOrderObjective

__all__ = ["make_objective"]


def make_objective(X, y, offsets, layout, **kwargs):
    """The bound objective of a fit: a :class:`LabelExpertObjective` where one is needed.

    Parameters
    ----------
    X, y, offsets, layout, **kwargs
        As :class:`~sklearn_crfloss._model._objective.CRFObjective`.

    Returns
    -------
    CRFObjective
        A :class:`~sklearn_crfloss._model._second_order.SecondOrderObjective`
        for a second-order layout (``layout.order == 2``); a
        :class:`LabelExpertObjective` if ``layout`` has bigram blocks and
        some transitions are fixed (a label expert); else a plain
        :class:`~sklearn_crfloss._model._objective.CRFObjective`.
    """
    if layout.order == 2:
        return SecondOrderObjective(X, y, offsets, layout, **kwargs)
    label_expert = layout.n_bigram and not layout.tail_masks()[0].all()
    return (LabelExpertObjective if label_expert else CRFObjective)(X, y, offsets, layout,
                                                                    **kwargs)
