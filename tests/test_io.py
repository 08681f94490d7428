"""Model files (sklearn_crfloss.io) on toy data: the native format, CRFsuite files, skops.

The CoNLL-2000 checks of the same functions are in test_io_conll2000.py.
"""

import json
import pickle
import struct
import warnings
import zipfile

import numpy as np
import pycrfsuite
import pytest
import skops.io
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from conftest import make_toy_chunks
from sklearn_crfloss import CRFTagger, LOPTagger
from sklearn_crfloss._io._crfsuite_format import hashlittle, read_model, write_model
from sklearn_crfloss._data._attribute_names import crfsuite_name
from sklearn_crfloss._io._native_format import _checksum
from sklearn_crfloss.io import export_crfsuite, import_crfsuite, load_model, save_model
from sklearn_crfloss.losses import (ConditionalLogLikelihood, LabelwiseAccuracyLoss,
                                    SoftmaxMargin)
from sklearn_crfloss.priors import GaussianPrior


def _fit(**params):
    X, y = make_toy_chunks()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of the short fits
        return CRFTagger(max_iter=15, **params).fit(X, y), X, y


def _assert_same_model(a, b, X):
    assert b.predict(X) == a.predict(X)
    for name in ("coef_", "transition_", "start_", "end_", "classes_", "attributes_"):
        np.testing.assert_array_equal(getattr(b, name), getattr(a, name))
    assert b.get_params(deep=False).keys() == a.get_params(deep=False).keys()
    for name in ("n_features_in_", "n_parameters_", "n_iter_", "init_n_iter_", "loss_curve_",
                 "converged_", "stop_reason_", "sparsity_", "input_kind_", "validation_scores_",
                 "best_validation_score_"):
        assert getattr(b, name) == getattr(a, name), name
    assert b.objective_ == a.objective_ or (np.isnan(a.objective_) and np.isnan(b.objective_))
    for got, want in zip(b.predict_marginals(X), a.predict_marginals(X)):
        np.testing.assert_array_equal(got, want)


def _rewrite(path, document, arrays=None):
    """Write ``document`` (and the arrays as they are) back into the zip at ``path``."""
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members["model.json"] = json.dumps(document).encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def _document(path):
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read("model.json"))


def _arrays(path):
    with np.load(path, allow_pickle=False) as npz:
        return {n[:-4] if n.endswith(".npy") else n: npz[n]
                for n in npz.files if n != "model.json"}


# ------------------------------------------------------------ native format

@pytest.mark.parametrize("params", [
    {},
    {"boundary_potentials": False, "all_possible_states": True},
    {"min_freq": 2, "loss": SoftmaxMargin(cost_scale=2.0), "init": "cll",
     "prior": GaussianPrior(mean=0.1)},
    {"feature_hashing": 64, "min_freq": 2, "solver": [("sgd", 2), "lbfgs"],
     "random_state": 0},
    {"loss": LabelwiseAccuracyLoss(alpha=[2.0, 5.0]), "init": "cll", "decoder": "mea"},
    {"loss": "perceptron", "random_state": 1},
    {"early_stopping": True, "random_state": 0, "init_C": 0.5, "init": "cll",
     "loss": "mce_f"},
])
def test_save_load_round_trip(tmp_path, params):
    crf, X, _ = _fit(**params)
    path = tmp_path / "model.crfl"
    save_model(crf, path)
    loaded = load_model(path)
    _assert_same_model(crf, loaded, X)
    assert repr(loaded) == repr(crf)


