"""A model file is validated as the estimator validates what it is given.

Each test forges one field of a saved file (its checksum recomputed, which
anyone can do) and expects a ``ValueError`` naming the field: parameters
out of their constraints (``C=-1``, ``loss='nope'``, a loss hyperparameter
out of range, the parameters of a LOPTagger's ``estimator``), labels
(repeated, counted wrongly), a LOPTagger's weights (negative, all 0, not
normalised, one per expert) and its experts' labels, tag schemes. A
property test then mutates the fields of ``model.json`` one at a time:
every file loads into a model that predicts, or raises ``ValueError``.
"""

import io
import json
import warnings
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_crfloss import CRFTagger
from sklearn_crfloss._io._native_format import _checksum
from sklearn_crfloss.io import load_model, save_model
from sklearn_crfloss.lop import LOPTagger

from conftest import make_toy_chunks

X, Y = make_toy_chunks(20, seed=5)


def _saved(estimator, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of the short fits
        save_model(estimator.fit(X, Y), path)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    arrays = {n[:-4]: np.load(io.BytesIO(d), allow_pickle=False)
              for n, d in members.items() if n.endswith(".npy")}
    return json.loads(members["model.json"]), arrays


def _forged(path, document, arrays):
    """Write ``document`` and ``arrays`` as a model file whose checksum matches them."""
    document["arrays"] = {n: {"dtype": a.dtype.str, "shape": list(a.shape)}
                          for n, a in arrays.items()}
    document["checksum"] = _checksum(document, arrays)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("model.json", json.dumps(document))
        for name, a in arrays.items():
            buffer = io.BytesIO()
            np.save(buffer, a, allow_pickle=False)
            z.writestr(name + ".npy", buffer.getvalue())
    return path


@pytest.fixture(scope="module")
def crf_file(tmp_path_factory):
    return _saved(CRFTagger(max_iter=10), tmp_path_factory.mktemp("crf") / "model")


@pytest.fixture(scope="module")
def lop_file(tmp_path_factory):
    return _saved(LOPTagger(estimator=CRFTagger(max_iter=10)),
                  tmp_path_factory.mktemp("lop") / "model")


@pytest.mark.parametrize("name, value, match", [
    ("C", -1, r"'C' parameter of CRFTagger"),
    ("loss", "nope", r"'loss' parameter of CRFTagger"),
    ("max_iter", 0, r"'max_iter' parameter of CRFTagger"),
    ("tag_scheme", "iob1", r"'tag_scheme' parameter of CRFTagger"),
    ("loss", {"__component__": "loss", "name": "mixed", "params": {"lam": 5}},
     r"'lam' parameter of MixedLoss"),
    ("solver", "perceptron", r"perceptron"),  # the default loss: not with the perceptron
])
def test_parameters_are_validated(tmp_path, crf_file, name, value, match):
    document, arrays = json.loads(json.dumps(crf_file[0])), dict(crf_file[1])
    document["estimator"]["params"][name] = value
    with pytest.raises(ValueError, match=r"Inconsistent model file: estimator parameters.*"
                                         + match):
        load_model(_forged(tmp_path / "m", document, arrays))


def test_the_file_as_saved_loads(tmp_path, crf_file, lop_file):
    for document, arrays in (crf_file, lop_file):
        model = load_model(_forged(tmp_path / "m", json.loads(json.dumps(document)),
                                   dict(arrays)))
        assert len(model.predict(X)) == len(X)


@pytest.mark.parametrize("change, match", [
    (lambda c: c.update(values=[c["values"][0]] * len(c["values"])), "distinct labels"),
    (lambda c: c.update(n=c["n"] + 1), "are not 6 distinct labels"),
    (lambda c: c.update(values=c["values"] + ["Z"], n=c["n"] + 1),
     r"transition must be float64 of shape \(6, 6\)"),
    (lambda c: c.update(dtype="<U9"), "of dtype <U9"),
])
def test_labels_are_validated(tmp_path, crf_file, change, match):
    document, arrays = json.loads(json.dumps(crf_file[0])), dict(crf_file[1])
    change(document["estimator"]["classes"])
    with pytest.raises(ValueError, match=match):
        load_model(_forged(tmp_path / "m", document, arrays))


@pytest.mark.parametrize("weights, match", [
    ([-1.0, 2.0], "non-negative"),
    ([0.0, 0.0], "not all 0"),
    ([np.nan, 1.0], "finite"),
    ([0.2, 0.2], "do not sum to 1"),
    ([1.0], r"has 2 experts"),
    (np.array([1, 1], dtype=np.int64), "LOP weights"),
])
def test_lop_weights_are_validated_as_with_weights(tmp_path, lop_file, weights, match):
    document, arrays = json.loads(json.dumps(lop_file[0])), dict(lop_file[1])
    arrays["weights"] = np.asarray(weights, dtype=getattr(weights, "dtype", np.float64))
    with pytest.raises(ValueError, match=match):
        load_model(_forged(tmp_path / "m", document, arrays))
    if match not in ("LOP weights", "do not sum to 1"):  # the same words as with_weights
        fitted = load_model(_forged(tmp_path / "ok", json.loads(json.dumps(lop_file[0])),
                                    dict(lop_file[1])))
        with pytest.raises(ValueError, match=match):
            fitted.with_weights(weights)


def test_lop_experts_and_estimator_are_validated(tmp_path, lop_file):
    document, arrays = json.loads(json.dumps(lop_file[0])), dict(lop_file[1])
    document["estimator"]["experts"][1]["classes"]["values"][0] = "A-XX"  # sorts first still
    with pytest.raises(ValueError, match="the experts' labels are not the pool's"):
        load_model(_forged(tmp_path / "m", document, arrays))
    document, arrays = json.loads(json.dumps(lop_file[0])), dict(lop_file[1])
    params = document["estimator"]["params"]
    params["estimator"] = {"__estimator__": "CRFTagger", "params": {"C": -1}}
    with pytest.raises(ValueError, match=r"estimator parameters estimator.*'C' parameter"):
        load_model(_forged(tmp_path / "m", document, arrays))


@pytest.mark.parametrize("schemes, match", [
    ({"__tuple__": ["iob2", "nope"]}, "is not a pair"),
    (["iob2", "iobes"], "is not a pair"),
    ({"__tuple__": ["iob2"]}, "is not a pair"),
])
def test_tag_schemes_are_validated(tmp_path, crf_file, schemes, match):
    document, arrays = json.loads(json.dumps(crf_file[0])), dict(crf_file[1])
    document["estimator"]["tag_schemes"] = schemes
    with pytest.raises(ValueError, match=match):
        load_model(_forged(tmp_path / "m", document, arrays))


def test_tag_schemes_are_checked_against_the_labels(tmp_path):
    labels = [["x" if t % 2 else "y" for t in range(len(s))] for s in Y]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = tmp_path / "m"
        save_model(CRFTagger(max_iter=5).fit(X, labels), path)
    with zipfile.ZipFile(path) as z:
        document = json.loads(z.read("model.json"))
        arrays = {n[:-4]: np.load(io.BytesIO(z.read(n)), allow_pickle=False)
                  for n in z.namelist() if n.endswith(".npy")}
    document["estimator"]["tag_schemes"] = {"__tuple__": ["iob2", "iobes"]}
    with pytest.raises(ValueError, match=r"tag_schemes \('iob2', 'iobes'\)"):
        load_model(_forged(path, document, arrays))


def _leaves(value, path=()):
    """The paths of every scalar of a JSON document (lists and dicts walked)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, path + (k,))]
    if isinstance(value, list) and value:
        return [p for k, v in enumerate(value) for p in _leaves(v, path + (k,))]
    return [path]


def _set(document, path, value):
    for key in path[:-1]:
        document = document[key]
    document[path[-1]] = value


_MUTATIONS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(
    [10**12, -1.5, 1e308, "nope", "", [], {}, [1, 2], {"__tuple__": []}]))


@pytest.mark.filterwarnings("ignore")
@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_field_mutated_loads_a_model_or_raises_value_error(tmp_path, crf_file, lop_file,
                                                                 data):
    document, arrays = data.draw(st.sampled_from([crf_file, lop_file]))
    document = json.loads(json.dumps(document))
    fields = [p for p in _leaves(document["estimator"])]
    field = data.draw(st.sampled_from(fields))
    _set(document["estimator"], field, data.draw(_MUTATIONS))
    try:
        model = load_model(_forged(tmp_path / "m", document, dict(arrays)))
    except ValueError:
        return
    predicted = model.predict(X)  # what loads, predicts
    assert [len(p) for p in predicted] == [len(x) for x in X]
    assert {label for p in predicted for label in p} <= set(model.classes_.tolist())


@pytest.mark.parametrize("name, value", [("stop_reason", "nope"), ("n_iter", -1),
                                         ("sparsity", 1.5), ("n_parameters", -3)])
def test_fit_statistics_are_validated(tmp_path, crf_file, name, value):
    document, arrays = json.loads(json.dumps(crf_file[0])), dict(crf_file[1])
    document["estimator"][name] = value
    with pytest.raises(ValueError, match="fit statistics|n_parameters or sparsity"):
        load_model(_forged(tmp_path / "m", document, arrays))
