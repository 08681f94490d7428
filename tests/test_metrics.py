"""Tests of sklearn_crfloss.metrics: conlleval semantics, schemes, reports, scorers."""

import random
import re
from collections import defaultdict

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.model_selection import KFold, cross_validate

from sklearn_crfloss import metrics as metrics_module
from sklearn_crfloss.metrics import (
    get_segments,
    get_segments_batch,
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

# ---------------------------------------------------------------------------
# Oracle: a line-by-line transcription of conlleval.pl (version 2004-01-26),
# run on the flat token stream in which every sequence is followed by a
# blank line (read by the script as the O/O boundary token "-X- O O").
# ---------------------------------------------------------------------------

_BOUNDARY = "-X-"


def _pl_end_of_chunk(prev_tag, tag, prev_type, type_):
    chunk_end = False
    if prev_tag == "B" and tag == "B":
        chunk_end = True
    if prev_tag == "B" and tag == "O":
        chunk_end = True
    if prev_tag == "I" and tag == "B":
        chunk_end = True
    if prev_tag == "I" and tag == "O":
        chunk_end = True

    if prev_tag == "E" and tag == "E":
        chunk_end = True
    if prev_tag == "E" and tag == "I":
        chunk_end = True
    if prev_tag == "E" and tag == "O":
        chunk_end = True
    if prev_tag == "I" and tag == "O":
        chunk_end = True

    if prev_tag != "O" and prev_tag != "." and prev_type != type_:
        chunk_end = True

    if prev_tag == "]":
        chunk_end = True
    if prev_tag == "[":
        chunk_end = True
    return chunk_end


def _pl_start_of_chunk(prev_tag, tag, prev_type, type_):
    chunk_start = False
    if prev_tag == "B" and tag == "B":
        chunk_start = True
    if prev_tag == "I" and tag == "B":
        chunk_start = True
    if prev_tag == "O" and tag == "B":
        chunk_start = True
    if prev_tag == "O" and tag == "I":
        chunk_start = True

    if prev_tag == "E" and tag == "E":
        chunk_start = True
    if prev_tag == "E" and tag == "I":
        chunk_start = True
    if prev_tag == "O" and tag == "E":
        chunk_start = True
    if prev_tag == "O" and tag == "I":
        chunk_start = True

    if tag != "O" and tag != "." and prev_type != type_:
        chunk_start = True

    if tag == "[":
        chunk_start = True
    if tag == "]":
        chunk_start = True
    return chunk_start


def _pl_split(label):
    # if ($x =~ /^([^-]*)-(.*)$/) { $tag = $1; $type = $2 } else { $type = "" }
    m = re.match(r"^([^-]*)-(.*)$", label)
    if m:
        tag, type_ = m.group(1), m.group(2)
    else:
        tag, type_ = label, ""
    # $type = $type ? $type : "";   (Perl: "" and "0" are false)
    if type_ in ("", "0"):
        type_ = ""
    return tag, type_


def conlleval_oracle(y_true, y_pred, raw=False):
    """Return dict with found_guessed, found_correct, correct_chunk (totals and
    per type) and accuracy, computed exactly as conlleval.pl does."""
    lines = []
    for gold_seq, pred_seq in zip(y_true, y_pred):
        for g, p in zip(gold_seq, pred_seq):
            lines.append(("tok", g, p))
        lines.append((_BOUNDARY, "O", "O"))  # the blank line

    correct_chunk = 0
    correct_tags = 0
    found_correct = 0
    found_guessed = 0
    token_counter = 0
    correct_chunk_t = defaultdict(int)
    found_correct_t = defaultdict(int)
    found_guessed_t = defaultdict(int)
    in_correct = False
    last_correct, last_correct_type = "O", ""
    last_guessed, last_guessed_type = "O", ""

    for first_item, gold, guess in lines:
        if raw:
            if guess != "O":
                guess = "B-" + guess
            if gold != "O":
                gold = "B-" + gold
        guessed, guessed_type = _pl_split(guess)
        correct, correct_type = _pl_split(gold)
        if first_item == _BOUNDARY:
            guessed = "O"

        end_c = _pl_end_of_chunk(last_correct, correct, last_correct_type, correct_type)
        end_g = _pl_end_of_chunk(last_guessed, guessed, last_guessed_type, guessed_type)
        if in_correct:
            if end_c and end_g and last_guessed_type == last_correct_type:
                in_correct = False
                correct_chunk += 1
                correct_chunk_t[last_correct_type] += 1
            elif end_c != end_g or guessed_type != correct_type:
                in_correct = False

        start_c = _pl_start_of_chunk(
            last_correct, correct, last_correct_type, correct_type
        )
        start_g = _pl_start_of_chunk(
            last_guessed, guessed, last_guessed_type, guessed_type
        )
        if start_c and start_g and guessed_type == correct_type:
            in_correct = True
        if start_c:
            found_correct += 1
            found_correct_t[correct_type] += 1
        if start_g:
            found_guessed += 1
            found_guessed_t[guessed_type] += 1
        if first_item != _BOUNDARY:
            if correct == guessed and guessed_type == correct_type:
                correct_tags += 1
            token_counter += 1

        last_guessed, last_correct = guessed, correct
        last_guessed_type, last_correct_type = guessed_type, correct_type

    if in_correct:
        correct_chunk += 1
        correct_chunk_t[last_correct_type] += 1

    return {
        "found_guessed": found_guessed,
        "found_correct": found_correct,
        "correct_chunk": correct_chunk,
        "found_guessed_t": dict(found_guessed_t),
        "found_correct_t": dict(found_correct_t),
        "correct_chunk_t": dict(correct_chunk_t),
        "accuracy": correct_tags / token_counter if token_counter else None,
    }


def totals(y_true, y_pred, **kw):
    c = segment_counts(y_true, y_pred, **kw)
    return int(c["n_pred"].sum()), int(c["n_true"].sum()), int(c["n_correct"].sum())


def per_type(c, key):
    return {t: int(v) for t, v in zip(c["types"], c[key]) if v}


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
    ([["I-PER"], ["I-PER"]], [["I-PER"], ["I-PER"]], (2, 2, 2)),
    ([["I-PER", "I-PER"]], [["I-PER", "I-PER"]], (1, 1, 1)),
]


