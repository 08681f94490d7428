"""The table of doc/user_guide/bad_input.rst, run: each row's example and its outcome.

:data:`ROWS` maps the first cell of each row of the page's table to an
example and the outcome the page states: an exception type (or a warning)
and a regular expression of its message, or ``None`` when the page says the
input is accepted (the example then checks the result itself). Examples on
an estimator go through :func:`_keeps`, which checks that the estimator's
fitted state is what it was before the call. A test checks that the rows of
the page and the keys of :data:`ROWS` are the same, and that each row's
second cell names the exception type the example raises.
"""

import io
import json
import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from conftest import make_toy_chunks
from test_bad_input import PAIR_X, X_TOY, Y_TOY, _quiet
from test_io_limits import _hostile_files, _members, _write
from test_load_validation import _forged
from test_non_finite import _assert_unchanged, _fitted_state, _huge_feature
from sklearn_crfloss import CRFTagger, LOPTagger
from sklearn_crfloss.features import TemplateFeatures
from sklearn_crfloss.io import export_crfsuite, import_crfsuite, load_model, save_model
from sklearn_crfloss.losses import SoftmaxMargin

PAGE = Path(__file__).resolve().parents[1] / "doc" / "user_guide" / "bad_input.rst"
LABELS = sorted({label for s in Y_TOY for label in s})


def _silent(action):
    """``action`` with every warning ignored (the RuntimeWarnings of an overflow, ...)."""
    def run(tmp):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return action(tmp)
    return run


def _fitted(**params):
    return _quiet(lambda: CRFTagger(max_iter=5, **params).fit(X_TOY, Y_TOY))


def _keeps(est, call):
    """``call(est)``; whatever it raises, the fitted state of ``est`` must not change."""
    before = _fitted_state(est)
    try:
        return call(est)
    finally:
        _assert_unchanged(est, before)


def _refit(*args, **kwargs):
    """A fitted CRFTagger's ``fit(*args, **kwargs)``, which must leave it as it was."""
    return lambda tmp: _keeps(_fitted(), lambda e: e.fit(*args, **kwargs))


def _first_fit(*args, params=None, **kwargs):
    """An unfitted CRFTagger's ``fit``, which must leave it unfitted."""
    return lambda tmp: _keeps(CRFTagger(**{"max_iter": 5, **(params or {})}),
                              lambda e: e.fit(*args, **kwargs))


def _token_fit(token):
    """A first fit on two sequences whose second one's second token is ``token``."""
    return _first_fit([[{"w": "q"}], [{"w": "q"}, token]], [["a"], ["a", "b"]])


def _with_token(token, seq=0):
    """X_TOY with ``token`` merged into token 0 of sequence ``seq``."""
    X = list(X_TOY)
    X[seq] = [dict(X[seq][0], **token)] + list(X[seq][1:])
    return X


def _hostile(name):
    return lambda tmp: load_model(_hostile_files(tmp)[1][name])


def _saved_bytes(tmp):
    path = tmp / "model.crfl"
    save_model(_fitted(), path)
    return path.read_bytes()


def _rewritten(tmp, convert):
    path = tmp / "bad.crfl"
    path.write_bytes(convert(_saved_bytes(tmp)))
    return load_model(path)


def _flipped(data):
    data = bytearray(data)
    k = len(data) // 2
    data[k:k + 16] = bytes(b ^ 0xFF for b in data[k:k + 16])
    return bytes(data)


def _object_member(tmp):
    save_model(_fitted(), tmp / "m.crfl")
    members = _members(tmp / "m.crfl")
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    _write(tmp / "bad.crfl", {**members, "start.npy": buffer.getvalue()})
    return load_model(tmp / "bad.crfl")


def _forged_file(tmp, estimator, change):
    save_model(_quiet(lambda: estimator.fit(X_TOY, Y_TOY)), tmp / "m.crfl")
    members = _members(tmp / "m.crfl")
    document = json.loads(members["model.json"])
    arrays = {n[:-4]: np.load(io.BytesIO(d), allow_pickle=False)
              for n, d in members.items() if n.endswith(".npy")}
    change(document, arrays)
    return load_model(_forged(tmp / "bad.crfl", document, arrays))


