"""MCE-F comparing segments as chunks (``segment_match='chunks'``).

Two encodings of the same chunks (IOB1, IOB2, IOBES under conlleval's
reading) are never an error: the loss value depends on the gold labels only
through their chunks, and a competitor that re-encodes the gold chunks is
not the maximum incorrect output. Values are checked against enumeration
and gradients by finite differences (:func:`sklearn_crfloss.losses.check_loss`).
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_crfloss.inference import PositionTransitions, viterbi_excluding
from sklearn_crfloss.losses import SegmentFScoreMCE, check_loss
from sklearn_crfloss.losses._chunks import ChunkEvents
from sklearn_crfloss.segments import get_segments

from _oracle import loss_by_enumeration, random_problem

CLASSES = np.array(["B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC", "O"])
CODE = {name: k for k, name in enumerate(CLASSES)}
# One set of chunks, three encodings: the lenient IOBES reading (scheme='iobes')
# reads all three alike, conlleval's the first two (it does not know S-).
IOB2 = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-LOC", "B-LOC", "I-LOC", "O"], ["B-PER"]]
IOB1 = [["I-PER", "I-PER", "O", "I-LOC"], ["O", "I-LOC", "B-LOC", "I-LOC", "O"], ["I-PER"]]
IOBES = [["B-PER", "E-PER", "O", "S-LOC"], ["O", "S-LOC", "B-LOC", "E-LOC", "O"], ["S-PER"]]
FALSE_POSITIVES = ["gold", "max_incorrect", "viterbi"]


def _codes(y):
    return np.array([CODE[t] for s in y for t in s], dtype=np.intp)


def _potentials(seed, lengths, scale=1.5):
    rng = np.random.default_rng(seed)
    L = len(CLASSES)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    return (scale * rng.normal(size=(offsets[-1], L)), scale * rng.normal(size=(L, L)),
            scale * rng.normal(size=L), scale * rng.normal(size=L), offsets)


def _encodings(scheme):
    return (IOB2, IOB1, IOBES) if scheme == "iobes" else (IOB2, IOB1)


@pytest.mark.parametrize("scheme", ["iobes", "conlleval"])
def test_encodings_are_the_same_chunks(scheme):
    for encodings in zip(*_encodings(scheme)):
        chunks = [get_segments(y, scheme=scheme) for y in encodings]
        assert all(c == chunks[0] for c in chunks)
        assert all(y != encodings[0] for y in encodings[1:])


@pytest.mark.parametrize("scheme", ["iobes", "conlleval"])
@pytest.mark.parametrize("false_positives", FALSE_POSITIVES)
@pytest.mark.parametrize("seed", range(3))
def test_iob1_iob2_iobes_golds_give_the_same_value_and_gradient(scheme, false_positives, seed):
    U, T, s, e, off = _potentials(seed, [len(x) for x in IOB2])
    loss = SegmentFScoreMCE(false_positives=false_positives, scheme=scheme,
                            segment_match="chunks").set_classes(CLASSES)
    golds = _encodings(scheme)
    out = [loss.value_and_grad(U, T, s, e, _codes(y), off) for y in golds]
    for other in out[1:]:
        for a, b in zip(out[0], other):
            assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("false_positives", ["gold", "max_incorrect"])
def test_label_strings_see_encodings_as_errors(false_positives):
    # The label-string variant is kept for the paper's Eq. 15 as written: it
    # does tell the encodings apart (so the test above can fail).
    U, T, s, e, off = _potentials(0, [len(x) for x in IOB2])
    loss = SegmentFScoreMCE(false_positives=false_positives, scheme="iobes",
                            segment_match="labels").set_classes(CLASSES)
    values = [loss.value_and_grad(U, T, s, e, _codes(y), off)[0] for y in (IOB2, IOB1, IOBES)]
    assert not np.isclose(values[0], values[1]) and not np.isclose(values[0], values[2])


def _favouring(path, L, margin=5.0, seed=0):
    """Potentials whose best path is ``path`` (one sequence), by ``margin`` per token."""
    rng = np.random.default_rng(seed)
    U = 0.1 * rng.normal(size=(len(path), L))
    U[np.arange(len(path)), path] += margin
    return U, np.zeros((L, L)), np.zeros(L), np.zeros(L), np.array([0, len(path)])


def test_reencoding_the_gold_chunks_is_not_the_maximum_incorrect_output():
    gold = _codes([IOB1[0]])  # I-PER I-PER O I-LOC
    best = _codes([IOB2[0]])  # B-PER I-PER O B-LOC: the same chunks
    U, T, s, e, off = _favouring(best, len(CLASSES))
    events = ChunkEvents(CLASSES, "conlleval")
    # On label strings the best other sequence is the re-encoding ...
    label_wrong, _ = viterbi_excluding(U, T, s, e, off, gold)
    assert np.array_equal(label_wrong, best)
    # ... on chunks it is the best sequence with other chunks.
    wrong = events.max_incorrect(U, T, s, e, off, gold)
    chunks = get_segments(list(CLASSES[wrong]))
    assert chunks != get_segments(list(CLASSES[gold]))
    # exhaustive check of "best with other chunks" on a shorter sequence
    gold3, best3 = gold[:3], best[:3]
    U3, T3, s3, e3, off3 = _favouring(best3, len(CLASSES), seed=1)
    wrong3 = events.max_incorrect(U3, T3, s3, e3, off3, gold3)
    grid = np.array(np.meshgrid(*[np.arange(len(CLASSES))] * 3, indexing="ij")).reshape(3, -1).T
    scores = U3[np.arange(3), grid].sum(axis=1)
    other = [get_segments(list(CLASSES[p])) != get_segments(list(CLASSES[gold3])) for p in grid]
    assert_allclose(U3[np.arange(3), wrong3].sum(), scores[other].max())


def test_reencodings_of_several_lengths_are_replaced_in_one_batch():
    # Three sequences of lengths 1, 3 and 2 (and an empty one) whose best
    # label sequence only re-encodes the gold chunks: each gets the best
    # sequence with other chunks, by enumeration, although they are
    # searched together (padded to the longest).
    golds = [["I-PER"], ["I-PER", "I-PER", "O"], [], ["O", "I-LOC"]]
    bests = [["B-PER"], ["B-PER", "I-PER", "O"], [], ["O", "B-LOC"]]
    L = len(CLASSES)
    parts = [_favouring(_codes([b]), L, seed=k) for k, b in enumerate(bests)]
    U = np.concatenate([p[0] for p in parts])
    off = np.concatenate([[0], np.cumsum([len(g) for g in golds])]).astype(np.intp)
    gold = _codes(golds)
    wrong = ChunkEvents(CLASSES, "conlleval").max_incorrect(U, np.zeros((L, L)), np.zeros(L),
                                                            np.zeros(L), off, gold)
    for k in range(len(golds)):
        a, b = off[k], off[k + 1]
        if a == b:
            continue
        grid = np.array(np.meshgrid(*[np.arange(L)] * (b - a), indexing="ij")).reshape(b - a, -1).T
        other = np.array([get_segments(list(CLASSES[g])) != get_segments(golds[k])
                          for g in grid])
        scores = U[np.arange(a, b), grid].sum(axis=1)
        assert get_segments(list(CLASSES[wrong[a:b]])) != get_segments(golds[k])
        assert_allclose(U[np.arange(a, b), wrong[a:b]].sum(), scores[other].max())


@pytest.mark.parametrize("false_positives", ["gold", "max_incorrect"])
def test_competitor_differing_only_in_encoding_is_not_an_error(false_positives):
    # The model outputs the gold chunks in another encoding with a wide
    # margin: conlleval scores it F1 = 1, and so does MCE-F on chunks (no
    # false positive, every gold chunk correct: the loss is about 0). On
    # label strings the same output is counted as wrong segments.
    gold = _codes([IOB1[1]])  # O I-LOC B-LOC I-LOC O
    U, T, s, e, off = _favouring(_codes([IOB2[1]]), len(CLASSES), margin=8.0)
    chunks = SegmentFScoreMCE(false_positives=false_positives,
                              segment_match="chunks").set_classes(CLASSES)
    labels = SegmentFScoreMCE(false_positives=false_positives,
                              segment_match="labels").set_classes(CLASSES)
    assert chunks.value_and_grad(U, T, s, e, gold, off)[0] < 1e-3
    assert labels.value_and_grad(U, T, s, e, gold, off)[0] > 0.5


@pytest.mark.parametrize("false_positives, classes, scheme", [
    ("gold", ("B-NP", "I-NP", "O"), "conlleval"),
    ("max_incorrect", ("B-NP", "I-NP", "O"), "conlleval"),
    ("viterbi", ("B-NP", "I-NP", "O"), "conlleval"),
    ("gold", ("B-X", "I-X", "E-X", "S-X", "O"), "iobes"),
    ("max_incorrect", ("B-X", "I-X", "E-X", "S-X", "O"), "conlleval"),
    ("gold", ("B-A", "I-A", "B-B", "I-B", "O"), "conlleval"),
])
def test_chunk_margins_match_enumeration_and_finite_differences(false_positives, classes,
                                                                scheme):
    check_loss(SegmentFScoreMCE(gamma=0.7, false_positives=false_positives, scheme=scheme,
                                segment_match="chunks"),
               classes=classes, lengths=(1, 2, 3, 3), n_problems=2 if len(classes) == 3 else 1,
               random_state=3)


def test_chunk_value_matches_enumeration_with_weights():
    rng = np.random.default_rng(5)
    loss = SegmentFScoreMCE(gamma=0.5, alpha=2.0, beta=0.2,
                            segment_match="chunks").set_classes(["B-NP", "I-NP", "O"])
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(1, 2, 5, 4), scale=1.5)
    w = rng.uniform(0.5, 2.0, size=len(off) - 1)
    value = loss.value_and_grad(U, T, s, e, y, off, sample_weight=w)[0]
    assert_allclose(value, loss_by_enumeration(loss, U, T, s, e, y, off, w), rtol=1e-10)


def _position_problem(seed, lengths, n_labels):
    rng = np.random.default_rng(seed)
    U, T, s, e, y, off = random_problem(rng, n_labels, lengths, scale=1.5)
    T = PositionTransitions(rng.normal(scale=1.5, size=(3, n_labels, n_labels)),
                            rng.integers(3, size=U.shape[0]).astype(np.intp))
    return U, T, s, e, y, off


def _position_enumeration(loss, U, T, s, e, y, off):
    """The loss's definition on every label path, scored with the matrix of each edge."""
    dense = T.dense()
    paths, scores, gold = [], [], []
    for k in range(off.shape[0] - 1):
        a, b = off[k], off[k + 1]
        n, L = b - a, U.shape[1]
        P = np.array(np.meshgrid(*[np.arange(L)] * n, indexing="ij")).reshape(n, -1).T
        S = s[P[:, 0]] + e[P[:, -1]] + U[np.arange(a, b), P].sum(axis=1)
        for t in range(1, n):
            S = S + dense[a + t][P[:, t - 1], P[:, t]]
        paths.append(P)
        scores.append(S)
        gold.append(y[a:b])
    return loss.enumerated_batch_loss(paths, scores, gold)


