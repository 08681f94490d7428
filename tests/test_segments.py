"""Tests of sklearn_crfloss.segments: the label parser, schemes and the chunk decoder."""

import random
import re

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from _conlleval import GENERATORS, conlleval_oracle, random_corpus
from sklearn_crfloss.segments import (
    MODES,
    SCHEMES,
    encode_labels,
    get_segments,
    get_segments_batch,
    segments_from_codes,
    split_label,
)

PREFIX_SCHEMES = ["iob1", "iob2", "ioe1", "ioe2", "iobes", "bilou"]
SCHEME_MODES = [("conlleval", "lenient"), ("raw", "lenient"), ("raw", "strict")] + [
    (s, m) for s in PREFIX_SCHEMES for m in MODES
]
# prefixes each scheme accepts, and a vocabulary of labels valid in it
SCHEME_PREFIXES = {"iob1": "BI", "iob2": "BI", "ioe1": "IE", "ioe2": "IE",
                   "iobes": "BIES", "bilou": "BILU", "conlleval": "BIES", "raw": "BIX"}


def _vocab(scheme):
    return ["O", "O"] + [f"{p}-{t}" for p in SCHEME_PREFIXES[scheme] for t in ("A", "B-C")]


def _random_sequences(scheme, seed, n_seq=800, max_len=15):
    rng = random.Random(seed)
    vocab = _vocab(scheme)
    return [[rng.choice(vocab) for _ in range(rng.randint(0, max_len))] for _ in range(n_seq)]


# ---------------------------------------------------------------------------
# split_label
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("label, scheme, expected", [
    ("B-PER", "conlleval", ("B", "PER")),
    ("B-ARGM-LOC", "conlleval", ("B", "ARGM-LOC")),  # first hyphen only
    ("O", "conlleval", ("O", "")),
    ("o", "conlleval", ("o", "")),  # only the literal 'O' is outside
    ("PER", "conlleval", ("PER", "")),  # no hyphen: the label is the prefix
    ("I-", "conlleval", ("I", "")),
    ("-PER", "conlleval", ("", "PER")),
    ("B-0", "conlleval", ("B", "")),  # Perl reads the type '0' as false
    (7, "conlleval", ("7", "")),
    ("B-0", "iob2", ("B", "0")),
    ("O", "iob2", ("O", "")),
    ("B-ARGM-LOC", "iob2", ("B", "ARGM-LOC")),
    ("L-PER", "bilou", ("L", "PER")),
    ("U-PER", "bilou", ("U", "PER")),
    ("E-PER", "iobes", ("E", "PER")),
    ("PER", "raw", ("B", "PER")),  # conlleval -r: every label is B-<label>
    ("O", "raw", ("O", "")),
    (7, "raw", ("B", 7)),
])
def test_split_label(label, scheme, expected):
    assert split_label(label, scheme=scheme) == expected


@pytest.mark.parametrize("scheme", PREFIX_SCHEMES)
@pytest.mark.parametrize("bad", ["PER", "o", "I-", "X-PER", 7])
def test_split_label_rejects_what_the_scheme_rejects(scheme, bad):
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        split_label(bad, scheme=scheme)
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        get_segments(["O", bad], scheme=scheme)


def test_split_label_gives_the_decoder_types():
    # the type of a one-token chunk is the type split_label gives its label
    for scheme in SCHEMES:
        for label in _vocab(scheme):
            segs = get_segments([label], scheme=scheme)
            if segs:
                assert segs[0][2] == split_label(label, scheme=scheme)[1]
            else:
                assert label == "O"


# ---------------------------------------------------------------------------
# Acceptance: conlleval semantics
# ---------------------------------------------------------------------------


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
    assert get_segments([]) == []


def test_multi_hyphen_and_zero_type():
    assert get_segments(["B-A-B-C", "I-A-B-C"]) == [(0, 2, "A-B-C")]
    # Perl reads the type "0" as false, hence empty
    assert get_segments(["B-0", "I-0"]) == [(0, 2, "")]
    assert get_segments(["B-0"], scheme="iob2") == [(0, 1, "0")]


def test_degenerate_chunk_stays_open():
    # a typeless tag ('o') opens a chunk that O does not close; it is still
    # open at I-LOC, so the two chunks share their end
    assert get_segments(["B-PER", "o", "O", "I-LOC"]) == [
        (0, 1, "PER"),
        (1, 4, ""),
        (3, 4, "LOC"),
    ]
    # ... and is clipped at the sequence end
    assert get_segments_batch([["B-PER", "o"], ["O", "I-LOC"]]) == [
        [(0, 1, "PER"), (1, 2, "")],
        [(1, 2, "LOC")],
    ]


