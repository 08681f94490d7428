"""Minimum classification error losses (Suzuki, McDermott & Isozaki 2006).

``loss='mce'``: the smoothed sentence error count (Eqs. 4-12).
``loss='mce_f'``: the smoothed segment F-score loss (section 4, Eqs. 13-16).
"""

from numbers import Real
import warnings

import numpy as np
from scipy.special import expit, log_expit, logsumexp

from .._chain import Chain
from .._utils import Interval, StrOptions
from ..exceptions import UndefinedLossError
from ..inference import (forward_backward, max_marginals, position_gold_counts,
                         PositionTransitions, segment_margins, sequence_scores, viterbi,
                         viterbi_excluding)
from ._base import BaseLoss, enumerated_gold_score, gold_counts
from ._chunks import chunk_margins, ChunkDecoder, ChunkEvents
from ._mce_f_fast import TP_UNDERFLOW, fused_value_and_grad, label_margins, stack_segments

__all__ = ["MinimumClassificationError", "SegmentFScoreMCE"]

#: ``l(d)`` (sigmoid) or ``dl/dd`` (logistic) below ``sigmoid(_SATURATED_Z)``,
#: about 0.01, is saturated: a sequence there has no say in the gradient.
_SATURATED_Z = -np.log(99.0)
#: Weighted fraction of saturated sequences above which finite ``psi`` warns.
_SATURATED_FRACTION = 0.95
#: Fewer sequences (an online solver's minibatch) are not judged.
_SATURATED_MIN_SEQUENCES = 20


def _saturated_share(z, w, smoothing="sigmoid"):
    """Weighted share of the terms whose smoothed loss has (almost) no gradient.

    A term of argument ``z = alpha d + beta`` is saturated where ``dl/dd``
    is below about 1% of its largest value: ``|z| > log 99`` for the
    sigmoid, ``z < -log 99`` for the logistic (whose slope tends to 1 for
    large ``z``). NaN if the weights sum to 0.
    """
    total = float(np.sum(w))
    if not total > 0:
        return float("nan")
    flat = (z < _SATURATED_Z) | ((z > -_SATURATED_Z) if smoothing == "sigmoid" else False)
    return float(np.sum(w[flat])) / total


def _smooth(d, alpha, beta, smoothing):
    """l(d) of Eq. 8 and dl/dd (section 3.2), elementwise and stable."""
    z = alpha * d + beta
    sig = expit(z)
    if smoothing == "sigmoid":
        return sig, alpha * sig * expit(-z)
    # logistic: alpha^-1 log(1 + exp(z)) = -alpha^-1 log(expit(-z))
    return -log_expit(-z) / alpha, sig


def _max_incorrect(unary, transition, start, end, y, offsets, n_threads):
    """Maximum incorrect output (Eq. 5) and its score: the best sequence != y.

    One Viterbi pass over (label, deviated) states
    (:func:`~sklearn_crfloss.inference.viterbi_excluding`); the same as the
    Viterbi path when it is wrong, else the exact second best
    (:func:`~sklearn_crfloss.inference.viterbi_2best`), up to ties.
    """
    return viterbi_excluding(unary, transition, start, end, offsets, y, n_threads=n_threads)


def _times(psi, transition):
    """``psi * transition`` for a matrix or :class:`PositionTransitions`."""
    if isinstance(transition, PositionTransitions):
        return transition._replace(table=psi * transition.table)
    return psi * transition


def _add_path_counts(grads, path, offsets, coef, rows, transition=None):
    """Add coef_k * counts(path_k) to (d_unary, d_transition, d_start, d_end).

    With position-dependent ``transition`` the transition counts go to its
    table's matrices.
    """
    d_unary, d_trans, d_start, d_end = grads
    n_labels = d_unary.shape[1]
    token_coef, trans, start, end = gold_counts(path, offsets, n_labels, coef)
    if isinstance(transition, PositionTransitions):
        trans = position_gold_counts(transition, path, offsets, coef)
    np.add.at(d_unary, (rows, path), token_coef)
    d_trans += trans
    d_start += start
    d_end += end


#: MCE-F's offset ``beta`` with ``beta='auto'`` when training starts from zero
#: parameters (chosen on the CoNLL-2000 development split; 0 from a fit).
_FROM_ZERO_BETA = -1.0


def _beta(loss):
    """The loss's offset ``beta`` as a float (``'auto'`` outside a fit: 0, the paper's)."""
    return 0.0 if isinstance(loss.beta, str) else float(loss.beta)


def _enumerated_smooth(loss, d):
    """l(d) of Eq. 8, written from its definition (definitions by enumeration)."""
    z = loss.alpha * d + _beta(loss)
    if getattr(loss, "smoothing", "sigmoid") == "sigmoid":
        return 1.0 / (1.0 + np.exp(-z))
    return np.log1p(np.exp(z)) / loss.alpha


def _enumerated_gold_events(events, paths, gold, begin, stop):
    """Which paths have the gold chunk events on ``begin:stop`` (by enumeration).

    The same label types on the span, the same start event at ``begin``,
    the same events inside and the same end event at ``stop``.
    """
    length = gold.shape[0]
    offsets = np.array([0, length])
    code_g, start_g, end_g = events.token_events(gold, offsets)
    agree = []
    for p in paths:
        code, st, en = events.token_events(p, offsets)
        ok = (np.array_equal(events.label_type[p[begin:stop]],
                             events.label_type[gold[begin:stop]])
              and st[begin] == start_g[begin]
              and np.array_equal(code[begin + 1:stop], code_g[begin + 1:stop])
              and (stop == length or en[stop] == end_g[stop]))
        agree.append(ok)
    return np.array(agree)


