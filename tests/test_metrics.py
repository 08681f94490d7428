"""Tests of sklearn_crfloss.metrics: conlleval counts, scores, reports, token metrics, scorers."""

import random
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.metrics import accuracy_score
from sklearn.model_selection import KFold, cross_validate
from sklearn.utils._param_validation import InvalidParameterError

from _conlleval import GENERATORS, NOISE, conlleval_oracle, corrupt, random_corpus
from sklearn_crfloss.metrics import (
    hamming_loss,
    hamming_scorer,
    segment_counts,
    segment_f1_score,
    segment_f1_scorer,
    segment_precision_score,
    segment_recall_score,
    segment_report,
    sequence_accuracy,
    sequence_accuracy_scorer,
    token_accuracy,
    token_accuracy_scorer,
)
from sklearn_crfloss.segments import MODES, get_segments_batch


def totals(y_true, y_pred, **kw):
    c = segment_counts(y_true, y_pred, **kw)
    return int(c["n_pred"].sum()), int(c["n_true"].sum()), int(c["n_correct"].sum())


def per_type(c, key):
    return {t: int(v) for t, v in zip(c["types"], c[key]) if v}


def oracle_totals(y_true, y_pred, raw=False):
    o = conlleval_oracle(y_true, y_pred, raw=raw)
    return o["found_guessed"], o["found_correct"], o["correct_chunk"]


# ---------------------------------------------------------------------------
# Acceptance table of USER_NEEDS.md / ARCHITECTURE.md (found / gold / correct)
# ---------------------------------------------------------------------------

ACCEPTANCE = [
    ([["B-PER", "I-PER"]], [["I-PER", "I-PER"]], (1, 1, 1)),
    ([["S-PER", "S-PER"]], [["S-PER", "S-PER"]], (1, 1, 1)),
    ([["PER", "PER", "O", "LOC"]], [["PER", "PER", "O", "LOC"]], (0, 0, 0)),
    ([["B-PER", "o", "I-PER"]], [["B-PER", "o", "I-PER"]], (3, 3, 3)),
    (
        [["B-ARGM-LOC", "I-ARGM-LOC"]],
        [["B-ARGM-LOC", "I-ARGM-TMP"]],
        (2, 1, 0),
    ),
    # no chunk may cross a sentence boundary: the break splits the chunk
    ([["I-PER"], ["I-PER"]], [["I-PER"], ["I-PER"]], (2, 2, 2)),
    ([["I-PER", "I-PER"]], [["I-PER", "I-PER"]], (1, 1, 1)),
    # E->B is not an end for conlleval: gold B E B E is one phrase
    ([["B-X", "E-X", "B-X", "E-X"]], [["B-X", "I-X", "I-X", "E-X"]], (1, 1, 1)),
]


@pytest.mark.parametrize("y_true, y_pred, expected", ACCEPTANCE)
def test_acceptance_table(y_true, y_pred, expected):
    assert totals(y_true, y_pred) == expected
    assert oracle_totals(y_true, y_pred) == expected


def test_conlleval_iobes_quirks():
    gold = [["B-X", "E-X", "B-X", "E-X"]]
    pred = [["B-X", "I-X", "I-X", "E-X"]]
    assert segment_f1_score(gold, pred) == 1.0
    assert token_accuracy(gold, pred) == 0.5
    # a real IOBES decoder sees two gold phrases
    assert totals(gold, pred, scheme="iobes") == (1, 2, 0)
    u = [["U-PER", "U-PER", "B-PER", "L-PER", "B-PER", "L-PER"]]
    assert totals(u, u) == (1, 1, 1)
    assert totals(u, u, scheme="bilou") == (4, 4, 4)
    assert totals(u, u, scheme="bilou", mode="strict") == (4, 4, 4)


# ---------------------------------------------------------------------------
# Differential fuzz against the oracle
# ---------------------------------------------------------------------------


