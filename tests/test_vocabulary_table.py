"""The compiled vocabulary table and the one-pass check of feature-dict input.

The table must find exactly the columns DictVectorizer finds (any
characters, any length, a key or value holding the separator, the same
value under several keys), and the fast path of ``check_sequences`` must
give the per-token checks' result and messages.
"""

from collections import OrderedDict

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal
from sklearn.feature_extraction import DictVectorizer

from sklearn_crfloss import CRFTagger
from sklearn_crfloss._data._validation import check_sequences
from sklearn_crfloss._data._vectorize import SequenceVectorizer
from sklearn_crfloss._data._vocabulary import (VocabularyTable, column_index, exact_dicts,
                                               pack_names, unpack_names, vocabulary_fit,
                                               vocabulary_rows)

# Values of 1, 2 and 4 bytes per character, short (kept in the entry) and long.
VALUES = ["a", "b=c", "é", "Ω", "\U0001F600", "naïve", "x" * 11, "y" * 12, "Ωmega" * 5,
          "\U0001F600" * 3, "", "=", "a=b=c", ":", "b:c", "a:b:c"]
KEYS = ["w", "w=x", "ké", "Ω", "k\U0001F600", "=", "w:x", ":"]


def fresh(s):
    """An equal str that is another object (as values read from a new file are)."""
    return "".join(list(s))


def tokens_of(rng, n, numeric=True):
    tokens = []
    for _ in range(n):
        keys = rng.permutation(KEYS)[:int(rng.integers(1, len(KEYS) + 1))]
        d = {fresh(k): fresh(VALUES[int(rng.integers(len(VALUES)))]) for k in keys}
        if numeric and rng.random() < 0.3:
            d[fresh(str(rng.choice(KEYS)))] = float(rng.choice([0.5, 1.0, 2.0]))
        tokens.append(d)
    return tokens


def canonical(X):
    """A copy with sorted indices and summed duplicates (for entries in any order)."""
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.sum_duplicates()
    return X


def assert_rows_equal(rows, expected):
    indptr, indices, data = rows
    X = canonical(sp.csr_matrix((np.ones(indices.shape[0]) if data is None else data,
                                 indices.copy(), indptr), shape=expected.shape))
    expected = canonical(expected)
    assert_array_equal(X.indptr, expected.indptr)
    assert_array_equal(X.indices, expected.indices)
    assert_array_equal(X.data, expected.data)


@pytest.mark.parametrize("numeric", [False, True])
def test_table_finds_what_dictvectorizer_finds(numeric):
    rng = np.random.default_rng(0)
    train, test = tokens_of(rng, 400, numeric), tokens_of(rng, 300, numeric)
    test += [{}, {"unseen": "a"}, {"w": "unseen"}, {"w": "a" * 40}]
    dv = DictVectorizer().fit(train)
    order = rng.permutation(len(dv.feature_names_)).tolist()
    for table in (VocabularyTable(dv.feature_names_, dv.separator),
                  VocabularyTable(dv.feature_names_, dv.separator, order)):
        for tokens in (train, test):
            rows = vocabulary_rows(tokens, dv.vocabulary_, dv.separator, table)
            assert_rows_equal(rows, dv.transform(tokens))
            assert_rows_equal(rows, dv.transform(tokens))  # no state kept between calls
            flat = vocabulary_rows(tokens, dv.vocabulary_, dv.separator)
            for a, b in zip(rows, flat):
                assert (a is None and b is None) or np.array_equal(a, b)


def test_table_every_split_and_a_repeated_value():
    dv = DictVectorizer().fit([{"a=b": "c"}, {"a": "b=c", "x": "same"}, {"y": "same"}])
    table = VocabularyTable(dv.feature_names_, dv.separator)
    assert table.n_entries == 4  # 'a=b=c' under 'a' and 'a=b', 'x=same', 'y=same'
    assert table.nbytes > 0
    for token in ({"a": "b=c"}, {"a=b": "c"}, {"x": "same", "y": "same"}, {"y": "other"}):
        assert_rows_equal(vocabulary_rows([token], dv.vocabulary_, dv.separator, table),
                          dv.transform([token]))


def test_table_gives_up_on_other_types():
    dv = DictVectorizer().fit([{"w": "a"}])
    table = VocabularyTable(dv.feature_names_, dv.separator)
    for tokens in ([{"w": "a"}, OrderedDict(w="a")], [{1: "a"}], [{"w": None}],
                   [{"w": ["a"]}], [{"w": np.str_("a")}]):
        assert vocabulary_rows(tokens, dv.vocabulary_, dv.separator, table) is None
    with pytest.raises(OverflowError):
        vocabulary_rows([{"w": 10**400}], dv.vocabulary_, dv.separator, table)


