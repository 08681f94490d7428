"""
CoNLL-2000 chunking with a CRF trained by conditional log-likelihood
====================================================================

The main job of sklearn-crfloss: the CoNLL-2000 shared task (WSJ sections
15-18 for training, section 20 for testing) with the CRF++ feature template
(words at -2..2, word bigrams, POS unigrams to trigrams) and an L2 prior with
C = 1, the setting CRF++ and CRFsuite report about 93.7 segment F1 with.

Run from a checkout, with the data folder in SKLEARN_CRFLOSS_DATA::

    SKLEARN_CRFLOSS_DATA=../shared/data python examples/conll2000_chunking.py

Options: ``--n-jobs`` (threads for the kernels, default 2), ``--C``,
``--train-sentences`` (a prefix of the training set, for a quick run).
"""

# %%
import argparse
import time

from joblib import effective_n_jobs
from sklearn.pipeline import Pipeline

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
from sklearn_crfloss.metrics import (
    segment_f1_score,
    segment_report,
    sequence_accuracy,
    token_accuracy,
)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--train-sentences", type=int, default=None)
    args = parser.parse_args(argv)

    # %%
    # Load the corpus: lists of (word, POS) tuples and lists of IOB2 labels.
    X_train, y_train = load_conll2000("train")
    X_test, y_test = load_conll2000("test")
    if args.train_sentences:
        X_train, y_train = X_train[: args.train_sentences], y_train[: args.train_sentences]
    print(f"train: {len(X_train)} sentences, {sum(map(len, X_train))} tokens; "
          f"test: {len(X_test)} sentences, {sum(map(len, X_test))} tokens")

    # %%
    # Features from the CRF++ template, then the CRF, in one Pipeline.
    model = Pipeline([
        ("features", TemplateFeatures(CONLL2000_TEMPLATE)),
        ("crf", CRFTagger(loss="cll", prior="l2", C=args.C, n_jobs=args.n_jobs)),
    ])
    t0 = time.perf_counter()
    model.fit(X_train, y_train)
    fit_seconds = time.perf_counter() - t0
    crf = model.named_steps["crf"]

    # %%
    # Evaluate with conlleval semantics.
    t0 = time.perf_counter()
    y_pred = model.predict(X_test)
    predict_seconds = time.perf_counter() - t0
    print(segment_report(y_test, y_pred, digits=2))
    print(f"test segment F1:   {100 * segment_f1_score(y_test, y_pred):.2f}")
    print(f"token accuracy:    {100 * token_accuracy(y_test, y_pred):.2f}")
    print(f"sentence accuracy: {100 * sequence_accuracy(y_test, y_pred):.2f}")
    n_threads = effective_n_jobs(args.n_jobs)
    print(f"fit time:          {fit_seconds:.1f} s (features, vectorisation and "
          f"{crf.n_iter_} L-BFGS iterations, {n_threads} thread{'s' * (n_threads != 1)})")
    print(f"seconds/iteration: {fit_seconds / crf.n_iter_:.3f} (fit time / iterations)")
    print(f"converged:         {crf.converged_}")
    print(f"parameters:        {crf.n_parameters_} ({crf.n_features_in_} attributes, "
          f"{len(crf.classes_)} labels)")
    print(f"predict time:      {predict_seconds:.2f} s")


if __name__ == "__main__":
    main()
