"""The compiled vocabulary lookup gives DictVectorizer's own matrices."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal
from sklearn.feature_extraction import DictVectorizer

from sklearn_crfloss._data._vectorize import SequenceVectorizer, column_counts
from sklearn_crfloss._data._vocabulary import VocabularyTable, vocabulary_rows


def assert_same_csr(A, B):
    """The same stored entries; A's values int8 exactly when they are all 1."""
    A, B = sp.csr_matrix(A), sp.csr_matrix(B)
    assert A.shape == B.shape
    assert A.dtype == (np.int8 if np.all(B.data == 1) and B.nnz else np.float64)
    assert_array_equal(A.indptr, B.indptr)
    assert_array_equal(A.indices, B.indices)
    assert_array_equal(A.data.astype(np.float64), B.data)


def random_dicts(rng, n_tokens, numeric=False):
    """Feature dicts with string values (a Zipf-like vocabulary), some numbers, odd names."""
    keys = ["w", "p", "w=x", "s"]
    tokens = []
    for _ in range(n_tokens):
        d = {k: f"v{int(rng.zipf(1.5)) % 50}" for k in keys if rng.random() < 0.8}
        d["sep=in=value"] = "a=b" if rng.random() < 0.5 else "c"
        if numeric:
            d["num"] = float(rng.choice([0.0, 1.0, 2.5, -3.0]))
            d["count"] = int(rng.integers(0, 3))
            d["flag"] = bool(rng.random() < 0.5)
        tokens.append(d)
    return tokens


@pytest.mark.parametrize("numeric", [False, True])
def test_lookup_equals_dictvectorizer(numeric):
    rng = np.random.default_rng(0)
    train = random_dicts(rng, 300, numeric)
    test = random_dicts(rng, 200, numeric) + [{}, {"unseen": "x", "w": "never"}]
    dv = DictVectorizer().fit(train)
    vec = SequenceVectorizer()
    vec.vectorizer = dv
    vec._frequency_order = np.arange(len(dv.feature_names_))[::-1].astype(np.int32)
    for tokens in (train, test):
        expected = dv.transform(tokens)
        assert_same_csr(vec._dict_rows(tokens), expected)
        assert_same_csr(vec._dict_rows(tokens, vec._lookup_table()), expected)
        assert (vocabulary_rows(tokens, dv.vocabulary_, dv.separator)[2] is None) != numeric


@pytest.mark.parametrize("value", [None, ["a", "b"], np.float64(2.0), np.str_("v1")])
def test_other_value_types_go_through_dictvectorizer(value):
    rng = np.random.default_rng(1)
    train = random_dicts(rng, 50)
    train[3]["odd"] = value
    dv = DictVectorizer().fit(train)
    assert vocabulary_rows(train, dv.vocabulary_, dv.separator) is None
    table = VocabularyTable(dv.feature_names_, dv.separator)
    assert vocabulary_rows(train, dv.vocabulary_, dv.separator, table) is None
    vec = SequenceVectorizer()
    vec.vectorizer = dv
    X = vec._dict_rows(train)
    assert X.dtype == np.float64  # DictVectorizer's own output
    assert_array_equal(X.toarray(), dv.transform(train).toarray())


def test_fit_transform_matches_dictvectorizer_and_predict_table():
    rng = np.random.default_rng(2)
    tokens = random_dicts(rng, 400, numeric=True)
    offsets = np.array([0, 150, 400])
    vec = SequenceVectorizer()
    X = vec.fit_transform("dict", tokens, offsets)
    expected = DictVectorizer().fit_transform(tokens)
    expected.eliminate_zeros()
    assert_same_csr(X, expected)
    assert_same_csr(vec.transform(tokens, offsets), DictVectorizer().fit(tokens).transform(tokens))
    # the table's entries run from the most to the least frequent column
    counts = column_counts(X)
    assert_array_equal(np.diff(counts[vec._frequency_order]) <= 0, True)


