"""Paired significance tests for two taggers on the same test set.

Exposed by :mod:`sklearn_crfloss.metrics`: :func:`paired_bootstrap_test`
(any metric, resampling whole sentences) and :func:`mcnemar_test`
(sentence or token correctness). Both return a :class:`PairedTestResult`.

The bootstrap resamples sentence indices with :func:`scipy.stats.bootstrap`
(which also gives the confidence interval); the metrics of this package
whose value is a ratio of per-sentence sums (segment precision, recall and
F1, token accuracy, Hamming loss, sentence accuracy) are computed from
per-sentence counts, so 10,000 resamples of 2,000 sentences take well
under a second; any other ``metric(y_true, y_pred)`` is called on the
resampled lists of sentences (two calls per resample).
"""

import warnings
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from scipy import stats
from sklearn.utils import check_random_state

from .._utils import Interval, StrOptions, validate_call
from ._label_pairs import encode_pair
from ._segment_metrics import (chunk_table, hamming_loss, segment_f1_score,
                               segment_precision_score, segment_recall_score, sequence_accuracy,
                               token_accuracy)

__all__ = ["PairedTestResult", "mcnemar_test", "paired_bootstrap_test"]


class PairedTestResult(NamedTuple):
    """Result of a paired test of tagger A against tagger B on one test set.

    Attributes
    ----------
    difference : float
        ``score_a - score_b``.
    confidence_interval : tuple of (float, float)
        ``(low, high)`` bounds for the difference at the requested
        confidence level (one bound infinite for a one-sided bootstrap).
    pvalue : float
        p-value of the null hypothesis "A and B score the same".
    score_a, score_b : float
        The score of each tagger on the whole test set (the metric, or the
        accuracy over the test units for McNemar's test).
    method : str
        Which test and interval were computed.
    n : int
        Number of test units: sentences (bootstrap, McNemar on sentences)
        or tokens (McNemar on tokens).
    statistic : float or None
        McNemar: the continuity-corrected chi-square statistic, or the
        number of units only A gets right for the exact test. None for the
        bootstrap.
    table : ndarray of shape (2, 2) or None
        McNemar: ``[[both right, only A right], [only B right, both
        wrong]]`` (int64). None for the bootstrap.
    bootstrap_distribution : ndarray of shape (n_resamples,) or None
        Bootstrap: the difference on every resample. None for McNemar.
    """

    difference: float
    confidence_interval: tuple
    pvalue: float
    score_a: float
    score_b: float
    method: str
    n: int
    statistic: float = None
    table: np.ndarray = None
    bootstrap_distribution: np.ndarray = None


_TRIPLE = {"y_true": ["array-like"], "y_pred_a": ["array-like"], "y_pred_b": ["array-like"]}
_LEVEL = Interval(Real, 0, 1, closed="neither")


def _check_triple(y_true, y_pred_a, y_pred_b):
    """Lists of sequences; both predictions aligned with y_true (ValueError otherwise)."""
    y_true, y_pred_a, y_pred_b = list(y_true), list(y_pred_a), list(y_pred_b)
    for name, pred in (("y_pred_a", y_pred_a), ("y_pred_b", y_pred_b)):
        try:
            encode_pair(y_true, pred)
        except ValueError as exc:
            raise ValueError(f"{name} does not match y_true: {exc}") from None
    return y_true, y_pred_a, y_pred_b


def _ratio(num, den, empty):
    """num / den elementwise, ``empty`` where den == 0."""
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, float(empty))
    np.divide(num, den, out=out, where=den > 0)
    return out


def _token_counts(y_true, y_pred):
    """(n_wrong, n_tokens) per sentence."""
    codes_true, codes_pred, offsets, _ = encode_pair(y_true, y_pred)
    cum = np.concatenate(([0], np.cumsum(codes_true != codes_pred)))
    return cum[offsets[1:]] - cum[offsets[:-1]], np.diff(offsets)