def test_save_load_array_input(tmp_path):
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(n, 4)) for n in (3, 5, 2, 6)]
    y = [(x[:, 0] > 0).astype(int) for x in X]
    crf = CRFTagger(max_iter=20).fit(X, y)
    save_model(crf, tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    _assert_same_model(crf, loaded, X)
    assert loaded.classes_.dtype == crf.classes_.dtype  # integer labels stay integers
    with pytest.raises(ValueError, match="width|features"):
        loaded.predict([rng.normal(size=(3, 5))])


def test_save_load_lop(tmp_path):
    X, y = make_toy_chunks()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lop = LOPTagger(experts="label", weights="fit",
                        estimator=CRFTagger(max_iter=10, boundary_potentials=False)).fit(X, y)
    save_model(lop, tmp_path / "lop.crfl")
    loaded = load_model(tmp_path / "lop.crfl")
    assert isinstance(loaded, LOPTagger)
    assert loaded.predict(X) == lop.predict(X)
    np.testing.assert_array_equal(loaded.weights_, lop.weights_)
    for a, b in zip(lop.experts_, loaded.experts_):
        _assert_same_model(a, b, X)
    # The experts share one vectoriser, as after fit.
    assert loaded.experts_[1]._features.vectorizer is loaded.pool_._features.vectorizer


def test_saved_file_holds_no_pickle(tmp_path):
    crf, X, _ = _fit()
    path = tmp_path / "model.crfl"
    save_model(crf, path)
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        assert "model.json" in names
        for name in names:
            data = z.read(name)
            assert not data.startswith(b"\x80")  # a pickle's PROTO opcode
            if name != "model.json":
                assert name.endswith(".npy")
                header = np.lib.format.read_array_header_1_0 if data[6] == 1 else \
                    np.lib.format.read_array_header_2_0
                import io

                f = io.BytesIO(data)
                np.lib.format.read_magic(f)
                _, _, dtype = header(f)
                assert not dtype.hasobject, name
    arrays = _arrays(path)  # np.load with allow_pickle=False reads every array
    assert {"state_index", "state_weight", "transition", "start", "end"} <= set(arrays)
    document = _document(path)
    assert document["format"] == "sklearn-crfloss-model"
    assert document["estimator"]["params"]["loss"] == "cll"


def test_damaged_files_raise(tmp_path):
    crf, _, _ = _fit()
    path = tmp_path / "model.crfl"
    save_model(crf, path)
    data = path.read_bytes()
    # 16 bytes overwritten in the middle.
    middle = bytearray(data)
    k = len(data) // 2
    middle[k:k + 16] = bytes(b ^ 0xFF for b in middle[k:k + 16])
    (tmp_path / "middle").write_bytes(bytes(middle))
    with pytest.raises(ValueError, match="corrupt|checksum|not a valid"):
        load_model(tmp_path / "middle")
    # Truncated, by half and by the last byte.
    for n in (len(data) // 2, len(data) - 1):
        (tmp_path / "short").write_bytes(data[:n])
        with pytest.raises(ValueError, match="truncated or corrupt"):
            load_model(tmp_path / "short")
    # Not a model file at all.
    (tmp_path / "pickle").write_bytes(pickle.dumps(crf))
    with pytest.raises(ValueError, match="not a valid"):
        load_model(tmp_path / "pickle")
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "missing")


def test_changed_content_fails_the_checksum(tmp_path):
    crf, _, _ = _fit()
    path = tmp_path / "model.crfl"
    save_model(crf, path)
    document = _document(path)
    document["estimator"]["params"]["C"] = 2.0  # a valid value, but not the saved one
    _rewrite(path, document)
    with pytest.raises(ValueError, match="checksum"):
        load_model(path)


def _with_checksum(document, path):
    document["checksum"] = _checksum(document, _arrays(path))
    return document


def test_wrong_shape_in_json_raises(tmp_path):
    """Shapes stated in model.json are checked, even with a valid checksum."""
    crf, _, _ = _fit()
    path = tmp_path / "model.crfl"
    save_model(crf, path)
    L = crf.classes_.shape[0]
    # The stated shape of an array differs from the array's.
    document = _document(path)
    document["arrays"]["transition"]["shape"] = [L, L + 1]
    _rewrite(path, _with_checksum(document, path))
    with pytest.raises(ValueError, match="'transition' has dtype <f8 and shape"):
        load_model(path)
    # The stated number of labels differs from the arrays'.
    save_model(crf, path)
    document = _document(path)
    document["estimator"]["classes"]["values"].append("Z-ZZ")  # same dtype, <U4
    document["estimator"]["classes"]["n"] = L + 1
    _rewrite(path, _with_checksum(document, path))
    with pytest.raises(ValueError, match=rf"transition must be float64 of shape \({L + 1}"):
        load_model(path)
    # Fewer attributes than the state weights index.
    save_model(crf, path)
    document = _document(path)
    names = document["estimator"]["features"]["feature_names"]
    document["estimator"]["features"]["feature_names"] = names[:-3]
    document["estimator"]["features"]["n_features"] = len(names) - 3
    document["estimator"]["n_features_in"] = len(names) - 3
    _rewrite(path, _with_checksum(document, path))
    with pytest.raises(ValueError, match="state weight indices outside"):
        load_model(path)


def test_nothing_from_the_file_is_run(tmp_path):
    crf, _, _ = _fit()
    path = tmp_path / "model.crfl"
    save_model(crf, path)
    for value in ({"__component__": "loss", "name": "os.system", "params": {}},
                  {"__estimator__": "builtins.eval", "params": {}},
                  {"__component__": "builtins", "name": "eval", "params": {}},
                  {"__reduce__": ["os.system", ["echo"]]}):
        document = _document(path)
        document["estimator"]["params"]["loss"] = value
        _rewrite(path, _with_checksum(document, path))
        with pytest.raises(ValueError, match="not a valid parameter value"):
            load_model(path)
    document = _document(path)
    document["format_version"] = 99
    _rewrite(path, _with_checksum(document, path))
    with pytest.raises(ValueError, match="format version 99"):
        load_model(path)


class _MyLoss(ConditionalLogLikelihood):
    pass


@pytest.mark.parametrize("params, where", [
    ({"callback": lambda k, v: None}, "callback"),
    ({"loss": _MyLoss()}, "loss"),
    ({"random_state": np.random.RandomState(0)}, "random_state"),
])
def test_save_refuses_what_it_cannot_name(tmp_path, params, where):
    crf, _, _ = _fit(**params)
    with pytest.raises(ValueError, match=rf"params\['{where}'\].*cannot hold"):
        save_model(crf, tmp_path / "m")
    assert not (tmp_path / "m").exists()  # nothing written


def test_save_refuses_unfitted_and_other_estimators(tmp_path):
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(NotFittedError):
        save_model(CRFTagger(), tmp_path / "m")
    with pytest.raises(TypeError, match="LogisticRegression"):
        save_model(LogisticRegression(), tmp_path / "m")


def test_skops_round_trip_with_trusted_types(tmp_path):
    crf, X, _ = _fit()
    path = tmp_path / "model.skops"
    skops.io.dump(crf, path)
    trusted = ["sklearn_crfloss._tagger.CRFTagger",
               "sklearn_crfloss._data._vectorize.SequenceVectorizer",
               "sklearn_crfloss.losses._likelihood.ConditionalLogLikelihood",
               "sklearn_crfloss.priors.GaussianPrior"]
    assert set(skops.io.get_untrusted_types(file=path)) <= set(trusted)
    with pytest.raises(skops.io.exceptions.UntrustedTypesFoundException):
        skops.io.load(path)
    loaded = skops.io.load(path, trusted=trusted)
    _assert_same_model(crf, loaded, X)


# ------------------------------------------------------------ CRFsuite files

def test_hashlittle_reference_values():
    # Bob Jenkins' lookup3.c driver: hashlittle("Four score and seven years ago", 30, 0).
    assert hashlittle([b"Four score and seven years ago"]).tolist() == [0x17770551]
    # Every length from 1 to 40 in one call (the blocks of 12 and the tails) is
    # consistent with hashing the keys one at a time.
    keys = [bytes(range(65, 65 + n)) for n in range(1, 41)]
    assert hashlittle(keys).tolist() == [int(hashlittle([k])[0]) for k in keys]


def test_crfsuite_name():
    assert crfsuite_name("w[-1]=the") == "w[-1]:the"
    assert crfsuite_name("-1:word.lower()=a=b") == "-1:word.lower():a=b"
    assert crfsuite_name("bias") == "bias"
    assert crfsuite_name("w:the", ":") == "w:the"


def test_boundary_potentials_false_trains_none():
    for params in ({}, {"solver": "sgd", "random_state": 0},
                   {"loss": "perceptron", "random_state": 0},
                   {"loss": "mira", "random_state": 0}):
        with_b, X, y = _fit(**params)
        without, _, _ = _fit(boundary_potentials=False, **params)
        assert np.any(with_b.start_ != 0) and np.any(with_b.end_ != 0), params
        assert np.all(without.start_ == 0) and np.all(without.end_ == 0), params
        L = without.classes_.shape[0]
        if "loss" not in params:  # layouts of observed pairs: 2 L fewer parameters
            assert without.n_parameters_ == with_b.n_parameters_ - 2 * L


def test_export_import_toy(tmp_path):
    crf, X, _ = _fit(boundary_potentials=False)
    path = tmp_path / "toy.crfsuite"
    export_crfsuite(crf, path)
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    assert [tagger.tag(pycrfsuite.ItemSequence(x)) for x in X] == crf.predict(X)
    # pycrfsuite's own reading of the file: names and (printed) weights.
    info = tagger.info()
    assert sorted(info.labels) == crf.classes_.tolist()
    for (attr, label), weight in crf.state_features_.items():
        assert info.state_features[crfsuite_name(attr), label] == pytest.approx(weight, abs=1e-6)
    imported = import_crfsuite(path)
    assert imported.predict(X) == crf.predict(X)
    np.testing.assert_array_equal(imported.transition_, crf.transition_)
    assert imported.boundary_potentials is False
    assert set(imported.attributes_) == {crfsuite_name(a) for a, _ in crf.state_features_}
    # An imported model (python-crfsuite names, no fit statistics) saves and loads too.
    save_model(imported, tmp_path / "imported.crfl")
    _assert_same_model(imported, load_model(tmp_path / "imported.crfl"), X)


@pytest.mark.parametrize("params, match", [
    ({}, "non-zero start/end"),
    ({"boundary_potentials": False, "feature_hashing": 32}, "hashed features"),
    ({"boundary_potentials": False, "decoder": "mea"}, "plain Viterbi"),
    ({"boundary_potentials": False, "constraints": "iob2"}, "plain Viterbi"),
])
def test_export_refuses(tmp_path, params, match):
    crf, _, _ = _fit(**params)
    with pytest.raises(ValueError, match=match):
        export_crfsuite(crf, tmp_path / "m.crfsuite")
    assert not (tmp_path / "m.crfsuite").exists()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_export_refuses_arrays_and_int_labels(tmp_path):
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(n, 3)) for n in (3, 4, 5)]
    y = [(x[:, 0] > 0).astype(int) for x in X]
    crf = CRFTagger(boundary_potentials=False, max_iter=10).fit(X, y)
    with pytest.raises(ValueError, match="numeric arrays"):
        export_crfsuite(crf, tmp_path / "m")
    Xd = [[{"w": str(v > 0)} for v in x[:, 0]] for x in X]
    crf = CRFTagger(boundary_potentials=False, max_iter=10).fit(Xd, y)
    with pytest.raises(ValueError, match="labels are strings"):
        export_crfsuite(crf, tmp_path / "m")


