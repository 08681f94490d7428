"""Margin losses trained online: max-margin, structured perceptron, MIRA.

All three compare the gold path with the best (cost-augmented) Viterbi path
and are not differentiable where the best path changes; they are trained by
the online solvers of :mod:`sklearn_crfloss.solvers`, not by L-BFGS.
"""

import numpy as np

from .._utils import fill_doc
from ..inference import position_gold_counts, PositionTransitions, sequence_scores, viterbi
from ._base import BaseLoss, enumerated_gold_score, gold_counts
from ._cost import COST_LOSS_SECTIONS, CostSensitiveLoss

__all__ = ["MaxMargin", "MIRA", "StructuredPerceptron"]


def _hinge(unary, augmented, transition, start, end, y, offsets, sample_weight):
    """sum_i w_i (max_y [score(y) + cost] - score(y_i)) and its subgradient.

    With :class:`~sklearn_crfloss.inference.PositionTransitions` the
    transition subgradient has the table's shape (counts per matrix).
    """
    n_tokens, L = unary.shape
    path, best = viterbi(augmented, transition, start, end, offsets)
    gold = sequence_scores(unary, transition, start, end, y, offsets)
    _, g_trans, g_start, g_end = gold_counts(y, offsets, L, sample_weight)
    token_weight, p_trans, p_start, p_end = gold_counts(path, offsets, L, sample_weight)
    if isinstance(transition, PositionTransitions):
        g_trans, p_trans = (position_gold_counts(transition, labels, offsets, sample_weight)
                            for labels in (y, path))
    d_unary = np.zeros((n_tokens, L))
    rows = np.arange(n_tokens)
    w = 1.0 if token_weight is None else token_weight
    np.add.at(d_unary, (rows, path), w)
    np.add.at(d_unary, (rows, y), -w)
    margins = best - gold
    value = float(margins.sum() if sample_weight is None else np.dot(sample_weight, margins))
    return value, d_unary, p_trans - g_trans, p_start - g_start, p_end - g_end


@fill_doc(cost_sections=COST_LOSS_SECTIONS)
class MaxMargin(CostSensitiveLoss):
    """Structured hinge loss with margin rescaling (``loss='max_margin'``).

    Gimpel & Smith (2010), Eq. 4 (Taskar et al. 2003):
    ``sum_i w_i (max_y [score(y) + cost(y_i, y)] - score(y_i))``, computed by
    Viterbi on the cost-augmented potentials. Convex but not smooth:
    ``value_and_grad`` returns a subgradient (the features of the
    cost-augmented Viterbi path minus the gold ones), and the estimator
    trains it with stochastic subgradient descent (``solver='sgd'``) under
    the L2 prior, never with L-BFGS, returning the average of the iterates
    when ``average=True`` (the default).

    {cost_sections}
    B. Taskar, C. Guestrin, D. Koller (2003). Max-margin Markov networks. NIPS.
    N. Ratliff, J. A. Bagnell, M. Zinkevich (2006). Subgradient methods for
    maximum margin structured learning.
    """

    name = "max_margin"

    def __loss_tags__(self):
        # Docstring inherited.
        tags = super().__loss_tags__()
        tags.smooth = False
        tags.default_solver = "sgd"
        # The kernels' capabilities, of the exact classes (a subclass may change value_and_grad).
        tags.label_bigrams = type(self) in (MaxMargin, MIRA)
        if type(self) is MaxMargin:
            self._declare_sgd_step(tags, "max")
        return tags

    def value_and_grad(self, unary, transition, start, end, y, offsets,
                       sample_weight=None, n_threads=1):
        # Docstring inherited; the gradient is a subgradient.
        return _hinge(unary, self._augmented(unary, y), transition, start, end, y, offsets,
                      sample_weight)

    def enumerated_loss(self, paths, scores, gold, token_weight=None):
        # Docstring inherited: max_y [score(y) + cost(gold, y)] - score(gold), Eq. 4.
        return (float(np.max(scores + self._path_costs(paths, gold)))
                - enumerated_gold_score(paths, scores, gold))


class StructuredPerceptron(BaseLoss):
    """Averaged structured perceptron (``loss='perceptron'``), Collins (2002).

    Online: for each training sequence (shuffled with ``random_state``
    every epoch), if the Viterbi path differs from the gold one, the gold
    features are added to the weights and the predicted ones subtracted;
    ``max_iter`` epochs; the averaged weights are returned when
    ``average=True`` (the default). No prior is used (``C`` is ignored).
    ``value_and_grad`` gives the perceptron loss
    ``sum_i w_i (max_y score(y) - score(y_i))`` and its subgradient, whose
    single-sequence step is the perceptron update.

    References
    ----------
    M. Collins (2002). Discriminative training methods for hidden Markov
    models: theory and experiments with perceptron algorithms. EMNLP.
    """

    name = "perceptron"

    def __loss_tags__(self):
        # Docstring inherited.
        tags = super().__loss_tags__()
        tags.smooth = False
        tags.default_solver = "perceptron"
        tags.label_bigrams = type(self) is StructuredPerceptron  # not a subclass's
        return tags

    def value_and_grad(self, unary, transition, start, end, y, offsets,
                       sample_weight=None, n_threads=1):
        # Docstring inherited; the gradient is a subgradient.
        return _hinge(unary, unary, transition, start, end, y, offsets, sample_weight)

    def enumerated_loss(self, paths, scores, gold, token_weight=None):
        # Docstring inherited: max_y score(y) - score(gold).
        return float(np.max(scores)) - enumerated_gold_score(paths, scores, gold)


@fill_doc(cost_sections=COST_LOSS_SECTIONS)
class MIRA(MaxMargin):
    """1-best MIRA with cost-augmented inference (``loss='mira'``).

    Online (Crammer et al. 2006, passive-aggressive PA-I; Gimpel & Smith
    2010, section 4.1): for each sequence, predict
    ``y = argmax score(y) + cost(y_i, y)``; if
    ``l = score(y) + cost(y_i, y) - score(y_i) > 0`` move the weights by
    ``tau (f(y_i) - f(y))`` with ``tau = min(C, l / ||f(y_i) - f(y)||^2)``,
    the smallest step that makes the gold path win by the cost, clipped at
    the estimator's ``C``. ``max_iter`` epochs, averaged weights by default.
    ``value_and_grad`` is :class:`MaxMargin`'s structured hinge, which the
    update decreases.

    {cost_sections}
    K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz, Y. Singer (2006).
    Online passive-aggressive algorithms. JMLR 7.
    """

    name = "mira"

    def __loss_tags__(self):
        # Docstring inherited.
        tags = super().__loss_tags__()
        tags.default_solver = "mira"
        return tags
