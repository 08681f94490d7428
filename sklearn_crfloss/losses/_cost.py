"""Cost functions and cost-sensitive losses (Gimpel & Smith 2010).

A cost ``cost(y*, y) = sum_t c(y*_t, y_t)`` that decomposes over positions
like the unary features (Gimpel & Smith, section 3.2) enters inference as
extra unary potentials: for gold labels ``y*`` the cost-augmented
potentials are ``U'[t, j] = U[t, j] + c(y*_t, j)``, and every existing kernel
(forward-backward, Viterbi) runs unchanged on ``U'``. Because
``c(y, y) = 0``, the gold path's score is the same under ``U`` and ``U'``.
"""

from numbers import Real

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator

from .._utils import fill_doc, HasMethods, Interval, resolve, StrOptions
from ..inference import forward_backward, marginals_vjp
from ._base import BaseLoss, enumerated_gold_score
from ._fused import RISK, applies, marginal_loss, softmax_margin
from ._likelihood import ConditionalLogLikelihood

__all__ = ["COST_LOSS_SECTIONS", "CostSensitiveLoss", "HammingCost", "JensenRiskBound",
           "LabelCost", "Risk", "SoftmaxMargin", "check_cost_matrix", "get_cost"]

#: The Parameters, Attributes and first References entry of every
#: cost-sensitive loss's docstring (``{cost_sections}``, see ``fill_doc``).
COST_LOSS_SECTIONS = """
Parameters
----------
cost : {'hamming'} or dict or cost object, default='hamming'
    ``'hamming'`` (:class:`HammingCost`), a dict of (gold, predicted)
    label-pair costs (:class:`LabelCost`), or an object with
    ``matrix(classes)``.
cost_scale : float, default=1.0
    Multiplier ``m`` of the cost (the paper tries 1, 5, 10, 20), ``>= 0``.
    Ignored when ``cost`` is an object, which carries its own.

Attributes
----------
classes_ : ndarray of shape (n_labels,)
    Label names of the label indices, set by :meth:`set_classes`.
cost_matrix_ : ndarray of float64 of shape (n_labels, n_labels)
    ``cost_matrix_[a, b] = c(a, b)``, the cost of predicting label index
    ``b`` where the gold label index is ``a``, set by :meth:`set_classes`
    (the cost-augmented inference of the online MIRA rule reads it).

References
----------
K. Gimpel, N. A. Smith (2010). Softmax-margin CRFs: training log-linear
models with cost functions. NAACL-HLT.
"""

_NON_NEGATIVE = Interval(Real, 0, None, closed="left")


class HammingCost(BaseEstimator):
    """Hamming cost: ``cost_scale`` for every mislabelled token.

    ``c(a, b) = cost_scale * [a != b]`` (Gimpel & Smith 2010, section 4, with
    the multiplier ``m``).

    Parameters
    ----------
    cost_scale : float, default=1.0
        The multiplier ``m`` (the paper tries 1, 5, 10, 20); ``>= 0``.
    """

    _parameter_constraints: dict = {"cost_scale": [_NON_NEGATIVE]}

    def __init__(self, cost_scale=1.0):
        self.cost_scale = cost_scale

    def matrix(self, classes):
        """Cost matrix ``c[a, b]`` of shape (n_classes, n_classes) in ``classes`` order."""
        n = len(classes)
        return float(self.cost_scale) * (1.0 - np.eye(n))


class LabelCost(BaseEstimator):
    """Per-label-pair cost given by label names.

    ``c(a, b) = cost_scale * costs[(a, b)]`` for gold label ``a`` and
    predicted label ``b``; pairs not listed cost ``default`` (the Hamming
    cost when ``default=1``), and ``c(a, a) = 0`` always. A recall-oriented
    cost for NER charges more for predicting ``O`` on an entity token than
    the reverse, e.g. ``{("B-PER", "O"): 5.0, ("I-PER", "O"): 5.0}``.

    Parameters
    ----------
    costs : dict of (label, label) -> float
        Costs of (gold, predicted) label pairs, non-negative.
    default : float, default=1.0
        Cost of a mislabelled pair not in ``costs``, ``>= 0``.
    cost_scale : float, default=1.0
        Multiplier of every cost, ``>= 0``.

    Raises
    ------
    ValueError
        From :meth:`matrix`, naming the key: if a key of ``costs`` is not
        a pair of labels, its cost is not a finite non-negative number, a
        diagonal pair has a non-zero cost, or a pair names a label that is
        not among the training labels (a misspelt label would otherwise
        leave the cost without effect). The ranges of ``default`` and
        ``cost_scale`` are checked by :func:`get_cost`.
    """

    _parameter_constraints: dict = {
        "costs": [dict],
        "default": [_NON_NEGATIVE],
        "cost_scale": [_NON_NEGATIVE],
    }

    def __init__(self, costs, default=1.0, cost_scale=1.0):
        self.costs = costs
        self.default = default
        self.cost_scale = cost_scale

    def matrix(self, classes):
        """Cost matrix ``c[a, b]`` of shape (n_classes, n_classes) in ``classes`` order."""
        index = {c: i for i, c in enumerate(classes)}
        costs = dict(self.costs)
        for key, value in costs.items():
            _check_pair(key, value)
        unknown = sorted({repr(label) for pair in costs for label in pair
                          if label not in index})
        if unknown:
            raise ValueError(
                f"the cost names labels that are not among the training labels: "
                f"{', '.join(unknown)} (the labels are {np.asarray(classes).tolist()}).")
        n = len(classes)
        M = float(self.default) * (1.0 - np.eye(n))
        for (a, b), value in costs.items():
            if a == b and value != 0:
                raise ValueError(f"cost of ({a!r}, {a!r}) must be 0, got {value}")
            M[index[a], index[b]] = value
        return float(self.cost_scale) * M


