"""conlleval.pl transcribed line by line, and random label corpora, for the tests.

Used by tests/test_segments.py and tests/test_metrics.py: the oracle is the
reference that the chunk decoder and the segment counts must reproduce.
"""

import re
from collections import defaultdict

# ---------------------------------------------------------------------------
# Oracle: a line-by-line transcription of conlleval.pl (version 2004-01-26),
# run on the flat token stream in which every sequence is followed by a
# blank line (read by the script as the O/O boundary token "-X- O O").
# ---------------------------------------------------------------------------

_BOUNDARY = "-X-"


# The (previous tag, tag) pairs of the `if` lines of endOfChunk and
# startOfChunk, in the script's order (it lists I/O twice in each).
_PL_END_PAIRS = [
    ("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"),
    ("E", "E"), ("E", "I"), ("E", "O"), ("I", "O"),
]
_PL_START_PAIRS = [
    ("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"),
    ("E", "E"), ("E", "I"), ("O", "E"), ("O", "I"),
]


def _pl_chunk_events(prev_tag, tag, prev_type, type_):
    """(endOfChunk, startOfChunk) of the script for one step of the stream."""
    chunk_end = (prev_tag, tag) in _PL_END_PAIRS
    chunk_start = (prev_tag, tag) in _PL_START_PAIRS
    if prev_type != type_:
        chunk_end = chunk_end or (prev_tag != "O" and prev_tag != ".")
        chunk_start = chunk_start or (tag != "O" and tag != ".")
    chunk_end = chunk_end or prev_tag in ("[", "]")
    chunk_start = chunk_start or tag in ("[", "]")
    return chunk_end, chunk_start


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

        end_c, start_c = _pl_chunk_events(
            last_correct, correct, last_correct_type, correct_type)
        end_g, start_g = _pl_chunk_events(
            last_guessed, guessed, last_guessed_type, guessed_type)
        if in_correct:
            if end_c and end_g and last_guessed_type == last_correct_type:
                in_correct = False
                correct_chunk += 1
                correct_chunk_t[last_correct_type] += 1
            elif end_c != end_g or guessed_type != correct_type:
                in_correct = False

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



TYPES = ["PER", "LOC", "ARGM-TMP"]


def _gen_chunks(rng, n, chunk):
    """``n`` labels: ``O`` (probability 0.4) or ``chunk(rng, type, labels so far)``."""
    out = []
    while len(out) < n:
        if rng.random() < 0.4:
            out.append("O")
            continue
        out += chunk(rng, rng.choice(TYPES), out)
    return out[:n]


def _iob1_chunk(rng, t, out):
    # B-X only right after a chunk of the same type
    first = "B" if out and out[-1] != "O" and out[-1].split("-", 1)[1] == t else "I"
    return [f"{first}-{t}"] + [f"I-{t}"] * (rng.randint(1, 3) - 1)


def _iob2_chunk(rng, t, out):
    return [f"B-{t}"] + [f"I-{t}"] * rng.randint(0, 2)


def _iobes_chunk(rng, t, out):
    length = rng.randint(1, 4)
    if length == 1:
        return [f"S-{t}"]
    return [f"B-{t}"] + [f"I-{t}"] * (length - 2) + [f"E-{t}"]


NOISE = [
    "O", "O", "O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC",
    "I-ARGM-TMP", "B-ARGM-TMP", "E-ARGM-TMP", "o", "PER", "LOC", ".", "[", "]",
    "I-", "B-", "O-PER", ".-LOC", "[-PER", "]-LOC", "-PER", "B--X", "S-LOC",
]


def _gen_noisy(rng, n):
    return [rng.choice(NOISE) for _ in range(n)]


def corrupt(rng, seq, p, vocab):
    """``seq`` with each label replaced, with probability ``p``, by one of ``vocab``."""
    return [rng.choice(vocab) if rng.random() < p else lab for lab in seq]


GENERATORS = {
    "iob1": lambda rng, n: _gen_chunks(rng, n, _iob1_chunk),
    "iob2": lambda rng, n: _gen_chunks(rng, n, _iob2_chunk),
    "iobes": lambda rng, n: _gen_chunks(rng, n, _iobes_chunk),
    "noisy": _gen_noisy,
}
CLEAN_VOCAB = ["O"] + [f"{p}-{t}" for p in "BIES" for t in TYPES]


def random_corpus(rng, family, n_seq):
    """``n_seq`` gold sequences of ``family`` and predictions: corrupted or independent."""
    gen = GENERATORS[family]
    vocab = NOISE if family == "noisy" else CLEAN_VOCAB
    y_true, y_pred = [], []
    for _ in range(n_seq):
        n = rng.randint(0, 10)
        gold = gen(rng, n)
        if rng.random() < 0.3:
            pred = gen(rng, n)  # independent prediction
        else:
            pred = corrupt(rng, gold, rng.choice([0.0, 0.1, 0.3]), vocab)
        y_true.append(gold)
        y_pred.append(pred)
    return y_true, y_pred


