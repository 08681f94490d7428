"""What a migrating user meets first: predict's output, feature names and set_output,
verbose output, stage-named warnings, the checkout-root import, and the user-guide
pages that run as doctests."""

import doctest
import json
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import Pipeline

import sklearn_crfloss
import sklearn_crfloss.datasets
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.features import TemplateFeatures
from sklearn_crfloss.metrics import segment_f1_scorer, token_accuracy

from conftest import make_toy_chunks

DOC = Path(__file__).resolve().parents[1] / "doc" / "user_guide"


@pytest.fixture(scope="module")
def toy():
    X, y = make_toy_chunks(60, seed=1)
    return X, y, CRFTagger(C=5.0).fit(X, y)


# ---------------------------------------------------------------- predict

def test_predict_returns_lists_of_python_labels(toy):
    X, y, crf = toy
    pred = crf.predict(X)
    assert type(pred) is list and all(type(p) is list for p in pred)
    assert all(type(label) is str for p in pred for label in p)
    assert json.loads(json.dumps(pred)) == pred
    assert (pred == y) == all(p == g for p, g in zip(pred, y))  # a bool, not an array
    assert pred[:5] == crf.decode(X[:5])[0]
    assert token_accuracy(y, pred) == crf.score(X, y) > 0.8
    # equal-length batches stay lists of lists (sklearn-crfsuite 0.5 gives a 2-D array)
    same = [x for x in X if len(x) == 3][:4]
    assert len(same) == 4 and all(type(p) is list for p in crf.predict(same))


def test_predict_keeps_non_string_labels_as_python_objects():
    X, y = make_toy_chunks(30, seed=2)
    codes = {label: k for k, label in enumerate(sorted({lab for s in y for lab in s}))}
    y_int = [[codes[lab] for lab in s] for s in y]
    pred = CRFTagger(C=5.0).fit(X, y_int).predict(X[:3])
    assert all(type(label) is int for p in pred for label in p)


def test_scorers_and_cross_validation_accept_the_lists(toy):
    X, y, _ = toy
    scores = cross_val_score(CRFTagger(C=5.0), X, y, cv=3, scoring=segment_f1_scorer)
    assert scores.shape == (3,) and np.all((scores > 0.5) & (scores <= 1.0))


# ------------------------------------------------- feature names, set_output

def _template_pipeline():
    X = [[("He", "PRP"), ("reckons", "VBZ")], [("The", "DT"), ("dog", "NN"), ("ran", "VBD")]]
    y = [["B-NP", "B-VP"], ["B-NP", "I-NP", "B-VP"]]
    feats = TemplateFeatures(["U00:%x[0,0]", "U01:%x[-1,1]/%x[0,1]", "B"])
    return X, y, Pipeline([("features", feats), ("crf", CRFTagger(C=10.0))])


def test_template_features_names_out():
    X, y, pipe = _template_pipeline()
    pipe.fit(X, y)
    names = pipe[:-1].get_feature_names_out()
    assert names.dtype == object and names.tolist() == ["U00", "U01"]
    assert set(pipe[0].transform(X)[0][0]) == set(names)
    assert pipe["features"].get_feature_names_out(["word", "pos"]).tolist() == ["U00", "U01"]
    with pytest.raises(sklearn.exceptions.NotFittedError):
        TemplateFeatures().get_feature_names_out()


def test_template_features_set_output():
    X, y, pipe = _template_pipeline()
    assert pipe["features"].set_output(transform="default") is pipe["features"]
    assert pipe.set_output(transform="default") is pipe
    with pytest.raises(ValueError, match="TemplateFeatures cannot output 'pandas'"):
        pipe.set_output(transform="pandas")
    # The global setting applies to tables only: the pipeline (whose CRFTagger
    # vectorises with a DictVectorizer) still fits and predicts.
    with sklearn.config_context(transform_output="pandas"):
        pred = pipe.fit(X, y).predict(X)
        assert type(pipe["features"].transform(X)) is list
    assert pred == y


# ------------------------------------------------------- verbose, warnings

def _lines(capsys):
    return capsys.readouterr().out.splitlines()