def _crfsuite_file(tmp, convert):
    path = tmp / "m.crfsuite"
    export_crfsuite(_fitted(boundary_potentials=False), path)
    path.write_bytes(convert(path.read_bytes()))
    return import_crfsuite(path)


def _above_start(tmp):
    first = _quiet(lambda: CRFTagger().fit(X_TOY, Y_TOY))
    # A step far too large for SGD from a converged CLL fit raises the objective.
    crf = first.set_params(solver="sgd", eta0=5.0, max_iter=1, average=False, warm_start=True)
    try:
        crf.fit(X_TOY, Y_TOY)
    finally:
        assert crf.stop_reason_ == "stalled" and not crf.converged_
        assert crf.objective_ == pytest.approx(first.objective_, rel=1e-9)


def _no_convergence(tmp):
    crf = CRFTagger(max_iter=1)
    try:
        crf.fit(X_TOY, Y_TOY)
    finally:
        assert crf.stop_reason_ == "max_iter" and not crf.converged_
        assert crf.predict(X_TOY[:1])


def _online():
    return CRFTagger().partial_fit(X_TOY, Y_TOY, classes=LABELS)


def _partial_fit_labels_as_given(tmp):
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}]] * 3
    for a, b in [(("a", 1), ("b", 2)), (1, "a")]:
        crf = CRFTagger(C=100.0).partial_fit(X, [[a, b], [b, a]] * 3, classes=[a, b])
        assert set(crf.classes_.tolist()) == {a, b}
        assert crf.predict(X[:1])[0] in ([a, b], [b, a], [a, a], [b, b])


def _dask_empty_partitions(tmp):
    import dask.bag as db
    from dask.distributed import Client, LocalCluster
    from sklearn_crfloss.dask import DaskCRFTagger

    pairs = db.from_sequence(list(enumerate(zip(X_TOY, Y_TOY))), npartitions=4).filter(
        lambda p: p[0] < 5 or p[0] >= 15)  # the 2nd and 3rd partitions left empty
    kept = [p for i, p in enumerate(zip(X_TOY, Y_TOY)) if i < 5 or i >= 15]
    local = CRFTagger(n_jobs=1, max_iter=10).fit([x for x, _ in kept], [t for _, t in kept])
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        sizes = [len(p) for p in client.compute(pairs.to_delayed(), sync=True)]
        remote = DaskCRFTagger(client=client, n_jobs=1, max_iter=10).fit(
            pairs.map(lambda p: p[1][0]), pairs.map(lambda p: p[1][1]))
    assert sizes == [5, 0, 0, 5]
    np.testing.assert_array_equal(remote.coef_, local.coef_)


def _nbest_capped(tmp):
    crf = _fitted()
    (listed,) = crf.predict_nbest([X_TOY[0][:3]], n_best=10**9)
    assert len(listed) == len(crf.classes_) ** 3


def _accepted(action):
    return lambda tmp: action(tmp) or True


