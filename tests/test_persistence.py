"""Pickling (version record, size) and concurrent prediction (issue 15)."""

import pickle
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import sklearn_crfloss
from conftest import make_toy_chunks
from sklearn_crfloss import CRFTagger, LOPTagger
from sklearn_crfloss.exceptions import InconsistentVersionWarning


def _fitted(cls):
    X, y = make_toy_chunks()
    if cls is LOPTagger:
        return LOPTagger(experts="random", random_state=0,
                         estimator=CRFTagger(max_iter=10)).fit(X, y), X
    return CRFTagger(max_iter=10).fit(X, y), X


class _Tampered(pickle.Pickler):
    """Pickles the estimators with ``version`` as the recorded package version."""

    def __init__(self, file, version):
        super().__init__(file)
        self.version = version

    def reducer_override(self, obj):
        if not isinstance(obj, (CRFTagger, LOPTagger)):
            return NotImplemented
        state = obj.__getstate__()
        if self.version is None:
            del state["_sklearn_crfloss_version"]
        else:
            state["_sklearn_crfloss_version"] = self.version
        return type(obj).__new__, (type(obj),), state


def _tampered(model, version):
    import io

    buffer = io.BytesIO()
    _Tampered(buffer, version).dump(model)
    return buffer.getvalue()


@pytest.mark.parametrize("cls", [CRFTagger, LOPTagger])
def test_pickle_records_version(cls):
    model, X = _fitted(cls)
    state = model.__getstate__()
    assert state["_sklearn_crfloss_version"] == sklearn_crfloss.__version__
    assert "_sklearn_crfloss_version" not in model.__dict__  # the instance is not changed
    with warnings.catch_warnings():
        warnings.simplefilter("error", InconsistentVersionWarning)
        loaded = pickle.loads(pickle.dumps(model))  # same version: no warning
    assert "_sklearn_crfloss_version" not in loaded.__dict__
    assert loaded.predict(X) == model.predict(X)


@pytest.mark.parametrize("cls", [CRFTagger, LOPTagger])
@pytest.mark.parametrize("version", ["0.0.1", None])
def test_unpickle_other_version_warns(cls, version):
    model, X = _fitted(cls)
    with pytest.warns(InconsistentVersionWarning) as record:
        loaded = pickle.loads(_tampered(model, version))
    ours = [w.message for w in record if isinstance(w.message, InconsistentVersionWarning)]
    # A LOPTagger's experts and pool (CRFTaggers) warn too.
    (warning,) = [w for w in ours if w.estimator_name == cls.__name__]
    assert warning.original_version == ("unknown" if version is None else version)
    assert warning.current_version == sklearn_crfloss.__version__
    assert "sklearn-crfloss version" in str(warning)
    assert issubclass(InconsistentVersionWarning, UserWarning)
    assert loaded.predict(X) == model.predict(X)  # still usable


@pytest.mark.parametrize("cls", [CRFTagger, LOPTagger])
def test_pickle_size_does_not_grow_with_training_data(cls):
    """The pickle holds the parameters, not the training data (nor the lookup table)."""
    X, y = make_toy_chunks()
    sizes = []
    for copies in (1, 4):
        if cls is LOPTagger:
            model = LOPTagger(experts="random", random_state=0,
                              estimator=CRFTagger(max_iter=10)).fit(X * copies, y * copies)
        else:
            model = CRFTagger(max_iter=10).fit(X * copies, y * copies)
        model.predict(X)  # builds the lazy vocabulary lookup table
        sizes.append(len(pickle.dumps(model)))
    assert abs(sizes[1] - sizes[0]) <= 0.05 * sizes[0], sizes


def test_lookup_table_not_pickled():
    model, X = _fitted(CRFTagger)
    model.predict(X)
    assert "table" in model._features._cache
    loaded = pickle.loads(pickle.dumps(model))
    assert loaded._features._cache == {}
    assert loaded.predict(X) == model.predict(X)  # rebuilt on first use


@pytest.mark.parametrize("cls", [CRFTagger, LOPTagger])
def test_concurrent_predict_matches_sequential(cls):
    """20 calls on 4 threads, the first ones concurrent on a freshly fitted model."""
    reference, X = _fitted(cls)
    expected = (reference.predict(X), reference.predict_marginals(X))
    model, _ = _fitted(cls)  # its lookup table is built under contention

    def call(i):
        return model.predict(X) if i % 2 == 0 else model.predict_marginals(X)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(call, range(20)))
    for i, result in enumerate(results):
        if i % 2 == 0:
            assert result == expected[0]
        else:
            assert len(result) == len(expected[1])
            for got, want in zip(result, expected[1]):
                np.testing.assert_array_equal(got, want)
