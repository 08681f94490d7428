"""Tests of training in another tag scheme: conversion, detection, constraints, CRFTagger."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _oracle import path_score
from conftest import make_toy_chunks
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.decoding import CONSTRAINTS, iobes_allowed, nbest_decode, viterbi_decode
from sklearn_crfloss.segments import (TAG_SCHEMES, convert_scheme, detect_scheme,
                                      get_segments, get_segments_batch)

TYPES = ["PER", "LOC", "B-C"]  # a type may hold a hyphen


@st.composite
def chunkings(draw, max_len=12):
    """A sequence length and non-overlapping chunks (start, end, type), adjacent ones allowed."""
    n = draw(st.integers(0, max_len))
    chunks, t = [], 0
    while t < n:
        if draw(st.booleans()):
            t += 1  # an outside token
            continue
        length = draw(st.integers(1, n - t))
        chunks.append((t, t + length, draw(st.sampled_from(TYPES))))
        t += length
    return n, chunks


def write(n, chunks, scheme):
    """One sequence's labels written by hand from the rules of each scheme."""
    labels = ["O"] * n
    prev_end, prev_type = None, None
    for s, e, typ in chunks:
        if scheme in ("iob1", "iob2"):
            first = "B" if scheme == "iob2" or (prev_end == s and prev_type == typ) else "I"
            labels[s:e] = [f"{first}-{typ}"] + [f"I-{typ}"] * (e - s - 1)
        else:
            last, single = ("E", "S") if scheme == "iobes" else ("L", "U")
            labels[s:e] = ([f"{single}-{typ}"] if e - s == 1 else
                           [f"B-{typ}"] + [f"I-{typ}"] * (e - s - 2) + [f"{last}-{typ}"])
        prev_end, prev_type = e, typ
    return labels


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(chunkings(), min_size=1, max_size=4), st.sampled_from(TAG_SCHEMES),
       st.sampled_from(TAG_SCHEMES))
def test_every_well_formed_sequence_round_trips_exactly(seqs, source, target):
    y = [write(n, chunks, source) for n, chunks in seqs]
    z = convert_scheme(y, target, source=source)
    assert z == [write(n, chunks, target) for n, chunks in seqs]
    assert convert_scheme(z, source, source=target) == y
    # the same chunks, as the decoder reads them in the target scheme (strictly)
    assert get_segments_batch(z, scheme=target, mode="strict") == [c for _, c in seqs]
    if any(chunks for _, chunks in seqs):
        assert detect_scheme(y) == source
        assert convert_scheme(y, target) == z  # source detected


LABELS = {s: ["O"] + [f"{p}-{t}" for p in {"iob1": "BI", "iob2": "BI", "iobes": "BIES",
                                           "bilou": "BILU"}[s] for t in ("A", "B")]
          for s in TAG_SCHEMES}


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.data(), st.sampled_from(TAG_SCHEMES), st.sampled_from(TAG_SCHEMES))
def test_any_sequence_is_read_as_the_decoder_reads_it(data, source, target):
    """Ill-formed sequences too: the chunks of get_segments, written well formed."""
    y = data.draw(st.lists(st.lists(st.sampled_from(LABELS[source]), max_size=10),
                           min_size=1, max_size=4))
    z = convert_scheme(y, target, source=source)
    assert [len(s) for s in z] == [len(s) for s in y]
    assert get_segments_batch(z, scheme=target, mode="strict") == get_segments_batch(
        y, scheme=source)
    normal = convert_scheme(y, source, source=source)
    assert convert_scheme(z, source, source=target) == normal
    assert convert_scheme(normal, source, source=source) == normal


def test_examples_and_detection():
    assert convert_scheme([["B-PER", "I-PER", "O", "B-LOC", "B-LOC"]], "bilou") == [
        ["B-PER", "L-PER", "O", "U-LOC", "U-LOC"]]
    assert convert_scheme([["B-PER", "I-PER", "B-PER", "B-LOC"]], "iob1") == [
        ["I-PER", "I-PER", "B-PER", "I-LOC"]]
    assert convert_scheme([np.array(["S-X", "O"])], "iob2") == [["B-X", "O"]]
    assert detect_scheme([["O", "O"]]) == "iob2"
    # one ill-formed IOB2 chunk among well-formed ones does not make the corpus IOB1
    assert detect_scheme([["I-A", "O"], ["B-A", "O"], ["O", "B-B", "I-B"]]) == "iob2"
    assert detect_scheme([["I-A", "O"], ["I-A", "B-A"], ["O", "B-B"]]) == "iob1"


@pytest.mark.parametrize("y, match", [
    ([["O"], ["O", "NN"]], "Sequence 1: label 'NN' is not in a chunk tagging scheme"),
    ([["S-A", "U-B"]], "mix IOBES"),
    ([["O", "B-"]], "Sequence 0: label 'B-'"),
    ([["O"], [1, 2]], "Sequence 1: label 1"),
])
def test_labels_outside_every_scheme_raise(y, match):
    with pytest.raises(ValueError, match=match):
        detect_scheme(y)
    with pytest.raises(ValueError, match=match):
        convert_scheme(y, "iobes")


def test_invalid_label_for_a_named_source_names_the_sequence():
    with pytest.raises(ValueError, match="Sequence 1: Label 'E-A' is not valid in scheme='iob2'"):
        convert_scheme([["O"], ["B-A", "E-A"]], "iobes", source="iob2")


