"""sklearn-crfsuite's tutorial, run by sklearn-crfsuite and by ``sklearn_crfloss.crfsuite``.

Both estimators get the same call, ``CRF(algorithm='lbfgs', c1=0.1, c2=0.1,
max_iterations=100, all_possible_transitions=True)``, on the same feature
dicts (the tutorial's ``word2features``) of CoNLL-2002 Spanish (esp.train
-> esp.testb), in one process, one after the other; prints the fit time,
the tutorial's flat F1 (weighted over the labels other than ``O``) and
conlleval segment F1 of each, and their ratio::

    python benchmarks/bench_crfsuite_tutorial.py [--n-train N] [--n-test N] [--repeat K]

With ``--repeat K`` each fit runs K times and the fastest time is reported.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

import sklearn_crfsuite  # noqa: E402

from sklearn_crfloss import crfsuite, metrics  # noqa: E402
from sklearn_crfloss.datasets import load_conll2002  # noqa: E402


def word2features(sent, i):
    """The tutorial's features (sklearn-crfsuite's docs, CoNLL2002 notebook)."""
    word, postag = sent[i][0], sent[i][1]
    features = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:],
                "word[-2:]": word[-2:], "word.isupper()": word.isupper(),
                "word.istitle()": word.istitle(), "word.isdigit()": word.isdigit(),
                "postag": postag, "postag[:2]": postag[:2]}
    if i > 0:
        word1, postag1 = sent[i - 1][0], sent[i - 1][1]
        features.update({"-1:word.lower()": word1.lower(), "-1:word.istitle()": word1.istitle(),
                         "-1:word.isupper()": word1.isupper(), "-1:postag": postag1,
                         "-1:postag[:2]": postag1[:2]})
    else:
        features["BOS"] = True
    if i < len(sent) - 1:
        word1, postag1 = sent[i + 1][0], sent[i + 1][1]
        features.update({"+1:word.lower()": word1.lower(), "+1:word.istitle()": word1.istitle(),
                         "+1:word.isupper()": word1.isupper(), "+1:postag": postag1,
                         "+1:postag[:2]": postag1[:2]})
    else:
        features["EOS"] = True
    return features


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-train", type=int, default=None, help="first N training sentences")
    p.add_argument("--n-test", type=int, default=None, help="first N test sentences")
    p.add_argument("--repeat", type=int, default=1)
    args = p.parse_args()
    _common.print_run_header(["sklearn_crfloss", "sklearn_crfsuite", "pycrfsuite"])
    train, y_train = load_conll2002("esp", "train")
    test, y_test = load_conll2002("esp", "testb")
    train, y_train = train[:args.n_train], y_train[:args.n_train]
    test, y_test = test[:args.n_test], y_test[:args.n_test]
    X_train = [[word2features(s, i) for i in range(len(s))] for s in train]
    X_test = [[word2features(s, i) for i in range(len(s))] for s in test]
    print(f"{len(X_train)} training, {len(X_test)} test sentences")
    rows = {}
    for name, module in [("sklearn-crfsuite", sklearn_crfsuite), ("sklearn_crfloss.crfsuite",
                                                                     crfsuite)]:
        best = float("inf")
        for _ in range(args.repeat):
            crf = module.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100,
                             all_possible_transitions=True)
            t0 = time.perf_counter()
            crf.fit(X_train, y_train)
            best = min(best, time.perf_counter() - t0)
        labels = [label for label in crf.classes_ if label != "O"]
        y_pred = [list(p) for p in crf.predict(X_test)]
        flat = metrics.flat_f1_score(y_test, y_pred, average="weighted", labels=labels)
        seg = metrics.segment_f1_score(y_test, y_pred)
        rows[name] = best
        print(f"{name:26s} fit {best:7.2f} s  flat F1 {flat:.4f}  segment F1 {seg:.4f}  "
              f"iterations {len(crf.training_log_.iterations)}  "
              f"attributes {crf.num_attributes_}", flush=True)
    print(f"time ratio (ours / sklearn-crfsuite): "
          f"{rows['sklearn_crfloss.crfsuite'] / rows['sklearn-crfsuite']:.2f}")


if __name__ == "__main__":
    main()
