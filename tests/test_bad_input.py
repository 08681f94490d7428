"""Bad input, rounds 2 and 3: every label type, every reader, every entry point.

The table :data:`BAD_INPUT` lists each case, the exception it must end with
and what the message must say; the tests below it check what is read or
returned correctly (labels of every type, CoNLL files, weights, threads).
"""

import io
import os
import pickle
import threading
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.utils._param_validation import InvalidParameterError

from conftest import make_toy_chunks
from sklearn_crfloss import CRFTagger, LOPTagger
from sklearn_crfloss import decoding, inference
from sklearn_crfloss.datasets import load_conll2000, read_conll, write_conll
from sklearn_crfloss.features import TemplateFeatures
from sklearn_crfloss.io import export_crfsuite
from sklearn_crfloss.losses import SoftmaxMargin
from sklearn_crfloss.metrics import (paired_bootstrap_test, segment_f1_scorer,
                                     token_accuracy_scorer)

X_TOY, Y_TOY = make_toy_chunks(20)
PAIR_X = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}]]


def _quiet(action):
    """``action()`` without the ConvergenceWarnings of the short fits."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return action()


def _fit(X=X_TOY, y=Y_TOY, **params):
    return _quiet(lambda: CRFTagger(max_iter=5, **params).fit(X, y))


def _lop():
    return _quiet(lambda: LOPTagger(estimator=CRFTagger(max_iter=3)).fit(X_TOY, Y_TOY))


def _zero_labels(func, *extra, **kwargs):
    """``func`` on potentials of two tokens and no label (read out of bounds before)."""
    return lambda tmp: func(np.zeros((2, 0)), np.zeros((0, 0)), np.zeros(0), np.zeros(0),
                            np.array([0, 2]), *extra, **kwargs)


def _ok_potentials(n_tokens=3, n_labels=2):
    return (np.zeros((n_tokens, n_labels)), np.zeros((n_labels, n_labels)),
            np.zeros(n_labels), np.zeros(n_labels))


def _corpus_copy(tmp, convert):
    """load_conll2000('test') from a copy of the real file passed through ``convert``."""
    with open(os.path.join(os.environ["SKLEARN_CRFLOSS_DATA"], "conll2000", "test.txt"),
              "rb") as f:
        data = f.read()
    folder = tmp / "conll2000"
    folder.mkdir()
    (folder / "test.txt").write_bytes(convert(data))
    return load_conll2000("test", data_home=tmp, download_if_missing=False)


def _dict_fit(token, **params):
    """Fit on two sequences whose second one's second token is ``token``."""
    return lambda tmp: CRFTagger(max_iter=2, **params).fit(
        [[{"w": "q"}], [{"w": "q"}, token]], [["a"], ["a", "b"]])


class _SolveOnly:
    def solve(self, objective, loss, prior, C, x0, monitor):
        return x0