@pytest.mark.parametrize("family", ["iob1", "iob2", "iobes"])
def test_set_intersection_equals_conlleval_on_wellformed_labels(family):
    # for labels with a prefix and a non-empty type, conlleval's streaming
    # inCorrect count equals the intersection of (start, end, type) segments
    rng = random.Random(7 + ["iob1", "iob2", "iobes"].index(family))
    y_true, y_pred = random_corpus(rng, family, 2000)
    o = conlleval_oracle(y_true, y_pred)
    gold, found = get_segments_batch(y_true), get_segments_batch(y_pred)
    assert sum(len(set(t) & set(p)) for t, p in zip(gold, found)) == o["correct_chunk"]
    assert (sum(map(len, found)), sum(map(len, gold))) == (
        o["found_guessed"], o["found_correct"])


@pytest.mark.parametrize("family", sorted(GENERATORS))
def test_batch_decoding_equals_one_by_one(family):
    # get_segments_batch decodes the whole stream at once and splits it per
    # sequence; the noisy family has chunks left open at sequence ends
    rng = random.Random(99 + sorted(GENERATORS).index(family))
    y_true, y_pred = random_corpus(rng, family, 400)
    for y in (y_true, y_pred):
        one_by_one = [get_segments(s) for s in y]
        assert get_segments_batch(y) == one_by_one
        assert get_segments_batch([np.array(s, dtype=str) for s in y]) == one_by_one
        assert get_segments_batch([np.array(s, dtype=object) for s in y]) == one_by_one


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
        # raw: conlleval -r
        (["PER", "PER", "O", "LOC"], "raw", "lenient", [(0, 1, "PER"), (1, 2, "PER"),
                                                        (3, 4, "LOC")]),
        ([3, 3, "O"], "raw", "strict", [(0, 1, 3), (1, 2, 3)]),
    ],
)
def test_schemes(labels, scheme, mode, expected):
    assert get_segments(labels, scheme=scheme, mode=mode) == expected
    as_array = np.array(labels, dtype=object)
    assert get_segments(as_array, scheme=scheme, mode=mode) == expected


def _well_formed(scheme, parsed, seq, start, end):
    """Strict rules of the module docstring, label by label (the reference).

    ``parsed`` maps each label to its ``split_label``.
    """
    prefix = [parsed[lab][0] for lab in seq]
    typ = [parsed[lab][1] for lab in seq]
    first, last = prefix[start], prefix[end - 1]
    if scheme == "iob2":
        return first == "B"
    if scheme == "ioe2":
        return last == "E"
    if scheme in ("iobes", "bilou"):
        single, begin, close = ("S", "B", "E") if scheme == "iobes" else ("U", "B", "L")
        return (first == single and end - start == 1) or (first == begin and last == close)
    if scheme == "iob1":
        return first == "I" or (start > 0 and prefix[start - 1] != "O"
                                and typ[start - 1] == typ[start])
    return last == "I" or (end < len(seq) and prefix[end] != "O" and typ[end] == typ[start])


@pytest.mark.parametrize("scheme", PREFIX_SCHEMES)
def test_strict_mode_keeps_the_well_formed_lenient_chunks(scheme):
    y = _random_sequences(scheme, seed=5)
    lenient = get_segments_batch(y, scheme=scheme)
    strict = get_segments_batch(y, scheme=scheme, mode="strict")
    parsed = {lab: split_label(lab, scheme=scheme) for lab in _vocab(scheme)}
    expected = [[c for c in segs if _well_formed(scheme, parsed, seq, c[0], c[1])]
                for seq, segs in zip(y, lenient)]
    assert strict == expected
    n_strict = sum(map(len, strict))
    assert 0 < n_strict < sum(map(len, lenient))  # the filter did something


@pytest.mark.parametrize("scheme", PREFIX_SCHEMES)
@pytest.mark.parametrize("mode", MODES)
def test_segments_well_formed(scheme, mode):
    # every scheme gives sorted, non-overlapping, in-range, typed segments
    for seq in _random_sequences(scheme, seed=11, n_seq=300, max_len=12):
        segs = get_segments(seq, scheme=scheme, mode=mode)
        last = 0
        for s, e, t in segs:
            assert last <= s < e <= len(seq)
            assert all(lab != "O" and lab.split("-", 1)[1] == t for lab in seq[s:e])
            last = e


def test_conlleval_iobes_quirks():
    # E->B is not an end for conlleval; a real IOBES decoder splits
    assert get_segments(["B-X", "E-X", "B-X", "E-X"]) == [(0, 4, "X")]
    u = ["U-PER", "U-PER", "B-PER", "L-PER", "B-PER", "L-PER"]
    assert len(get_segments(u)) == 1
    assert len(get_segments(u, scheme="bilou")) == 4
    assert len(get_segments(u, scheme="bilou", mode="strict")) == 4


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", PREFIX_SCHEMES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bad", ["PER", "o", "I-", "X-PER", 7])
def test_invalid_labels_raise(scheme, mode, bad):
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        get_segments(["O", bad], scheme=scheme, mode=mode)
    with pytest.raises(ValueError, match="Sequence 1") as exc:
        get_segments_batch([["O"], ["O", bad]], scheme=scheme, mode=mode)
    assert repr(bad) in str(exc.value)


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