def test_names_that_python_crfsuite_joins_are_one_attribute(tmp_path):
    # {"k": "v"} and {"k:v": 2.0} are both python-crfsuite's attribute 'k:v'
    # (values 1 and 2): one column here too, so the export tags alike.
    X = [[{"k": "v"}, {"k:v": 2.0}], [{"k": "w"}, {"k": "v"}]]
    y = [["A", "B"], ["B", "A"]]
    crf = CRFTagger(boundary_potentials=False, max_iter=10).fit(X, y)
    assert list(crf.attributes_).count("k:v") == 1
    export_crfsuite(crf, tmp_path / "m")
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "m"))
    assert [tagger.tag(pycrfsuite.ItemSequence(x)) for x in X] == crf.predict(X)


def test_pycrfsuite_naming_of_values(tmp_path):
    """Numbers, booleans, lists and values holding ':' or '=' are named as python-crfsuite does."""
    X = [[{"w": "a:b", "n": 2.5, "flag": True, "tags": ["x", "y"], "-1:w": "c=d"},
          {"w": "e", "n": -1.0, "flag": False, "tags": ["y"], "-1:w": "a:b"}]] * 4
    y = [["A", "B"]] * 4
    crf = CRFTagger(boundary_potentials=False, max_iter=20).fit(X, y)
    export_crfsuite(crf, tmp_path / "m")
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "m"))
    names = {a for a, _ in tagger.info().state_features}
    assert names <= {"w:a:b", "w:e", "n", "flag", "tags:x", "tags:y", "-1:w:c=d", "-1:w:a:b"}
    assert {"n", "w:a:b", "-1:w:c=d"} <= names
    X_new = [[{"w": "e", "n": 3.0, "tags": ["x"]}, {"w": "a:b", "n": -2.0, "-1:w": "c=d"}]]
    assert tagger.tag(pycrfsuite.ItemSequence(X_new[0])) == crf.predict(X_new)[0]
    assert import_crfsuite(tmp_path / "m").predict(X_new) == crf.predict(X_new)