def _assert_same_as_oracle(y_true, y_pred, accuracy=True):
    o = conlleval_oracle(y_true, y_pred)
    c = segment_counts(y_true, y_pred)
    got = tuple(int(c[key].sum()) for key in ("n_pred", "n_true", "n_correct"))
    assert got == (o["found_guessed"], o["found_correct"], o["correct_chunk"]), (
        y_true, y_pred)
    assert per_type(c, "n_pred") == o["found_guessed_t"]
    assert per_type(c, "n_true") == o["found_correct_t"]
    assert per_type(c, "n_correct") == o["correct_chunk_t"]
    if accuracy and o["accuracy"] is not None:
        assert token_accuracy(y_true, y_pred) == pytest.approx(o["accuracy"])


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_differential_fuzz_against_conlleval(family):
    rng = random.Random(12345 + sorted(GENERATORS).index(family))
    y_true, y_pred = random_corpus(rng, family, 3000)
    # the whole corpus as one file ...
    _assert_same_as_oracle(y_true, y_pred)
    # ... and many small files, so that every sentence-boundary case is hit
    i = 0
    while i < 1000:
        k = rng.randint(1, 5)
        _assert_same_as_oracle(y_true[i : i + k], y_pred[i : i + k], accuracy=False)
        i += k


def test_conlleval_streaming_quirks_reproduced():
    # A typeless tag ('o') opens a chunk that O does not close; a later
    # start resets conlleval's inCorrect flag, so identical gold and guess
    # do not give correct == found. The module reproduces this.
    y = [["B-PER", "o", "O", "I-LOC"]]
    assert totals(y, y) == (3, 3, 2) == oracle_totals(y, y)
    # the open chunk survives the sentence break: its credit depends on the
    # next sentence
    a = [["B-PER", "o"], ["O", "O"]]
    b = [["B-PER", "o"], ["O", "B-LOC"]]
    assert totals(a, a) == (2, 2, 2) == oracle_totals(a, a)
    assert totals(b, b) == (3, 3, 2) == oracle_totals(b, b)


@pytest.mark.parametrize(
    "sentence",
    [
        ["B-PER", "o", "O", "I-LOC"],  # nested chunks, with a type change
        ["B-PER", "o", "O", "B-", "O"],  # nested chunks, no type change
        ["B-X", "[-X", "I-X"],  # '[' starts a chunk inside another
        ["S-X", ".-X", ".-Y", "o-Y", "O"],  # a chunk changes type, no nesting
    ],
)
@pytest.mark.parametrize("n_copies", [1, 300])
def test_degenerate_labels_small_and_large(sentence, n_copies):
    y = [sentence] * n_copies
    rng = random.Random(1)
    y_pred = [corrupt(rng, s, 0.2, NOISE) for s in y]
    for pred in (y, y_pred):
        _assert_same_as_oracle(y, pred)
    # the type-changing chunk is credited to the type of its last token
    if sentence[0] == "S-X":
        c = segment_counts(y, y)
        assert per_type(c, "n_pred") == {"X": n_copies}
        assert per_type(c, "n_correct") == {"Y": n_copies}


def test_raw_scheme_matches_conlleval_r():
    rng = random.Random(3)
    vocab = ["O", "NN", "VB", "DT", "B-PER", "I-PER", "o"]
    y_true = [[rng.choice(vocab) for _ in range(rng.randint(0, 8))] for _ in range(500)]
    y_pred = [corrupt(rng, s, 0.3, vocab) for s in y_true]
    assert totals(y_true, y_pred, scheme="raw") == oracle_totals(y_true, y_pred, raw=True)
    c = segment_counts(y_true, y_pred, scheme="raw")
    assert per_type(c, "n_true") == conlleval_oracle(y_true, y_pred, raw=True)["found_correct_t"]
    assert totals([["PER", "PER", "O", "LOC"]], [["PER", "LOC", "O", "LOC"]],
                  scheme="raw") == (3, 3, 2)
    # raw labels may be any hashable; types of mixed kinds still sort
    assert segment_counts([[3, "O", "X"]], [[3, "O", "O"]], scheme="raw")["types"] == [3, "X"]