# first cell of the row (as on the page): (example, outcome, message regex)
ROWS = {
    # sequences and labels
    "``X`` and ``y`` of different lengths": (
        _refit(X_TOY, Y_TOY[:-1]), ValueError,
        "X and y have different numbers of sequences: 20 and 19"),
    "a sequence with more tokens than labels": (
        _refit(X_TOY, [Y_TOY[0][:-1]] + Y_TOY[1:]), ValueError,
        "Sequence 0 has 7 tokens but 6 labels"),
    "``X`` that is not a list of sequences (a str, a dict, one 2-D array)": (
        _refit(np.ones((20, 3)), Y_TOY), TypeError,
        r"X must be a list of sequences \(one 2-D array per sequence\), got a single 2-D "
        r"array of shape \(20, 3\)"),
    "an empty sequence in ``fit``": (
        _refit([[]] + X_TOY[1:], [[]] + Y_TOY[1:]), ValueError,
        r"Sequence 0 is empty; remove empty sequences before fit \(predict accepts them"),
    "an empty sequence in ``predict``": (
        lambda tmp: _keeps(_fitted(), lambda e: e.predict([[], X_TOY[0]])[0] == []),
        None, None),
    "an unhashable label (a list, a dict)": (
        _first_fit(PAIR_X, [["x", "y"], [["y"]]]), TypeError,
        r"Sequence 1, token 0: label \['y'\] of type list is not hashable"),
    "a NaN label": (
        _first_fit(PAIR_X, [["x", float("nan")], ["y"]]), ValueError,
        "Sequence 0, token 1: the label is NaN"),
    "``y`` as one 2-D array": (
        _first_fit([np.ones((3, 2)), np.ones((3, 2))],
                   np.array([["A", "B", "A"], ["B", "A", "B"]])), TypeError,
        r"y must be a list of label sequences .* pass list\(y\)"),
    "a label sequence given as one str": (
        _refit(X_TOY[:1] * 3, ["a" * len(X_TOY[0])] * 3), TypeError,
        r"y\[0\] must be a sequence of labels \(a list or 1-D array\), got str"),
    "labels outside the tag scheme (``tag_scheme='iob2'`` and a label ``'PER'``)": (
        _first_fit(X_TOY, [["PER"] * len(Y_TOY[0])] + Y_TOY[1:],
                   params={"tag_scheme": "iob2"}), ValueError,
        "Sequence 0: label 'PER' is not in a chunk tagging scheme.*Use tag_scheme=None "
        "for other labels"),
    "only ``I-`` labels of a type, with ``constraints='iob2'``": (
        _first_fit(PAIR_X, [["I-NP", "I-VP"], ["I-NP"]], params={"constraints": "iob2"}),
        ValueError, r"the labels \['I-NP', 'I-VP'\] have no 'B-' label of their type"),
    "a label not seen in ``fit``, given to ``sequence_log_proba``": (
        lambda tmp: _keeps(_fitted(), lambda e: e.sequence_log_proba(
            X_TOY[:1], [["Z"] * len(X_TOY[0])])), ValueError,
        "Sequence 0: label 'Z' is not one of the classes"),
    # feature values
    "a NaN or infinite feature value in a dict": (
        _refit(_with_token({"v": float("inf")}), Y_TOY), ValueError,
        r"Sequence 0 has a NaN or infinite feature value \(token 0\)"),
    "a NaN in a sequence given as an array": (
        _first_fit([np.full((3, 2), np.nan)] * 3, [["a", "b", "a"]] * 3), ValueError,
        "Sequence 0: Input contains NaN"),
    "``None`` as a feature value in a dict": (
        _token_fit({"n": None}), TypeError,
        "Sequence 1, token 1: the value of feature 'n' is of type NoneType"),
    "a bytes feature value": (
        _token_fit({"b": b"xy"}), TypeError,
        "Sequence 1, token 1: the value of feature 'b' is of type bytes"),
    "an integer beyond float64 (``10**400``)": (
        _token_fit({"n": 10**400}), ValueError,
        "Sequence 1, token 1: the value of feature 'n' .*too large for a float64"),
    "a feature value of ``1e308``": (
        _silent(_first_fit(_huge_feature(X_TOY), Y_TOY)), ValueError,
        r"training diverged \(stage loss='cll'\).*Sequence 0 \(token 0\) holds the largest "
        r"feature value in magnitude.*feature values of a very large magnitude"),
    "a bytes token in ``TemplateFeatures``": (
        lambda tmp: TemplateFeatures(["U00:%x[0,0]"]).fit([]).transform([[b"the"]]),
        TypeError, r"Sentence 0, token 0: expected a token tuple such as \(word, POS\), got "
                   r"the bytes b'the': decode the text to str first"),
    "bytes in a column of a token tuple in ``TemplateFeatures``": (
        lambda tmp: TemplateFeatures(["U00:%x[0,1]"]).fit([]).transform(
            [[("a", "NN")], [("the", b"DT")]]), TypeError,
        "Sentence 1, token 0: column 1 holds the bytes b'DT': decode the text to str first"),
    "a dict token in ``TemplateFeatures``": (
        lambda tmp: TemplateFeatures(["U00:%x[0,0]"]).fit([]).transform([[("a",)],
                                                                          [{"w": "a"}]]),
        TypeError, r"Sentence 1, token 0: expected a token tuple such as \(word, POS\), got "
                   "a dict"),
    # weights
    "``sample_weight='abc'``": (
        _refit(X_TOY, Y_TOY, sample_weight="abc"), ValueError,
        r"sample_weight must be one non-negative number per sequence \(20 of them\) or a "
        r"single number, got 'abc' \(str\)"),
    "a negative ``sample_weight``": (
        _refit(X_TOY, Y_TOY, sample_weight=[-1.0] + [1.0] * 19), ValueError,
        "sample_weight must be finite and non-negative, got -1.0 for sequence 0"),
    "``sample_weight`` of the wrong length": (
        _refit(X_TOY, Y_TOY, sample_weight=[1.0] * 3), ValueError,
        r"sample_weight must have one weight per sequence, shape \(20,\), got \(3,\)"),
    "``sample_weight`` of ``1e308``": (
        _silent(_refit(X_TOY, Y_TOY, sample_weight=[1e308] * 20)),
        ValueError, r"training diverged \(stage loss='cll'\): the objective is nan at the "
                    r"starting parameters. Sequence 0 has the largest sample weight.*sample "
                    r"weights of a very large magnitude"),
    "a negative or NaN ``token_weight``": (
        _refit(X_TOY, Y_TOY, token_weight=[[-1.0] * len(s) for s in Y_TOY]), ValueError,
        "token_weight must be finite and non-negative, got -1.0 for sequence 0, token 0"),
    "``token_weight`` of the wrong length": (
        _refit(X_TOY, Y_TOY, token_weight=[[1.0] for _ in Y_TOY]), ValueError,
        r"token_weight\[0\] has 1 weights, sequence has 7 tokens"),
    # costs
    "``SoftmaxMargin(cost=...)`` with a NaN, infinite or negative cost": (
        lambda tmp: _keeps(_fitted(), lambda e: e.set_params(
            loss=SoftmaxMargin(cost={("B-NP", "O"): float("nan")})).fit(X_TOY, Y_TOY)),
        ValueError, r"cost of \('B-NP', 'O'\) must be finite and non-negative, got nan"),
    "a cost key that is not a pair of labels": (
        _first_fit(X_TOY, Y_TOY, params={"loss": SoftmaxMargin(cost={("B-NP",): 1.0})}),
        ValueError, r"a cost given as a dict maps \(gold, predicted\) label pairs to costs: "
                    r"the key \('B-NP',\) is not a pair of two labels"),
    # parameters
    "``n_jobs=10**6``": (
        _accepted(lambda tmp: _fitted(n_jobs=10**6).predict(X_TOY[:2])), None, None),
    "``max_iter=2**31``": (
        _first_fit(X_TOY, Y_TOY, params={"max_iter": 2**31}), ValueError,
        r"The 'max_iter' parameter of CRFTagger must be None or an int in the range "
        r"\[1, 2147483647\]"),
    "``solver='sgd', eta0=1e100`` in ``fit``": (
        _silent(_first_fit(X_TOY, Y_TOY,
                           params={"solver": "sgd", "eta0": 1e100, "random_state": 0})),
        ValueError, r"training diverged \(stage loss='cll'\).*lower eta0"),
    "``solver='sgd', eta0=1e100`` in ``partial_fit``": (
        lambda tmp: _keeps(CRFTagger(solver="sgd", eta0=1e100, random_state=0),
                           lambda e: e.partial_fit(X_TOY, Y_TOY, classes=LABELS)),
        ValueError, r"partial_fit: eta0=1e\+100 is too large.*Lower eta0"),
    "a template line holding a line break (an item of a list of lines)": (
        lambda tmp: TemplateFeatures(["U00:%x[0,0]\nU01:%x[1,0]"]).fit([]), ValueError,
        r"Template line 1 'U00:%x\[0,0\]\\nU01:%x\[1,0\]' holds a line break: give one "
        "template per item of the list"),
    "a template offset ``%x[1000000000,0]``": (
        lambda tmp: TemplateFeatures(["U00:%x[1000000000,0]"]).fit([]).transform(
            [[("a",), ("b",)]]) == [[{"U00": "_B+999999999"}, {"U00": "_B+1000000000"}]],
        None, None),
    # training
    "an objective that is not finite (here at the start of ``init='cll'``)": (
        _silent(_first_fit(_huge_feature(X_TOY), Y_TOY, params={"loss": "mce", "init": "cll"})),
        ValueError, r"training diverged \(stage init='cll'\).*Likely causes: a cost.*sample "
                    "weights.*feature values.*"),
    "a stage that ends above its starting objective": (
        _above_start, ConvergenceWarning,
        r"the objective at the solver's result, .* is above the .* it started from; the "
        "starting parameters are kept"),
    "no convergence within ``max_iter``": (
        _no_convergence, ConvergenceWarning,
        r"L-BFGS \(stage loss='cll'\) did not converge in 1 iterations.*Increase max_iter or "
        "tol"),
    # model files
    "a truncated model file": (
        lambda tmp: _rewritten(tmp, lambda b: b[:len(b) // 2]), ValueError,
        r"is not a valid sklearn-crfloss model file \(truncated or corrupt"),
    "a model file with flipped bytes": (
        lambda tmp: _rewritten(tmp, _flipped), ValueError,
        r"is not a valid sklearn-crfloss model file \(truncated or corrupt.*Bad CRC-32"
        "|checksum"),
    "a pickle given as a model file": (
        lambda tmp: _rewritten(tmp, lambda b: pickle.dumps(_fitted())), ValueError,
        "is not a valid sklearn-crfloss model file"),
    "an ``.npy`` member holding objects (a pickle inside)": (
        _object_member, ValueError,
        "member 'start.npy' has dtype object .*model files hold arrays of numbers"),
    "a forged input width (``n_input`` of ``10**10``, checksum recomputed)": (
        _hostile("n_input 10**10"), ValueError,
        r"Inconsistent model file: .*states 10000000000 x 8 dense weights .*more than 64 "
        "times the .* bytes of content the file holds"),
    "an ``.npy`` header stating shape ``(10**11,)``": (
        _hostile("npy shape (10**11,)"), ValueError,
        r"member 'transition.npy': its header states shape \(100000000000,\) of float64 .*"
        "the member holds 64 bytes of data"),
    "a zip member stating a gigabyte": (
        _hostile("directory states 10**9 bytes"), ValueError,
        r"member 'model.json' states 1000000000 bytes from .* compressed bytes, which no "
        "deflated member holds"),
    "an unknown compression method": (
        _hostile("compression method 99"), ValueError,
        "member 'start.npy' uses compression method 99; model files are stored or deflated"),
    "``model.json`` nested 200,000 deep": (
        _hostile("json 200,000 deep"), ValueError,
        "model.json nests 200001 levels of arrays and objects; the limit is 64"),
    "a forged parameter (``C=-1``)": (
        lambda tmp: _forged_file(tmp, CRFTagger(max_iter=5), lambda d, a: d["estimator"][
            "params"].update(C=-1)), ValueError,
        r"Inconsistent model file: estimator parameters: The 'C' parameter of CRFTagger "
        r"must be a float in the range \(0.0, inf\)"),
    "forged LOP weights (``[-1, 2]``)": (
        lambda tmp: _forged_file(tmp, LOPTagger(estimator=CRFTagger(max_iter=3)),
                                 lambda d, a: a.update(weights=np.array([-1.0, 2.0]))),
        ValueError, r"weights must be finite, >= 0 \(non-negative\) and not all 0"),
    # CRFsuite files
    "a truncated CRFsuite file, or one stating a size it does not have": (
        lambda tmp: _crfsuite_file(tmp, lambda b: b[:-10]), ValueError,
        "is truncated or padded: the header states 8872 bytes, the file has 8862"),
    "a file that is not a CRFsuite model": (
        lambda tmp: _crfsuite_file(tmp, lambda b: b"XCRF" + b[4:]), ValueError,
        r"is not a CRFsuite first-order CRF model file \(magic b'XCRF'"),
    "exporting a model CRFsuite cannot hold (start and end potentials, ``order=2``)": (
        lambda tmp: _keeps(_fitted(), lambda e: export_crfsuite(e, tmp / "m.crfsuite")),
        ValueError, "Cannot export this model to CRFsuite: it has non-zero start/end "
                    "potentials.*train it with boundary_potentials=False"),
    # partial_fit
    "no ``classes`` on the first ``partial_fit``": (
        lambda tmp: _keeps(CRFTagger(), lambda e: e.partial_fit(X_TOY, Y_TOY)), ValueError,
        "classes must be given on the first call to partial_fit"),
    "``classes`` holding an unhashable label": (
        lambda tmp: _keeps(CRFTagger(), lambda e: e.partial_fit(X_TOY, Y_TOY,
                                                                classes=["O", ["B-NP"]])),
        TypeError, r"classes\[1\] = \['B-NP'\] of type list is not hashable"),
    "a label outside ``classes`` in a later batch": (
        lambda tmp: _keeps(_online(), lambda e: e.partial_fit(X_TOY[:1],
                                                              [["ZZ"] * len(Y_TOY[0])])),
        ValueError, r"Sequence 0: label 'ZZ' is not one of the classes seen in fit \["),
    "``classes`` of tuples, or of ints and strs": (
        _accepted(_partial_fit_labels_as_given), None, None),
    # dask
    "a bag with empty partitions (after ``Bag.filter``)": (
        _accepted(_silent(_dask_empty_partitions)), None, None),
    # second-order chains
    "``order=2`` with an option it does not support (an online solver, ``partial_fit``, "
    "``warm_start``, ``LOPTagger``, ``DaskCRFTagger``)": (
        _first_fit(X_TOY, Y_TOY, params={"order": 2, "solver": "sgd"}), ValueError,
        r"order=2 does not support the online solver 'sgd' \(use a batch solver such as "
        r"'lbfgs'\)"),
    # n-best
    "``predict_nbest(X, n_best=10**9)``": (_accepted(_nbest_capped), None, None),
    "``n_best=0``": (
        lambda tmp: _keeps(_fitted(), lambda e: e.predict_nbest(X_TOY[:1], n_best=0)),
        ValueError, r"n_best must be an integer >= 1, got 0"),
}


def page_rows(text):
    """``[(first cell, second cell)]`` of the rows of the page's list-table, group rows left out."""
    rows, cells = [], None
    for line in text.split("\n"):
        if line.startswith("   * - "):
            cells = [line[7:].strip()]
            rows.append(cells)
        elif line.startswith("     - ") and cells is not None:
            cells.append(line[7:].strip())
        elif line.startswith("       ") and cells is not None and line.strip():
            cells[-1] += " " + line.strip()
    return [(c[0], c[1]) for c in rows[1:] if not c[0].startswith("**")]


def test_the_page_and_the_examples_have_the_same_rows():
    rows = page_rows(PAGE.read_text(encoding="utf-8"))
    keys = [key for key, _ in rows]
    assert len(keys) == len(set(keys))
    assert set(keys) - set(ROWS) == set(), "rows of the page without an example"
    assert set(ROWS) - set(keys) == set(), "examples without a row on the page"
    for key, outcome in rows:
        expected = ROWS[key][1]
        if expected is None:
            assert outcome.startswith("accepted"), key
        else:
            assert f"``{expected.__name__}``" in outcome, key


@pytest.mark.parametrize("key", list(ROWS))
def test_row(key, tmp_path):
    action, expected, match = ROWS[key]
    if expected is None:
        assert action(tmp_path)
    elif issubclass(expected, Warning):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.warns(expected, match=match):
                action(tmp_path)
    else:
        with pytest.raises(expected, match=match):
            action(tmp_path)


def test_the_page_is_in_the_toctree():
    index = (PAGE.parent / "index.rst").read_text(encoding="utf-8")
    assert re.search(r"^   bad_input$", index, flags=re.M)
