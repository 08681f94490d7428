"""Losses on the node marginals: pointwise, λ-mixed (Markov) and labelwise accuracy.

Every loss here is a function of the node marginals
``mu[t, j] = p(y_t = j | x)`` (and, for the mixed loss, of the sequence
log-likelihood). The value is numpy on top of
:func:`~sklearn_crfloss.inference.forward_backward`; the gradient is the
loss's ``dl/dmu`` pushed through
:func:`~sklearn_crfloss.inference.marginals_vjp`.

Per-token weights
-----------------
All three losses accept ``token_weight`` (ndarray of shape (n_tokens,),
non-negative) in ``value_and_grad``, the position-dependent weights
``w_t^(i)`` of Tsuboi & Kashima, Section 6: they multiply each token's term
(for the mixed loss, the pointwise part only, as in Section 6).
:meth:`CRFTagger.fit <sklearn_crfloss.CRFTagger.fit>` forwards its
``token_weight`` argument (a list of per-token arrays) here. They combine
multiplicatively with the per-sequence ``sample_weight``.
"""

from numbers import Integral, Real

import numpy as np
from scipy.special import expit, logsumexp

from .._utils import Interval, StrOptions, validate_parameter_constraints
from ..inference import forward_backward, marginals_vjp, position_gold_counts, PositionTransitions
from ._base import BaseLoss, enumerated_gold_score, enumerated_marginals, gold_counts
from ._fused import LABELWISE_MODES, MIXED, POINTWISE, applies, marginal_loss

__all__ = ["LabelwiseAccuracyLoss", "MixedLoss", "PointwiseLoss"]

# alpha of the sigmoid: a finite number > 0.
_POSITIVE = Interval(Real, 0, None, closed="neither")

# Floor of a gold marginal inside a logarithm (an underflowed marginal would
# give an infinite loss and gradient).
_TINY = 1e-300


def token_weights(y, offsets, sample_weight, token_weight):
    """Per-token weight: sample_weight of the token's sequence times token_weight.

    Also used by the fused evaluations (``losses/_fused.py``).

    Raises
    ------
    ValueError
        If ``token_weight`` does not have one weight per token, or has a
        negative or non-finite one.
    """
    w = np.ones(y.shape[0])
    if sample_weight is not None:
        w = np.repeat(np.asarray(sample_weight, dtype=np.float64), np.diff(offsets))
    if token_weight is not None:
        token_weight = np.asarray(token_weight, dtype=np.float64)
        if token_weight.shape != y.shape:
            raise ValueError(
                f"token_weight must have shape {y.shape} (one weight per token), "
                f"got {token_weight.shape}"
            )
        if not np.all(np.isfinite(token_weight)) or np.any(token_weight < 0):
            raise ValueError("token_weight must be finite and non-negative")
        w = w * token_weight
    return w


def _pointwise(unary, transition, start, end, y, offsets, w, n_threads, fb=None):
    """Weighted pointwise loss ``-sum_t w_t log mu_t(y*_t)`` and its dl/dmu."""
    if fb is None:
        fb = forward_backward(unary, transition, start, end, offsets, n_threads=n_threads)
    rows = np.arange(y.shape[0])
    gold = np.maximum(fb.marginals[rows, y], _TINY)
    value = -float(np.dot(w, np.log(gold)))
    grad_mu = np.zeros_like(fb.marginals)
    grad_mu[rows, y] = -w / gold
    return value, grad_mu


def _enumerated_gold_marginals(paths, scores, gold, token_weight):
    """``p(y_t = y*_t | x)`` and the token weights (1 if None) of one enumerated chain."""
    mu = enumerated_marginals(paths, scores)[np.arange(gold.shape[0]), gold]
    return mu, (np.ones(gold.shape[0]) if token_weight is None else token_weight)


def _enumerated_pointwise(paths, scores, gold, token_weight):
    """``-sum_t w_t log p(y_t = y*_t | x)`` of one enumerated chain."""
    mu, tw = _enumerated_gold_marginals(paths, scores, gold, token_weight)
    return -float(np.dot(tw, np.log(mu)))