# ---------------------------------------------------------------------------
# Schemes and strict modes
# ---------------------------------------------------------------------------


def test_strict_iobes_counts():
    y = [["S-PER", "S-PER"]]
    assert totals(y, y, scheme="iobes", mode="strict") == (2, 2, 2)
    assert totals(y, y) == (1, 1, 1)
    # strict IOB2 drops the I-started chunk that conlleval accepts
    gold, pred = [["B-PER", "I-PER"]], [["I-PER", "I-PER"]]
    assert totals(gold, pred, scheme="iob2", mode="strict") == (0, 1, 0)
    assert totals(gold, pred, scheme="iob2") == (1, 1, 1)
    assert segment_f1_score(gold, pred, scheme="iob2", mode="strict") == 0.0


@pytest.mark.parametrize("scheme", ["iob1", "iob2", "ioe1", "ioe2", "iobes", "bilou"])
@pytest.mark.parametrize("mode", MODES)
def test_counts_are_segment_intersections(scheme, mode):
    # for valid labels of a prefix scheme, chunks neither nest nor change
    # type: correct chunks are the per-sentence intersection of segments
    rng = random.Random(5)
    prefixes = {"iobes": "BIES", "bilou": "BILU", "iob1": "BI", "iob2": "BI",
                "ioe1": "IE", "ioe2": "IE"}[scheme]
    vocab = ["O", "O"] + [f"{p}-{t}" for p in prefixes for t in ("A", "B-C")]
    y_true = [[rng.choice(vocab) for _ in range(rng.randint(0, 15))] for _ in range(800)]
    y_pred = [corrupt(rng, s, 0.2, vocab) for s in y_true]
    gold = get_segments_batch(y_true, scheme=scheme, mode=mode)
    found = get_segments_batch(y_pred, scheme=scheme, mode=mode)
    correct = [set(g) & set(f) for g, f in zip(gold, found)]
    c = segment_counts(y_true, y_pred, scheme=scheme, mode=mode)
    for key, segs in (("n_true", gold), ("n_pred", found), ("n_correct", correct)):
        expected = {}
        for s in segs:
            for _, _, t in s:
                expected[t] = expected.get(t, 0) + 1
        assert per_type(c, key) == expected
    assert c["types"] == ["A", "B-C"]


@pytest.mark.parametrize("scheme", ["iob1", "iob2", "ioe1", "ioe2", "iobes", "bilou"])
@pytest.mark.parametrize("bad", ["PER", "o", 7])
def test_invalid_labels_name_the_sequence(scheme, bad):
    y = [["O"], ["O", bad]]
    with pytest.raises(ValueError, match="Sequence 1 of y_true") as exc:
        segment_f1_score(y, y, scheme=scheme)
    assert repr(bad) in str(exc.value)
    with pytest.raises(ValueError, match="Sequence 0 of y_pred"):
        segment_report([["O"]], [[bad]], scheme=scheme)


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------