# Each case, the exception it ends with, and what the message must say.
BAD_INPUT = [
    # labels
    ("unhashable label", lambda tmp: CRFTagger().fit(PAIR_X, [["x", "y"], [["y"]]]),
     TypeError, r"Sequence 1, token 0: label \['y'\] of type list is not hashable"),
    ("dict label", lambda tmp: CRFTagger().fit(PAIR_X, [["x", {"y": 1}], ["y"]]),
     TypeError, "Sequence 0, token 1: label .* of type dict is not hashable"),
    ("NaN label", lambda tmp: CRFTagger().fit(PAIR_X, [["x", float("nan")], ["y"]]),
     ValueError, "Sequence 0, token 1: the label is NaN"),
    ("label unknown to sequence_log_proba",
     lambda tmp: _fit().sequence_log_proba(X_TOY[:1], [["Z"] * len(X_TOY[0])]),
     ValueError, "Sequence 0: label 'Z' is not one of the classes"),
    ("unhashable label in sequence_log_proba",
     lambda tmp: _fit().sequence_log_proba(X_TOY[:2], [Y_TOY[0], [["O"]] * len(Y_TOY[1])]),
     TypeError, r"Sequence 1, token 0: label \['O'\] of type list is not hashable"),
    # inference and decoding functions: no labels, shapes, offsets
    ("viterbi with no label", _zero_labels(inference.viterbi), ValueError, "no labels"),
    ("viterbi_nbest with no label", _zero_labels(inference.viterbi_nbest, 2),
     ValueError, "no labels"),
    ("viterbi_2best with no label", _zero_labels(inference.viterbi_2best),
     ValueError, "no labels"),
    ("max_marginals with no label", _zero_labels(inference.max_marginals),
     ValueError, "no labels"),
    ("forward_backward with no label", _zero_labels(inference.forward_backward),
     ValueError, "no labels"),
    ("marginals_vjp with no label",
     _zero_labels(inference.marginals_vjp, np.zeros((2, 0))), ValueError, "no labels"),
    ("viterbi_excluding with no label",
     _zero_labels(inference.viterbi_excluding, np.zeros(2, dtype=int)),
     ValueError, "no labels"),
    ("segment_margins with no label",
     _zero_labels(inference.segment_margins, np.zeros(2, dtype=int), ([0], [0], [1])),
     ValueError, "no labels"),
    ("sequence_scores with no label",
     lambda tmp: inference.sequence_scores(np.zeros((2, 0)), np.zeros((0, 0)), np.zeros(0),
                                           np.zeros(0), np.zeros(2, dtype=int), [0, 2]),
     ValueError, "no labels"),
    ("sequence_scores with a label out of range",
     lambda tmp: inference.sequence_scores(*_ok_potentials(), [0, 5, 1], [0, 3]),
     ValueError, r"y must hold 3 label indices in \[0, 2\)"),
    ("sequence_scores with 1-D unary",
     lambda tmp: inference.sequence_scores(np.zeros(4), *_ok_potentials()[1:], [0, 1], [0, 2]),
     ValueError, "unary potentials must be 2-D"),
    ("forward_backward with a sample_weight per token",
     lambda tmp: inference.forward_backward(*_ok_potentials(), [0, 1, 3],
                                            sample_weight=[1.0, 1.0, 1.0]),
     ValueError, r"sample_weight must have shape \(2,\)"),
    ("offsets that are not integers",
     lambda tmp: inference.viterbi(*_ok_potentials(), [0, 1.5, 3]),
     ValueError, "offsets must be integers"),
    ("viterbi_decode with allowed of another number of labels",
     lambda tmp: decoding.viterbi_decode(*_ok_potentials(), np.array([0, 3]),
                                         (np.ones((3, 3), bool), np.ones(3, bool))),
     ValueError, r"allowed must be two boolean arrays of shapes \(2, 2\) and \(2,\)"),
    ("mea_decode with no label", _zero_labels(decoding.mea_decode), ValueError, "no labels"),
    ("iob2 constraint without labels",
     lambda tmp: decoding.iob2_allowed([]), ValueError, "there are no labels"),
    # constraints, refused at fit
    ("iob2 with only I- labels, viterbi",
     lambda tmp: CRFTagger(constraints="iob2").fit(PAIR_X, [["I-NP", "I-VP"], ["I-NP"]]),
     ValueError, r"the labels \['I-NP', 'I-VP'\] have no 'B-' label of their type"),
    ("iob2 with only I- labels, mea",
     lambda tmp: CRFTagger(constraints="iob2", decoder="mea").fit(
         PAIR_X, [["O", "I-NP"], ["O"]]), ValueError, "have no 'B-' label"),
    ("iob2 with labels outside IOB2, at fit",
     lambda tmp: CRFTagger(constraints="iob2").fit(PAIR_X, [["PER", "O"], ["O"]]),
     ValueError, "constraints='iob2' needs labels 'O', 'B-<type>' or 'I-<type>', got 'PER'"),
    # CoNLL reader and writer, corpus files
    ("CoNLL file with one column",
     lambda tmp: read_conll(io.StringIO("He\nran\n")),
     ValueError, "<file object>, line 1: the lines have a single column"),
    ("read_conll label_column=1.5",
     lambda tmp: read_conll(io.StringIO("a b\n"), label_column=1.5),
     TypeError, "label_column must be an int .* got 1.5 of type float"),
    ("write_conll of a -DOCSTART- token",
     lambda tmp: write_conll(io.StringIO(), [[("-DOCSTART-", "X")]], [["O"]]),
     ValueError, "Sentence 0, token 0: a line starting with '-DOCSTART-'"),
    ("corpus file converted to CRLF",
     lambda tmp: _corpus_copy(tmp, lambda b: b.replace(b"\n", b"\r\n")),
     ValueError, r"test\.txt' is 'conll2000/test\.txt' with Windows \(CRLF\) line ends"),
    ("corpus file with a byte-order mark",
     lambda tmp: _corpus_copy(tmp, lambda b: b"\xef\xbb\xbf" + b),
     ValueError, "'conll2000/test.txt' with a UTF-8 byte-order mark"),
    # opinion pools
    ("LOP with_weights [inf, 1]", lambda tmp: _lop().with_weights([np.inf, 1.0]),
     ValueError, r"weights must be finite, >= 0 \(non-negative\) and not all 0, got \[inf"),
    ("LOP with_weights [nan, 1]", lambda tmp: _lop().with_weights([np.nan, 1.0]),
     ValueError, "weights must be finite"),
    ("LOP weights=[inf, 1] at fit",
     lambda tmp: LOPTagger(weights=[np.inf, 1.0]).fit(X_TOY, Y_TOY),
     ValueError, "weights must be finite"),
    ("LOP boolean mask of the wrong size",
     lambda tmp: LOPTagger(experts=[np.ones(3, dtype=bool)]).fit(X_TOY, Y_TOY),
     ValueError, r"expert group 0 is a boolean mask of shape \(3,\), but there are \d+ "),
    ("LOP estimator that is not a CRF",
     lambda tmp: LOPTagger(estimator=LogisticRegression()).fit(X_TOY, Y_TOY),
     InvalidParameterError, "'estimator' parameter of LOPTagger must be None or an instance"),
    # parameters
    ("solver object with only solve",
     lambda tmp: CRFTagger(solver=_SolveOnly()).fit(X_TOY, Y_TOY),
     TypeError, "_SolveOnly has 'solve' but not 'check', 'name'.*derive it from "
                "sklearn_crfloss.solvers.BaseSolver"),
    ("max_iter=2**31", lambda tmp: CRFTagger(max_iter=2**31).fit(X_TOY, Y_TOY),
     InvalidParameterError, r"'max_iter' parameter of CRFTagger must be None or an int in "
                            r"the range \[1, 2147483647\]"),
    ("feature_hashing=2**31", lambda tmp: CRFTagger(feature_hashing=2**31).fit(X_TOY, Y_TOY),
     InvalidParameterError, r"'feature_hashing' parameter .* range \[1, 2147483647\]"),
    # feature values, with and without hashing
    ("hashing: list of ints", _dict_fit({"w": [1, 2]}, feature_hashing=16),
     TypeError, "Sequence 1, token 1: feature 'w' holds a list with the int 1"),
    ("hashing: int key", _dict_fit({3: 1.0}, feature_hashing=16),
     TypeError, "Sequence 1, token 1: feature name 3 is of type int"),
    ("vocabulary: int key", _dict_fit({3: 1.0, "w": "a"}),
     TypeError, "Sequence 1, token 1: feature name 3 is of type int"),
    ("hashing: 10**400", _dict_fit({"n": 10**400}, feature_hashing=16),
     ValueError, "Sequence 1, token 1: the value of feature 'n' .*too large for a float64"),
    ("vocabulary: 10**400", _dict_fit({"n": 10**400}),
     ValueError, "Sequence 1, token 1: the value of feature 'n' .*too large for a float64"),
    ("hashing: bytes value", _dict_fit({"b": b"xy"}, feature_hashing=16),
     TypeError, r"Sequence 1, token 1: the value of feature 'b' is of type bytes.*decode"),
    ("vocabulary: bytes value", _dict_fit({"b": b"xy"}),
     TypeError, r"Sequence 1, token 1: the value of feature 'b' is of type bytes"),
    ("hashing: None value", _dict_fit({"n": None}, feature_hashing=16),
     TypeError, "Sequence 1, token 1: the value of feature 'n' is of type NoneType"),
    ("vocabulary: bytes value at predict",
     lambda tmp: _fit().predict([X_TOY[0], [{"w": b"x"}]]),
     TypeError, "Sequence 1, token 0: the value of feature 'w' is of type bytes"),
    ("hashing: bytes value at predict",
     lambda tmp: _fit(feature_hashing=64).predict([X_TOY[0], [{"w": b"x"}]]),
     TypeError, "Sequence 1, token 0: the value of feature 'w' is of type bytes"),
    # other entry points
    ("TemplateFeatures on dict tokens",
     lambda tmp: TemplateFeatures(["U00:%x[0,0]"]).fit([]).transform([[("a",)], [{"w": "a"}]]),
     TypeError, "Sentence 1, token 0: expected a token tuple .* got a dict"),
    ("paired_bootstrap_test on one sequence",
     lambda tmp: paired_bootstrap_test([["O"]], [["O"]], [["O"]]),
     ValueError, "needs at least two, got 1"),
    ("viterbi_nbest n_best=0",
     lambda tmp: inference.viterbi_nbest(*_ok_potentials(), [0, 3], 0),
     ValueError, "n_best must be an integer >= 1"),
    # round 3: weights, labels and values named as given
    ("sample_weight='abc'", lambda tmp: CRFTagger().fit(X_TOY, Y_TOY, sample_weight="abc"),
     ValueError, r"sample_weight must be one non-negative number per sequence \(20 of them\) "
                 r"or a single number, got 'abc' \(str\)"),
    ("sample_weight with a string",
     lambda tmp: CRFTagger().fit(X_TOY, Y_TOY, sample_weight=[1.0] * 5 + ["x"] + [1.0] * 14),
     ValueError, r"got 'x' \(str\) at index 5"),
    ("sample_weight with None",
     lambda tmp: CRFTagger().fit(X_TOY, Y_TOY, sample_weight=[1.0, None] + [1.0] * 18),
     ValueError, "sample_weight must be finite and non-negative, got None for sequence 1"),
    ("y as one 2-D array",
     lambda tmp: CRFTagger().fit([np.ones((3, 2)), np.ones((3, 2))],
                                 np.array([["A", "B", "A"], ["B", "A", "B"]])),
     TypeError, r"y must be a list of label sequences .* pass list\(y\)"),
    ("vocabulary: None value", _dict_fit({"n": None}),
     TypeError, "Sequence 1, token 1: the value of feature 'n' is of type NoneType"),
    ("partial_fit classes with a list",
     lambda tmp: CRFTagger().partial_fit(X_TOY, Y_TOY, classes=["O", ["B-NP"]]),
     TypeError, r"classes\[1\] = \['B-NP'\] of type list is not hashable"),
    ("cost key of one label",
     lambda tmp: _fit(loss=SoftmaxMargin(cost={("B-NP",): 1.0})),
     ValueError, r"the key \('B-NP',\) is not a pair of two labels"),
    ("cost of NaN",
     lambda tmp: _fit(loss=SoftmaxMargin(cost={("B-NP", "O"): float("nan")})),
     ValueError, r"cost of \('B-NP', 'O'\) must be finite and non-negative, got nan"),
    ("export_crfsuite of a lone surrogate",
     lambda tmp: export_crfsuite(_fit(X=[[{"w": "a\ud800"}, {"w": "b"}]] * 3,
                                      y=[["A", "B"]] * 3, boundary_potentials=False),
                                 tmp / "m.crfsuite"),
     ValueError, r"the attribute 'w:a\\ud800' holds '\\ud800' at position 3, which UTF-8 "
                 r"cannot encode"),
    ("write_conll of an empty sentence",
     lambda tmp: write_conll(io.StringIO(), [[("a",)], [], [("b",)]], [["O"], [], ["O"]]),
     ValueError, "Sentence 1 is empty: the CoNLL format has no empty sentence"),
]


