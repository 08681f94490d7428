"""The spaCy component ``crfloss_ner`` against CRFTagger on the same features and words.

CoNLL-2002 Spanish converted to spaCy Docs (words and IOB2 entities) on
``spacy.blank("es")``; ``nlp.initialize`` fits the component, ``nlp.pipe``
tags esp.testb; CRFTagger is fitted on the component's default features
(:class:`sklearn_crfloss.features.NERFeatures` through
:class:`sklearn_crfloss.spacy.FeatureSetFunction`, on the words only: blank
Docs have no tags) of the same words with the same
settings (``max_iter=100``, ``constraints='iob2'``). Prints both segment F1
(conlleval), the times, and whether ``nlp.to_disk``/``spacy.load`` keeps the
output::

    python benchmarks/bench_spacy_ner.py [N_TRAIN N_TEST]
"""

import sys
import tempfile
import time
import warnings

import spacy
from spacy.tokens import Doc
from spacy.training import Example

import sklearn_crfloss.spacy  # noqa: F401  (registers the factories)
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2002
from sklearn_crfloss.metrics import segment_f1_score
from sklearn_crfloss.features import NERFeatures
from sklearn_crfloss.spacy import doc_labels, FeatureSetFunction


def main():
    warnings.simplefilter("ignore")
    n_train, n_test = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (None, None)
    nlp = spacy.blank("es")

    def docs(subset, n):
        sents, labels = load_conll2002("esp", subset)
        return [Doc(nlp.vocab, words=[w for w, _ in s], ents=y)
                for s, y in zip(sents[:n], labels[:n])]

    def plain(doc):
        return Doc(nlp.vocab, words=[t.text for t in doc])

    train, test = docs("train", n_train), docs("testb", n_test)
    nlp.add_pipe("crfloss_ner", config={"max_iter": 100})
    t0 = time.perf_counter()
    nlp.initialize(lambda: [Example(plain(d), d) for d in train])
    t1 = time.perf_counter()
    pred = list(nlp.pipe(plain(d) for d in test))
    t2 = time.perf_counter()
    y_test = [doc_labels(d, "ner") for d in test]
    ours = segment_f1_score(y_test, [doc_labels(d, "ner") for d in pred])
    features = FeatureSetFunction(NERFeatures())
    t3 = time.perf_counter()
    crf = CRFTagger(max_iter=100, constraints="iob2").fit(
        [features([t.text for t in d]) for d in train], [doc_labels(d, "ner") for d in train])
    t4 = time.perf_counter()
    direct = segment_f1_score(y_test, crf.predict([features([t.text for t in d]) for d in test]))
    with tempfile.TemporaryDirectory() as folder:
        nlp.to_disk(folder)
        loaded = spacy.load(folder)
        again = [doc_labels(d, "ner") for d in loaded.pipe(plain(d) for d in test)]
    print(f"{len(train)} training, {len(test)} test sentences")
    print(f"crfloss_ner: initialize {t1 - t0:.2f} s, pipe {t2 - t1:.2f} s, segment F1 {ours:.4f}")
    print(f"CRFTagger:   fit {t4 - t3:.2f} s, segment F1 {direct:.4f}")
    print(f"same output after to_disk/spacy.load: {again == [doc_labels(d, 'ner') for d in pred]}")


if __name__ == "__main__":
    main()