def _check_pair(key, value):
    """Refuse a cost entry that is not ``(gold, predicted) -> finite cost >= 0``.

    Raises
    ------
    ValueError
        Naming the key: it is not a pair of labels, or its cost is not a
        real number, not finite or negative.
    """
    if not isinstance(key, tuple) or len(key) != 2:
        raise ValueError(
            f"a cost given as a dict maps (gold, predicted) label pairs to costs: the key "
            f"{key!r} is not a pair of two labels.")
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"cost of {key!r} must be a real number, got {value!r} "
                         f"({type(value).__name__}).")
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"cost of {key!r} must be finite and non-negative, got {value}.")


def check_cost_matrix(M, n_labels, cost, cost_scale):
    """The cost matrix as float64, checked: its shape, finite, non-negative.

    Parameters
    ----------
    M : array-like
        What the cost object's ``matrix(classes)`` returned.
    n_labels : int
    cost, cost_scale
        The loss's parameters, named in the message.

    Returns
    -------
    ndarray of float64 of shape (n_labels, n_labels)

    Raises
    ------
    ValueError
        If ``M`` is not of shape (n_labels, n_labels) of real numbers, or
        holds a value that is not finite (e.g. an infinite ``cost_scale``
        times a zero) or is negative, naming the first such pair of label
        indices.
    """
    try:
        M = np.asarray(M, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"the cost matrix of cost={cost!r} is not an array of real numbers.") \
            from None
    if M.shape != (n_labels, n_labels):
        raise ValueError(f"cost matrix has shape {M.shape}, expected {(n_labels, n_labels)}")
    bad = np.argwhere(~np.isfinite(M) | (M < 0))
    if bad.shape[0]:
        a, b = (int(i) for i in bad[0])
        raise ValueError(
            f"the cost matrix of cost={cost!r} with cost_scale={cost_scale!r} must be finite "
            f"and non-negative; entry ({a}, {b}) (label indices: gold, predicted) is "
            f"{M[a, b]}. A cost of inf or nan makes the loss and every trained parameter "
            "not finite.")
    return M


def get_cost(cost, cost_scale):
    """Resolve the ``cost`` of a cost-sensitive loss into a validated cost object.

    Parameters
    ----------
    cost : {'hamming'} or dict or object with ``matrix(classes)``
        ``'hamming'``, a dict of (gold, predicted) label-pair costs, or a
        cost object (cloned).
    cost_scale : float
        Multiplier of the cost, for ``'hamming'`` and a dict.

    Returns
    -------
    HammingCost or LabelCost or object
        Its parameters checked against its ``_parameter_constraints``.

    Raises
    ------
    ValueError
        If ``cost`` is an unknown name or a parameter is out of range.
    TypeError
        If ``cost`` is neither a string, a dict nor has a ``matrix`` method.
    """
    if isinstance(cost, dict):
        cost = LabelCost(cost, cost_scale=cost_scale)
    elif isinstance(cost, str) and cost == "hamming":
        cost = HammingCost(cost_scale=cost_scale)
    return resolve(cost, {"hamming": HammingCost}, "cost", method="matrix")