@pytest.mark.parametrize("case, action, expected, match", BAD_INPUT,
                         ids=[c[0] for c in BAD_INPUT])
def test_bad_input(case, action, expected, match, tmp_path, data_home):
    with pytest.raises(expected, match=match):
        action(tmp_path)


def test_bad_input_table_size():
    assert len(BAD_INPUT) >= 40


# ------------------------------------------------------------------ labels

LABEL_PAIRS = {
    "int": (1, 2),
    "int and str": (1, "x"),
    "tuples": (("a", 1), ("b", 2)),
    "frozensets": (frozenset({1}), frozenset({2})),
    "None and str": (None, "x"),
    "numpy int64": (np.int64(3), np.int64(4)),
    "numpy str_": (np.str_("B-NP"), np.str_("O")),
    "float": (1.5, 2.5),
    "bool": (True, False),
    "big int": (2**70, 1),
    "str": ("B-NP", "O"),
}


@pytest.mark.parametrize("a, b", LABEL_PAIRS.values(), ids=list(LABEL_PAIRS))
def test_labels_keep_their_identity(a, b):
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}]] * 3
    y = [[a, b], [b, a]] * 3
    crf = CRFTagger(C=100.0).fit(X, y)
    assert len(crf.classes_) == 2 and set(crf.classes_.tolist()) == {a, b}
    assert crf.predict(X) == y
    for got, want in zip(sum(crf.predict(X), []), sum(y, [])):
        assert got == want and hash(got) == hash(want)
        assert type(got) is type(want) or isinstance(want, str)  # np.str_ gives str
    assert crf.score(X, y) == 1.0
    assert token_accuracy_scorer(crf, X, y) == 1.0
    assert pickle.loads(pickle.dumps(crf)).predict(X) == y
    m = crf.predict_marginals(X)
    assert all(mi.shape == (2, 2) for mi in m)
    assert np.isfinite(crf.sequence_log_proba(X, y)).all()


