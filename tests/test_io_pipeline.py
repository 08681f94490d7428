"""Model files of whole pipelines: TemplateFeatures followed by a CRFTagger or LOPTagger."""

import io
import json
import warnings
import zipfile

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline, Pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
from sklearn_crfloss.io import load_model, save_model
from sklearn_crfloss.lop import LOPTagger

TOKENS = [[("the", "DT"), ("dog", "NN"), ("barks", "VBZ")], [("a", "DT"), ("cat", "NN")],
          [("the", "DT"), ("cat", "NN"), ("runs", "VBZ")]]
LABELS = [["B-NP", "I-NP", "B-VP"], ["B-NP", "I-NP"], ["B-NP", "I-NP", "B-VP"]]


def test_quickstart_pipeline_round_trip(tmp_path):
    """The quick start's Pipeline (CoNLL-2000, a prefix of the training set) predicts the same."""
    X_train, y_train = load_conll2000("train")
    X_test, _ = load_conll2000("test")
    model = Pipeline([
        ("features", TemplateFeatures()),
        ("crf", CRFTagger(loss="cll", prior="l2", C=1.0, max_iter=50)),
    ])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter=50 keeps the test short
        model.fit(X_train[:500], y_train[:500])
    save_model(model, tmp_path / "chunker.crfl")
    loaded = load_model(tmp_path / "chunker.crfl")
    assert isinstance(loaded, Pipeline)
    assert [name for name, _ in loaded.steps] == ["features", "crf"]
    assert loaded.named_steps["features"].template == CONLL2000_TEMPLATE
    assert loaded.predict(X_test) == model.predict(X_test)
    np.testing.assert_array_equal(loaded[-1].coef_, model[-1].coef_)
    # Stored as data: a JSON document and .npy arrays, no pickle.
    with zipfile.ZipFile(tmp_path / "chunker.crfl") as z:
        assert all(n == "model.json" or n.endswith(".npy") for n in z.namelist())
        document = json.loads(z.read("model.json"))
    assert document["estimator"]["class"] == "Pipeline"
    assert document["estimator"]["steps"][0][1]["class"] == "TemplateFeatures"


def test_make_pipeline_lop_passthrough_and_template_file(tmp_path):
    template = tmp_path / "template"
    template.write_text("U00:%x[0,0]\nU01:%x[-1,1]/%x[0,1]\nB\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lop = LOPTagger(experts="label", weights="fit",
                        estimator=CRFTagger(max_iter=10, boundary_potentials=False))
        model = make_pipeline(TemplateFeatures(template), "passthrough", lop).fit(TOKENS, LABELS)
    save_model(model, tmp_path / "m")
    template.unlink()  # the file holds the template's text, not its path
    loaded = load_model(tmp_path / "m")
    assert [n for n, _ in loaded.steps] == [n for n, _ in model.steps]
    assert loaded.steps[1][1] == "passthrough"
    assert loaded[0].template == "U00:%x[0,0]\nU01:%x[-1,1]/%x[0,1]\nB\n"
    assert loaded.predict(TOKENS) == model.predict(TOKENS)
    np.testing.assert_array_equal(loaded[-1].weights_, model[-1].weights_)


def test_pipeline_refusals_name_the_step(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_pipeline(TemplateFeatures(["U00:%x[0,0]"]), CRFTagger(max_iter=5))
        model.fit(TOKENS, LABELS)
    other = Pipeline([("features", model[0]), ("identity", FunctionTransformer()),
                      ("crf", model[-1])])
    with pytest.raises(ValueError, match="step 'identity' is sklearn.preprocessing"):
        save_model(other, tmp_path / "m")
    assert not (tmp_path / "m").exists()
    with pytest.raises(Exception, match="step 'crf'.*not fitted"):
        save_model(Pipeline([("features", model[0]), ("crf", CRFTagger())]), tmp_path / "m")


def test_forged_pipeline_records_are_refused(tmp_path):
    """A step record of an unknown class or with a broken template gives a ValueError."""
    from sklearn_crfloss._io._native_format import _checksum

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make_pipeline(TemplateFeatures(["U00:%x[0,0]"]), CRFTagger(max_iter=5))
        model.fit(TOKENS, LABELS)
    save_model(model, tmp_path / "m")
    with zipfile.ZipFile(tmp_path / "m") as z:
        members = {n: z.read(n) for n in z.namelist()}
    stored = {n[:-4]: np.load(io.BytesIO(data), allow_pickle=False)
              for n, data in members.items() if n.endswith(".npy")}
    for change, match in [(lambda s: s[0][1].update({"class": "FunctionTransformer"}), "unknown"),
                          (lambda s: s[0][1]["params"].update({"template": "X01"}), "template"),
                          (lambda s: s.append(s[0]), "pipeline steps")]:
        document = json.loads(members["model.json"])
        change(document["estimator"]["steps"])
        document["checksum"] = _checksum(document, stored)
        with zipfile.ZipFile(tmp_path / "forged", "w") as z:
            for name, data in members.items():
                z.writestr(name, json.dumps(document) if name == "model.json" else data)
        with pytest.raises(ValueError, match=match):
            load_model(tmp_path / "forged")