def _segment_counts(y_true, y_pred):
    """(n_pred, n_true, n_correct) chunks per sentence (conlleval scheme, lenient).

    A chunk counts in the sentence where it starts, a correct chunk in the
    sentence of its last token; with labels that have a prefix and a type no
    chunk crosses a sentence boundary and the totals are conlleval's.
    """
    codes_true, codes_pred, offsets, classes = encode_pair(y_true, y_pred)
    n = offsets.shape[0] - 1
    _, gold_start, _, pred_start, _, correct_end, _ = chunk_table(
        codes_true, codes_pred, offsets, classes, "conlleval", "lenient")
    starts = offsets[:-1] + np.arange(n)  # sentence starts in conlleval's stream

    def per_sentence(pos):
        return np.bincount(np.searchsorted(starts, pos, side="right") - 1, minlength=n)

    return per_sentence(pred_start), per_sentence(gold_start), per_sentence(correct_end)


def _sentence_counts(y_true, y_pred):
    """(1 if all labels right else 0, 1) per sentence."""
    n_wrong, _ = _token_counts(y_true, y_pred)
    return n_wrong == 0, np.ones(n_wrong.shape)


# metric -> (per-sentence counts of one prediction, score from summed counts)
_DECOMPOSABLE = {
    segment_f1_score: (_segment_counts, lambda p, t, c: _ratio(2 * c, p + t, 0.0)),
    segment_precision_score: (_segment_counts, lambda p, t, c: _ratio(c, p, 0.0)),
    segment_recall_score: (_segment_counts, lambda p, t, c: _ratio(c, t, 0.0)),
    token_accuracy: (_token_counts, lambda w, n: _ratio(n - w, n, 1.0)),
    hamming_loss: (_token_counts, lambda w, n: _ratio(w, n, 0.0)),
    sequence_accuracy: (_sentence_counts, lambda r, n: _ratio(r, n, 1.0)),
}


def _difference_statistic(metric, y_true, y_pred_a, y_pred_b):
    """``statistic(idx, axis=-1)``: metric(A) - metric(B) on the sentences ``idx``."""
    if metric in _DECOMPOSABLE:
        counts, score = _DECOMPOSABLE[metric]
        per_a = np.array(counts(y_true, y_pred_a), dtype=np.float64)
        per_b = np.array(counts(y_true, y_pred_b), dtype=np.float64)

        def statistic(idx, axis=-1):
            sa = [row[idx].sum(axis=-1) for row in per_a]
            sb = [row[idx].sum(axis=-1) for row in per_b]
            return score(*sa) - score(*sb)

        return statistic

    def statistic(idx, axis=-1):
        idx = np.asarray(idx)
        rows = idx.reshape(-1, idx.shape[-1])
        out = np.empty(rows.shape[0])
        for k, row in enumerate(rows):
            yt = [y_true[i] for i in row]
            out[k] = (metric(yt, [y_pred_a[i] for i in row])
                      - metric(yt, [y_pred_b[i] for i in row]))
        return out.reshape(idx.shape[:-1])

    return statistic


