"""Conditional log-likelihood, the loss of CRFsuite, CRF++ and Wapiti."""

import numpy as np
from scipy.special import logsumexp

from ..inference import forward_backward, position_gold_counts, PositionTransitions
from ._base import BaseLoss, enumerated_gold_score, gold_counts

__all__ = ["ConditionalLogLikelihood"]


class ConditionalLogLikelihood(BaseLoss):
    """Negative conditional log-likelihood (``loss='cll'``).

    ``value = sum_i w_i (log Z(x_i) - score(y_i, x_i))``, i.e. the negative
    log-likelihood of the gold label sequences summed (not averaged) over
    sequences, as CRFsuite and CRF++ minimise it. Its gradient with respect
    to each potential is the difference between the expected counts under
    the model (marginals from forward-backward) and the gold counts:
    ``d_unary[t] = w_i (p(y_t | x_i) - onehot(y_t))`` and so on.

    Convex and smooth. It is the λ = 1 end of the mixed loss of Tsuboi &
    Kashima (Definition 3) and the starting point (MAP initialisation) of the
    nonconvex losses.

    References
    ----------
    J. Lafferty, A. McCallum, F. Pereira (2001). Conditional random fields:
    probabilistic models for segmenting and labeling sequence data. ICML.
    """

    name = "cll"

    def __loss_tags__(self):
        # Docstring inherited: the kernels' capabilities, of this exact class
        # (a subclass may change value_and_grad).
        tags = super().__loss_tags__()
        own = type(self) is ConditionalLogLikelihood
        tags.label_bigrams = tags.cll_blocks = tags.fused_out = own
        tags.sgd_step = "sum" if own else None
        return tags

    def fused_value_and_grad(self, objective, theta, out=None):
        # Docstring inherited: the objective's own kernel (CRFObjective.cll_value_and_grad),
        # label bigrams included; exact class only. ``out``: the array the
        # gradient is written into (LossTags.fused_out).
        if type(self) is not ConditionalLogLikelihood:
            return None
        return objective.cll_value_and_grad(theta, out=out)

    def value_and_grad(self, unary, transition, start, end, y, offsets,
                       sample_weight=None, n_threads=1):
        # Docstring inherited from BaseLoss.
        n_labels = unary.shape[1]
        fb = forward_backward(unary, transition, start, end, offsets,
                              sample_weight=sample_weight, n_threads=n_threads)
        token_weight, gold_trans, gold_start, gold_end = gold_counts(
            y, offsets, n_labels, sample_weight
        )
        if isinstance(transition, PositionTransitions):  # counts per matrix of the table
            gold_trans = position_gold_counts(transition, y, offsets, sample_weight)
            transition = transition.table
        # sum_i w_i score(y_i), from the gold counts: no per-sequence pass.
        rows = np.arange(y.shape[0])
        gold_unary = unary[rows, y]
        gold = (float(np.sum(gold_unary) if token_weight is None else np.dot(token_weight, gold_unary))
                + float(np.vdot(gold_trans, transition)) + float(np.dot(gold_start, start))
                + float(np.dot(gold_end, end)))
        d_unary = fb.marginals
        if sample_weight is None:
            value = float(fb.log_z.sum()) - gold
            d_unary[rows, y] -= 1.0
        else:
            value = float(np.dot(sample_weight, fb.log_z)) - gold
            d_unary[rows, y] -= 1.0
            d_unary *= token_weight[:, None]
        return (
            value,
            d_unary,
            fb.transition_counts - gold_trans,
            fb.start_counts - gold_start,
            fb.end_counts - gold_end,
        )

    def enumerated_loss(self, paths, scores, gold, token_weight=None):
        # Docstring inherited: log Z - score(gold).
        return float(logsumexp(scores)) - enumerated_gold_score(paths, scores, gold)