def test_verbose_one_prints_header_iterations_and_summary(capsys):
    X, y = make_toy_chunks(40, seed=3)
    crf = CRFTagger(verbose=1, C=2.0).fit(X, y)
    lines = _lines(capsys)
    n_tokens = sum(len(x) for x in X)
    assert lines[0].startswith("CRFTagger: loss='cll', prior='l2', C=2, solver='lbfgs'")
    assert lines[1] == (f"data: 40 sequences, {n_tokens} tokens, {crf.n_features_in_} "
                        f"attributes, {len(crf.classes_)} labels, {crf.n_parameters_} parameters")
    last = re.fullmatch(r"fit done: (\d+) iterations, objective (\S+), converged: .*, "
                        r"[\d.]+ s", lines[-1])
    assert last and int(last[1]) == crf.n_iter_
    assert float(last[2]) == pytest.approx(crf.objective_, rel=1e-6)
    assert not any(line.startswith(("vectorised", "[loss='cll'] lbfgs:")) for line in lines)
    CRFTagger(verbose=0).fit(X, y)
    assert _lines(capsys) == []


def test_verbose_two_adds_vectorisation_and_stage_summaries(capsys):
    X, y = make_toy_chunks(40, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf = CRFTagger(verbose=2, loss="mce", init="cll", max_iter=4, solver="lbfgs").fit(X, y)
    lines = _lines(capsys)
    assert lines[0].startswith(f"vectorised 40 sequences ({sum(map(len, X))} tokens, dict "
                               f"input) into {crf.n_features_in_} attributes in ")
    init = [line for line in lines if line.startswith("[init='cll'] lbfgs:")]
    main = [line for line in lines if line.startswith("[loss='mce'] lbfgs:")]
    assert len(init) == len(main) == 1
    assert init[0].startswith(f"[init='cll'] lbfgs: {crf.init_n_iter_} iterations")
    assert "not converged: The algorithm routine reaches the maximum number" in init[0]
    assert lines[-1].startswith(f"fit done: {crf.n_iter_} iterations (+ {crf.init_n_iter_} "
                                "of init='cll')")


def test_max_iter_applies_to_each_stage_and_warnings_name_it():
    X, y = make_toy_chunks(40, seed=3)
    with pytest.warns(ConvergenceWarning) as record:
        crf = CRFTagger(loss="mce", init="cll", max_iter=3, solver="lbfgs").fit(X, y)
    assert crf.init_n_iter_ == 3 and crf.n_iter_ == 3 and len(crf.loss_curve_) == 3
    messages = [str(w.message) for w in record if w.category is ConvergenceWarning]
    assert len(messages) == 2
    assert messages[0].startswith("L-BFGS (stage init='cll') did not converge in 3 iterations: ")
    assert messages[1].startswith("L-BFGS (stage loss='mce') did not converge in 3 iterations: ")
    assert all("maximum number of iterations" in m for m in messages)  # the reason


# ------------------------------------------------------------------ import

def test_import_from_a_source_tree_explains_the_missing_kernels(tmp_path):
    # A copy of the sources without the compiled modules, first on sys.path
    # (as the checkout root is for "python" run there); -S keeps site-packages
    # and any editable install out.
    shutil.copytree(Path(sklearn_crfloss.__file__).parent, tmp_path / "sklearn_crfloss",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    done = subprocess.run([sys.executable, "-S", "-c", "import sklearn_crfloss"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode != 0
    assert "ImportError: sklearn_crfloss was imported from" in done.stderr
    assert "no compiled kernels" in done.stderr
    assert "pip install --no-build-isolation -e ." in done.stderr


# ------------------------------------------------------ user-guide pages

@pytest.mark.parametrize("page", ["inspection.rst", "migration.rst", "persistence.rst",
                                  "crfsuite_tutorial.rst", "spacy.rst"])
def test_user_guide_page_examples_run(page, corpus, monkeypatch):
    # The migration page loads CoNLL-2002: serve it from the session's cache.
    monkeypatch.setattr(sklearn_crfloss.datasets, "load_conll2002",
                        lambda *split, **kw: corpus("conll2002", *split))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the page says it warns
        result = doctest.testfile(str(DOC / page), module_relative=False,
                                  optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 10
