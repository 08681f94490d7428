"""Bad input: a clear ValueError or TypeError naming the problem and the sequence."""

import os

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.losses import MinimumClassificationError, SoftmaxMargin
from sklearn_crfloss.solvers import LBFGS

from conftest import make_toy_chunks

X_OK = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}]]
Y_OK = [["x", "y"], ["y"]]


@pytest.mark.parametrize(
    "X, y, exc, match",
    [
        (X_OK, Y_OK[:1], ValueError, "different numbers of sequences: 2 and 1"),
        ([[{"w": "a"}], [{"w": "c"}]], [["x"], ["x", "y"]], ValueError, "Sequence 1 has 1 tokens but 2 labels"),
        (X_OK + [[]], Y_OK + [[]], ValueError, "Sequence 2 is empty"),
        (X_OK, [["x", "x"], ["x"]], ValueError, "single label"),
        (X_OK, [["x", ["y"]], ["y"]], TypeError, "Sequence 0, token 1: label .* is not hashable"),
        ([[{"w": "a"}, {"v": float("nan")}], [{"w": "c"}]], Y_OK, ValueError, "Sequence 0 has a NaN"),
        ([[{"w": "a"}], [{"w": "b"}, {"v": np.inf}]], [["x"], ["y", "x"]], ValueError, "Sequence 1 has a NaN or infinite"),
        ([[{"w": "a"}, {"w": "b"}], ["c"]], Y_OK, TypeError, "Sequence 1: tokens must be feature dicts or rows"),
        ([[{"w": "a"}, {"w": "b"}], "c"], Y_OK, TypeError, "Sequence 1: expected a list"),
        ([[{"w": "a"}, [1.0]], [{"w": "c"}]], Y_OK, TypeError, "Sequence 0: mixes feature dicts"),
        ([[{"w": "a"}, {"w": "b"}], np.ones((1, 3))], Y_OK, ValueError, "mixes sequences of feature dicts"),
        ([np.ones((2, 3)), np.ones((1, 4))], Y_OK, ValueError, "Sequence 1 has 4 features, expected 3"),
        ([np.ones((2, 3)), np.array([[1.0, np.nan, 0.0]])], Y_OK, ValueError, "Sequence 1"),
        (np.ones((3, 3)), Y_OK, TypeError, "X must be a list of sequences"),
        (X_OK, ["xy", "y"], TypeError, r"y\[0\] must be a sequence of labels"),
        ({"a": 1}, Y_OK, TypeError, "X must be a list of sequences"),
    ],
)
def test_bad_fit_input(X, y, exc, match):
    with pytest.raises(exc, match=match):
        CRFTagger().fit(X, y)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"C": 0.0}, "'C' parameter"),
        ({"C": -1.0}, "'C' parameter"),
        ({"loss": "nope"}, "'loss' parameter"),
        ({"prior": "l3"}, "'prior' parameter"),
        ({"max_iter": 0}, "'max_iter' parameter"),
        ({"min_freq": 0}, "'min_freq' parameter"),
        ({"decoder": "beam"}, "'decoder' parameter"),
    ],
)
def test_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        CRFTagger(**params).fit(X_OK, Y_OK)


def test_bad_sample_weight():
    with pytest.raises(ValueError, match="one weight per sequence"):
        CRFTagger().fit(X_OK, Y_OK, sample_weight=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="non-negative"):
        CRFTagger().fit(X_OK, Y_OK, sample_weight=[1.0, -2.0])


def test_predict_with_a_different_number_of_features():
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(3, 4)) for _ in range(5)]
    y = [["a", "b", "a"]] * 5
    crf = CRFTagger().fit(X, y)
    with pytest.raises(ValueError, match="Sequence 1 has 5 features, expected 4 as seen in fit"):
        crf.predict([X[0], rng.normal(size=(2, 5))])
    with pytest.raises(ValueError, match="fitted on array sequences but X holds dict"):
        crf.predict([[{"w": "a"}]])
    # sparse input of the right width is fine
    assert len(crf.predict([sp.csr_matrix(X[0])])[0]) == 3


def test_predict_dict_model_rejects_arrays():
    crf = CRFTagger().fit(X_OK, Y_OK)
    with pytest.raises(ValueError, match="fitted on dict sequences but X holds array"):
        crf.predict([np.ones((2, 3))])


def test_failed_fit_leaves_fitted_estimator_unchanged():
    X, y = make_toy_chunks(30)
    crf = CRFTagger().fit(X, y)
    before = {k: v for k, v in vars(crf).items() if k.endswith("_")}
    pred = crf.predict(X)
    bad_y = [list(s) for s in y]
    bad_y[7] = bad_y[7] + ["O"]
    with pytest.raises(ValueError, match="Sequence 7"):
        crf.fit(X, bad_y)
    with pytest.raises(ValueError):
        crf.set_params(C=-1.0).fit(X, y)
    after = {k: v for k, v in vars(crf).items() if k.endswith("_")}
    assert before.keys() == after.keys()
    for k in before:
        assert before[k] is after[k]
    assert all(np.array_equal(a, b) for a, b in zip(crf.predict(X), pred))