@pytest.mark.parametrize("func, args", [
    (get_segments, (["O"],)),
    (get_segments_batch, ([["O"]],)),
    (segments_from_codes, ([0], [0, 1], ["O"])),
])
def test_bad_scheme_or_mode(func, args):
    with pytest.raises(InvalidParameterError, match="'scheme' parameter"):
        func(*args, scheme="bio")
    with pytest.raises(InvalidParameterError, match="'mode' parameter"):
        func(*args, mode="exact")
    with pytest.raises(ValueError, match="no strict"):
        func(*args, mode="strict")


def test_split_label_bad_scheme():
    with pytest.raises(InvalidParameterError, match="'scheme' parameter of split_label"):
        split_label("B-X", scheme="bio")


def test_input_validation():
    with pytest.raises(ValueError, match="1-D"):
        get_segments(np.array([["O"]]))
    with pytest.raises(ValueError, match="'labels' parameter"):
        get_segments("B-PER")
    with pytest.raises(ValueError, match=r"y\[1\] is a string"):
        get_segments_batch([["O"], "B-PER"])
    with pytest.raises(ValueError, match=r"y\[0\] must be a sequence of labels"):
        get_segments_batch([3])


# ---------------------------------------------------------------------------
# encode_labels and segments_from_codes
# ---------------------------------------------------------------------------


def test_encode_labels():
    codes, offsets, classes = encode_labels([["B-X", "O"], [], ["O", "I-X"]])
    assert codes.tolist() == [0, 1, 1, 2]
    assert offsets.tolist() == [0, 2, 2, 4]
    assert classes == ["B-X", "O", "I-X"]
    codes, offsets, classes = encode_labels(
        [np.array(["I-X", "B-Y"])], classes=["O", "I-X"], input_name="y_pred")
    assert (codes.tolist(), offsets.tolist(), classes) == ([1, 2], [0, 2], ["O", "I-X", "B-Y"])
    with pytest.raises(ValueError, match=r"y_pred\[0\] is a string"):
        encode_labels(["B-X"], input_name="y_pred")
    with pytest.raises(ValueError, match="repeat"):
        encode_labels([["O"]], classes=["O", "O"])


CODED_NAMES = {
    "iob1": ["B-NP", "I-NP", "O", "I-VP", "B-VP"],
    "iob2": ["B-NP", "I-NP", "O", "I-VP"],
    "ioe1": ["I-NP", "E-NP", "O", "I-VP", "E-VP"],
    "iobes": ["B-NP", "I-NP", "O", "I-VP", "E-VP", "S-VP", "B-VP"],
    "raw": ["A", "B", "O"],
}


@pytest.mark.parametrize("names,scheme,mode", [
    (["B-NP", "I-NP", "B-VP", "I-VP", "O"], "conlleval", "lenient"),
    (["B-NP", "I-NP", "O", "o", "NP", "I-VP", "[-NP"], "conlleval", "lenient"),  # degenerate
] + [(names, scheme, mode) for scheme, names in CODED_NAMES.items() for mode in MODES])
def test_segments_from_codes_matches_get_segments_batch(names, scheme, mode):
    # The integer-coded entry used by loss='mce_f' returns exactly the
    # segments of get_segments_batch on the label names (random, often
    # ill-formed label sequences).
    rng = np.random.default_rng(0)
    table = np.array(names, dtype=object)
    for _ in range(150):
        lengths = rng.integers(0, 8, rng.integers(0, 6))
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
        codes = rng.integers(0, len(names), offsets[-1])
        seq, begin, stop, tcode, type_names = segments_from_codes(
            codes, offsets, table, scheme=scheme, mode=mode)
        got = [[] for _ in lengths]
        for i, a, b, t in zip(seq.tolist(), begin.tolist(), stop.tolist(), tcode.tolist()):
            got[i].append((a, b, type_names[t]))
        expected = get_segments_batch(
            [list(table[codes[a:b]]) for a, b in zip(offsets[:-1], offsets[1:])],
            scheme=scheme, mode=mode)
        assert got == expected


@pytest.mark.parametrize("codes, offsets, match", [
    ([0, 2], [0, 2], r"integers in \[0, 2\)"),
    ([0, -1], [0, 2], r"integers in \[0, 2\)"),
    ([0.0, 1.0], [0, 2], "integers"),
    ([0, 1], [0, 1], "offsets must"),
    ([0, 1], [1, 2], "offsets must"),
    ([0, 1], [0, 2, 1, 2], "offsets must"),
    ([[0, 1]], [0, 2], "1-D"),
])
def test_segments_from_codes_checks_codes_and_offsets(codes, offsets, match):
    with pytest.raises(ValueError, match=match):
        segments_from_codes(codes, offsets, ["O", "B-X"])
    with pytest.raises(ValueError, match="'PER' is not valid"):
        segments_from_codes([0], [0, 1], ["PER"], scheme="iob2")