@pytest.mark.parametrize("y_true, y_pred, expected", ACCEPTANCE)
def test_acceptance_table(y_true, y_pred, expected):
    assert totals(y_true, y_pred) == expected
    o = conlleval_oracle(y_true, y_pred)
    assert (o["found_guessed"], o["found_correct"], o["correct_chunk"]) == expected


def test_acceptance_segments_and_types():
    assert get_segments(["B-ARGM-LOC", "I-ARGM-TMP"]) == [
        (0, 1, "ARGM-LOC"),
        (1, 2, "ARGM-TMP"),
    ]
    assert get_segments(["B-PER", "o", "I-PER"]) == [
        (0, 1, "PER"),
        (1, 2, ""),
        (2, 3, "PER"),
    ]
    assert get_segments(["PER", "PER", "O", "LOC"]) == []
    assert get_segments_batch([["I-PER"], ["I-PER"]]) == [
        [(0, 1, "PER")],
        [(0, 1, "PER")],
    ]
    assert get_segments(["I-PER", "I-PER"]) == [(0, 2, "PER")]
    # no chunk may cross a sentence boundary: the break splits the chunk
    c = segment_counts([["I-PER"], ["I-PER"]], [["I-PER", "I-PER"][:1], ["I-PER"]])
    assert c["n_correct"].tolist() == [2]


def test_conlleval_iobes_quirks():
    # E->B is not an end: gold B E B E is one phrase, predicted B I I E also
    gold = [["B-X", "E-X", "B-X", "E-X"]]
    pred = [["B-X", "I-X", "I-X", "E-X"]]
    assert totals(gold, pred) == (1, 1, 1)
    assert segment_f1_score(gold, pred) == 1.0
    assert token_accuracy(gold, pred) == 0.5
    # a real IOBES decoder sees two gold phrases
    assert totals(gold, pred, scheme="iobes") == (1, 2, 0)
    u = [["U-PER", "U-PER", "B-PER", "L-PER", "B-PER", "L-PER"]]
    assert totals(u, u) == (1, 1, 1)
    assert totals(u, u, scheme="bilou") == (4, 4, 4)
    assert totals(u, u, scheme="bilou", mode="strict") == (4, 4, 4)