class _SmoothedErrorLoss(BaseLoss):
    """What both MCE losses share: flags and the smoothing ``l`` of Eq. 8.

    ``l`` has slope ``alpha`` (a finite number > 0) and offset ``beta`` (a
    finite number); both losses are nonconvex, not differentiable at ties,
    and start from a CLL fit.
    """

    saturation_ = None  # set by every value_and_grad

    def __loss_tags__(self):
        # Docstring inherited.
        tags = super().__loss_tags__()
        tags.convex, tags.smooth, tags.needs_init = False, False, True
        tags.reports_saturation = True
        # Suzuki et al. (2006), footnote 2: online GPD for ten iterations (from
        # zero only), then QuickProp; see :class:`sklearn_crfloss.solvers.Suzuki2006`.
        tags.default_solver = "suzuki2006"
        tags.label_bigrams = type(self) in (MinimumClassificationError, SegmentFScoreMCE)  # exact
        return tags

    _parameter_constraints: dict = {
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "beta": [Interval(Real, None, None, closed="neither")],
    }


class MinimumClassificationError(_SmoothedErrorLoss):
    """Minimum classification error loss (``loss='mce'``).

    The smoothed number of misclassified training sequences (Suzuki et al.
    2006, Eq. 9 with Eq. 10, the 1/N dropped as the paper allows), with the
    CRF score ``g(y, x) = score(y)`` as discriminant (Eq. 11)::

        value = sum_k w_k l(d(y*_k, x_k))

    Misclassification measure ``d``:

    * ``psi=inf`` (Eq. 5): ``d = -g(y*) + max_{y != y*} g(y)``. The maximum
      incorrect output is the Viterbi path when it differs from ``y*``,
      otherwise the exact second-best path (the paper used A*); both at
      once by a Viterbi over (label, deviated-from-gold) states
      (:func:`~sklearn_crfloss.inference.viterbi_excluding`, checked
      against :func:`~sklearn_crfloss.inference.viterbi_2best`).
      The gradient is ``l'(d) (counts(y~) - counts(y*))``; it is a
      subgradient at ties, where ``d`` is not differentiable.
    * finite ``psi`` (Eq. 7): ``d = -g(y*) + (1/psi) log[A sum_{y != y*}
      exp(psi g(y))]``, with ``sum_{y != y*} exp(psi g) = Z(psi) - exp(psi
      g*)`` from the forward algorithm on the potentials times ``psi``,
      subtracted in log space (``log Z(psi) + log(-expm1(psi g* - log
      Z(psi)))``). Its gradient (Eq. 12) is ``(E_psi[counts] - counts(y*)) /
      (1 - p_psi(y*))``, with ``E_psi`` under ``p_psi(y) ~ exp(psi g(y))``.
      **A = 1 / (|Y| - 1)**, the paper's value, ``|Y| = n_labels ** T``: the
      soft-max is then the power mean of ``exp(g)`` over the incorrect
      outputs, so ``d`` lies between its min- and max-based values for every
      ``psi`` and tends to Eq. 5 as ``psi`` grows, instead of growing with
      ``T log n_labels / psi`` as it would with A = 1. Where ``1 - p_psi(y*)``
      underflows to 0 (the gold path has all the mass), ``d`` and its
      gradient are those of ``psi=inf`` for that sequence.

      **Saturation on long sequences.** ``log A = -log(|Y| - 1)``, about
      ``-T log n_labels``, shifts ``d`` by ``-log(|Y| - 1) / psi``: ``d < 0``
      exactly when ``p_psi(y*) > 1 / |Y|``, the gold path has more than a
      uniform share of the ``psi``-tempered mass. On CoNLL-2000 (19 labels,
      23 tokens a sentence) the shift is -68 at ``psi=1``: at a CLL fit
      ``d`` is below -13 for every sentence, ``l(d)`` and its gradient
      vanish, and the prior alone shrinks the weights until the gradient
      balances it (``d`` about -11; test F1 0.38 on 500 sentences against
      0.90 for ``psi=inf``; ``converged_`` is True). The loss then warns
      (UserWarning, once per fit) when more than 95% of the weighted
      sequences of a batch of 20 or more are saturated (``z = alpha d + beta < -log 99``, ``l`` or
      ``dl/dd`` below 0.01) while the mean shift alone saturates them
      (``alpha mean(log A) / psi + beta < -log 99``). Remedies: a larger
      ``psi`` (``log(|Y| - 1) / psi`` of a few units), ``psi=inf``, or an
      offset ``beta`` near ``alpha`` times the mean ``log(|Y| - 1) / psi`` of
      the training sequences (exact only for one sequence length).

    Smoothing ``l`` (Eq. 8), ``z = alpha d + beta``: ``'sigmoid'``,
    ``l = 1 / (1 + exp(-z))`` with ``dl/dd = alpha l (1 - l)``, a smoothed
    0-1 loss (nonconvex); ``'logistic'``, ``l = log(1 + exp(z)) / alpha``
    with ``dl/dd = sigmoid(z)``, an upper bound of the 0-1 loss (section 3.2).

    The prior of the estimator regularises Eq. 9. The loss is nonconvex:
    train it from a CLL fit (``CRFTagger(init='cll')`` or ``warm_start=True``
    after a CLL fit, Table 2's MAP initialisation). The paper optimised it by
    QuickProp after a few online GPD iterations; L-BFGS, as for CLL, is the
    accepted substitute here (``max_iter``, ``tol`` and ConvergenceWarning
    apply).

    Parameters
    ----------
    alpha : float, default=1.0
        Slope of the smoothing function, ``> 0`` (the paper uses 1).
    beta : float, default=0.0
        Offset of the smoothing function (the paper uses 0).
    psi : float, default=inf
        ``inf`` for the max-based measure (Eq. 5), else ``> 0`` for the
        soft-max (Eq. 7).
    smoothing : {'sigmoid', 'logistic'}, default='sigmoid'
        Smoothing function ``l`` of Eq. 8.

    Attributes
    ----------
    saturation_ : float or None
        Set by every :meth:`value_and_grad` (None before): the weighted
        share of the sequences whose smoothed loss has almost no gradient
        (``dl/dd`` below about 1% of its largest value). ``CRFTagger.fit``
        warns when it exceeds 95% at the start of training.

    Raises
    ------
    ValueError
        From :func:`~sklearn_crfloss.losses.get_loss` (and so from
        ``CRFTagger.fit``), on a parameter out of range.

    Warns
    -----
    UserWarning
        From :meth:`value_and_grad` (once per loss object, so once per
        ``CRFTagger.fit``), when a finite ``psi`` saturates the smoothing
        for more than 95% of a batch of at least 20 sequences (see
        *Saturation on long sequences* above).

    References
    ----------
    J. Suzuki, E. McDermott, H. Isozaki (2006). Training conditional random
    fields with multivariate evaluation measures. ACL. Eqs. 4-12.
    """

    name = "mce"

    _parameter_constraints: dict = {
        **_SmoothedErrorLoss._parameter_constraints,
        "psi": [Interval(Real, 0, None, closed="right")],
        "smoothing": [StrOptions({"sigmoid", "logistic"})],
    }

    def __init__(self, alpha=1.0, beta=0.0, psi=np.inf, smoothing="sigmoid"):
        self.alpha = alpha
        self.beta = beta
        self.psi = psi
        self.smoothing = smoothing

    def value_and_grad(self, unary, transition, start, end, y, offsets,
                       sample_weight=None, n_threads=1):
        # Docstring inherited from BaseLoss.
        n_tokens, n_labels = unary.shape
        n_seq = offsets.shape[0] - 1
        lengths = np.diff(offsets)
        w = np.ones(n_seq) if sample_weight is None else np.asarray(sample_weight, float)
        rows = np.arange(n_tokens)
        g_star = sequence_scores(unary, transition, start, end, y, offsets)
        grads = (np.zeros((n_tokens, n_labels)),
                 np.zeros(np.shape(getattr(transition, "table", transition))),
                 np.zeros(n_labels), np.zeros(n_labels))
        if np.isinf(self.psi):
            fallback = np.ones(n_seq, dtype=bool)
            d = np.empty(n_seq)
        else:
            psi = float(self.psi)
            fb = forward_backward(psi * unary, _times(psi, transition), psi * start, psi * end,
                                  offsets, n_threads=n_threads)
            log_r = np.minimum(psi * g_star - fb.log_z, 0.0)  # log p_psi(y*)
            with np.errstate(divide="ignore"):
                log_1mr = np.log(-np.expm1(log_r))
            fallback = ~np.isfinite(log_1mr)
            # log A = -log(n_labels**T - 1), computed without overflow.
            log_a = -(lengths * np.log(n_labels)
                      + np.log1p(-np.exp(-lengths * np.log(n_labels))))
            d = np.where(fallback, 0.0, -g_star + (log_a + fb.log_z + log_1mr) / psi)
        if np.any(fallback):
            wrong_path, wrong_score = _max_incorrect(unary, transition, start, end, y,
                                                     offsets, n_threads)
            d[fallback] = (wrong_score - g_star)[fallback]
        if not np.isinf(self.psi):
            self._warn_if_saturated(d, log_a, w)
        self.saturation_ = _saturated_share(float(self.alpha) * d + float(self.beta), w,
                                            self.smoothing)
        l, dl = _smooth(d, float(self.alpha), float(self.beta), self.smoothing)
        value = float(np.dot(w, l))
        coef = w * dl
        # d(d)/d(potentials) = -counts(y*) + (counts of the competitor).
        _add_path_counts(grads, y, offsets, -coef, rows, transition)
        if np.any(fallback):
            _add_path_counts(grads, wrong_path, offsets, np.where(fallback, coef, 0.0), rows,
                             transition)
        if not np.all(fallback):
            c = np.where(fallback, 0.0, coef / -np.expm1(np.where(fallback, -1.0, log_r)))
            # Eq. 12: (E_psi[counts] - r counts(y*)) / (1 - r), the -counts(y*)
            # of -g* already added above.
            fbw = forward_backward(psi * unary, _times(psi, transition), psi * start, psi * end,
                                   offsets, sample_weight=c, n_threads=n_threads)
            token_c = np.repeat(c, lengths)
            r_c = c * np.exp(log_r)
            grads[0][:] += fbw.marginals * token_c[:, None]
            grads[1][:] += fbw.transition_counts
            grads[2][:] += fbw.start_counts
            grads[3][:] += fbw.end_counts
            _add_path_counts(grads, y, offsets, -r_c, rows, transition)
        return (value,) + grads

    def _warn_if_saturated(self, d, log_a, w):
        """Warn once if finite ``psi``'s shift ``log A / psi`` saturates ``l``.

        Parameters
        ----------
        d : ndarray of shape (n_seq,)
            Misclassification measures (Eq. 7).
        log_a : ndarray of shape (n_seq,)
            ``log A = -log(|Y| - 1)`` of every sequence.
        w : ndarray of shape (n_seq,)
            Sequence weights.

        Warns
        -----
        UserWarning
            On a batch of at least ``_SATURATED_MIN_SEQUENCES`` sequences
            (not an online solver's minibatch), when more than
            ``_SATURATED_FRACTION`` of the weight has
            ``alpha d + beta < _SATURATED_Z`` and the weighted mean of
            ``alpha log A / psi + beta`` is below ``_SATURATED_Z`` too.
        """
        total = float(w.sum())
        if (getattr(self, "_saturation_warned", False) or not total > 0
                or d.shape[0] < _SATURATED_MIN_SEQUENCES):
            return
        alpha, beta, psi = float(self.alpha), float(self.beta), float(self.psi)
        saturated = float(w[alpha * d + beta < _SATURATED_Z].sum()) / total
        shift = float(np.dot(w, log_a)) / total / psi
        if saturated <= _SATURATED_FRACTION or not alpha * shift + beta < _SATURATED_Z:
            return
        self._saturation_warned = True
        warnings.warn(
            f"loss='mce' with psi={psi:g}: the smoothed loss is saturated for "
            f"{100 * saturated:.0f}% of the training sequences (its gradient is below 1% "
            f"of its maximum): A = 1/(|Y|-1) shifts d by -log(|Y|-1)/psi, {shift:.3g} on "
            "average here, growing with sequence length, so the loss vanishes and the "
            "prior alone shapes the model (a degenerate fit). Use a larger psi, psi=inf, "
            f"or beta near {-alpha * shift:.3g} (alpha * mean log(|Y|-1) / psi).",
            UserWarning, stacklevel=2)

    def enumerated_loss(self, paths, scores, gold, token_weight=None):
        # Docstring inherited: l(d(y*, x)) from Eqs. 5, 7 and 8, with A = 1 / (|Y| - 1).
        g_star = enumerated_gold_score(paths, scores, gold)
        wrong = np.any(paths != gold[None, :], axis=1)
        if np.isinf(self.psi):
            d = scores[wrong].max() - g_star  # Eq. 5
        else:  # Eq. 7
            d = -g_star + (np.log(1.0 / (len(paths) - 1))
                           + logsumexp(self.psi * scores[wrong])) / self.psi
        return float(_enumerated_smooth(self, d))


