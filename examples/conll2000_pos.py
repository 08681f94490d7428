"""
Part-of-speech tagging of CoNLL-2000 with word-only features
============================================================

The other everyday CRF task: the 44 Penn Treebank POS tags of the CoNLL-2000
sentences (WSJ sections 15-18 for training, 20 for testing), loaded with
``load_conll2000(task="pos")``, from features of the words alone: the words
at -2..2 (lower-cased), the current word's prefixes and suffixes of 1 to 4
characters and its shape (capitalisation, digits, hyphens). CLL with an L2
prior, C = 1 (CRFsuite's ``c2=0.5``); token accuracy is the measure.

Run from a checkout, with the data folder in SKLEARN_CRFLOSS_DATA::

    SKLEARN_CRFLOSS_DATA=../shared/data python examples/conll2000_pos.py

Options: ``--n-jobs`` (threads for the kernels, default 2), ``--C``,
``--max-iter``, ``--train-sentences`` (a prefix of the training set, for a
quick run).
"""

# %%
import argparse
import re
import time

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.metrics import sequence_accuracy, token_accuracy

_SHAPES = [(re.compile(p), c) for p, c in (("[A-Z]", "X"), ("[a-z]", "x"), ("[0-9]", "d"))]


def shape(word):
    """The word's shape with runs collapsed: ``'Mid-1990s'`` -> ``'Xx-dx'``."""
    for pattern, char in _SHAPES:
        word = pattern.sub(char, word)
    return re.sub(r"(.)\1+", r"\1", word)


def pos_features(sentence, t):
    """Word-only features of token ``t`` of a sentence of ``(word,)`` tuples."""
    word = sentence[t][0]
    f = {"bias": "1", "w": word.lower(), "shape": shape(word),
         "title": str(word.istitle()), "upper": str(word.isupper()),
         "digit": str(any(c.isdigit() for c in word)), "hyphen": str("-" in word)}
    for k in range(1, 5):
        if len(word) >= k:
            f[f"p{k}"] = word[:k]
            f[f"s{k}"] = word[-k:]
    for d in (-2, -1, 1, 2):
        u = t + d
        f[f"w{d:+d}"] = sentence[u][0].lower() if 0 <= u < len(sentence) else "<pad>"
    return f


def featurize(X):
    """Feature dicts of every token of every sentence."""
    return [[pos_features(s, t) for t in range(len(s))] for s in X]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--max-iter", type=int, default=None)
    parser.add_argument("--train-sentences", type=int, default=None)
    args = parser.parse_args(argv)

    # %%
    # Load the corpus: lists of (word,) tuples and lists of POS tags.
    X_train, y_train = load_conll2000("train", task="pos")
    X_test, y_test = load_conll2000("test", task="pos")
    if args.train_sentences:
        X_train, y_train = X_train[: args.train_sentences], y_train[: args.train_sentences]
    print(f"train: {len(X_train)} sentences, {sum(map(len, X_train))} tokens, "
          f"{len({t for s in y_train for t in s})} tags")

    # %%
    # Features, then the CRF.
    F_train, F_test = featurize(X_train), featurize(X_test)
    crf = CRFTagger(loss="cll", prior="l2", C=args.C, max_iter=args.max_iter,
                    n_jobs=args.n_jobs)
    t0 = time.perf_counter()
    crf.fit(F_train, y_train)
    fit_seconds = time.perf_counter() - t0

    # %%
    # Token accuracy: the POS tagger's measure.
    y_pred = crf.predict(F_test)
    print(f"token accuracy:    {100 * token_accuracy(y_test, y_pred):.2f}")
    print(f"sentence accuracy: {100 * sequence_accuracy(y_test, y_pred):.2f}")
    print(f"fit time:          {fit_seconds:.1f} s ({crf.n_iter_} L-BFGS iterations, "
          f"{args.n_jobs} threads)")
    print(f"parameters:        {crf.n_parameters_} ({crf.n_features_in_} attributes, "
          f"{len(crf.classes_)} labels)")


if __name__ == "__main__":
    main()