def test_multi_hyphen_and_zero_type():
    assert get_segments(["B-A-B-C", "I-A-B-C"]) == [(0, 2, "A-B-C")]
    # Perl reads the type "0" as false, hence empty
    assert get_segments(["B-0", "I-0"]) == [(0, 2, "")]
    assert get_segments(["B-0"], scheme="iob2") == [(0, 1, "0")]


# ---------------------------------------------------------------------------
# Differential fuzz against the oracle
# ---------------------------------------------------------------------------

TYPES = ["PER", "LOC", "ARGM-TMP"]


def _gen_iob1(rng, n):
    out, prev_type = [], None
    while len(out) < n:
        if rng.random() < 0.4:
            out.append("O")
            prev_type = None
            continue
        t = rng.choice(TYPES)
        first = "B" if prev_type == t else "I"
        length = rng.randint(1, 3)
        out += [f"{first}-{t}"] + [f"I-{t}"] * (length - 1)
        prev_type = t
    return out[:n]


def _gen_iob2(rng, n):
    out = []
    while len(out) < n:
        if rng.random() < 0.4:
            out.append("O")
            continue
        t = rng.choice(TYPES)
        out += [f"B-{t}"] + [f"I-{t}"] * rng.randint(0, 2)
    return out[:n]


def _gen_iobes(rng, n):
    out = []
    while len(out) < n:
        if rng.random() < 0.4:
            out.append("O")
            continue
        t = rng.choice(TYPES)
        length = rng.randint(1, 4)
        if length == 1:
            out.append(f"S-{t}")
        else:
            out += [f"B-{t}"] + [f"I-{t}"] * (length - 2) + [f"E-{t}"]
    return out[:n]


NOISE = [
    "O", "O", "O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC",
    "I-ARGM-TMP", "B-ARGM-TMP", "E-ARGM-TMP", "o", "PER", "LOC", ".", "[", "]",
    "I-", "B-", "O-PER", ".-LOC", "[-PER", "]-LOC", "-PER", "B--X", "S-LOC",
]


def _gen_noisy(rng, n):
    return [rng.choice(NOISE) for _ in range(n)]


def _corrupt(rng, seq, p, vocab):
    return [rng.choice(vocab) if rng.random() < p else lab for lab in seq]


GENERATORS = {
    "iob1": _gen_iob1,
    "iob2": _gen_iob2,
    "iobes": _gen_iobes,
    "noisy": _gen_noisy,
}
CLEAN_VOCAB = ["O"] + [f"{p}-{t}" for p in "BIES" for t in TYPES]


def _random_corpus(rng, family, n_seq):
    gen = GENERATORS[family]
    vocab = NOISE if family == "noisy" else CLEAN_VOCAB
    y_true, y_pred = [], []
    for _ in range(n_seq):
        n = rng.randint(0, 10)
        gold = gen(rng, n)
        if rng.random() < 0.3:
            pred = gen(rng, n)  # independent prediction
        else:
            pred = _corrupt(rng, gold, rng.choice([0.0, 0.1, 0.3]), vocab)
        y_true.append(gold)
        y_pred.append(pred)
    return y_true, y_pred


def _assert_same_as_oracle(y_true, y_pred):
    o = conlleval_oracle(y_true, y_pred)
    c = segment_counts(y_true, y_pred)
    got = (
        int(c["n_pred"].sum()),
        int(c["n_true"].sum()),
        int(c["n_correct"].sum()),
    )
    assert got == (o["found_guessed"], o["found_correct"], o["correct_chunk"]), (
        y_true,
        y_pred,
    )
    assert per_type(c, "n_pred") == o["found_guessed_t"]
    assert per_type(c, "n_true") == o["found_correct_t"]
    assert per_type(c, "n_correct") == o["correct_chunk_t"]
    if o["accuracy"] is not None:
        assert token_accuracy(y_true, y_pred) == pytest.approx(o["accuracy"])


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_differential_fuzz_against_conlleval(family):
    rng = random.Random(12345 + sorted(GENERATORS).index(family))
    y_true, y_pred = _random_corpus(rng, family, 3000)
    # the whole corpus as one file ...
    _assert_same_as_oracle(y_true, y_pred)
    # ... and many small files, so that every sentence-boundary case is hit
    i = 0
    while i < len(y_true):
        k = rng.randint(1, 5)
        _assert_same_as_oracle(y_true[i : i + k], y_pred[i : i + k])
        i += k


