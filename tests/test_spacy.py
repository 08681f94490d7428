"""The spaCy components crfloss_ner and crfloss_tagger (sklearn_crfloss.spacy)."""

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

import sklearn_crfloss.spacy as crf_spacy
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.metrics import segment_f1_score, token_accuracy
from sklearn_crfloss.features import NERFeatures
from sklearn_crfloss.spacy import FeatureSetFunction, WordFeatures, doc_labels

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def conll_docs(corpus):
    """CoNLL-2002 Spanish as spaCy Docs: 300 training and 200 test sentences."""
    nlp = spacy.blank("es")

    def docs(subset, n):
        sents, labels = corpus("conll2002", "esp", subset)
        return [Doc(nlp.vocab, words=[w for w, _ in s], ents=y, tags=[p for _, p in s])
                for s, y in zip(sents[:n], labels[:n])]

    return nlp, docs("train", 300), docs("testb", 200)


def _plain(nlp, doc):
    """The words of a document, without annotations."""
    return Doc(nlp.vocab, words=[t.text for t in doc], spaces=[t.whitespace_ for t in doc])


def test_ner_matches_crftagger_and_survives_to_disk(conll_docs, tmp_path):
    vocab_nlp, train, test = conll_docs
    nlp = spacy.blank("es", vocab=vocab_nlp.vocab)
    ner = nlp.add_pipe("crfloss_ner", config={"max_iter": 60})
    nlp.initialize(lambda: [Example(_plain(nlp, d), d) for d in train])
    assert set(ner.labels) >= {"B-PER", "I-ORG", "O"}
    pred = list(nlp.pipe(_plain(nlp, d) for d in test))
    y_test = [doc_labels(d, "ner") for d in test]
    ours = segment_f1_score(y_test, [doc_labels(d, "ner") for d in pred])
    # CRFTagger on the same features of the same words (the default, NERFeatures; no
    # tagger in the pipeline: the gold tags of the reference docs are not features)
    features = FeatureSetFunction(NERFeatures())
    direct = CRFTagger(max_iter=60, constraints="iob2").fit(
        [features([t.text for t in d]) for d in train],
        [doc_labels(d, "ner") for d in train])
    theirs = segment_f1_score(y_test, direct.predict(
        [features([t.text for t in d]) for d in test]))
    assert ours > 0.5
    assert abs(ours - theirs) <= 0.005
    assert pred[0].ents and all(e.label_ in {"PER", "LOC", "ORG", "MISC"} for e in pred[0].ents)
    nlp.to_disk(tmp_path / "pipeline")
    assert (tmp_path / "pipeline" / "crfloss_ner" / "model.crfl").is_file()
    loaded = spacy.load(tmp_path / "pipeline")
    again = list(loaded.pipe(_plain(loaded, d) for d in test))
    assert [doc_labels(d, "ner") for d in again] == [doc_labels(d, "ner") for d in pred]
    assert nlp.update([Example(_plain(nlp, train[0]), train[0])]) == {"crfloss_ner": 0.0}


def test_tagger_sets_tags(conll_docs):
    vocab_nlp, train, test = conll_docs
    nlp = spacy.blank("es", vocab=vocab_nlp.vocab)
    nlp.add_pipe("crfloss_tagger", config={"max_iter": 30, "features": {
        "@misc": "crfloss.word_features.v1", "window": 2}})
    nlp.initialize(lambda: [Example(_plain(nlp, d), d) for d in train[:150]])
    pred = [nlp(_plain(nlp, d)) for d in test[:50]]
    accuracy = token_accuracy([doc_labels(d, "tagger") for d in test[:50]],
                              [doc_labels(d, "tagger") for d in pred])
    assert accuracy > 0.8


def test_errors_and_feature_function():
    nlp = spacy.blank("en")
    ner = nlp.add_pipe("crfloss_ner")
    with pytest.raises(ValueError, match="crfloss_ner is not trained"):
        ner(nlp.make_doc("Hello Paris"))
    with pytest.raises(ValueError, match="at least one non-empty example"):
        nlp.initialize(lambda: [Example(nlp.make_doc(""), nlp.make_doc(""))])
    with pytest.raises(ValueError, match="kind must be"):
        crf_spacy.CRFComponent(nlp, "x", kind="parser", features=WordFeatures())
    with pytest.raises(ValueError, match="window"):
        WordFeatures(-1)
    f = WordFeatures(window=1)(["Vive", "en", "Madrid", "1.5"], ["VMI", "SP", "NP", "Z"])
    assert f[2]["shape"] == "Xx" and f[3]["shape"] == "d.d" and f[2]["tag"] == "NP"
    assert f[0]["BOS"] and f[3]["EOS"] and f[1]["-1:word.lower()"] == "vive"
    assert "+1:word.lower()" not in f[3]


