"""CRFTagger.fit on a stream: read in chunks, the same model as on the lists."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from sklearn_crfloss import CRFTagger
from sklearn_crfloss._data import _streaming

from conftest import make_toy_chunks


class Stream:
    """A re-iterable source without len (as a dataset reading files would be)."""

    def __init__(self, items):
        self.items = items
        self.passes = 0

    def __iter__(self):
        self.passes += 1
        return iter(self.items)


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(_streaming, "CHUNK_SIZE", 7)


def _same(a, b):
    assert_array_equal(a.attributes_, b.attributes_)
    assert_array_equal(a.classes_, b.classes_)
    assert_array_equal(a.coef_, b.coef_)
    assert_array_equal(a.transition_, b.transition_)
    assert a.objective_ == b.objective_


@pytest.mark.parametrize("params", [{}, {"min_freq": 2}, {"feature_hashing": 32, "min_freq": 2},
                                    {"feature_hashing": 32}])
def test_stream_fit_equals_list_fit(params):
    X, y = make_toy_chunks(50, seed=21)
    w = np.linspace(0.5, 1.5, len(X))
    stream = Stream(X)
    _same(CRFTagger(**params).fit(stream, Stream(y), sample_weight=w),
          CRFTagger(**params).fit(X, y, sample_weight=w))
    one_pass = "feature_hashing" in params and "min_freq" not in params
    assert stream.passes == (1 if one_pass else 2)


def test_generators_and_arrays():
    X, y = make_toy_chunks(30, seed=22)
    _same(CRFTagger(feature_hashing=32).fit((x for x in X), iter(y)),
          CRFTagger(feature_hashing=32).fit(X, y))
    with pytest.raises(ValueError, match="X is an iterator, which can be read once"):
        CRFTagger().fit((x for x in X), y)
    rng = np.random.default_rng(0)
    A = [rng.normal(size=(len(s), 3)) for s in y]
    _same(CRFTagger().fit(Stream(A), y), CRFTagger().fit(A, y))


def test_bad_stream_names_the_sequence():
    X, y = make_toy_chunks(30, seed=23)
    bad = list(X)
    bad[17] = []
    with pytest.raises(ValueError, match="Sequence 17 is empty"):
        CRFTagger().fit(Stream(bad), y)
    labels = [list(s) for s in y]
    labels[22] = labels[22] + ["O"]
    with pytest.raises(ValueError, match="Sequence 22 has"):
        CRFTagger().fit(Stream(X), labels)
    with pytest.raises(ValueError, match="different numbers of sequences"):
        CRFTagger().fit(Stream(X), y[:20])
    with pytest.raises(ValueError, match="token_weight"):
        CRFTagger().fit(Stream(X), y, token_weight=[np.ones(len(s)) for s in y])
    est = CRFTagger()
    with pytest.raises(ValueError, match="no sequence"):
        est.fit(Stream([]), [])
    assert not hasattr(est, "coef_")


def test_stream_fit_uses_the_validation_set():
    # X_val and y_val score early stopping as with lists (they were once dropped).
    X, y = make_toy_chunks(40, seed=23)
    X_val, y_val = make_toy_chunks(10, seed=24)
    params = dict(early_stopping=True, n_iter_no_change=2, scoring="accuracy")
    stream = CRFTagger(**params).fit(Stream(X), Stream(y), X_val=X_val, y_val=y_val)
    lists = CRFTagger(**params).fit(X, y, X_val=X_val, y_val=y_val)
    _same(stream, lists)
    assert stream.validation_scores_ == lists.validation_scores_
    # without early stopping the validation set is scored and logged, as with lists
    logged = CRFTagger(scoring="accuracy").fit(Stream(X), Stream(y), X_val=X_val, y_val=y_val)
    listed = CRFTagger(scoring="accuracy").fit(X, y, X_val=X_val, y_val=y_val)
    assert logged.validation_scores_ == listed.validation_scores_
    assert len(logged.validation_scores_) > 0


def test_stream_fit_in_a_tag_scheme_equals_list_fit():
    X, y = make_toy_chunks(30, seed=25)
    stream = CRFTagger(tag_scheme="bilou").fit(Stream(X), iter(y))  # y read once, at once
    lists = CRFTagger(tag_scheme="bilou").fit(X, y)
    _same(stream, lists)
    assert stream.tag_schemes_ == lists.tag_schemes_ == ("iob2", "bilou")
    assert stream.predict(X) == lists.predict(X)