@validate_call(
    {**_TRIPLE, "metric": [callable],
     "n_resamples": [Interval(Integral, 1, None, closed="left")],
     "confidence_level": [_LEVEL],
     "alternative": [StrOptions({"two-sided", "greater", "less"})],
     "method": [StrOptions({"percentile", "basic", "BCa"})],
     "random_state": ["random_state"]},
    prefer_skip_nested_validation=True,
)
def paired_bootstrap_test(y_true, y_pred_a, y_pred_b, *, metric=segment_f1_score,
                          n_resamples=9999, confidence_level=0.95, alternative="two-sided",
                          method="percentile", random_state=None):
    """Paired bootstrap test of the difference of a metric between two taggers.

    The test set is resampled with replacement, whole sentences at a time
    (the same sentences for both taggers), ``n_resamples`` times; on each
    resample the difference ``metric(y_true, y_pred_a) - metric(y_true,
    y_pred_b)`` is computed. The confidence interval is that of
    :func:`scipy.stats.bootstrap` (``method``). The p-value tests the null
    hypothesis of no difference with the bootstrap distribution shifted to
    mean zero (Efron & Tibshirani 1993, section 16.4; Berg-Kirkpatrick et al.
    2012, Figure 1): for ``alternative='greater'`` (A better than B, for a
    metric where larger is better) it is ``(1 + #{d*_b - d >= d}) /
    (n_resamples + 1)``, where ``d`` is the observed difference and ``d*_b``
    the difference on resample ``b``; ``'less'`` mirrors it and
    ``'two-sided'`` counts ``|d*_b - d| >= |d|``. The ``+ 1`` (Davison &
    Hinkley 1997, eq. 4.11) keeps p > 0; identical predictions give
    ``d = 0`` and p = 1.

    Parameters
    ----------
    y_true : list of (list or ndarray of shape (n_tokens_i,))
        Gold label sequences.
    y_pred_a, y_pred_b : list of (list or ndarray of shape (n_tokens_i,))
        Predictions of taggers A and B, aligned with ``y_true`` (lists of
        lists of str or lists of arrays, as ``predict`` returns).
    metric : callable, default=segment_f1_score
        ``metric(y_true, y_pred) -> float`` on lists of sequences. For
        :func:`segment_f1_score`, :func:`segment_precision_score`,
        :func:`segment_recall_score` (conlleval scheme, micro average),
        :func:`token_accuracy`, :func:`hamming_loss` and
        :func:`sequence_accuracy` the resamples are scored from
        per-sentence counts (fast, equal to calling the function); any other
        callable, e.g. ``functools.partial(segment_f1_score, scheme='iob2')``,
        is called twice per resample.
    n_resamples : int, default=9999
        Number of bootstrap resamples.
    confidence_level : float in (0, 1), default=0.95
        Level of the confidence interval.
    alternative : {'two-sided', 'greater', 'less'}, default='two-sided'
        Alternative hypothesis on the difference ``A - B``; also the side
        of the confidence interval (one-sided intervals have an infinite
        bound).
    method : {'percentile', 'basic', 'BCa'}, default='percentile'
        Interval of :func:`scipy.stats.bootstrap`. ``'BCa'`` adds one
        jackknife pass (``n_sentences`` more metric evaluations).
    random_state : int, RandomState instance or None, default=None
        Seed of the resampling; an int makes the result reproducible.

    Returns
    -------
    result : PairedTestResult
        ``difference``, ``confidence_interval``, ``pvalue``, ``score_a``,
        ``score_b``, ``n`` (sentences) and ``bootstrap_distribution``.

    Raises
    ------
    ValueError
        If the three inputs do not have the same number of sequences or a
        pair of sequences differs in length (the message names the
        prediction and the sequence), there are fewer than two sequences,
        or on an invalid parameter.

    See Also
    --------
    mcnemar_test : McNemar's test on sentence or token correctness.

    Notes
    -----
    Sentences, not tokens, are resampled because the errors of a tagger
    within a sentence are correlated, and a chunk never crosses a sentence.
    A p-value is only as good as the assumption that the test sentences are
    a random sample of the sentences one cares about; comparing many
    systems on one test set calls for a correction for multiple tests.

    References
    ----------
    .. [1] B. Efron, R. J. Tibshirani (1993). An Introduction to the
       Bootstrap. Chapman & Hall, chapters 13 and 16.
    .. [2] P. Koehn (2004). Statistical significance tests for machine
       translation evaluation. EMNLP (paired bootstrap resampling).
    .. [3] T. Berg-Kirkpatrick, D. Burkett, D. Klein (2012). An empirical
       investigation of statistical significance in NLP. EMNLP-CoNLL.
    .. [4] A. C. Davison, D. V. Hinkley (1997). Bootstrap Methods and their
       Application. Cambridge University Press.

    Examples
    --------
    >>> from sklearn_crfloss.metrics import paired_bootstrap_test
    >>> y_true = [["B-PER", "I-PER", "O"], ["B-LOC", "O"]] * 20
    >>> good = [["B-PER", "I-PER", "O"], ["B-LOC", "O"]] * 20
    >>> bad = [["B-PER", "O", "O"], ["B-LOC", "O"]] * 20
    >>> res = paired_bootstrap_test(y_true, good, bad, random_state=0)
    >>> round(res.difference, 4), res.pvalue < 0.01
    (0.5, True)
    """
    y_true, y_pred_a, y_pred_b = _check_triple(y_true, y_pred_a, y_pred_b)
    n = len(y_true)
    if n < 2:
        raise ValueError(
            f"paired_bootstrap_test resamples sequences and needs at least two, got {n}: "
            "pass every test sequence (a single sequence has no sampling distribution).")
    score_a, score_b = float(metric(y_true, y_pred_a)), float(metric(y_true, y_pred_b))
    statistic = _difference_statistic(metric, y_true, y_pred_a, y_pred_b)
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    batch = max(1, 2 ** 22 // n)  # resamples per call: <= 32 MB of indices
    with warnings.catch_warnings():
        # constant distributions (e.g. identical predictions) are handled below
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap((np.arange(n),), statistic, n_resamples=n_resamples,
                              batch=batch, vectorized=True, confidence_level=confidence_level,
                              alternative=alternative, method=method,
                              rng=np.random.default_rng(seed))
    dist = np.asarray(res.bootstrap_distribution, dtype=np.float64)
    d = score_a - score_b
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if np.ptp(dist) == 0:  # every resample gives the same difference
        low = d if alternative != "less" else -np.inf
        high = d if alternative != "greater" else np.inf
    tol = 1e-12 * max(1.0, abs(d))  # rounding of sums taken in another order
    shifted = dist - d
    if alternative == "two-sided":
        extreme = np.abs(shifted) >= abs(d) - tol
    elif alternative == "greater":
        extreme = shifted >= d - tol
    else:
        extreme = shifted <= d + tol
    pvalue = (1.0 + np.count_nonzero(extreme)) / (n_resamples + 1.0)
    return PairedTestResult(
        difference=d, confidence_interval=(low, high), pvalue=float(pvalue),
        score_a=score_a, score_b=score_b, n=n,
        method=f"paired bootstrap over sentences ({n_resamples} resamples, {method} interval)",
        bootstrap_distribution=dist)


@validate_call(
    {**_TRIPLE, "unit": [StrOptions({"sentence", "token"})],
     "exact": [StrOptions({"auto"}), "boolean"], "confidence_level": [_LEVEL]},
    prefer_skip_nested_validation=True,
)
def mcnemar_test(y_true, y_pred_a, y_pred_b, *, unit="sentence", exact="auto",
                 confidence_level=0.95):
    """McNemar's test of two taggers on sentence or token correctness.

    Each test unit (a sentence, all of whose labels must be right, or a
    token) is right or wrong under A and under B. Only the discordant units
    matter: ``b`` units only A gets right and ``c`` units only B gets right.
    Under the null hypothesis (A and B have the same accuracy) ``b`` is
    binomial with ``n = b + c`` trials and probability 1/2:

    - exact test: the two-sided binomial p-value of
      :func:`scipy.stats.binomtest` (McNemar 1947);
    - otherwise the chi-square statistic with continuity correction,
      ``max(|b - c| - 1, 0)^2 / (b + c)``, on 1 degree of freedom
      (Edwards 1948).

    The difference is the accuracy of A minus that of B, ``(b - c) / N``,
    with the Wald interval ``(b - c) / N +- z sqrt(b + c - (b - c)^2 / N) /
    N`` for paired proportions (Agresti 2002, section 10.1).

    Parameters
    ----------
    y_true : list of (list or ndarray of shape (n_tokens_i,))
        Gold label sequences.
    y_pred_a, y_pred_b : list of (list or ndarray of shape (n_tokens_i,))
        Predictions of taggers A and B, aligned with ``y_true``.
    unit : {'sentence', 'token'}, default='sentence'
        What is right or wrong: whole sentences (sentence accuracy, as in
        Suzuki et al. 2006, who report both) or single tokens.
    exact : 'auto' or bool, default='auto'
        Use the exact binomial test; ``'auto'``: when ``b + c < 25``.
    confidence_level : float in (0, 1), default=0.95
        Level of the interval for the difference.

    Returns
    -------
    result : PairedTestResult
        ``difference``, ``confidence_interval``, ``pvalue``, ``score_a``,
        ``score_b`` (accuracies), ``n`` (units), ``statistic`` (chi-square,
        or ``b`` for the exact test) and ``table``. No discordant unit gives
        p = 1.

    Raises
    ------
    ValueError
        If the inputs do not have the same number of sequences or a pair of
        sequences differs in length, there is no test unit, or on an
        invalid parameter.

    See Also
    --------
    paired_bootstrap_test : For segment F1 or any other metric.

    Notes
    -----
    Tokens of one sentence are not independent, which McNemar's test on
    tokens assumes; the sentence-level test and the paired bootstrap do not.

    References
    ----------
    .. [1] Q. McNemar (1947). Note on the sampling error of the difference
       between correlated proportions or percentages. Psychometrika 12(2).
    .. [2] A. L. Edwards (1948). Note on the "correction for continuity" in
       testing the significance of the difference between correlated
       proportions. Psychometrika 13(3).
    .. [3] A. Agresti (2002). Categorical Data Analysis, 2nd ed. Wiley,
       section 10.1.
    .. [4] J. Suzuki, E. McDermott, H. Isozaki (2006). Training conditional
       random fields with multivariate evaluation measures. ACL, section
       5.3 (McNemar's test on tokens and sentences).

    Examples
    --------
    >>> from sklearn_crfloss.metrics import mcnemar_test
    >>> y_true = [["B-NP", "I-NP"], ["B-VP"], ["O"]]
    >>> res = mcnemar_test(y_true, y_true, [["B-NP", "O"], ["B-VP"], ["B-NP"]])
    >>> res.table.tolist(), round(res.pvalue, 3)
    ([[1, 2], [0, 0]], 0.5)
    """
    y_true, y_pred_a, y_pred_b = _check_triple(y_true, y_pred_a, y_pred_b)
    wrong_a, n_tokens = _token_counts(y_true, y_pred_a)
    wrong_b, _ = _token_counts(y_true, y_pred_b)
    if unit == "sentence":
        right_a, right_b = wrong_a == 0, wrong_b == 0
    else:
        codes_true, codes_a, _, _ = encode_pair(y_true, y_pred_a)
        _, codes_b, _, _ = encode_pair(y_true, y_pred_b)
        right_a, right_b = codes_true == codes_a, codes_true == codes_b
    n = int(right_a.shape[0])
    if n == 0:
        raise ValueError(f"mcnemar_test needs at least one {unit}.")
    table = np.array([[np.sum(right_a & right_b), np.sum(right_a & ~right_b)],
                      [np.sum(~right_a & right_b), np.sum(~right_a & ~right_b)]], dtype=np.int64)
    b, c = int(table[0, 1]), int(table[1, 0])
    use_exact = (b + c < 25) if exact == "auto" else bool(exact)
    if b + c == 0:
        statistic, pvalue = (0.0, 1.0)
    elif use_exact:
        statistic, pvalue = float(b), stats.binomtest(b, b + c, 0.5).pvalue
    else:
        statistic = max(abs(b - c) - 1, 0) ** 2 / (b + c)
        pvalue = stats.chi2.sf(statistic, 1)
    d = (b - c) / n
    half = stats.norm.ppf(0.5 + confidence_level / 2) * np.sqrt(
        max(b + c - (b - c) ** 2 / n, 0.0)) / n
    name = "exact binomial" if use_exact else "chi-square with continuity correction"
    return PairedTestResult(
        difference=d, confidence_interval=(float(d - half), float(d + half)),
        pvalue=float(min(pvalue, 1.0)),
        score_a=float(right_a.mean()), score_b=float(right_b.mean()), n=n,
        method=f"McNemar's test on {unit}s ({name})", statistic=float(statistic), table=table)
