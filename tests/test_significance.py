"""Tests of the paired significance tests of sklearn_crfloss.metrics."""

import math

import numpy as np
import pytest

from sklearn_crfloss.metrics import (
    PairedTestResult,
    hamming_loss,
    mcnemar_test,
    paired_bootstrap_test,
    segment_counts,
    segment_f1_score,
    segment_precision_score,
    segment_recall_score,
    sequence_accuracy,
    token_accuracy,
)
from sklearn_crfloss._evaluation._significance import _segment_counts

TYPES = ("PER", "LOC", "ORG")


def iob2_corpus(n_sentences, length, seed):
    """Random well-formed IOB2 label sequences."""
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(n_sentences):
        seq, prev = [], "O"
        for _ in range(length):
            r = rng.rand()
            if r < 0.5:
                lab = "O"
            elif r < 0.75 and prev != "O":
                lab = "I-" + prev[2:]
            else:
                lab = "B-" + TYPES[rng.randint(3)]
            seq.append(lab)
            prev = lab
        out.append(seq)
    return out


def corrupt(y, rate, seed):
    """Each label replaced by a random one with probability ``rate``."""
    rng = np.random.RandomState(seed)
    labels = ["O"] + [p + t for t in TYPES for p in ("B-", "I-")]
    return [[labels[rng.randint(len(labels))] if rng.rand() < rate else lab for lab in s]
            for s in y]


Y = iob2_corpus(80, 12, seed=0)
GOOD = corrupt(Y, 0.03, seed=1)
BAD = corrupt(Y, 0.25, seed=2)


def test_identical_predictions_give_p_1_and_difference_0():
    boot = paired_bootstrap_test(Y, GOOD, [list(s) for s in GOOD], n_resamples=200,
                                 random_state=0)
    assert isinstance(boot, PairedTestResult)
    assert boot.difference == 0.0 and boot.pvalue == 1.0
    assert boot.confidence_interval == (0.0, 0.0)
    assert boot.score_a == boot.score_b == segment_f1_score(Y, GOOD)
    for unit in ("sentence", "token"):
        mc = mcnemar_test(Y, GOOD, GOOD, unit=unit)
        assert mc.difference == 0.0 and mc.pvalue == 1.0
        assert mc.table[0, 1] == mc.table[1, 0] == 0


def _discordant(n_only_a, n_only_b, n_both, n_neither):
    """Sentences of one token: A right / B right as requested."""
    y, a, b = [], [], []
    for right_a, right_b, count in ((1, 0, n_only_a), (0, 1, n_only_b), (1, 1, n_both),
                                    (0, 0, n_neither)):
        for _ in range(count):
            y.append(["B-NP"])
            a.append(["B-NP"] if right_a else ["O"])
            b.append(["B-NP"] if right_b else ["O"])
    return y, a, b


def test_mcnemar_hand_computed_chi_square():
    # b = 30 only-A, c = 10 only-B, 50 both right, 10 both wrong; N = 100
    y, a, b = _discordant(30, 10, 50, 10)
    res = mcnemar_test(y, a, b)
    assert res.table.tolist() == [[50, 30], [10, 10]]
    assert res.statistic == pytest.approx(19 ** 2 / 40)  # (|30 - 10| - 1)^2 / 40
    # chi-square with 1 degree of freedom: sf(x) = erfc(sqrt(x / 2))
    assert res.pvalue == pytest.approx(math.erfc(math.sqrt(19 ** 2 / 80)))
    assert res.difference == pytest.approx(0.20)
    assert (res.score_a, res.score_b) == (0.80, 0.60)
    half = 1.959963984540054 * math.sqrt(40 - 20 ** 2 / 100) / 100
    assert res.confidence_interval == pytest.approx((0.20 - half, 0.20 + half))
    assert "continuity" in res.method
    # the same table on tokens (one token per sentence)
    assert mcnemar_test(y, a, b, unit="token").pvalue == pytest.approx(res.pvalue)


def test_mcnemar_hand_computed_exact():
    # b = 5, c = 1: two-sided binomial p = 2 (C(6,0) + C(6,1)) / 2^6 = 14 / 64
    y, a, b = _discordant(5, 1, 3, 2)
    res = mcnemar_test(y, a, b)
    assert "exact" in res.method and res.statistic == 5
    assert res.pvalue == pytest.approx(14 / 64)
    swapped = mcnemar_test(y, b, a)
    assert swapped.pvalue == pytest.approx(14 / 64)
    assert swapped.difference == pytest.approx(-res.difference)
    # forcing the chi-square: (|5 - 1| - 1)^2 / 6 = 1.5
    assert mcnemar_test(y, a, b, exact=False).statistic == pytest.approx(1.5)