class _MarginalLoss(BaseLoss):
    """What the losses of the marginals share: nonconvex, from a CLL fit, token weights."""

    def __loss_tags__(self):
        # Docstring inherited.
        tags = super().__loss_tags__()
        tags.convex = False
        tags.needs_init = True
        tags.supports_token_weight = True
        # The kernels' capabilities, of the exact classes (a subclass may change value_and_grad).
        tags.label_bigrams = type(self) in (PointwiseLoss, LabelwiseAccuracyLoss, MixedLoss)
        return tags

    def _fused_marginal(self, objective, theta, mode, alpha=0.0, lam=0.0):
        """``marginal_loss_features_batch`` in ``mode`` with the objective's token weights."""
        w = token_weights(objective.y, objective.offsets, objective.sample_weight,
                          objective.token_weight)
        return marginal_loss(objective, theta, self, mode, alpha, token_weight=w, lam=lam)


class PointwiseLoss(_MarginalLoss):
    """Pointwise (marginal) log loss (``loss='pointwise'``).

    ``L_0 = - sum_i w_i sum_t w_t log p(y_t = y*_t | x_i)``, Tsuboi & Kashima
    Definition 2, Eq. (2.2) (Kakade et al. 2002; Gross et al. 2006, Eq. (4)),
    with the optional position-dependent weights ``w_t`` of Tsuboi & Kashima
    Section 6 (``token_weight``) and per-sequence weights ``w_i``
    (``sample_weight``). Its gradient is ``dl/dmu[t, y*_t] = -w_i w_t /
    mu[t, y*_t]`` pushed through the marginal VJP.

    Nonconvex in the parameters; start from a CLL fit
    (``CRFTagger(init='cll')``).

    References
    ----------
    S. Kakade, Y. W. Teh, S. Roweis (2002). An alternate objective function for
    Markovian fields. ICML.
    Y. Tsuboi, H. Kashima. A new loss function with "Markov property" for
    information extraction, Definition 2 and Section 6.
    """

    name = "pointwise"

    def value_and_grad(self, unary, transition, start, end, y, offsets,
                       sample_weight=None, n_threads=1, token_weight=None):
        """Loss value and gradient; see :meth:`BaseLoss.value_and_grad`.

        Parameters
        ----------
        token_weight : ndarray of shape (n_tokens,), default=None
            Non-negative per-token weights ``w_t`` (Tsuboi & Kashima,
            Section 6); ``None`` means 1. Other parameters as in
            :meth:`BaseLoss.value_and_grad`.

        Raises
        ------
        ValueError
            If ``token_weight`` has the wrong shape or negative entries.
        """
        w = token_weights(y, offsets, sample_weight, token_weight)
        value, grad_mu = _pointwise(unary, transition, start, end, y, offsets, w, n_threads)
        return (value, *marginals_vjp(unary, transition, start, end, offsets, grad_mu,
                                      n_threads=n_threads))

    def fused_value_and_grad(self, objective, theta):
        # Docstring inherited: marginal_loss_features_batch (losses/_fused.py).
        if not applies(self, PointwiseLoss, objective):
            return None
        return self._fused_marginal(objective, theta, POINTWISE)

    def enumerated_loss(self, paths, scores, gold, token_weight=None):
        # Docstring inherited: Definition 2, -sum_t w_t log p(y_t = y*_t | x).
        return _enumerated_pointwise(paths, scores, gold, token_weight)