def test_min_freq_restricts_the_lookup():
    rng = np.random.default_rng(3)
    tokens = random_dicts(rng, 300)
    vec = SequenceVectorizer(min_freq=5)
    X = vec.fit_transform("dict", tokens, np.array([0, 300]))
    dv = DictVectorizer().fit(tokens)
    keep = column_counts(dv.transform(tokens)) >= 5
    assert_same_csr(X, dv.transform(tokens)[:, keep])
    assert_same_csr(vec.transform(tokens, np.array([0, 300])), dv.transform(tokens)[:, keep])


def test_pickle_drops_the_table_and_copies_share_it():
    rng = np.random.default_rng(4)
    tokens = random_dicts(rng, 100)
    vec = SequenceVectorizer()
    vec.fit_transform("dict", tokens, np.array([0, 100]))
    before = vec.transform(tokens, np.array([0, 100]))
    assert "table" in vec._cache
    assert vec.select([0, 2])._cache is vec._cache
    clone = pickle.loads(pickle.dumps(vec))
    assert clone._cache == {}
    assert_same_csr(clone.transform(tokens, np.array([0, 100])), before)


def test_column_counts_equal_bincount():
    rng = np.random.default_rng(5)
    X = sp.random(3000, 700, density=0.01, format="csr", random_state=rng)
    assert_array_equal(column_counts(X), np.bincount(X.indices, minlength=700))


@pytest.mark.parametrize("numeric", [False, True])
def test_names_and_vocabulary_dict_are_built_when_read(numeric):
    rng = np.random.default_rng(5)
    tokens = random_dicts(rng, 200, numeric)
    offsets = np.array([0, 200])
    tokens[7]["w"] = "\u00f1o\u20ac"  # names of other widths in the joined string
    vec = SequenceVectorizer()
    X = vec.fit_transform("dict", tokens, offsets)
    # the fit kept neither the vocabulary dict nor the names as str objects
    assert not {"vocabulary_", "feature_names_"} & vars(vec._vectorizer).keys()
    assert "_attributes" not in vars(vec)
    fresh = pickle.loads(pickle.dumps(vec))  # pickled without them
    dv = DictVectorizer(separator=vec._vectorizer.separator).fit(tokens)
    names = vec.column_names  # read one at a time, nothing kept
    assert len(names) == len(dv.feature_names_) and "_attributes" not in vars(vec)
    assert list(names) == dv.feature_names_
    assert [names[k] for k in (0, 5, -1)] == [dv.feature_names_[k] for k in (0, 5, -1)]
    with pytest.raises(IndexError):
        names[len(names)]
    assert fresh.attributes.dtype == object and fresh.attributes.tolist() == dv.feature_names_
    assert fresh.column_names is fresh.attributes
    for v in (vec, fresh):
        assert v.vectorizer.vocabulary_ == dv.vocabulary_
        assert v.vectorizer.feature_names_ == dv.feature_names_
        assert_array_equal(v.vectorizer.transform(tokens).toarray(),
                           dv.transform(tokens).toarray())
    assert_array_equal(fresh.transform(tokens, offsets).toarray(), X.toarray())
    # the state pickled before the vectoriser became a property
    state = vec.__getstate__()
    state["vectorizer"] = state.pop("_vectorizer")
    state["attributes"] = state.pop("_attributes")
    old = SequenceVectorizer.__new__(SequenceVectorizer)
    old.__setstate__(state)
    assert old.vectorizer is vec.vectorizer and old.attributes is vec.attributes
    assert_array_equal(old.transform(tokens, offsets).toarray(), X.toarray())


def test_boolean_features_are_stored_as_int8_indicators():
    rng = np.random.default_rng(6)
    tokens = random_dicts(rng, 200)
    for k, token in enumerate(tokens):
        token["upper"] = bool(k % 3)  # False values are zeros, dropped
    X = SequenceVectorizer().fit_transform("dict", tokens, np.array([0, 200]))
    expected = DictVectorizer(separator=":").fit_transform(tokens)
    expected.eliminate_zeros()
    assert_same_csr(X, expected)  # int8, as every stored value is 1
    tokens[5]["scale"] = 2.5
    X = SequenceVectorizer().fit_transform("dict", tokens, np.array([0, 200]))
    assert X.dtype == np.float64 and 2.5 in X.data