def _fitted_state(crf):
    """The fitted attributes (public and private) of an estimator, by name."""
    params = crf.get_params(deep=False)
    return {k: v for k, v in vars(crf).items() if k not in params}


def _interrupt(k, objective):
    if k == 3:
        raise KeyboardInterrupt("stopped by the callback")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["lbfgs", LBFGS(backend="scipy"), "owlqn", "sgd", "quickprop"],
                         ids=str)
def test_interrupted_fit_leaves_the_estimator_as_it_was(solver):
    # A KeyboardInterrupt from a callback propagates as such (libLBFGS
    # included: no SystemError), and nothing of the interrupted fit remains.
    X, y = make_toy_chunks(30)
    crf = CRFTagger(solver=solver, max_iter=20, C=10.0)
    with pytest.raises(KeyboardInterrupt):
        crf.set_params(callback=_interrupt).fit(X, y)
    assert _fitted_state(crf) == {}
    crf.set_params(callback=None, max_iter=5).fit(X, y)
    before = _fitted_state(crf)
    pred = crf.predict(X)
    with pytest.raises(KeyboardInterrupt):
        crf.set_params(callback=_interrupt, max_iter=20, warm_start=True).fit(X[:20], y[:20])
    after = _fitted_state(crf)
    assert before.keys() == after.keys()
    for k in before:
        assert before[k] is after[k], k
    assert crf.predict(X) == pred


@pytest.mark.parametrize("params", [{"decoder": "posterior-typo"},
                                    {"constraints": "bilou-typo"},
                                    {"decoder": lambda *args: None}],
                         ids=["decoder", "constraints", "callable decoder"])
def test_decoding_parameters_are_validated_after_fit(params):
    # As fit validates them (scikit-learn's _parameter_constraints), for
    # every method that decodes.
    crf = CRFTagger().fit(X_OK, Y_OK).set_params(**params)
    name = next(iter(params))
    for method in (crf.predict, crf.decode, crf.predict_nbest, crf.sequence_log_proba):
        with pytest.raises(InvalidParameterError, match=f"'{name}' parameter of CRFTagger"):
            method(X_OK)
    assert len(crf.predict_marginals(X_OK)) == 2  # no decoding: not concerned


def _truncated_corpus(tmp_path):
    folder = tmp_path / "conll2000"
    folder.mkdir()
    with open(os.path.join(os.environ["SKLEARN_CRFLOSS_DATA"], "conll2000", "test.txt"),
              "rb") as f:
        (folder / "test.txt").write_bytes(f.read()[:100_000])
    return load_conll2000("test", data_home=tmp_path, download_if_missing=False)


X_TOY, Y_TOY = make_toy_chunks(20)


def _fit_toy(**params):
    return CRFTagger(**params).fit(X_TOY, Y_TOY)


# Sentences of 12 to 30 tokens, where log(|Y| - 1) is 19 to 48 (MCE, finite psi).
X_LONG, Y_LONG = zip(*[(x, t) for x, t in zip(*make_toy_chunks(120, seed=1, max_len=30))
                       if len(t) >= 12])


# Issue 15, "Faults and bad input": each case, the exception (or warning) it
# ends with, and what the message must say.
FAULTS = [
    ("constraints set after fit",
     lambda tmp: _fit_toy().set_params(constraints="bilou-typo").predict(X_TOY),
     ValueError, "'constraints' parameter of CRFTagger must be None or a str among"),
    ("decoder set after fit",
     lambda tmp: _fit_toy().set_params(decoder="posterior-typo").predict(X_TOY),
     ValueError, "'decoder' parameter of CRFTagger must be a str among"),
    ("cost naming an unknown label",
     lambda tmp: _fit_toy(loss=SoftmaxMargin(cost={("b-np", "O"): 2.0})),
     ValueError, "not among the training labels: 'b-np'"),
    ("cost naming an unknown label, set as loss__cost",
     lambda tmp: CRFTagger(loss="softmax_margin").set_params(
         loss__cost={("B-NP", "o"): 2.0}).fit(X_TOY, Y_TOY),
     ValueError, "not among the training labels: 'o'"),
    ("loss__ parameters of an unknown loss name",
     lambda tmp: CRFTagger().set_params(loss="mixd", loss__lam=0.5),
     ValueError, "Unknown loss 'mixd'; choose one of"),
    ("loss__ parameter the named loss does not have",
     lambda tmp: CRFTagger().set_params(loss="cll", loss__lam=0.5),
     ValueError, "Invalid parameter 'lam' for estimator ConditionalLogLikelihood"),
    ("perceptron stopped by max_iter",
     lambda tmp: _fit_toy(loss="perceptron", max_iter=1, random_state=0),
     ConvergenceWarning, r"perceptron \(stage loss='perceptron'\) did not converge in 1 "
                         r"epochs: reached max_iter=1, the last epoch with \d+ mistakes"),
    ("MIRA stopped by max_iter",
     lambda tmp: _fit_toy(loss="mira", max_iter=1, random_state=0),
     ConvergenceWarning, "mira .* did not converge in 1 epochs: reached max_iter=1"),
    ("truncated local corpus file", _truncated_corpus,
     ValueError, r"conll2000.test\.txt' is corrupt or truncated \(100000 bytes\)"),
    ("MCE with psi=1 saturated by log A on long sentences (degenerate fit)",
     lambda tmp: CRFTagger(loss=MinimumClassificationError(psi=1.0), init="cll").fit(
         X_LONG, Y_LONG),
     UserWarning, r"loss='mce' with psi=1: the smoothed loss is saturated for \d+% of the "
                  r"training sequences .* shifts d by -log\(\|Y\|-1\)/psi"),
    ("fit interrupted by a callback (libLBFGS)",
     lambda tmp: _fit_toy(solver="lbfgs", callback=_interrupt),
     KeyboardInterrupt, "stopped by the callback"),
]