@pytest.mark.parametrize("family", ["iob1", "iob2", "iobes"])
def test_set_intersection_equals_conlleval_on_wellformed_labels(family):
    # for labels with a prefix and a non-empty type, conlleval's streaming
    # inCorrect count equals the intersection of (start, end, type) segments
    rng = random.Random(7 + ["iob1", "iob2", "iobes"].index(family))
    y_true, y_pred = _random_corpus(rng, family, 2000)
    o = conlleval_oracle(y_true, y_pred)
    inter = sum(
        len(set(get_segments(t)) & set(get_segments(p)))
        for t, p in zip(y_true, y_pred)
    )
    assert inter == o["correct_chunk"]
    found = sum(len(s) for s in get_segments_batch(y_pred))
    gold = sum(len(s) for s in get_segments_batch(y_true))
    assert (found, gold) == (o["found_guessed"], o["found_correct"])


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_batch_decoding_equals_one_by_one(family):
    # get_segments_batch decodes the whole stream at once (numpy fast path,
    # or the token loop for degenerate labels) and splits it per sequence
    rng = random.Random(99 + sorted(GENERATORS).index(family))
    y_true, y_pred = _random_corpus(rng, family, 1500)
    for y in (y_true, y_pred):
        assert get_segments_batch(y) == [get_segments(s) for s in y]
        arrays = [np.array(s, dtype=str) for s in y]
        assert get_segments_batch(arrays) == [get_segments(s) for s in y]


@pytest.mark.parametrize(
    "scheme, mode",
    [("conlleval", "lenient")]
    + [(s, m) for s in ("iob1", "iob2", "ioe1", "ioe2", "iobes", "bilou")
       for m in ("lenient", "strict")],
)
def test_fast_path_equals_token_loop(scheme, mode, monkeypatch):
    rng = random.Random(5)
    prefixes = {"iobes": "BIES", "bilou": "BILU", "iob1": "BI", "iob2": "BI",
                "ioe1": "IE", "ioe2": "IE", "conlleval": "BIES"}[scheme]
    vocab = ["O", "O"] + [f"{p}-{t}" for p in prefixes for t in ("A", "B-C")]
    y_true = [
        [rng.choice(vocab) for _ in range(rng.randint(0, 15))] for _ in range(800)
    ]
    y_pred = [_corrupt(rng, s, 0.2, vocab) for s in y_true]
    fast = segment_counts(y_true, y_pred, scheme=scheme, mode=mode)
    fast_segs = get_segments_batch(y_true, scheme=scheme, mode=mode)
    monkeypatch.setattr(metrics_module, "_VECTORIZE_MIN_TOKENS", 10**12)
    slow = segment_counts(y_true, y_pred, scheme=scheme, mode=mode)
    assert fast["types"] == slow["types"]
    for key in ("n_pred", "n_true", "n_correct"):
        np.testing.assert_array_equal(fast[key], slow[key])
    assert get_segments_batch(y_true, scheme=scheme, mode=mode) == fast_segs
    assert fast_segs == [get_segments(s, scheme=scheme, mode=mode) for s in y_true]