def test_crfsuite_reader_refuses_damaged_files(tmp_path):
    crf, _, _ = _fit(boundary_potentials=False)
    path = tmp_path / "m.crfsuite"
    export_crfsuite(crf, path)
    data = path.read_bytes()
    (tmp_path / "short").write_bytes(data[:-10])
    with pytest.raises(ValueError, match="truncated"):
        import_crfsuite(tmp_path / "short")
    (tmp_path / "magic").write_bytes(b"XCRF" + data[4:])
    with pytest.raises(ValueError, match="not a CRFsuite"):
        import_crfsuite(tmp_path / "magic")
    bad = bytearray(data)
    bad[60 + 12:60 + 20] = struct.pack("<d", np.nan)  # the first feature's weight
    (tmp_path / "nan").write_bytes(bytes(bad))
    with pytest.raises(ValueError, match="NaN or infinite"):
        import_crfsuite(tmp_path / "nan")
    model = read_model(path)
    assert len(model.labels) == crf.classes_.shape[0]


def test_write_read_model_round_trip(tmp_path):
    labels = ["B", "A", "C"]
    attributes = ["x:1", "bias", "é:ü"]
    state = (np.array([0, 0, 2]), np.array([1, 2, 0]), np.array([0.5, -1.25, 3.0]))
    T = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, -3.0], [0.0, 0.0, 0.0]])
    size = write_model(tmp_path / "m", labels, attributes, state, T)
    assert size == (tmp_path / "m").stat().st_size
    model = read_model(tmp_path / "m")
    assert model.labels == labels and model.attributes == attributes
    np.testing.assert_array_equal(model.transition, T)
    for got, want in zip(model.state, state):
        np.testing.assert_array_equal(got, want)
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "m"))
    assert tagger.labels() == labels
    assert tagger.info().transitions[("A", "C")] == -3.0