def test_mcnemar_sentence_vs_token_units():
    y = [["B-NP", "I-NP", "O"], ["B-VP"]]
    a = [["B-NP", "O", "O"], ["B-VP"]]     # 1 token wrong: sentence 0 wrong
    b = [["O", "O", "O"], ["B-VP"]]        # 2 tokens wrong: sentence 0 wrong
    assert mcnemar_test(y, a, b, unit="sentence").table.tolist() == [[1, 0], [0, 1]]
    assert mcnemar_test(y, a, b, unit="token").table.tolist() == [[2, 1], [0, 1]]


def test_bootstrap_deterministic_for_fixed_random_state():
    r1 = paired_bootstrap_test(Y, GOOD, BAD, n_resamples=300, random_state=3)
    r2 = paired_bootstrap_test(Y, GOOD, BAD, n_resamples=300, random_state=3)
    r3 = paired_bootstrap_test(Y, GOOD, BAD, n_resamples=300, random_state=4)
    np.testing.assert_array_equal(r1.bootstrap_distribution, r2.bootstrap_distribution)
    assert r1.pvalue == r2.pvalue and r1.confidence_interval == r2.confidence_interval
    assert not np.array_equal(r1.bootstrap_distribution, r3.bootstrap_distribution)


def test_bootstrap_clearly_better_and_swapped_sign():
    better = paired_bootstrap_test(Y, GOOD, BAD, n_resamples=999, random_state=0)
    d = segment_f1_score(Y, GOOD) - segment_f1_score(Y, BAD)
    assert better.difference == pytest.approx(d) and d > 0.1
    assert better.pvalue == pytest.approx(1 / 1000)  # no resample as extreme under H0
    low, high = better.confidence_interval
    assert 0 < low < d < high
    one_sided = paired_bootstrap_test(Y, GOOD, BAD, n_resamples=999, random_state=0,
                                      alternative="greater")
    assert one_sided.pvalue < 0.01 and one_sided.confidence_interval[1] == np.inf
    # A worse than B: the one-sided test of "A better" finds nothing
    swapped = paired_bootstrap_test(Y, BAD, GOOD, n_resamples=999, random_state=0,
                                    alternative="greater")
    assert swapped.difference == pytest.approx(-d)
    assert swapped.pvalue > 0.99
    two_sided = paired_bootstrap_test(Y, BAD, GOOD, n_resamples=999, random_state=0)
    assert two_sided.pvalue < 0.01 and two_sided.confidence_interval[1] < 0


def test_bootstrap_two_close_taggers_not_significant():
    # two taggers with the same noise rate differ by chance only
    other = corrupt(Y, 0.03, seed=5)
    res = paired_bootstrap_test(Y, GOOD, other, n_resamples=999, random_state=0)
    lo, hi = res.confidence_interval
    assert lo < 0 < hi and res.pvalue > 0.05


@pytest.mark.parametrize("metric", [segment_f1_score, segment_precision_score,
                                    segment_recall_score, token_accuracy, hamming_loss,
                                    sequence_accuracy])
def test_fast_path_equals_metric_on_resampled_sentences(metric):
    y, a, b = Y[:30], GOOD[:30], BAD[:30]
    fast = paired_bootstrap_test(y, a, b, metric=metric, n_resamples=40, random_state=0)
    slow = paired_bootstrap_test(y, a, b, metric=lambda t, p: metric(t, p), n_resamples=40,
                                 random_state=0)
    np.testing.assert_allclose(fast.bootstrap_distribution, slow.bootstrap_distribution,
                               rtol=0, atol=1e-12)
    assert fast.difference == pytest.approx(metric(y, a) - metric(y, b))


def test_per_sentence_chunk_counts_sum_to_conlleval_counts():
    n_pred, n_true, n_correct = _segment_counts(Y, BAD)
    c = segment_counts(Y, BAD)
    assert (n_pred.sum(), n_true.sum(), n_correct.sum()) == (
        c["n_pred"].sum(), c["n_true"].sum(), c["n_correct"].sum())
    assert n_true[0] == segment_counts(Y[:1], BAD[:1])["n_true"].sum()


def test_prediction_types_and_errors():
    arrays = [np.array(s, dtype=object) for s in GOOD]
    r1 = paired_bootstrap_test(Y, arrays, BAD, n_resamples=50, random_state=0)
    r2 = paired_bootstrap_test(Y, GOOD, BAD, n_resamples=50, random_state=0)
    assert r1.pvalue == r2.pvalue and r1.difference == r2.difference
    with pytest.raises(ValueError, match="y_pred_b does not match y_true: Sequence 1"):
        mcnemar_test(Y[:2], GOOD[:2], [GOOD[0], GOOD[1][:-1]])
    with pytest.raises(ValueError, match="y_pred_a does not match"):
        paired_bootstrap_test(Y[:3], GOOD[:2], GOOD[:3])
    with pytest.raises(ValueError, match="n_resamples"):
        paired_bootstrap_test(Y, GOOD, BAD, n_resamples=0)