def test_conlleval_streaming_quirks_reproduced():
    # A typeless tag ('o') opens a chunk that O does not close; a later
    # start resets conlleval's inCorrect flag, so identical gold and guess
    # do not give correct == found. The module reproduces this.
    y = [["B-PER", "o", "O", "I-LOC"]]
    assert totals(y, y) == (3, 3, 2)
    o = conlleval_oracle(y, y)
    assert (o["found_guessed"], o["found_correct"], o["correct_chunk"]) == (3, 3, 2)
    # the open chunk survives the sentence break: its credit depends on the
    # next sentence
    a = [["B-PER", "o"], ["O", "O"]]
    b = [["B-PER", "o"], ["O", "B-LOC"]]
    assert totals(a, a) == (2, 2, 2)
    assert totals(b, b) == (3, 3, 2)
    for y in (a, b):
        o = conlleval_oracle(y, y)
        expected = (o["found_guessed"], o["found_correct"], o["correct_chunk"])
        assert totals(y, y) == expected
    # segments as conlleval sees them: the 'o' chunk is still open at I-LOC
    assert get_segments(["B-PER", "o", "O", "I-LOC"]) == [
        (0, 1, "PER"),
        (1, 4, ""),
        (3, 4, "LOC"),
    ]


@pytest.mark.parametrize(
    "sentence",
    [
        ["B-PER", "o", "O", "I-LOC"],  # nested chunks, with a type change
        ["B-PER", "o", "O", "B-", "O"],  # nested chunks, no type change
        ["B-X", "[-X", "I-X"],  # '[' starts a chunk inside another
        ["S-X", ".-X", ".-Y", "o-Y", "O"],  # a chunk changes type, no nesting
    ],
)
@pytest.mark.parametrize("n_copies", [1, 300])  # token loop / numpy fast path
def test_degenerate_labels_large_and_small(sentence, n_copies):
    y = [sentence] * n_copies
    rng = random.Random(1)
    y_pred = [_corrupt(rng, s, 0.2, NOISE) for s in y]
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
    y_pred = [_corrupt(rng, s, 0.3, vocab) for s in y_true]
    o = conlleval_oracle(y_true, y_pred, raw=True)
    c = segment_counts(y_true, y_pred, scheme="raw")
    assert (
        int(c["n_pred"].sum()),
        int(c["n_true"].sum()),
        int(c["n_correct"].sum()),
    ) == (o["found_guessed"], o["found_correct"], o["correct_chunk"])
    assert per_type(c, "n_true") == o["found_correct_t"]


def test_raw_scheme_segments():
    assert get_segments(["PER", "PER", "O", "LOC"], scheme="raw") == [
        (0, 1, "PER"),
        (1, 2, "PER"),
        (3, 4, "LOC"),
    ]
    assert get_segments([3, 3, "O"], scheme="raw", mode="strict") == [
        (0, 1, 3),
        (1, 2, 3),
    ]
    assert totals([["PER", "PER", "O", "LOC"]], [["PER", "LOC", "O", "LOC"]],
                  scheme="raw") == (3, 3, 2)