def test_export_lop_pool(tmp_path):
    X, y = make_toy_chunks()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lop = LOPTagger(experts="random", random_state=0,
                        estimator=CRFTagger(max_iter=10, boundary_potentials=False)).fit(X, y)
    export_crfsuite(lop, tmp_path / "pool.crfsuite")
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "pool.crfsuite"))
    assert [tagger.tag(pycrfsuite.ItemSequence(x)) for x in X] == lop.predict(X)


_text = st.text(alphabet="ab:=é_ ", min_size=1, max_size=4)
_value = st.one_of(_text, st.sampled_from([1.0, -0.5, 2.0, True]), st.lists(_text, min_size=1,
                                                                           max_size=2))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tokens=st.lists(st.dictionaries(st.text(alphabet="ab:_", min_size=1, max_size=3), _value,
                                       min_size=1, max_size=3), min_size=6, max_size=12),
       seed=st.integers(0, 2**16))
@example(tokens=[{":": ":"}, {"_": ":"}, {":": ":"}, {":": ":"}, {":": ":"}, {":": ":"},
                 {":": "::"}, {"a": " "}, {"_": ":", "a": ":", ":": 2.0}, {"a": " "},
                 {":": 2.0, "_": ":", "a": ":"}, {":": " "}],
         seed=118)  # two label sequences of the second half tie exactly