@pytest.mark.parametrize("scheme", ["iobes", "bilou"])
def test_constraints_allow_exactly_the_well_formed_sequences(scheme):
    """Every sequence of up to 4 labels: allowed by start/transition/end iff well formed."""
    classes = LABELS[scheme]
    allowed, first, last = CONSTRAINTS[scheme](classes)
    for n in range(1, 5):
        for path in itertools.product(range(len(classes)), repeat=n):
            ok = first[path[0]] and last[path[-1]] and all(
                allowed[a, b] for a, b in zip(path[:-1], path[1:]))
            labels = [classes[k] for k in path]
            well_formed = convert_scheme([labels], scheme, source=scheme) == [labels]
            assert ok == well_formed, labels


def test_constrained_viterbi_and_nbest_match_enumeration():
    rng = np.random.default_rng(0)
    classes = LABELS["iobes"]
    L = len(classes)
    allowed = iobes_allowed(classes)
    n = 4
    unary, transition = rng.normal(size=(n, L)), rng.normal(size=(L, L))
    start, end = rng.normal(size=L), rng.normal(size=L)
    offsets = np.array([0, n])
    scored = sorted(
        ((path_score(unary, transition, start, end, np.array(p)), p)
         for p in itertools.product(range(L), repeat=n)
         if allowed[1][p[0]] and allowed[2][p[-1]]
         and all(allowed[0][a, b] for a, b in zip(p[:-1], p[1:]))), reverse=True)
    path, score = viterbi_decode(unary, transition, start, end, offsets, allowed)
    assert tuple(path) == scored[0][1] and score[0] == pytest.approx(scored[0][0])
    paths, scores = nbest_decode(unary, transition, start, end, offsets, 5, allowed)
    assert [tuple(p) for p in paths] == [p for _, p in scored[:5]]
    np.testing.assert_allclose(scores[0], [s for s, _ in scored[:5]])


@pytest.mark.parametrize("tag_scheme", ["iob2", "iobes", "bilou"])
@pytest.mark.parametrize("given", ["iob1", "iob2", "iobes"])
def test_tagger_trains_in_the_scheme_and_answers_in_the_given_one(tag_scheme, given):
    X, y = make_toy_chunks(60, seed=1)
    y = convert_scheme(y, given)
    crf = CRFTagger(tag_scheme=tag_scheme, C=10.0, max_iter=60).fit(X, y)
    assert crf.tag_schemes_ == (given, tag_scheme)
    assert set(crf.classes_) == set(np.concatenate(convert_scheme(y, tag_scheme)))
    pred = crf.predict(X)
    # well formed in the given scheme, and the chunks the model decodes in its own
    assert convert_scheme(pred, given, source=given) == pred
    labels, _ = crf.decode(X)
    assert labels == pred
    inner = [crf.classes_[p].tolist() for p in np.split(
        crf._decode_paths(*crf._potentials(X))[0], np.cumsum([len(s) for s in X])[:-1])]
    assert get_segments_batch(inner, scheme=tag_scheme, mode="strict") == get_segments_batch(
        pred, scheme=given)
    assert crf.score(X, y) > 0.8
    best = crf.predict_nbest(X[:3], n_best=3)
    assert [b[0][0] for b in best] == pred[:3]
    np.testing.assert_allclose(crf.sequence_log_proba(X[:3], pred[:3]),
                               [b[0][1] for b in best])
    # a fitted scheme, not the parameter, decides until the next fit
    crf.set_params(tag_scheme=None, constraints=None)
    assert crf.predict(X) == pred


def test_tag_scheme_none_is_the_labels_as_given():
    X, y = make_toy_chunks(40, seed=2)
    a = CRFTagger(C=10.0, max_iter=30).fit(X, y)
    b = CRFTagger(C=10.0, max_iter=30, tag_scheme=None).fit(X, y)
    assert a.tag_schemes_ is None and b.get_params()["tag_scheme"] is None
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_bad_labels_leave_the_estimator_unfitted_or_as_it_was():
    X, y = make_toy_chunks(30, seed=3)
    bad = [list(s) for s in y]
    bad[4][0] = "NN"
    crf = CRFTagger(tag_scheme="iobes", max_iter=5)
    with pytest.raises(ValueError, match="Sequence 4: label 'NN'"):
        crf.fit(X, bad)
    assert not hasattr(crf, "coef_")
    crf.fit(X, y)
    coef, schemes = crf.coef_.copy(), crf.tag_schemes_
    with pytest.raises(ValueError, match="Sequence 4"):
        crf.fit(X, bad)
    np.testing.assert_array_equal(crf.coef_, coef)
    assert crf.tag_schemes_ == schemes
    assert get_segments(crf.predict(X[:1])[0], scheme="iob2", mode="strict") == get_segments(
        crf.predict(X[:1])[0], scheme="iob2")


def test_interrupted_fit_keeps_the_fitted_schemes():
    X, y = make_toy_chunks(30, seed=4)
    crf = CRFTagger(tag_scheme="iobes", max_iter=5).fit(X, convert_scheme(y, "iob1"))
    pred = crf.predict(X)

    def stop(k, objective):
        if k == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        crf.set_params(tag_scheme="bilou", callback=stop).fit(X, y)
    assert crf.tag_schemes_ == ("iob1", "iobes") and crf.predict(X) == pred
    crf.set_params(tag_scheme=None, callback=None).fit(X, y)  # the pending pair is dropped
    assert crf.tag_schemes_ is None and "_tag_schemes" not in vars(crf)