# ---------------------------------------------------------------------------
# Schemes and strict modes
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "labels, scheme, mode, expected",
    [
        # IOBES / BILOU
        (["S-PER", "S-PER"], "iobes", "strict", [(0, 1, "PER"), (1, 2, "PER")]),
        (["S-PER", "S-PER"], "iobes", "lenient", [(0, 1, "PER"), (1, 2, "PER")]),
        (["S-PER", "S-PER"], "conlleval", "lenient", [(0, 2, "PER")]),
        (["B-PER", "I-PER", "O"], "iobes", "strict", []),
        (["B-PER", "I-PER", "O"], "iobes", "lenient", [(0, 2, "PER")]),
        (["I-PER", "E-PER"], "iobes", "strict", []),
        (["E-PER"], "iobes", "strict", []),
        (["B-PER", "E-LOC"], "iobes", "strict", []),
        (
            ["B-PER", "I-PER", "E-PER", "S-LOC", "B-X", "E-X"],
            "iobes",
            "strict",
            [(0, 3, "PER"), (3, 4, "LOC"), (4, 6, "X")],
        ),
        (
            ["B-X", "E-X", "B-X", "E-X"],
            "iobes",
            "lenient",
            [(0, 2, "X"), (2, 4, "X")],
        ),
        (
            ["U-PER", "U-PER", "B-LOC", "L-LOC", "B-X"],
            "bilou",
            "strict",
            [(0, 1, "PER"), (1, 2, "PER"), (2, 4, "LOC")],
        ),
        # IOB2
        (["O", "I-PER", "I-PER"], "iob2", "strict", []),
        (["O", "I-PER", "I-PER"], "iob2", "lenient", [(1, 3, "PER")]),
        (["B-PER", "I-PER", "I-LOC"], "iob2", "strict", [(0, 2, "PER")]),
        (
            ["B-PER", "I-PER", "I-LOC"],
            "iob2",
            "lenient",
            [(0, 2, "PER"), (2, 3, "LOC")],
        ),
        (["B-PER", "B-PER"], "iob2", "strict", [(0, 1, "PER"), (1, 2, "PER")]),
        # IOB1
        (["O", "B-X", "I-X"], "iob1", "strict", []),
        (["I-X", "B-X"], "iob1", "strict", [(0, 1, "X"), (1, 2, "X")]),
        (["I-X", "I-X", "O", "I-Y"], "iob1", "strict", [(0, 2, "X"), (3, 4, "Y")]),
        (["O", "B-X", "I-X"], "iob1", "lenient", [(1, 3, "X")]),
        # IOE2 / IOE1
        (["I-X", "I-X", "O"], "ioe2", "strict", []),
        (["I-X", "E-X", "E-X"], "ioe2", "strict", [(0, 2, "X"), (2, 3, "X")]),
        (["I-X", "I-X", "O"], "ioe2", "lenient", [(0, 2, "X")]),
        (["I-X", "E-X", "I-X"], "ioe1", "strict", [(0, 2, "X"), (2, 3, "X")]),
        (["I-X", "E-X", "O"], "ioe1", "strict", []),
        (["I-X", "I-X"], "ioe1", "strict", [(0, 2, "X")]),
        (["I-X", "E-X", "O"], "ioe1", "lenient", [(0, 2, "X")]),
    ],
)
def test_schemes(labels, scheme, mode, expected):
    assert get_segments(labels, scheme=scheme, mode=mode) == expected
    as_array = np.array(labels, dtype=object)
    assert get_segments(as_array, scheme=scheme, mode=mode) == expected


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
@pytest.mark.parametrize("mode", ["lenient", "strict"])
@pytest.mark.parametrize("bad", ["PER", "o", "I-", "X-PER", 7])
def test_invalid_labels_raise(scheme, mode, bad):
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        get_segments(["O", bad], scheme=scheme, mode=mode)
    y = [["O"], ["O", bad]]
    with pytest.raises(ValueError, match="Sequence 1") as exc:
        segment_f1_score(y, y, scheme=scheme, mode=mode)
    assert repr(bad) in str(exc.value)
    with pytest.raises(ValueError, match="Sequence 1"):
        get_segments_batch(y, scheme=scheme, mode=mode)


def test_scheme_specific_prefixes():
    with pytest.raises(ValueError, match="'E-PER'"):
        get_segments(["B-PER", "E-PER"], scheme="bilou")
    with pytest.raises(ValueError, match="'B-PER'"):
        get_segments(["B-PER"], scheme="ioe2")
    # conlleval and raw accept anything
    assert get_segments(["PER", "o", 7]) == []
    assert get_segments(["PER", "o", 7], scheme="raw") == [
        (0, 1, "PER"),
        (1, 2, "o"),
        (2, 3, 7),
    ]


def test_bad_scheme_or_mode():
    with pytest.raises(ValueError, match="scheme must be one of"):
        get_segments(["O"], scheme="bio")
    with pytest.raises(ValueError, match="mode must be one of"):
        get_segments(["O"], mode="exact")
    with pytest.raises(ValueError, match="no strict"):
        segment_f1_score([["O"]], [["O"]], mode="strict")