def test_input_validation():
    with pytest.raises(ValueError, match="list of label sequences"):
        segment_f1_score(["B-PER", "O"], ["B-PER", "O"])
    with pytest.raises(ValueError, match="2 sequences but y_pred has 1"):
        segment_f1_score([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="Sequence 1: y_true has 2 labels but y_pred has 1"):
        token_accuracy([["O"], ["O", "O"]], [["O"], ["O"]])
    with pytest.raises(ValueError, match="Sequence 0"):
        segment_report([["O", "B-X"]], [["O"]])
    with pytest.raises(ValueError, match=r"y_pred\[1\] is a string"):
        hamming_loss([["O"], ["O"]], [["O"], "O"])
    with pytest.raises(ValueError, match=r"sample_weight must have shape \(1,\)"):
        token_accuracy([["O"]], [["O"]], sample_weight=[1.0, 2.0])


@pytest.mark.parametrize("func, kwargs, name", [
    (segment_f1_score, {"average": "samples"}, "average"),
    (segment_f1_score, {"beta": 0}, "beta"),
    (segment_f1_score, {"zero_division": "warn"}, "zero_division"),
    (segment_precision_score, {"scheme": "bio"}, "scheme"),
    (segment_recall_score, {"mode": "exact"}, "mode"),
    (segment_counts, {"scheme": "BIO"}, "scheme"),
    (segment_report, {"digits": -1}, "digits"),
    (segment_report, {"output_dict": "yes"}, "output_dict"),
    (token_accuracy, {"sample_weight": 2.0}, "sample_weight"),
    (sequence_accuracy, {"sample_weight": "a"}, "sample_weight"),
])
def test_parameter_validation(func, kwargs, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of {func.__name__}"):
        func([["O"]], [["O"]], **kwargs)


def test_conlleval_has_no_strict_mode():
    with pytest.raises(ValueError, match="no strict"):
        segment_f1_score([["O"]], [["O"]], mode="strict")


def test_empty_sequences_and_inputs():
    y = [[], ["B-X"], []]
    assert totals(y, y) == (1, 1, 1)
    assert segment_f1_score([[]], [[]]) == 0.0
    assert segment_f1_score([[]], [[]], zero_division=1.0) == 1.0
    assert token_accuracy([[]], [[]]) == 1.0
    assert hamming_loss([], []) == 0.0
    assert sequence_accuracy([[], []], [[], []]) == 1.0
    # weights that sum to 0: nothing is weighed, nothing is mislabelled
    assert token_accuracy([["O"]], [["B-X"]], sample_weight=[0.0]) == 1.0
    assert hamming_loss([["O"]], [["B-X"]], sample_weight=[0.0]) == 0.0
    assert sequence_accuracy([["O"]], [["B-X"]], sample_weight=[0.0]) == 1.0


# ---------------------------------------------------------------------------
# Scores and report
# ---------------------------------------------------------------------------


def test_scores_values_and_averages():
    y_true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-LOC", "O", "B-ORG"]]
    y_pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-LOC", "O", "O"]]
    # pred: PER, ORG, LOC (3); gold: PER, LOC, LOC, ORG (4); correct: PER, LOC
    assert segment_precision_score(y_true, y_pred) == pytest.approx(2 / 3)
    assert segment_recall_score(y_true, y_pred) == pytest.approx(2 / 4)
    assert segment_f1_score(y_true, y_pred) == pytest.approx(2 * 2 / (3 + 4))
    beta = 2.0
    p, r = 2 / 3, 2 / 4
    assert segment_f1_score(y_true, y_pred, beta=beta) == pytest.approx(
        (1 + beta**2) * p * r / (beta**2 * p + r)
    )
    # macro over LOC, ORG, PER
    f_loc = 2 * 1 / (1 + 2)
    f_org = 0.0
    f_per = 1.0
    assert segment_f1_score(y_true, y_pred, average="macro") == pytest.approx(
        (f_loc + f_org + f_per) / 3
    )
    assert segment_f1_score(y_true, y_pred, average="weighted") == pytest.approx(
        (2 * f_loc + f_org + f_per) / 4
    )
    with pytest.raises(ValueError, match="average"):
        segment_f1_score(y_true, y_pred, average="samples")
    with pytest.raises(ValueError, match="beta"):
        segment_f1_score(y_true, y_pred, beta=0)


def test_report_all_o_gold():
    y_true = [["O", "O", "O"], ["O"]]
    y_pred = [["B-PER", "I-PER", "O"], ["O"]]
    rep = segment_report(y_true, y_pred, output_dict=True, zero_division=0)
    assert rep["PER"] == {
        "precision": 0.0, "recall": 0.0, "f1-score": 0.0,
        "tp": 0, "fp": 1, "fn": 0, "n_pred": 1, "support": 0,
    }
    assert rep["micro avg"]["recall"] == 0.0
    assert segment_recall_score(y_true, y_pred, zero_division=1.0) == 1.0
    # nothing at all: gold and predictions all O
    rep = segment_report(y_true, y_true, output_dict=True, zero_division=0)
    assert set(rep) == {"micro avg", "macro avg", "weighted avg"}
    assert rep["micro avg"]["f1-score"] == 0.0
    text = segment_report(y_true, y_true)
    assert "processed 4 tokens with 0 phrases" in text
    assert segment_f1_score(y_true, y_true, zero_division=1.0) == 1.0


def test_report_dict_and_text():
    y_true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-LOC", "O", "B-ORG"], ["O"]]
    y_pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-LOC", "O", "O"], ["O"]]
    rep = segment_report(y_true, y_pred, output_dict=True)
    assert set(rep) == {"LOC", "ORG", "PER", "micro avg", "macro avg", "weighted avg"}
    for row in rep.values():
        assert set(row) == {
            "precision", "recall", "f1-score", "tp", "fp", "fn", "n_pred", "support"
        }
    assert (rep["LOC"]["tp"], rep["LOC"]["fp"], rep["LOC"]["fn"]) == (1, 0, 1)
    assert (rep["ORG"]["tp"], rep["ORG"]["fp"], rep["ORG"]["fn"]) == (0, 1, 1)
    assert rep["micro avg"]["tp"] == 2 and rep["micro avg"]["support"] == 4
    micro_f1 = segment_f1_score(y_true, y_pred)
    assert rep["micro avg"]["f1-score"] == pytest.approx(micro_f1)
    assert rep["macro avg"]["f1-score"] == pytest.approx(
        segment_f1_score(y_true, y_pred, average="macro")
    )
    text = segment_report(y_true, y_pred, digits=3)
    for name in ("LOC", "ORG", "PER", "micro avg", "macro avg", "weighted avg"):
        assert name in text
    assert "0.571" in text  # micro F1 = 4/7
    assert "found: 3 phrases; correct: 2" in text
    # empty-type chunks get a visible name
    assert "''" in segment_report([["B-X", "o"]], [["B-X", "o"]])


# ---------------------------------------------------------------------------
# Token and sequence metrics
# ---------------------------------------------------------------------------


def test_token_and_sequence_metrics():
    y_true = [["B-PER", "I-PER", "O"], ["O"], ["B-LOC", "O"]]
    y_pred = [
        np.array(["B-PER", "O", "O"]),
        np.array(["O"], dtype=object),
        np.array(["B-LOC", "O"]),
    ]
    assert token_accuracy(y_true, y_pred) == pytest.approx(5 / 6)
    assert hamming_loss(y_true, y_pred) == pytest.approx(1 / 6)
    assert sequence_accuracy(y_true, y_pred) == pytest.approx(2 / 3)
    # integer weights equal duplicated sequences
    w = [2, 1, 3]
    dup_t = [y_true[0]] * 2 + [y_true[1]] + [y_true[2]] * 3
    dup_p = [y_pred[0]] * 2 + [y_pred[1]] + [y_pred[2]] * 3
    assert token_accuracy(y_true, y_pred, sample_weight=w) == pytest.approx(
        token_accuracy(dup_t, dup_p)
    )
    assert hamming_loss(y_true, y_pred, sample_weight=w) == pytest.approx(
        hamming_loss(dup_t, dup_p)
    )
    assert sequence_accuracy(y_true, y_pred, sample_weight=w) == pytest.approx(
        sequence_accuracy(dup_t, dup_p)
    )


def test_token_metrics_are_flat_sklearn_metrics():
    # token metrics equal sklearn's on the concatenated labels, each token
    # weighted by its sequence's weight; sequence accuracy is the weighted
    # fraction of sequences without error
    rng = random.Random(4)
    y_true, y_pred = random_corpus(rng, "noisy", 300)
    y_true = [s for s in y_true if s]
    y_pred = [p for p in y_pred if p]
    w = np.array([rng.choice([0.5, 1.0, 3.0]) for _ in y_true])
    flat_true = np.concatenate([np.array(s, dtype=object) for s in y_true])
    flat_pred = np.concatenate([np.array(s, dtype=object) for s in y_pred])
    token_w = np.repeat(w, [len(s) for s in y_true])
    expected = accuracy_score(flat_true.astype(str), flat_pred.astype(str), sample_weight=token_w)
    assert 0.3 < expected < 0.99
    assert token_accuracy(y_true, y_pred, sample_weight=w) == pytest.approx(expected)
    assert hamming_loss(y_true, y_pred, sample_weight=w) == pytest.approx(1 - expected)
    ok = np.array([list(a) == list(b) for a, b in zip(y_true, y_pred)])
    assert 0 < ok.mean() < 1
    assert sequence_accuracy(y_true, y_pred, sample_weight=w) == pytest.approx(
        np.sum(w * ok) / np.sum(w))


# ---------------------------------------------------------------------------
# Scorers
# ---------------------------------------------------------------------------


class _LookupTagger(BaseEstimator):
    """Predicts a stored label array per sequence id (X is a list of ids)."""

    def __init__(self, table=None, dtype=object):
        self.table = table
        self.dtype = dtype

    def fit(self, X, y):
        return self

    def predict(self, X):
        return [np.asarray(self.table[x], dtype=self.dtype) for x in X]


Y_TRUE = [
    ["B-PER", "I-PER", "O"],
    ["O", "B-LOC"],
    ["B-ORG", "O", "O", "B-PER"],
    ["O"],
    ["B-LOC", "I-LOC"],
    ["O", "O"],
]
# Y_TRUE with three labels changed: sequences 0, 3 and 4 stay right
Y_PRED = [list(seq) for seq in Y_TRUE]
Y_PRED[1][1], Y_PRED[2][3], Y_PRED[5][1] = "B-ORG", "O", "B-PER"


@pytest.mark.parametrize("dtype", [object, str])
def test_scorers_direct_call(dtype):
    X = list(range(len(Y_TRUE)))
    est = _LookupTagger(table=Y_PRED, dtype=dtype).fit(X, Y_TRUE)
    assert segment_f1_scorer(est, X, Y_TRUE) == pytest.approx(
        segment_f1_score(Y_TRUE, Y_PRED)
    )
    h = hamming_scorer(est, X, Y_TRUE)
    assert h < 0
    assert h == pytest.approx(-hamming_loss(Y_TRUE, Y_PRED))
    assert token_accuracy_scorer(est, X, Y_TRUE) == pytest.approx(
        token_accuracy(Y_TRUE, Y_PRED)
    )
    assert sequence_accuracy_scorer(est, X, Y_TRUE) == pytest.approx(3 / 6)


def test_scorers_in_cross_validate():
    X = list(range(len(Y_TRUE)))
    est = _LookupTagger(table=Y_PRED)
    res = cross_validate(
        est, X, Y_TRUE, cv=KFold(3),
        scoring={"f1": segment_f1_scorer, "hamming": hamming_scorer},
    )
    assert res["test_f1"].shape == (3,)
    assert np.all(res["test_hamming"] <= 0)
    assert np.all((res["test_f1"] >= 0) & (res["test_f1"] <= 1))




def test_labels_without_chunk_prefix_warn_that_segment_scores_say_nothing():
    from sklearn.exceptions import UndefinedMetricWarning

    y = [["PER", "PER", "O", "LOC"]]
    with pytest.warns(UndefinedMetricWarning, match="no label has a chunk prefix.*'PER'"):
        segment_f1_score(y, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert segment_f1_score([["B-PER", "I-PER", "O"]], [["B-PER", "I-PER", "O"]]) == 1.0
        assert segment_f1_score([["O", "O"]], [["O", "O"]]) == 0.0  # only 'O': nothing to warn