def test_string_labels_keep_a_string_array_and_segment_scores():
    crf = _fit()
    assert crf.classes_.dtype.kind == "U"
    assert segment_f1_scorer(crf, X_TOY, Y_TOY) > 0.5


def test_mixed_label_order_is_deterministic():
    X = [[{"w": "a"}, {"w": "b"}, {"w": "c"}]] * 3
    first = CRFTagger().fit(X, [["x", 2, 1]] * 3).classes_.tolist()
    again = CRFTagger().fit(X, [[1, "x", 2]] * 3).classes_.tolist()
    assert first == again == [1, 2, "x"]  # by type name, then sorted within a type


# ----------------------------------------------------------- CoNLL reading

CONLL_TEXTS = {
    "byte-order mark": "\ufeffHe PRP B-NP\nran VBD B-VP\n",
    "CR line ends": "He PRP B-NP\rran VBD B-VP\r\r",
    "CRLF line ends": "He PRP B-NP\r\nran VBD B-VP\r\n\r\n",
    "indented -DOCSTART-": "  -DOCSTART- -X- O\n\nHe PRP B-NP\nran VBD B-VP\n",
    "tabs and trailing spaces": "He\tPRP\tB-NP  \nran\tVBD   B-VP\t\n",
    "no final newline": "He PRP B-NP\nran VBD B-VP",
}