def test_export_tags_random_feature_dicts_as_predict(tmp_path_factory, tokens, seed):
    """Keys with ':' (not '='), values with ':' and '=', numbers, booleans, lists."""
    rng = np.random.default_rng(seed)
    labels = rng.choice(["A", "B", "C"], size=len(tokens)).tolist()
    labels[:3] = ["A", "B", "C"]
    X = [tokens[:len(tokens) // 2], tokens[len(tokens) // 2:]]
    y = [labels[:len(tokens) // 2], labels[len(tokens) // 2:]]
    crf = CRFTagger(boundary_potentials=False, C=100.0, max_iter=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf.fit(X, y)
    path = tmp_path_factory.mktemp("random") / "m.crfsuite"
    try:
        export_crfsuite(crf, path)
    except ValueError as exc:  # 'k=v' and a numeric 'k:v' are one python-crfsuite name
        assert "same python-crfsuite name" in str(exc)
        event("refused: a name collision")
        return
    event("exported")
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    X_new = X + [tokens[::-1]]
    ours = crf.predict(X_new)
    theirs = [tagger.tag(pycrfsuite.ItemSequence(x)) for x in X_new]
    imported = import_crfsuite(path).predict(X_new)
    # Random dicts can make two label sequences score exactly the same; then
    # either is a correct Viterbi answer, and rounding decides which is taken.
    for tags in (theirs, imported):
        differ = [i for i in range(len(X_new)) if tags[i] != ours[i]]
        if differ:
            event("a tie between Viterbi paths")
            np.testing.assert_allclose(crf.sequence_log_proba([X_new[i] for i in differ],
                                                   [tags[i] for i in differ]),
                            crf.sequence_log_proba([X_new[i] for i in differ],
                                                   [ours[i] for i in differ]),
                            rtol=0, atol=1e-9)


@pytest.mark.parametrize("relabel", [
    lambda lab: ("chunk", lab),  # tuples: an object array of tuples
    lambda lab: np.int64(len(lab)) if lab != "O" else "O",  # numpy ints and a str
])
def test_save_load_keeps_label_identity(tmp_path, relabel):
    X, y = make_toy_chunks()
    y = [[relabel(lab) for lab in seq] for seq in y]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRFTagger(max_iter=10).fit(X, y)
    save_model(crf, tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    assert loaded.classes_.dtype == crf.classes_.dtype
    got, want = loaded.predict(X), crf.predict(X)
    assert got == want
    assert [type(v) for s in got for v in s] == [type(v) for s in want for v in s]


def test_export_names_every_reason_at_once(tmp_path):
    crf, _, _ = _fit(feature_hashing=32, decoder="mea")  # boundary potentials on too
    with pytest.raises(ValueError) as info:
        export_crfsuite(crf, tmp_path / "m.crfsuite")
    message = str(info.value)
    for reason in ("non-zero start/end", "hashed features", "plain Viterbi"):
        assert reason in message
    assert not (tmp_path / "m.crfsuite").exists()