@fill_doc(cost_sections=COST_LOSS_SECTIONS)
class CostSensitiveLoss(BaseLoss):
    """Base class of the losses that take a cost: the cost matrix and ``U + cost``.

    Not registered itself; :class:`SoftmaxMargin`, :class:`JensenRiskBound`,
    :class:`Risk`, :class:`MaxMargin` and :class:`MIRA` derive from it.

    {cost_sections}
    """

    _parameter_constraints: dict = {
        "cost": [StrOptions({"hamming"}), dict, HasMethods(["matrix"])],
        "cost_scale": [_NON_NEGATIVE],
    }

    def __init__(self, cost="hamming", cost_scale=1.0):
        self.cost = cost
        self.cost_scale = cost_scale

    def set_classes(self, classes):
        # Docstring inherited; also sets cost_matrix_ in classes_ order (a
        # ValueError if the cost is invalid: see get_cost, LabelCost.matrix).
        super().set_classes(classes)
        self.cost_matrix_ = check_cost_matrix(
            get_cost(self.cost, self.cost_scale).matrix(self.classes_), len(self.classes_),
            self.cost, self.cost_scale)
        return self

    def __loss_tags__(self):
        # Docstring inherited: the kernels' capabilities, of the exact classes
        # (a subclass may change value_and_grad).
        tags = super().__loss_tags__()
        tags.label_bigrams = type(self) in (SoftmaxMargin, JensenRiskBound, Risk)
        if type(self) is SoftmaxMargin:
            self._declare_sgd_step(tags, "sum")
        return tags

    def _declare_sgd_step(self, tags, step):
        """Declare the compiled SGD ``step`` on ``cost_matrix_`` once set_classes has set it."""
        cost = getattr(self, "cost_matrix_", None)
        if cost is not None:  # not prepared with set_classes: the generic path
            tags.sgd_step, tags.sgd_cost = step, cost

    def _cost_matrix(self, n_labels):
        """The (n_labels, n_labels) cost matrix as float64, checked as ``_cost_rows``."""
        return np.ascontiguousarray(self._cost_rows(np.arange(n_labels), n_labels),
                                    dtype=np.float64)

    def _augmented(self, unary, y):
        """``U + c(y*_t, .)``: unary potentials plus each token's cost row."""
        return unary + self._cost_rows(y, unary.shape[1])

    def _cost_rows(self, y, n_labels):
        """``c(y*_t, .)`` for every token: shape (n_tokens, n_labels)."""
        M = getattr(self, "cost_matrix_", None)
        if M is None:  # not prepared: labels are their indices
            if isinstance(self.cost, dict):
                raise ValueError("a cost given by label names needs set_classes(classes) first "
                                 "(CRFTagger.fit calls it)")
            M = check_cost_matrix(get_cost(self.cost, self.cost_scale).matrix(
                np.arange(n_labels)), n_labels, self.cost, self.cost_scale)
        if M.shape != (n_labels, n_labels):
            raise ValueError(f"cost matrix has shape {M.shape}, expected {(n_labels, n_labels)}")
        return M[y]

    def _path_costs(self, paths, gold):
        """``cost(gold, y)`` of every row ``y`` of ``paths`` (definitions by enumeration)."""
        rows = self._cost_rows(gold, int(paths[-1, 0]) + 1)
        return rows[np.arange(paths.shape[1]), paths].sum(axis=1)


@fill_doc(cost_sections=COST_LOSS_SECTIONS)
class SoftmaxMargin(CostSensitiveLoss):
    """Softmax-margin (``loss='softmax_margin'``), Gimpel & Smith (2010), Eq. 6.

    ``value = sum_i w_i (log sum_y exp(score(y) + cost(y_i, y)) - score(y_i))``:
    conditional log-likelihood with the cost added inside the partition
    function, so high-cost outputs are pushed down harder. Its gradient is
    the cost-augmented marginals minus the gold indicators. Convex and smooth;
    an upper bound on CLL (Eq. 3), on the risk (Eq. 5, through Eq. 7) and a
    differentiable upper bound on max-margin (Eq. 4).

    {cost_sections}
    """

    name = "softmax_margin"

    def value_and_grad(self, unary, transition, start, end, y, offsets,
                       sample_weight=None, n_threads=1):
        # Docstring inherited. CLL on U + cost, whose gold score counts
        # cost(y*, y*) (0 for the package's costs): added back, as Eq. 6 has
        # the plain score(y*).
        value, *grads = ConditionalLogLikelihood().value_and_grad(
            self._augmented(unary, y), transition, start, end, y, offsets,
            sample_weight=sample_weight, n_threads=n_threads)
        own = self._cost_rows(y, unary.shape[1])[np.arange(y.shape[0]), y]
        if sample_weight is not None:
            own = own * np.repeat(sample_weight, np.diff(offsets))
        return (value + float(own.sum()), *grads)

    def fused_value_and_grad(self, objective, theta):
        # Docstring inherited: the log-likelihood's kernel on the features
        # widened by the cost columns (losses/_fused.py).
        if not applies(self, SoftmaxMargin, objective):
            return None
        return softmax_margin(objective, theta, self._cost_matrix(objective.n_labels))

    def enumerated_loss(self, paths, scores, gold, token_weight=None):
        # Docstring inherited: log sum_y exp(score(y) + cost(gold, y)) - score(gold), Eq. 6.
        return (float(logsumexp(scores + self._path_costs(paths, gold)))
                - enumerated_gold_score(paths, scores, gold))