@pytest.mark.parametrize("false_positives", FALSE_POSITIVES)
@pytest.mark.parametrize("seed", range(3))
def test_chunks_with_position_transitions_match_enumeration(false_positives, seed):
    classes = ["B-NP", "I-NP", "O", "B-VP", "I-VP"]
    U, T, s, e, y, off = _position_problem(seed, (1, 4, 5, 3), len(classes))
    loss = SegmentFScoreMCE(gamma=0.7, false_positives=false_positives,
                            segment_match="chunks").set_classes(classes)
    value, dU, dT, ds, de = loss.value_and_grad(U, T, s, e, y, off)
    assert dT.shape == T.table.shape
    assert_allclose(value, _position_enumeration(loss, U, T, s, e, y, off), rtol=1e-10)
    # one matrix per token, and a table whose matrices are all equal (the plain chain)
    dense = PositionTransitions.from_dense(T.dense())
    assert_allclose(loss.value_and_grad(U, dense, s, e, y, off)[0], value, rtol=1e-12)
    same = T._replace(table=np.repeat(T.table[:1], 3, axis=0))
    plain = loss.value_and_grad(U, T.table[0], s, e, y, off)
    both = loss.value_and_grad(U, same, s, e, y, off)
    assert_allclose(both[0], plain[0], rtol=1e-12)
    assert_allclose(both[2].sum(axis=0), plain[2], rtol=1e-10, atol=1e-12)