@pytest.mark.parametrize("case, action, expected, match", FAULTS, ids=[f[0] for f in FAULTS])
def test_faults_and_bad_input(case, action, expected, match, tmp_path, data_home):
    if issubclass(expected, Warning):
        with pytest.warns(expected, match=match):
            action(tmp_path)
    else:
        with pytest.raises(expected, match=match):
            action(tmp_path)


def test_unknown_attributes_at_predict_are_ignored():
    crf = CRFTagger().fit(X_OK, Y_OK)
    pred = crf.predict([[{"w": "zzz", "other": 3.0}]])
    assert len(pred[0]) == 1


def test_feature_value_types():
    # str -> one-hot, number -> numeric, bool -> 0/1, list of str -> one per string
    X = [[{"w": "a", "n": 2.5, "cap": True, "suf": ["a", "xa"]},
          {"w": "b", "n": -1.0, "cap": False, "suf": ["b"]}]] * 3
    y = [["x", "y"]] * 3
    crf = CRFTagger(C=100.0).fit(X, y)
    assert set(crf.attributes_) == {"w:a", "w:b", "n", "cap", "suf:a", "suf:xa", "suf:b"}
    assert_array_equal(crf.predict(X[:1])[0], ["x", "y"])


def _reference_encode_labels(y):
    """Per-token encoding: codes by first occurrence, then ranked by the sorted classes."""
    from sklearn_crfloss._data._validation import _order_classes
    flat = [label for labels in y for label in labels]
    codes = {}
    first = [codes.setdefault(label, len(codes)) for label in flat]
    ordered = _order_classes(list(codes))
    rank = {codes[label]: k for k, label in enumerate(ordered)}
    return ordered, [rank[c] for c in first]


@pytest.mark.parametrize("y", [
    [["B", "I", "O"], ["O", "B"]],
    [[1, 2], [True, 0, 2.0]],  # 1 == True, 2 == 2.0: the first seen names the class
    [[np.str_("a"), "b"], ["a", np.int64(3), None]],
    [[("a", 1), frozenset({1})], [None, ("a", 1), frozenset({2})]],
    [[np.float64(1.5), 1.5, float("inf")], [-0.0, 0.0]],
])
def test_encode_labels_equals_the_per_token_encoding(y):
    from sklearn_crfloss._data._validation import encode_labels
    classes, y_enc = encode_labels(y, np.array([len(labels) for labels in y]))
    ordered, expected = _reference_encode_labels(y)
    assert classes.tolist() == ordered
    assert [type(c) for c in classes.tolist()] == [type(c) for c in ordered]
    assert y_enc.dtype == np.intp and y_enc.flags.c_contiguous
    assert y_enc.tolist() == expected


@pytest.mark.parametrize("y, exc, match", [
    ([["a", "b"], ["b", float("nan"), ["x"]]], ValueError, "Sequence 1, token 1: the label is NaN"),
    ([["a", "b"], ["b", ["x"], float("nan")]], TypeError, "Sequence 1, token 1: label .* not hashable"),
    ([["a", np.float64("nan")], ["b", "a", "c"]], ValueError, "Sequence 0, token 1: the label is NaN"),
    ([["a", "b"], ["b", "a", {"x": 1}]], TypeError, "Sequence 1, token 2: label .* not hashable"),
])
def test_encode_labels_names_the_first_bad_token(y, exc, match):
    from sklearn_crfloss._data._validation import encode_labels
    with pytest.raises(exc, match=match):
        encode_labels(y, np.array([len(labels) for labels in y]))