def test_fit_transform_through_the_table_equals_dictvectorizer():
    rng = np.random.default_rng(1)
    tokens = tokens_of(rng, 500)
    vec = SequenceVectorizer()
    X = vec.fit_transform("dict", tokens, np.array([0, 200, 500]))
    dv = DictVectorizer(separator=vec.vectorizer.separator)
    assert_rows_equal((X.indptr, X.indices, X.data), dv.fit_transform(tokens))
    assert vec.vectorizer.feature_names_ == dv.feature_names_
    assert vec.vectorizer.vocabulary_ == dv.vocabulary_
    assert_array_equal(vec.attributes, dv.get_feature_names_out())
    assert vec.attributes.dtype == object
    flat = vec._dict_rows(tokens)  # the vocabulary dict's path: the very same arrays
    flat.eliminate_zeros()
    for a, b in ((X.indptr, flat.indptr), (X.indices, flat.indices), (X.data, flat.data)):
        assert a.dtype == b.dtype
        assert_array_equal(a, b)


@pytest.mark.parametrize("numeric", [False, True])
@pytest.mark.parametrize("separator", ["=", ":"])
def test_vocabulary_fit_equals_dictvectorizer_fit_and_the_table(separator, numeric):
    rng = np.random.default_rng(2)
    # equal names from different pairs ('a=b' from a number and from a string,
    # 'a=b=c' under two splits), also within one token; 3000 tokens: the slots
    # are rebuilt several times during the pass
    tokens = tokens_of(rng, 3000, numeric) + [
        {}, {"a=b": 1, "a": "b"}, {"a:b": True, "a": "b"}, {"a": "b=c", "a=b": "c"},
        {"a": "b:c", "a:b": "c"}, {"z": 0.0}, {"n": 2}]
    names, indptr, indices, data = vocabulary_fit(tokens, separator)
    dv = DictVectorizer(separator=separator).fit(tokens)
    assert names == dv.feature_names_
    assert all(type(name) is str for name in names)
    # the very rows the fitted vocabulary's table gives (dict order, duplicates kept)
    expected = vocabulary_rows(tokens, dv.vocabulary_, separator,
                               VocabularyTable(dv.feature_names_, separator))
    for a, b in zip((indptr, indices, data), expected):
        assert (a is None and b is None) or (a.dtype == b.dtype and np.array_equal(a, b))
    assert_rows_equal((indptr, indices, data), dv.transform(tokens))
    empty = vocabulary_fit([], separator)
    assert empty[0] == [] and empty[1].tolist() == [0] and empty[2].shape == (0,)
    assert vocabulary_fit([{}, {}], separator)[1].tolist() == [0, 0, 0]


def test_vocabulary_fit_gives_up_on_other_types():
    tokens = [{"w": "a"}, {"w": "b", "x": 1.0}]
    for odd in ({"w": None}, {"w": ["a"]}, {"w": np.float64(1.0)}, {1: "a"}, {"w": {"a": 1}},
                {"w": np.str_("a")}):
        assert vocabulary_fit(tokens + [odd], "=") is None
    assert vocabulary_fit(tokens + [OrderedDict(w="a")], "=") is None
    with pytest.raises(OverflowError):
        vocabulary_fit(tokens + [{"w": 10**400}], "=")


def test_exact_dicts():
    assert exact_dicts([{}, {"a": 1}])
    assert exact_dicts([])
    assert not exact_dicts([{}, OrderedDict()])
    assert not exact_dicts([{}, ["a"]])


@pytest.mark.parametrize(
    "X",
    [
        [[{"w": "a"}, {"w": "b"}], [{"w": "c"}]],
        [[{"w": "a"}], ({"w": "b"}, {"w": "c"})],  # a tuple: the per-sequence path
        [[OrderedDict(w="a")], [{"w": "c"}, OrderedDict(w="b")]],  # other mappings
    ],
)
def test_check_sequences_fast_path_same_result(X):
    kind, tokens, offsets = check_sequences(X)
    assert kind == "dict"
    assert tokens == [tok for x in X for tok in x]
    assert_array_equal(offsets, np.cumsum([0] + [len(x) for x in X]))


@pytest.mark.parametrize(
    "X, match",
    [
        ([[{"w": "a"}] * 3, [{"w": "a"}, {"w": "b"}, ["x"]]], "Sequence 1: mixes feature dicts"),
        ([[{"w": "a"}] * 3, [{"w": "a"}], [{"w": "a"}, "b"]], "Sequence 2: mixes feature dicts"),
        ([[{"w": "a"}], [{"w": "b"}], ["c"]], "Sequence 2: tokens must be feature dicts"),
    ],
)
def test_check_sequences_fast_path_still_names_a_bad_token(X, match):
    with pytest.raises(TypeError, match=match):
        check_sequences(X)
    model = CRFTagger().fit([[{"w": "a"}, {"w": "b"}]], [["x", "y"]])
    with pytest.raises(TypeError, match=match):
        model.predict(X)


def test_pack_names_round_trip():
    names = ["a:b", "", "é", "Ω\U0001F600x", "zz", "~B01:NN"]
    joined, ends = pack_names(names)
    assert joined == "".join(names)
    assert ends.dtype == np.int32
    assert_array_equal(ends, np.cumsum([len(name) for name in names]))
    assert unpack_names(joined, ends) == names
    assert unpack_names(*pack_names([])) == []


def test_column_index_equals_the_dict_of_the_names():
    names = [f"w:{k}" for k in range(3000)] + ["é", "", "~B:x"]
    index = column_index(names)
    assert index == dict(zip(names, range(len(names))))
    assert list(index) == names and all(type(v) is int for v in index.values())
    assert column_index([]) == {}