def test_tags_of_earlier_components_are_features():
    nlp = spacy.blank("en")
    words = [["Ann", "lives", "in", "Rome"], ["Bob", "likes", "Paris"]] * 10
    refs = [Doc(nlp.vocab, words=w, tags=["NP" if x[0].isupper() else "V" for x in w],
                ents=["B-PER"] + ["O"] * (len(w) - 2) + ["B-LOC"]) for w in words]
    examples = [Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in refs]
    nlp.add_pipe("crfloss_tagger", config={"max_iter": 20})
    ner = nlp.add_pipe("crfloss_ner", config={"max_iter": 20})
    nlp.initialize(lambda: examples)
    assert "pos[0]:NP" in set(ner.model.attributes_)  # the tagger ran before the NER's features
    doc = nlp("Ann likes Rome")
    assert [t.tag_ for t in doc] == ["NP", "V", "NP"]
    assert [(e.text, e.label_) for e in doc.ents] == [("Ann", "PER"), ("Rome", "LOC")]


def test_ill_formed_tags_become_entities():
    nlp = spacy.blank("en")
    doc = crf_spacy.set_labels(nlp.make_doc("in New York now"), ["O", "I-LOC", "I-LOC", "O"],
                               "ner")
    assert [(e.text, e.label_) for e in doc.ents] == [("New York", "LOC")]


_LOAD_WITHOUT_IMPORT = """
import json, sys
import spacy
from spacy.tokens import Doc
assert "sklearn_crfloss" not in sys.modules
nlp = spacy.load(sys.argv[1])
doc = nlp(Doc(nlp.vocab, words=json.loads(sys.argv[2])))
print(json.dumps([type(nlp.get_pipe("crfloss_ner")).__module__,
                  [t.ent_iob_ + ("-" + t.ent_type_ if t.ent_type_ else "") for t in doc]]))
"""


def _entry_points_site(path):
    """A folder with a distribution's metadata that declares pyproject.toml's entry points.

    What the installed wheel declares (its ``entry_points.txt`` is made from the
    same tables), for a test run on the source tree.
    """
    try:
        import tomllib
    except ImportError:  # Python 3.10: pytest's own dependency
        import tomli as tomllib
    project = Path(__file__).resolve().parents[1] / "pyproject.toml"
    groups = tomllib.loads(project.read_text())["project"]["entry-points"]
    info = path / "sklearn_crfloss_entry_points-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sklearn-crfloss-entry-points\n"
                                   "Version: 0\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in items.items())
        for group, items in groups.items()))
    return groups


def test_spacy_load_finds_the_components_without_an_import(conll_docs, tmp_path):
    vocab_nlp, train, test = conll_docs
    nlp = spacy.blank("es", vocab=vocab_nlp.vocab)
    nlp.add_pipe("crfloss_ner", config={"max_iter": 20})
    nlp.initialize(lambda: [Example(_plain(nlp, d), d) for d in train[:100]])
    nlp.to_disk(tmp_path / "pipeline")
    words = [t.text for t in test[0]]
    expected = doc_labels(nlp(Doc(nlp.vocab, words=words)), "ner")
    groups = _entry_points_site(tmp_path / "site")
    assert set(groups["spacy_factories"]) == {"crfloss_ner", "crfloss_tagger"}
    assert set(groups["spacy_misc"]) == {"crfloss.word_features.v1", "crfloss.ner_features.v1",
                                         "crfloss.pos_features.v1"}
    for group, items in groups.items():  # each names a function registered on import
        for name, target in items.items():
            module, function = target.split(":")
            assert module == crf_spacy.__name__ and callable(getattr(crf_spacy, function))
    try:  # an installed distribution (the wheel in CI) declares them too
        installed = metadata.distribution("sklearn-crfloss").entry_points
    except metadata.PackageNotFoundError:
        installed = None
    if installed is not None:
        assert {ep.name for ep in installed if ep.group == "spacy_factories"} == {
            "crfloss_ner", "crfloss_tagger"}
    package_root = str(Path(crf_spacy.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path / "site"), package_root, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _LOAD_WITHOUT_IMPORT, str(tmp_path / "pipeline"),
                          json.dumps(words)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    module, labels = json.loads(out.stdout.splitlines()[-1])
    assert module == crf_spacy.__name__ and labels == expected
