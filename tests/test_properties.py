"""Property tests (hypothesis): random labels, feature dicts and lengths.

Each example fits a small CRF, so the example counts are kept low; the
seed is fixed (derandomize) so that a failure reproduces.
"""

import pickle
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from sklearn_crfloss import CRFTagger

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

# Hashable labels of many types; NaN is excluded (it equals no label).
scalar_labels = st.one_of(
    st.integers(-10**20, 10**20), st.text(max_size=5), st.none(), st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(-2**31, 2**31).map(np.int64), st.text(max_size=3).map(np.str_))
labels = st.one_of(scalar_labels, st.tuples(scalar_labels, scalar_labels),
                   st.frozensets(st.integers(0, 3), max_size=3))

# Feature values: strings (unicode), numbers of every size, bools, lists of
# strings; integers beyond float64 are refused with a message.
values = st.one_of(
    st.text(max_size=6), st.booleans(), st.integers(-10**300, 10**300),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.lists(st.text(max_size=4), max_size=3))
feature_dicts = st.dictionaries(st.text(min_size=1, max_size=4), values, min_size=1,
                                max_size=4)


@st.composite
def tagged_data(draw, bad_values=False):
    """(X, y): 2-6 sequences of 1-5 tokens, labels drawn from 2-4 distinct values."""
    # Distinct as dictionary keys (1, True and 1.0 are one label).
    kept = list(dict.fromkeys(draw(st.lists(labels, min_size=2, max_size=4))))
    if len(kept) < 2:
        kept = [0, "x"]
    n_seq = draw(st.integers(2, 6))
    X, y = [], []
    for _ in range(n_seq):
        n = draw(st.integers(1, 5))
        X.append([draw(feature_dicts) if bad_values else
                  {"w": draw(st.text(max_size=3)), "n": draw(st.floats(-1e6, 1e6))}
                  for _ in range(n)])
        y.append([kept[draw(st.integers(0, len(kept) - 1))] for _ in range(n)])
    y[0][0], y[-1][-1] = kept[0], kept[1]  # at least two distinct labels
    return X, y


def _fit(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return CRFTagger(max_iter=10, **params).fit(X, y)


@SETTINGS
@given(tagged_data())
def test_fit_predict_keeps_label_identity(data):
    X, y = data
    crf = _fit(X, y)
    seen = dict.fromkeys(label for s in y for label in s)  # distinct by hash and ==
    assert len(crf.classes_) == len(seen)
    assert all(c in seen for c in crf.classes_.tolist())
    for got in (label for s in crf.predict(X) for label in s):
        assert got in seen
    assert [len(p) for p in crf.predict(X)] == [len(s) for s in y]


@SETTINGS
@given(tagged_data(), st.sampled_from([None, 64]))
def test_pickle_round_trip_predicts_the_same(data, feature_hashing):
    X, y = data
    crf = _fit(X, y, feature_hashing=feature_hashing)
    again = pickle.loads(pickle.dumps(crf))
    assert again.predict(X) == crf.predict(X)
    np.testing.assert_array_equal(np.concatenate(again.predict_marginals(X)),
                                  np.concatenate(crf.predict_marginals(X)))


@SETTINGS
@given(tagged_data(bad_values=True), st.sampled_from([None, 64]))
def test_every_error_is_a_value_or_type_error_naming_the_sequence(data, feature_hashing):
    X, y = data
    try:
        crf = _fit(X, y, feature_hashing=feature_hashing)
    except (ValueError, TypeError) as exc:
        assert "Sequence " in str(exc), str(exc)
        return
    assert [len(p) for p in crf.predict(X)] == [len(s) for s in y]