class MixedLoss(_MarginalLoss):
    """λ-mixed loss of Tsuboi & Kashima (``loss='mixed'``).

    ``L_λ = λ L_1 + (1 - λ) L_0`` (Definition 3, Eqs. (3.6)-(3.7)): ``L_1``
    is the negative conditional log-likelihood (Definition 1, ``'cll'``),
    ``L_0`` the pointwise loss (Definition 2, ``'pointwise'``). ``λ = 1`` is
    CLL, ``λ = 0`` pointwise. By Theorem 1, with ``λ = k / (k + 1)``,
    ``L_λ / (1 - λ)`` equals the k-th order Markov loss ``M_k``
    (Definition 4, Eq. (3.9)), the log loss of every window of ``k + 1``
    consecutive gold labels; ``markov_order=k`` selects that ``λ``.

    Parameters
    ----------
    lam : float in [0, 1], default=0.5
        Weight ``λ`` of the sequential (CLL) term. Ignored when
        ``markov_order`` is set.
    markov_order : int >= 0 or None, default=None
        If set, ``λ = markov_order / (markov_order + 1)`` (Theorem 1,
        Eq. (3.10)); ``0`` is the pointwise loss.

    Notes
    -----
    ``token_weight`` weights the pointwise part only (Tsuboi & Kashima,
    Section 6). With ``start``/``end`` potentials in the role of the
    transitions from and to the paper's dummy label ``σ_0``, Theorem 1 holds
    exactly, with no boundary term (tested in ``tests/test_marginal_losses.py``
    by enumerating ``M_k``).

    Raises
    ------
    ValueError
        From :func:`~sklearn_crfloss.losses.get_loss` (and so from
        ``CRFTagger.fit``), if ``lam`` is outside [0, 1] or ``markov_order``
        is not a non-negative integer.

    References
    ----------
    Y. Tsuboi, H. Kashima. A new loss function with "Markov property" for
    information extraction, Definitions 3-4, Theorem 1.
    """

    name = "mixed"

    _parameter_constraints: dict = {
        "lam": [Interval(Real, 0, 1, closed="both")],
        "markov_order": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(self, lam=0.5, markov_order=None):
        self.lam = lam
        self.markov_order = markov_order

    def _lambda(self):
        """The ``λ`` in use: from ``markov_order`` if set, else ``lam``."""
        if self.markov_order is not None:
            return self.markov_order / (self.markov_order + 1.0)
        return float(self.lam)

    def value_and_grad(self, unary, transition, start, end, y, offsets,
                       sample_weight=None, n_threads=1, token_weight=None):
        """Loss value and gradient; see :meth:`BaseLoss.value_and_grad`.

        Parameters
        ----------
        token_weight : ndarray of shape (n_tokens,), default=None
            Per-token weights of the pointwise part (Tsuboi & Kashima,
            Section 6). Other parameters as in :meth:`BaseLoss.value_and_grad`.
        """
        lam = self._lambda()
        n_labels = unary.shape[1]
        fb = forward_backward(unary, transition, start, end, offsets,
                              sample_weight=sample_weight, n_threads=n_threads)
        # Sequential part L_1 (as in ConditionalLogLikelihood).
        seq_w, gold_trans, gold_start, gold_end = gold_counts(y, offsets, n_labels,
                                                              sample_weight)
        table = transition
        if isinstance(transition, PositionTransitions):  # counts per matrix of the table
            gold_trans = position_gold_counts(transition, y, offsets, sample_weight)
            table = transition.table
        rows = np.arange(y.shape[0])
        gold_unary = unary[rows, y]
        sw = np.ones(offsets.shape[0] - 1) if sample_weight is None else sample_weight
        tw = np.ones(y.shape[0]) if seq_w is None else seq_w
        l1 = (float(np.dot(sw, fb.log_z)) - float(np.dot(tw, gold_unary))
              - float(np.vdot(gold_trans, table)) - float(np.dot(gold_start, start))
              - float(np.dot(gold_end, end)))
        d_unary = fb.marginals * tw[:, None]
        d_unary[rows, y] -= tw
        d_trans = fb.transition_counts - gold_trans
        d_start = fb.start_counts - gold_start
        d_end = fb.end_counts - gold_end
        if lam == 1.0:
            return l1, d_unary, d_trans, d_start, d_end
        # Pointwise part L_0 through the marginal VJP.
        w = token_weights(y, offsets, sample_weight, token_weight)
        l0, grad_mu = _pointwise(unary, transition, start, end, y, offsets, w, n_threads,
                                 fb=fb)
        pU, pT, ps, pe = marginals_vjp(unary, transition, start, end, offsets, grad_mu,
                                       n_threads=n_threads)
        mix = 1.0 - lam
        return (lam * l1 + mix * l0, lam * d_unary + mix * pU, lam * d_trans + mix * pT,
                lam * d_start + mix * ps, lam * d_end + mix * pe)

    def fused_value_and_grad(self, objective, theta):
        # Docstring inherited: the log-likelihood's kernel at lam = 1, else
        # marginal_loss_features_batch (losses/_fused.py).
        if not applies(self, MixedLoss, objective):
            return None
        lam = self._lambda()
        if lam == 1.0:
            return objective.cll_value_and_grad(theta)
        return self._fused_marginal(objective, theta, MIXED, lam=lam)

    def enumerated_loss(self, paths, scores, gold, token_weight=None):
        # Docstring inherited: Definition 3, lam (log Z - score(y*)) + (1 - lam) pointwise.
        lam = self._lambda()
        cll = float(logsumexp(scores)) - enumerated_gold_score(paths, scores, gold)
        return lam * cll + (1.0 - lam) * _enumerated_pointwise(paths, scores, gold,
                                                               token_weight)


class LabelwiseAccuracyLoss(_MarginalLoss):
    """Maximum labelwise accuracy (Gross et al. 2006), ``loss='labelwise'``.

    Gross et al. maximise (Eq. (9))
    ``R = sum_i sum_t Q(p(y*_t | x_i) - max_{y != y*_t} p(y | x_i))``, a
    smooth approximation of the number of tokens that maximum expected
    accuracy (MEA, posterior) decoding labels correctly. This loss minimises
    ``sum_i w_i sum_t w_t (1 - Q(m_t))``, the smoothed number of MEA errors
    (for ``q='sigmoid'`` and ``q='identity'``), with ``m_t`` the margin above.

    Parameters
    ----------
    alpha : float > 0 or sequence of float, default=15.0
        Sharpness of the sigmoid ``Q(x) = 1 / (1 + exp(-alpha x))``
        (Eq. (10); the paper's ``λ``, 15 in their Figure 2a). A sequence
        (e.g. ``[1, 5, 15]``) is an annealing schedule:
        :meth:`CRFTagger.fit <sklearn_crfloss.CRFTagger.fit>` trains with
        each value in turn, each fit warm-started from the previous (the
        log-barrier analogy of Gross et al., footnote 3); ``value_and_grad``
        itself uses the last value.
    q : {'sigmoid', 'identity', 'log'}, default='sigmoid'
        ``'sigmoid'``: Eq. (10) on the margin. The other two are the
        variants of footnote 5, whose argument is the gold marginal
        ``p(y*_t | x)`` rather than the margin: ``'identity'`` (``Q(x) = x``:
        minimise the expected number of errors ``sum_t (1 - p(y*_t | x))``)
        and ``'log'`` (``Q(x) = log x``: the pointwise log loss, minimised
        as ``-sum_t log p(y*_t | x)``, identical to ``loss='pointwise'``).

    Notes
    -----
    The max over incorrect labels is differentiated at the argmax (Gross et
    al., footnote 4): ``dl/dmu[t, y*_t] = -Q'(m_t)`` and
    ``dl/dmu[t, y~_t] = +Q'(m_t)`` with ``y~_t`` the best incorrect label
    (ties broken towards the smaller label index); the loss is not
    differentiable where that argmax ties. Nonconvex: start from a CLL fit
    (``CRFTagger(init='cll')``).

    Raises
    ------
    ValueError
        From :func:`~sklearn_crfloss.losses.get_loss` (and so from
        ``CRFTagger.fit``), on an invalid ``q`` or a scalar ``alpha`` that is
        not a finite number > 0; from :meth:`stages` (and so from
        ``value_and_grad``) on an invalid schedule.

    References
    ----------
    S. S. Gross, O. Russakovsky, C. B. Do, S. Batzoglou (2006). Training
    conditional random fields for maximum labelwise accuracy. NIPS.
    """

    name = "labelwise"

    _parameter_constraints: dict = {
        "alpha": [_POSITIVE, "array-like"],
        "q": [StrOptions({"sigmoid", "identity", "log"})],
    }

    def __init__(self, alpha=15.0, q="sigmoid"):
        self.alpha = alpha
        self.q = q

    def stages(self):
        """The annealing schedule as a list of losses, one per ``alpha`` value.

        Returns
        -------
        list of LabelwiseAccuracyLoss
            ``[self]`` when ``alpha`` is a single number.

        Raises
        ------
        ValueError
            If ``alpha`` is a sequence that is empty, not flat, or holds a
            value that is not a finite number > 0 (scalar parameters are
            checked by :func:`~sklearn_crfloss.losses.get_loss`; the
            constraints cannot see inside a sequence).
        """
        if np.ndim(self.alpha) == 0:
            return [self]
        alphas = np.asarray(self.alpha, dtype=np.float64)
        if alphas.ndim != 1 or alphas.shape[0] == 0:
            raise ValueError(
                f"alpha must be a positive number or a non-empty sequence of them, "
                f"got {self.alpha!r}"
            )
        stages = [LabelwiseAccuracyLoss(alpha=float(a), q=self.q) for a in alphas]
        for stage in stages:
            validate_parameter_constraints({"alpha": [_POSITIVE]}, {"alpha": stage.alpha},
                                           caller_name="LabelwiseAccuracyLoss schedule")
        return stages

    def value_and_grad(self, unary, transition, start, end, y, offsets,
                       sample_weight=None, n_threads=1, token_weight=None):
        """Loss value and gradient; see :meth:`BaseLoss.value_and_grad`.

        Parameters
        ----------
        token_weight : ndarray of shape (n_tokens,), default=None
            Per-token weights of each token's term. Other parameters as in
            :meth:`BaseLoss.value_and_grad`.
        """
        alpha = float(self.stages()[-1].alpha)
        w = token_weights(y, offsets, sample_weight, token_weight)
        if self.q == "log":
            value, grad_mu = _pointwise(unary, transition, start, end, y, offsets, w,
                                        n_threads)
            return (value, *marginals_vjp(unary, transition, start, end, offsets, grad_mu,
                                          n_threads=n_threads))
        mu = forward_backward(unary, transition, start, end, offsets,
                              n_threads=n_threads).marginals
        rows = np.arange(y.shape[0])
        gold = mu[rows, y]
        grad_mu = np.zeros_like(mu)
        if self.q == "identity":
            value = float(np.dot(w, 1.0 - gold))
            grad_mu[rows, y] = -w
        else:
            others = mu.copy()
            others[rows, y] = -np.inf
            rival = np.argmax(others, axis=1)
            margin = gold - others[rows, rival]
            # Q and Q' of the sigmoid (expit does not overflow).
            q = expit(alpha * margin)
            dq = alpha * q * (1.0 - q)
            value = float(np.dot(w, 1.0 - q))
            grad_mu[rows, y] = -w * dq
            grad_mu[rows, rival] += w * dq
        return (value, *marginals_vjp(unary, transition, start, end, offsets, grad_mu,
                                      n_threads=n_threads))

    def fused_value_and_grad(self, objective, theta):
        # Docstring inherited: marginal_loss_features_batch in the mode of q,
        # with the last alpha (losses/_fused.py).
        if not applies(self, LabelwiseAccuracyLoss, objective):
            return None
        return self._fused_marginal(objective, theta, LABELWISE_MODES[self.q],
                                    alpha=float(self.stages()[-1].alpha))

    def enumerated_loss(self, paths, scores, gold, token_weight=None):
        # Docstring inherited: sum_t w_t (1 - Q(.)) with the last alpha (Eqs. (9)-(10)).
        if self.q == "log":
            return _enumerated_pointwise(paths, scores, gold, token_weight)
        mu = enumerated_marginals(paths, scores)
        gold_mu, tw = _enumerated_gold_marginals(paths, scores, gold, token_weight)
        if self.q == "identity":
            return float(np.dot(tw, 1.0 - gold_mu))
        alpha = float(self.stages()[-1].alpha)
        total = 0.0
        for t in range(gold.shape[0]):
            rival = max(mu[t, j] for j in range(mu.shape[1]) if j != gold[t])
            total += tw[t] * (1.0 - 1.0 / (1.0 + np.exp(-alpha * (gold_mu[t] - rival))))
        return float(total)