@pytest.mark.parametrize("text", CONLL_TEXTS.values(), ids=list(CONLL_TEXTS))
@pytest.mark.parametrize("as_bytes", [False, True], ids=["text", "bytes"])
def test_read_conll_odd_files(text, as_bytes, tmp_path):
    expected = ([[("He", "PRP"), ("ran", "VBD")]], [["B-NP", "B-VP"]])
    f = io.BytesIO(text.encode("utf-8")) if as_bytes else io.StringIO(text)
    assert read_conll(f) == expected
    path = tmp_path / "f.txt"
    path.write_bytes(text.encode("utf-8"))
    assert read_conll(path) == expected


# --------------------------------------------------------------- resources

def test_nbest_work_is_capped_at_the_number_of_labellings():
    crf = _fit()
    x = X_TOY[0][:3]
    n_labels = len(crf.classes_)
    (listed,) = crf.predict_nbest([x], n_best=10**6)
    assert len(listed) == n_labels ** 3
    assert len({tuple(labels) for labels, _ in listed}) == n_labels ** 3
    np.testing.assert_allclose(np.logaddexp.reduce([lp for _, lp in listed]), 0.0, atol=1e-9)
    paths, scores = inference.viterbi_nbest(*_ok_potentials(3, 2), [0, 3], 10**9)
    assert paths.shape == (8, 3) and scores.shape == (1, 8)


