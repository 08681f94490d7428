"""The spaCy components crfloss_ner and crfloss_tagger (sklearn_crfloss.spacy)."""

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