class _ExpectedCostLoss(CostSensitiveLoss):
    """What the risk and its Jensen bound share: both are smooth and nonconvex.

    Functions of the expected cost under the model (Eq. 5 and its bound,
    Eq. 7), they are trained by L-BFGS from a CLL fit.
    """

    def __loss_tags__(self):
        # Docstring inherited.
        tags = super().__loss_tags__()
        tags.convex = False
        tags.needs_init = True
        return tags


@fill_doc(cost_sections=COST_LOSS_SECTIONS)
class JensenRiskBound(_ExpectedCostLoss):
    """Jensen risk bound (``loss='jrb'``), Gimpel & Smith (2010), section 3.1.

    ``value = sum_i w_i log E_p[exp cost(y_i, .)] = softmax-margin - CLL``
    (Eq. 7 minus Eq. 3): by Jensen's inequality an upper bound on the risk
    ``sum_i w_i E_p[cost(y_i, .)]`` (Eq. 5). Per sequence it is
    ``log Z(U + cost) - log Z(U)``, so its gradient is the cost-augmented
    marginals minus the plain marginals: two forward-backward passes and no
    backpropagation through the marginals (cheaper than the risk). Smooth,
    nonconvex: start from a CLL fit (``init='cll'``).

    {cost_sections}
    """

    name = "jrb"

    def value_and_grad(self, unary, transition, start, end, y, offsets,
                       sample_weight=None, n_threads=1):
        # Docstring inherited.
        aug = forward_backward(self._augmented(unary, y), transition, start, end, offsets,
                               sample_weight=sample_weight, n_threads=n_threads)
        plain = forward_backward(unary, transition, start, end, offsets,
                                 sample_weight=sample_weight, n_threads=n_threads)
        diff = aug.log_z - plain.log_z
        d_unary = aug.marginals - plain.marginals
        if sample_weight is None:
            value = float(diff.sum())
        else:
            value = float(np.dot(sample_weight, diff))
            d_unary *= np.repeat(sample_weight, np.diff(offsets))[:, None]
        return (value, d_unary, aug.transition_counts - plain.transition_counts,
                aug.start_counts - plain.start_counts, aug.end_counts - plain.end_counts)

    def enumerated_loss(self, paths, scores, gold, token_weight=None):
        # Docstring inherited: log E_p[exp cost(gold, .)], section 3.1.
        return float(logsumexp(scores + self._path_costs(paths, gold)) - logsumexp(scores))


@fill_doc(cost_sections=COST_LOSS_SECTIONS)
class Risk(_ExpectedCostLoss):
    """Expected cost, the risk (``loss='risk'``), Gimpel & Smith (2010), Eq. 5.

    ``value = sum_i w_i E_{p(y | x_i)}[cost(y_i, y)]``. For a cost that
    decomposes over positions the expectation needs only the node marginals,
    ``sum_t sum_j p(y_t = j | x_i) c(y_{i,t}, j)``, so the gradient is the
    vector-Jacobian product of the marginals
    (:func:`sklearn_crfloss.inference.marginals_vjp`) applied to
    ``dl/dmu[t, j] = w_i c(y_{i,t}, j)``: about three forward-backward passes
    per evaluation, against two for :class:`JensenRiskBound`. Smooth and
    nonconvex: start from a CLL fit (``init='cll'``).

    {cost_sections}
    """

    name = "risk"

    def value_and_grad(self, unary, transition, start, end, y, offsets,
                       sample_weight=None, n_threads=1):
        # Docstring inherited.
        cost_rows = self._cost_rows(y, unary.shape[1])
        if sample_weight is not None:
            cost_rows = cost_rows * np.repeat(sample_weight, np.diff(offsets))[:, None]
        fb = forward_backward(unary, transition, start, end, offsets, n_threads=n_threads)
        value = float(np.sum(fb.marginals * cost_rows))
        d_unary, d_T, d_start, d_end = marginals_vjp(
            unary, transition, start, end, offsets, cost_rows, n_threads=n_threads)
        return value, d_unary, d_T, d_start, d_end

    def fused_value_and_grad(self, objective, theta):
        # Docstring inherited: marginal_loss_features_batch (losses/_fused.py).
        if not applies(self, Risk, objective):
            return None
        return marginal_loss(objective, theta, self, RISK,
                             cost=self._cost_matrix(objective.n_labels))

    def enumerated_loss(self, paths, scores, gold, token_weight=None):
        # Docstring inherited: E_p[cost(gold, .)], Eq. 5.
        prob = np.exp(scores - logsumexp(scores))
        return float(np.dot(prob, self._path_costs(paths, gold)))