class SegmentFScoreMCE(_SmoothedErrorLoss):
    """Segment F-score MCE loss, MCE-F (``loss='mce_f'``).

    The smoothed F-score loss of Suzuki et al. (2006), section 4, Eq. 16,
    over the whole training batch (a ratio of corpus-level sums), scaled by
    the (weighted) number of gold segments ``S``::

        value = S (gamma^2 FN_l + FP_l) / ((gamma^2 + 1) TP_l)

    Minimising Eq. 16 maximises the smoothed ``F_gamma`` (Eq. 13):
    ``F_gamma = 1 / (1 + Eq. 16)``. The factor ``S`` is a constant; it
    plays the part of the dropped ``1/N`` of Eq. 10: near a good solution
    the value is about half the smoothed number of segment errors, in the
    units of the summed losses (equivalently: Eq. 16 with ``C`` times ``S``).

    **Regularisation of the stage and of its start.** A segment's term has
    slope at most ``alpha / 4`` (the sigmoid's), far below a CLL term's, so
    at one ``C`` the MCE-F data term is weaker than CLL's and one ``C``
    shared by the CLL start and the MCE-F stage over-regularises one of
    them. The estimator gives them separate values: ``CRFTagger(init='cll',
    init_C=...)`` is the start's ``C`` and ``C`` the stage's. A
    normalisation of this loss that makes one ``C`` mean the same strength
    (a constant factor such as ``8 / alpha``) is the special case ``C =
    factor * init_C`` of the two, so no normalisation is applied; choose
    both on development data (Suzuki et al. chose ``C`` by development
    data too; on CoNLL-2000 the development split preferred a stage ``C``
    about ten times the start's, see the which-loss page of the user guide).

    Segments are decoded from label names by
    :func:`sklearn_crfloss.segments.get_segments` with ``scheme`` (the
    decoder of the segment metrics); the estimator passes the names with
    :meth:`set_classes` before training. Every segment it returns is a
    target segment (``delta(s) = 1``; ``O`` tokens form no segment).

    Segment discriminant (Eq. 15): ``g(s)``, the best score of any sequence
    carrying the segment's labels on its span (forward/backward Viterbi
    max-marginals, :func:`~sklearn_crfloss.inference.segment_margins`).
    The boundary tokens around the span are not constrained, as in Eq. 15.

    Choices where the paper leaves them open (section 4.2, ``psi = inf``):

    * The **best competitor of a segment** is the best sequence that does
      *not* carry its labels on its span (differs from them in at least one
      token), computed exactly. Taking the maximum incorrect output ``y~``
      of the whole sequence instead would give ``d = 0`` (a tie, no
      gradient) for every correct segment of a sentence that has an error
      elsewhere. So the margin of a segment is ``m(s) = g(s) - max_{y:
      y_s != labels(s)} g(y)``, positive exactly when the Viterbi output
      carries the segment (up to ties).
    * Correct segments ``s*``: ``d(s*) = -m(s*)`` (Eq. 7 with
      ``psi = inf`` and the segment discriminant: misclassified when some
      sequence without the segment beats every sequence with it);
      ``TP_l = sum w (1 - l(d(s*)))``, ``FN_l = sum w l(d(s*))``.
    * False positives (``false_positives='gold'``, the default: section
      4.2's ``FP_l = sum l(d(y*, x, s'))``): the segments ``s'`` of the
      maximum incorrect output ``y~`` (Eq. 5,
      :func:`~sklearn_crfloss.inference.viterbi_excluding`) that are not
      correct segments, each measured by the segment-wise misclassification
      measure of the *correct* output on its span, whose first term is the
      gold labelling of the span: ``d(s') = g(s') - g(y*_{a:b})``, both
      segment discriminants (Eq. 15; ``g(y*_{a:b})`` is the best score of a
      sequence carrying the gold labels on the span ``a:b``).
      ``FP_l = sum w l(d(s'))``. Every false positive pushes the gold labels
      of its span up and its own labels down. When a false positive carries
      the gold labels of its span (it differs from a gold segment only by
      where it ends, decided by the next token's label) ``d = 0`` and its
      term has no gradient; the false positive that starts at that token
      carries the correction. ``y~`` is held fixed in the gradient (it
      changes only at ties).

    * ``false_positives='max_incorrect'`` (a variant, not in the paper): the
      same false positives, each measured against the best sequence that
      does *not* carry its labels, ``d(s') = m(s')`` computed on ``y~``'s
      labels (misclassified when the best sequence carrying ``s'`` beats
      every sequence without it, i.e. ``s'`` would be output). That
      competitor is usually another wrong segmentation of the span, so its
      gradient rarely raises the gold labels there (after training from
      zero a model predicted ``O`` on 0% of the test tokens).

    * ``false_positives='viterbi'`` (not in the paper): the false positives
      are the segments of the Viterbi output ``y^`` that are not correct,
      each counted ``(l(m) - l(0)) / (1 - l(0))``, which is 0 when ``m = 0``.
      The paper's set changes with ``y~`` and its terms jump there (e.g.
      ``l(0) = 1/2`` for a segment whose Viterbi path ties with another):
      the objective is discontinuous, which L-BFGS's line search does not
      survive on real data (it stops with ``ABNORMAL`` after a few
      iterations; the paper's QuickProp/GPD does not need a line search).
      In this variant a segment enters or leaves the set where its margin
      crosses 0, so its term is continuous there (except for the rare
      segment whose labels are also carried by a longer gold segment).
      For correctly labelled sentences it has no false positive term; the
      correct segments' terms still widen their margins.

    **Segments compared as chunks** (``segment_match='chunks'``; the
    default ``'labels'`` is Eq. 15 as written). conlleval reads ``O I-PER`` and ``O B-PER`` as the same chunk,
    and IOB1, IOB2 and IOBES write the same chunks differently; the loss
    compares chunks as the evaluation does, so a sequence that only
    re-encodes the gold chunks is never an error. A sequence *has* the chunk
    ``(a, b, type)`` when the chunk decoder's events say so: a chunk of that
    type starts at ``a``, none ends inside, one ends at ``b`` (or ``b`` is the
    sequence's end). Then ``g(s)`` is the best score of a sequence that has
    the chunk ``s`` and its competitor the best score of one that does not;
    the maximum incorrect output ``y~`` is the best sequence whose chunks
    differ from the gold chunks; and the first term of a false positive's
    measure is the best score of a sequence with the gold chunk events on
    its span (the same label types, the same chunk starts, ends and types).
    All are exact: span Viterbi passes over the decoder's events, entered
    and left through the max-marginal tables (``losses/_chunks.py``). The
    value then depends on the gold labels only through their chunks: IOB1,
    IOB2 and IOBES labels of the same chunks give the same value and gradient
    (under a ``scheme`` that reads all of them alike, e.g. ``'iobes'``;
    conlleval does not know ``S-``). The price: the loss no longer cares
    which encoding the model outputs, so predictions may start chunks with
    ``I-`` (conlleval scores them alike, strict IOB2 readers do not; from
    zero on CoNLL-2000 the sentence accuracy on label strings was 41%
    against MAP's 59%, at a chunk F1 of 93.09 against 93.66), and an
    evaluation costs about twice
    the label comparison's (numpy span passes). ``segment_match='labels'``
    (the default, Eq. 15 as written) measures a segment by the labels on
    its span; on the development split of CoNLL-2000 it scored as well as
    chunks from a MAP start (see the which-loss page of the user guide). On
    IOB1 labels it counts re-encodings as errors: ``fit`` warns and points
    to ``tag_scheme='iob2'`` or ``segment_match='chunks'``.

    A batch without gold segments (or whose gold segments all have weight
    0), which online and minibatch solvers meet on all-``O`` sentences, has
    no F-score; its value is then that of its false positives at a perfect
    ``TP_l = S``: ``FP_l / (gamma^2 + 1)``, the limit of the ratio above
    (times ``S``) as the gold segments become correct.

    The smoothing ``l`` is the sigmoid (Eq. 8), so ``TP_l >= 0``. The
    derivative follows section 4.2: ``dF/dl = gamma^2 / Z_D + (gamma^2 + 1)
    Z_N / Z_D^2`` for correct segments, ``1 / Z_D`` for false positives,
    times ``dl/dd = alpha l (1 - l)``, times the difference of the argmax
    paths' counts. Sequence weights multiply every segment's term.
    Nonconvex and not differentiable at ties: train it from a CLL fit
    (``init='cll'`` or ``warm_start=True``). The paper optimised it by
    QuickProp; L-BFGS is the accepted substitute here.

    Parameters
    ----------
    gamma : float, default=1.0
        The ``gamma`` of ``F_gamma`` (Eq. 13), ``>= 0``; 1 is F1.
    alpha : float, default=1.0
        Slope of the sigmoid (Eq. 8), ``> 0``.
    beta : float or 'auto', default='auto'
        Offset of the sigmoid (Eq. 8's ``beta``; the paper uses 0).
        ``'auto'``: resolved by ``CRFTagger.fit`` to -1 when training
        starts from zero parameters (``init=None``) and to 0 when it starts
        from a fit (``init='auto'`` or ``'cll'``, ``warm_start=True``); a
        loss used outside the estimator's ``fit`` (``partial_fit``,
        :func:`check_loss`) takes 0. With ``beta = -1`` the sigmoid is
        steepest at ``d = 1 / alpha``, on the error side: near-ties count
        less than clear errors. From zero on the CoNLL-2000 development
        split (``C = 10``) it scored 93.73 against 93.42 for 0; from a CLL
        fit it scored 93.51 against 93.64, so a fit keeps the paper's 0
        (see the which-loss page of the user guide).
    scheme : str, default='conlleval'
        Tagging scheme of :func:`sklearn_crfloss.segments.get_segments`
        (``'conlleval'``: the CoNLL evaluation's semantics).
    false_positives : {'gold', 'max_incorrect', 'viterbi'}, default='gold'
        Which false positive segments ``FP_l`` counts and against what: the
        segments of the maximum incorrect output against the gold labels of
        their span (``'gold'``, the paper's definition, section 4.2), the
        same segments against the best sequence without them
        (``'max_incorrect'``, a variant), or the continuous Viterbi-output
        variant described above.
    segment_match : {'labels', 'chunks'}, default='labels'
        Whether segments (their margins, the maximum incorrect output and
        the false positives' measure) are compared as the label strings on
        their spans (Eq. 15 as written) or as chunks, as conlleval reads
        them; see *Segments compared as chunks* above.

    Attributes
    ----------
    classes_ : ndarray of shape (n_labels,)
        Label names of the label indices, set by :meth:`set_classes`.
    saturation_ : float or None
        Set by every :meth:`value_and_grad` (None before): the weighted
        share of the gold and false positive segments whose smoothed loss
        has almost no gradient (``dl/dd`` below about 1% of its largest
        value). ``CRFTagger.fit`` warns when it exceeds 95% at the start.

    Raises
    ------
    ValueError
        From :func:`~sklearn_crfloss.losses.get_loss` (and so from
        ``CRFTagger.fit``), on a parameter out of range; from
        ``value_and_grad``, before :meth:`set_classes`, or when the gold
        segments have positive weight but ``TP_l`` underflows to 0 (then an
        :class:`~sklearn_crfloss.exceptions.UndefinedLossError`, which the
        SGD solver handles on a minibatch by taking a larger one).

    References
    ----------
    J. Suzuki, E. McDermott, H. Isozaki (2006). Training conditional random
    fields with multivariate evaluation measures. ACL. Section 4, Eqs. 13-16.
    """

    name = "mce_f"
    #: Whether ``segment_match='labels'`` takes the fast path (``_fused_mce``).
    _fast_path = True
    #: Whether its common case (one transition matrix) is one compiled call
    #: (``_fused_mce.fused_value_and_grad``); else the Python path, its reference.
    _fused_path = True

    def __loss_tags__(self):
        # Docstring inherited: a ratio of corpus-level sums, not a sum over sequences.
        tags = super().__loss_tags__()
        tags.additive, tags.trusted_evaluation = False, True  # value_and_grad_trusted
        tags.for_start = True  # beta='auto'
        # The SGD epochs from a fit too, as they won on the development split (GPDQuickProp).
        tags.default_solver = "gpd_quickprop"
        return tags

    _parameter_constraints: dict = {
        **_SmoothedErrorLoss._parameter_constraints,
        "gamma": [Interval(Real, 0, None, closed="left")],
        "scheme": [str],
        "false_positives": [StrOptions({"max_incorrect", "gold", "viterbi"})],
        "segment_match": [StrOptions({"chunks", "labels"})],
        "beta": [Interval(Real, None, None, closed="neither"), StrOptions({"auto"})],
    }

    def __init__(self, gamma=1.0, alpha=1.0, beta="auto", scheme="conlleval",
                 false_positives="gold", segment_match="labels"):
        self.gamma = gamma
        self.alpha = alpha
        self.beta = beta
        self.scheme = scheme
        self.false_positives = false_positives
        self.segment_match = segment_match

    def for_start(self, from_zero):
        """Resolve ``beta='auto'`` for a fit that starts from zero or from a fit.

        Called by the estimators on their own copy of the loss, before
        training.

        Parameters
        ----------
        from_zero : bool
            True if training starts from zero parameters (``init=None``,
            no warm start), False if it starts from a CLL fit or continues
            a previous fit.

        Returns
        -------
        self : SegmentFScoreMCE
            With ``beta`` -1.0 from zero, 0.0 from a fit (if it was
            ``'auto'``; a number is kept).
        """
        if isinstance(self.beta, str):
            self.beta = _FROM_ZERO_BETA if from_zero else 0.0
        return self

    def __getstate__(self):
        # The per-fit caches of the gold segments and chunk masks are rebuilt
        # on demand; pickles and copies of a fitted estimator do not carry them.
        state = dict(super().__getstate__())
        for key in ("_gold_cache", "_events_cache", "_decoder_cache"):
            state.pop(key, None)
        return state

    def _per_classes(self, attr, make):
        """``make(classes_, scheme)``, cached in ``attr`` while both stay the same."""
        cache = getattr(self, attr, None)
        if cache is None or cache[0] is not self.classes_ or cache[1] != self.scheme:
            cache = (self.classes_, self.scheme, make(self.classes_, self.scheme))
            setattr(self, attr, cache)
        return cache[2]

    def _decoder(self):
        """The :class:`ChunkDecoder` of ``classes_`` and ``scheme``, cached."""
        return self._per_classes("_decoder_cache", ChunkDecoder)

    def _segments(self, labels, offsets):
        """(seq, begin, stop, key, type) arrays of the segments of every sequence.

        ``labels`` and ``offsets``: checked intp arrays. ``key`` identifies a
        segment (absolute position, length and type) so that gold and
        predicted segments compare as integers; ``type`` is the type code of
        :func:`~sklearn_crfloss.segments.segments_from_codes`, whose segments
        these are (decoded by the cached :class:`ChunkDecoder`).
        """
        decoder = self._decoder()
        seq, begin, stop, tcode = decoder.segments(labels, offsets)
        n_tokens = np.int64(labels.shape[0] + 1)
        key = ((begin + offsets[seq]).astype(np.int64) * n_tokens
               + (stop - begin)) * max(decoder.n_types, 1) + tcode
        return seq, begin, stop, key, tcode

    def _gold_segments(self, y, offsets):
        cache = getattr(self, "_gold_cache", None)
        if (cache is not None and cache[0].shape == y.shape and cache[1].shape == offsets.shape
                and np.array_equal(cache[0], y) and np.array_equal(cache[1], offsets)
                and cache[2] is self.classes_):
            return cache[3]
        segs = self._segments(y, offsets)
        self._gold_cache = (y.copy(), offsets.copy(), self.classes_, segs)
        return segs

    def value_and_grad(self, unary, transition, start, end, y, offsets,
                       sample_weight=None, n_threads=1):
        # Docstring inherited from BaseLoss.
        if getattr(self, "classes_", None) is None:
            raise ValueError(
                "loss='mce_f' decodes segments from label names: call "
                "set_classes(classes) first (CRFTagger.fit does)."
            )
        if len(self.classes_) != unary.shape[1]:
            raise ValueError(
                f"set_classes got {len(self.classes_)} names for {unary.shape[1]} labels"
            )
        # Checked before the gold segments are decoded (the decoder does not check).
        c = Chain.checked(unary, transition, start, end, offsets, n_threads, positions=True)
        unary, transition, start, end, offsets = c[:5]
        y = c.labels(y, "y")
        fused = self._one_call(unary, transition, start, end, y, offsets, sample_weight,
                               c.n_threads)
        if fused is not None:  # the common case, in one compiled call
            return fused
        n_seq = offsets.shape[0] - 1
        w = np.ones(n_seq) if sample_weight is None else np.asarray(sample_weight, float)
        alpha, beta, g2 = float(self.alpha), _beta(self), float(self.gamma) ** 2
        gold = self._gold_segments(y, offsets)
        gseq = gold[0]
        if self.segment_match == "chunks":
            m_g, fp_seq, m_f, gradient = chunk_margins(
                self, self._chunk_events(), unary, transition, start, end, y, offsets, gold,
                n_threads, self._segments)
        else:
            m_g, fp_seq, m_f, gradient = self._label_margins(c, y, gold)
        wg = w[gseq]
        wf = w[fp_seq]
        l_g, dl_g = _smooth(-m_g, alpha, beta, "sigmoid")
        l_f, dl_f = _smooth(m_f, alpha, beta, "sigmoid")
        self.saturation_ = _saturated_share(
            np.concatenate([alpha * -m_g + beta, alpha * m_f + beta]), np.concatenate([wg, wf]))
        if self.false_positives == "viterbi":  # (l(m) - l(0)) / (1 - l(0)): 0 at m = 0
            l0 = expit(beta)
            l_f = (l_f - l0) / (1.0 - l0)
            dl_f = dl_f / (1.0 - l0)
        one_minus_l_g = expit(-(alpha * -m_g + beta))
        # Sums of products, not BLAS dots: a dot this long wakes BLAS threads,
        # which then spin beside a one-thread evaluation.
        tp = float(np.sum(wg * one_minus_l_g))
        fn = float(np.sum(wg * l_g))
        fp = float(np.sum(wf * l_f))
        scale = float(wg.sum())
        if scale > 0:
            z_n = g2 * fn + fp
            z_d = (g2 + 1.0) * tp
            # dF/dl of a gold segment (section 4.2), up to the factor -scale;
            # undefined where TP_l, or its square, underflows.
            slope = (g2 / z_d + (g2 + 1.0) * z_n / z_d ** 2 if z_d ** 2 > 0 else np.inf)
            if not np.isfinite(slope):
                raise UndefinedLossError(TP_UNDERFLOW)
            value = scale * z_n / z_d
            # dF/dl, dl/dd, and d(d)/dm = -1 (gold) or +1 (false positives).
            coef_g = -scale * slope * dl_g * wg
            coef_f = scale / z_d * dl_f * wf
        else:  # no gold segment: the false positives at TP_l = S (class docstring)
            value = fp / (g2 + 1.0)
            coef_g = np.zeros(gseq.shape[0])
            coef_f = dl_f * wf / (g2 + 1.0)
        grad = gradient(coef_g, coef_f)
        return (value,) + tuple(grad)

    def value_and_grad_trusted(self, unary, transition, start, end, y, offsets,
                               sample_weight=None, n_threads=1):
        """:meth:`value_and_grad` on potentials, labels and offsets that an SGD
        solver built from checked data: the compiled call without checking them."""
        fused = (self._one_call(unary, transition, start, end, y, offsets, sample_weight, n_threads)
                 if type(self).value_and_grad is SegmentFScoreMCE.value_and_grad else None)
        return fused if fused is not None else self.value_and_grad(
            unary, transition, start, end, y, offsets, sample_weight, n_threads)

    def _one_call(self, unary, transition, start, end, y, offsets, sample_weight, n_threads):
        """``_mce_f_fast.fused_value_and_grad`` if the fast and fused paths are on, else None."""
        if self._fast_path and self._fused_path:
            return fused_value_and_grad(self, unary, transition, start, end, y, offsets,
                                        sample_weight, n_threads, beta=_beta(self),
                                        saturated_z=_SATURATED_Z, decoder=self._decoder)
        return None

    def _chunk_events(self):
        """:class:`ChunkEvents` of ``classes_`` and ``scheme``, cached."""
        return self._per_classes("_events_cache", ChunkEvents)

    def _label_margins(self, c, y, gold):
        """Margins with segments compared as label strings (``segment_match='labels'``).

        ``c``: the checked potentials (``Chain``), ``y`` the checked labels.
        Returns ``(m_gold, fp_seq, m_fp, gradient)`` as
        :func:`~sklearn_crfloss.losses._chunks.chunk_margins` does.
        """
        if self._fast_path:  # the same margins, each kernel run once
            return label_margins(self, c, y, gold, self._segments)
        unary, transition, start, end, offsets = c[:5]
        n_threads = c.n_threads
        gseq, gbeg, gend, gkey, _ = gold
        if self.false_positives == "viterbi":
            wrong_path = viterbi(unary, transition, start, end, offsets, n_threads=n_threads)[0]
        else:
            wrong_path, _ = _max_incorrect(unary, transition, start, end, y, offsets,
                                           n_threads)
        wseq, wbeg, wend, wkey, _ = self._segments(wrong_path, offsets)
        keep = ~np.isin(wkey, gkey)
        fp_segs = (wseq[keep], wbeg[keep], wend[keep])
        n_gold = gseq.shape[0]
        gold_competitor = self.false_positives == "gold"
        # Segments scored on the gold labels: the gold segments, then (for
        # 'gold') the spans of the false positives; sorted by sequence.
        ref_segs, order = stack_segments((gseq, gbeg, gend),
                                          fp_segs if gold_competitor else None)
        kw = dict(mm=max_marginals(unary, transition, start, end, offsets,
                                   n_threads=n_threads), n_threads=n_threads)
        c_y, o_y, _ = segment_margins(unary, transition, start, end, offsets, y, ref_segs, **kw)
        c_y, o_y = c_y[order], o_y[order]
        c_f, o_f, _ = segment_margins(unary, transition, start, end, offsets, wrong_path,
                                      fp_segs, **kw)
        m_g = c_y[:n_gold] - o_y[:n_gold]
        m_f = c_f - (c_y[n_gold:] if gold_competitor else o_f)

        def gradient(coef_g, coef_f):
            if gold_competitor:
                # d(s') = g(s') - g(gold labels on the span): the carrying paths only.
                coef = np.concatenate([coef_g, -coef_f])[np.argsort(order, kind="stable")]
                other = np.concatenate([coef_g, np.zeros_like(coef_f)])[
                    np.argsort(order, kind="stable")]
                _, _, grad_g = segment_margins(unary, transition, start, end, offsets, y,
                                               ref_segs, coef=coef, coef_other=other, **kw)
                _, _, grad_f = segment_margins(unary, transition, start, end, offsets, wrong_path,
                                               fp_segs, coef=coef_f,
                                               coef_other=np.zeros_like(coef_f), out=grad_g[0],
                                               **kw)
            else:
                _, _, grad_g = segment_margins(unary, transition, start, end, offsets, y,
                                               ref_segs, coef=coef_g, **kw)
                _, _, grad_f = segment_margins(unary, transition, start, end, offsets, wrong_path,
                                               fp_segs, coef=coef_f, out=grad_g[0], **kw)
            # grad_f's unary gradient was added into grad_g's array (out=).
            return (grad_g[0],) + tuple(a + b for a, b in zip(grad_g[1:], grad_f[1:]))

        return m_g, fp_segs[0], m_f, gradient

    def enumerated_batch_loss(self, paths, scores, gold, sample_weight=None,
                              token_weight=None):
        """Eq. 16 times the weighted number of gold segments, by enumeration.

        Not a sum over sequences: the smoothed counts ``TP_l``, ``FN_l`` and
        ``FP_l`` are summed over the batch first. Segment margins are the
        best score of the paths carrying a segment's labels minus the best
        of the others; the false positives are the segments of the maximum
        incorrect (or, with ``false_positives='viterbi'``, the best) path
        that are not gold segments, each measured against the best other path
        (or, with ``false_positives='gold'``, against the best path carrying
        the gold labels of its span); without gold segments the false
        positives count at ``TP_l = S``. Parameters, return value and errors as
        in :meth:`BaseLoss.enumerated_batch_loss`.
        """
        from ..segments import get_segments

        classes = np.asarray(self.classes_)
        w = np.ones(len(paths)) if sample_weight is None else np.asarray(sample_weight, float)
        tp = fn = fp = n_gold = 0.0
        chunks = self.segment_match == "chunks"
        for P, S, g, wi in zip(paths, scores, gold, w):
            segs = [set(get_segments(list(classes[p]), scheme=self.scheme)) for p in P]
            gold_segs = get_segments(list(classes[g]), scheme=self.scheme)
            if chunks:  # a path carries a segment when it has that chunk
                def carry(path, seg, segs=segs):
                    return np.array([seg in c for c in segs])
                differs = np.array([c != set(gold_segs) for c in segs])
            else:  # ... when it has the segment's labels on the span
                def carry(path, seg, P=P):
                    return np.all(P[:, seg[0]:seg[1]] == path[None, seg[0]:seg[1]], axis=1)
                differs = np.any(P != g[None, :], axis=1)
            if self.false_positives == "viterbi":
                wrong_path = P[np.argmax(S)]
            else:  # Eq. 5: the best path other than the gold one
                wrong = np.flatnonzero(differs)
                wrong_path = P[wrong[np.argmax(S[wrong])]]
            for seg in gold_segs:
                c = carry(g, seg)
                lg = _enumerated_smooth(self, S[~c].max() - S[c].max())
                tp += wi * (1.0 - lg)
                fn += wi * lg
                n_gold += wi
            for seg in get_segments(list(classes[wrong_path]), scheme=self.scheme):
                if seg not in set(gold_segs):
                    c = carry(wrong_path, seg)
                    if self.false_positives != "gold":
                        lf = _enumerated_smooth(self, S[c].max() - S[~c].max())
                    elif chunks:  # against the gold chunk events on the span
                        lf = _enumerated_smooth(self, S[c].max() - S[_enumerated_gold_events(
                            self._chunk_events(), P, g, *seg[:2])].max())
                    else:  # against the gold labels of the span
                        lf = _enumerated_smooth(self, S[c].max() - S[carry(g, seg)].max())
                    if self.false_positives == "viterbi":
                        l0 = 1.0 / (1.0 + np.exp(-_beta(self)))
                        lf = (lf - l0) / (1.0 - l0)
                    fp += wi * lf
        g2 = self.gamma ** 2
        if n_gold == 0:  # no gold segment: the false positives at TP = S
            return float(fp / (g2 + 1.0))
        return float(n_gold * (g2 * fn + fp) / ((g2 + 1.0) * tp))