@pytest.mark.parametrize("scheme", ["iob1", "iob2", "ioe1", "ioe2", "iobes", "bilou"])
@pytest.mark.parametrize("mode", ["lenient", "strict"])
def test_segments_well_formed(scheme, mode):
    # every scheme gives sorted, non-overlapping, in-range, typed segments
    rng = random.Random(11)
    prefixes = {"iobes": "BIES", "bilou": "BILU"}.get(scheme, "BIE")
    vocab = ["O"] + [f"{p}-{t}" for p in prefixes for t in ("A", "B-C")]
    if scheme in ("iob1", "iob2"):
        vocab = [v for v in vocab if not v.startswith("E")]
    if scheme in ("ioe1", "ioe2"):
        vocab = [v for v in vocab if not v.startswith("B")]
    for _ in range(300):
        seq = [rng.choice(vocab) for _ in range(rng.randint(0, 12))]
        segs = get_segments(seq, scheme=scheme, mode=mode)
        last = 0
        for s, e, t in segs:
            assert last <= s < e <= len(seq)
            assert all(lab != "O" and lab.split("-", 1)[1] == t for lab in seq[s:e])
            last = e
        if mode == "strict":
            lenient = get_segments(seq, scheme=scheme)
            assert set(segs) <= set(lenient)


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------


def test_input_validation():
    with pytest.raises(ValueError, match="list of label sequences"):
        segment_f1_score(["B-PER", "O"], ["B-PER", "O"])
    with pytest.raises(ValueError, match="2 sequences but y_pred has 1"):
        segment_f1_score([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="Sequence 1: y_true has 2 labels"):
        token_accuracy([["O"], ["O", "O"]], [["O"], ["O"]])
    with pytest.raises(ValueError, match="Sequence 0"):
        segment_report([["O", "B-X"]], [["O"]])
    with pytest.raises(ValueError, match="1-D"):
        get_segments(np.array([["O"]]))
    with pytest.raises(ValueError, match="string"):
        get_segments("B-PER")
    with pytest.raises(ValueError, match="sample_weight"):
        token_accuracy([["O"]], [["O"]], sample_weight=[1.0, 2.0])


def test_empty_sequences_and_inputs():
    assert get_segments([]) == []
    y = [[], ["B-X"], []]
    assert totals(y, y) == (1, 1, 1)
    assert segment_f1_score([[]], [[]]) == 0.0
    assert segment_f1_score([[]], [[]], zero_division=1.0) == 1.0
    assert token_accuracy([[]], [[]]) == 1.0
    assert hamming_loss([], []) == 0.0
    assert sequence_accuracy([[], []], [[], []]) == 1.0


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
Y_PRED = [
    ["B-PER", "I-PER", "O"],
    ["O", "B-ORG"],
    ["B-ORG", "O", "O", "O"],
    ["O"],
    ["B-LOC", "I-LOC"],
    ["O", "B-PER"],
]


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


@pytest.mark.parametrize("names,scheme", [
    (["B-NP", "I-NP", "B-VP", "I-VP", "O"], "conlleval"),
    (["B-NP", "I-NP", "O", "I-VP", "B-VP"], "iob1"),
    (["B-NP", "I-NP", "O", "I-VP"], "iob2"),
    (["B-NP", "I-NP", "O", "I-VP", "E-VP", "S-VP", "B-VP"], "iobes"),
    (["A", "B", "O"], "raw"),
])
def test_segments_from_codes_matches_get_segments_batch(names, scheme):
    # The integer-coded decoder used by loss='mce_f' returns exactly the
    # segments of get_segments_batch on the label names (random, often
    # ill-formed label sequences, so the general fallback path runs too).
    from sklearn_crfloss.metrics import _segments_from_codes

    rng = np.random.default_rng(0)
    table = np.array(names, dtype=object)
    for _ in range(150):
        lengths = rng.integers(0, 8, rng.integers(0, 6))
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
        codes = rng.integers(0, len(names), offsets[-1])
        seq, begin, stop, tcode, type_names = _segments_from_codes(
            codes, offsets, names, scheme=scheme)
        got = [[] for _ in lengths]
        for i, a, b, t in zip(seq.tolist(), begin.tolist(), stop.tolist(), tcode.tolist()):
            got[i].append((a, b, type_names[t]))
        expected = get_segments_batch(
            [list(table[codes[a:b]]) for a, b in zip(offsets[:-1], offsets[1:])], scheme=scheme)
        assert got == expected