def test_hashed_model_stores_only_the_used_columns():
    crf = _fit(feature_hashing=2**31 - 1)
    n_used = len({(k, v) for s in X_TOY for t in s for k, v in t.items()})
    assert crf.coef_.shape[1] == crf.n_features_in_ == len(crf.attributes_) <= n_used
    assert all(a.startswith("hash_") for a in crf.attributes_)
    assert crf.predict(X_TOY) == pickle.loads(pickle.dumps(crf)).predict(X_TOY)
    assert crf.score(X_TOY, Y_TOY) > 0.7


def test_hashing_accepts_list_values_as_the_vocabulary_does():
    X = [[{"suf": ["a", "xa"], "n": 2.0}, {"suf": ["b"], "n": -1.0}]] * 3
    y = [["x", "y"]] * 3
    hashed = CRFTagger(C=100.0, feature_hashing=2**12).fit(X, y)
    plain = CRFTagger(C=100.0).fit(X, y)
    assert hashed.n_features_in_ == plain.n_features_in_ == 4
    assert hashed.predict(X) == plain.predict(X) == y


# --------------------------------------------------------- zero weight

@pytest.mark.parametrize("loss", ["perceptron", "mira"])
def test_online_rules_ignore_sequences_of_weight_zero(loss):
    X = [X_TOY[0]] + X_TOY
    y = [["I-VP"] * len(Y_TOY[0])] + Y_TOY  # contradicts the rest, but weighs nothing
    weighted = _quiet(lambda: CRFTagger(loss=loss, random_state=0, max_iter=5).fit(
        X, y, sample_weight=np.r_[0.0, np.ones(len(X_TOY))]))
    alone = _fit(loss=loss, random_state=0)
    assert weighted.loss_curve_ == alone.loss_curve_
    np.testing.assert_array_equal(weighted.coef_, alone.coef_)


# ------------------------------------------------------------- threads

def test_predict_during_refit_sees_one_model_or_the_other():
    # Two label sets of different sizes: a predict that mixed the old coef_
    # with the new transition_ fails on shapes or returns foreign labels.
    y2 = [["a" if label == "O" else "b" for label in s] for s in Y_TOY]
    crf = _quiet(lambda: CRFTagger(max_iter=3).fit(X_TOY, y2))
    allowed = {"a", "b"} | {label for s in Y_TOY for label in s}
    errors, done = [], threading.Event()

    def refit():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                for k in range(30):
                    crf.fit(X_TOY, Y_TOY if k % 2 else y2)
        finally:
            done.set()

    def predict():
        while not done.is_set():
            try:
                for labels in crf.predict(X_TOY):
                    assert set(labels) <= {"a", "b"} or set(labels) <= allowed - {"a", "b"}
                for m in crf.predict_marginals(X_TOY[:5]):
                    np.testing.assert_allclose(m.sum(axis=1), 1.0)
                crf.predict_nbest(X_TOY[:2], n_best=2)
                assert np.all(crf.sequence_log_proba(X_TOY[:5]) <= 1e-9)
            except Exception as exc:  # collected: the assertion below names it
                errors.append(exc)
                return

    threads = [threading.Thread(target=refit), threading.Thread(target=predict)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
