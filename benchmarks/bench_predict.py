"""Prediction speed from feature dicts: sklearn-crfloss against sklearn-crfsuite on CoNLL-2000.

Fits both tools once on the CoNLL-2000 training set (CRF++ chunking
template, the same feature dicts, L2 with ``C=1`` / ``c2=0.5``, as
``bench_conll2000.py`` does), then predicts the test set (2,012 sentences,
47,377 tokens) from its feature dicts with each, alternating the two tools
``--rounds`` times in one process, and prints wall and CPU seconds, tokens
per second and the ratio of each round, with the 1-minute load average
before it, and the median ratio.

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/bench_predict.py \\
        [--rounds 7] [--max-iter 1000] [--n-jobs 1] [--cache PATH] [--profile] \\
        [--fit-transform K]

``--cache PATH`` keeps the two fitted models in a pickle (a second run only
predicts). ``--profile`` prints a cProfile of one ``predict`` call of ours.
``--fit-transform K`` also times, K times each alternated, the fit's
vectorisation of the training dicts (``SequenceVectorizer.fit_transform``:
the vocabulary and the rows, one compiled pass) and its pass from the dicts to the CSR
matrix once the vocabulary is known, through the vocabulary dict (a column
name built per value) and through the compiled table (its build included);
both give the same arrays.
The machine may be shared: the CPU-time ratio is the one to compare when
the load is above the core count; ``--n-jobs 1`` (the default) makes ours
single-threaded like CRFsuite.
"""

import argparse
import cProfile
import os
import pickle
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import print_run_header  # noqa: E402

import sklearn_crfsuite  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss._data import SequenceVectorizer, check_sequences  # noqa: E402
from sklearn_crfloss._data._vocabulary import VocabularyTable, vocabulary_rows  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7, help="alternated predict rounds")
    p.add_argument("--max-iter", type=int, default=1000, help="L-BFGS iterations of both fits")
    p.add_argument("--n-jobs", type=int, default=1, help="n_jobs of CRFTagger at predict time")
    p.add_argument("--cache", default=None, help="pickle of the two fitted models")
    p.add_argument("--profile", action="store_true", help="cProfile one predict of ours")
    p.add_argument("--fit-transform", type=int, default=0, metavar="K",
                   help="time the fit's dict-to-CSR pass both ways, K rounds")
    return p.parse_args(argv)


def fit_models(max_iter, F_train, y_train):
    ours = CRFTagger(loss="cll", prior="l2", C=1.0, max_iter=max_iter, tol=1e-5)
    ours.fit(F_train, y_train)
    theirs = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=0.5, max_iterations=max_iter,
                                  epsilon=1e-5, period=10, delta=1e-5, min_freq=0,
                                  all_possible_states=False, all_possible_transitions=True)
    theirs.fit(F_train, y_train)
    return ours, theirs


def fit_transform_rounds(F_train, rounds):
    """CPU seconds of the fit's dict-to-CSR pass through the vocabulary dict and the table."""
    kind, tokens, offsets = check_sequences(F_train)
    vec = SequenceVectorizer()
    vec.fit_transform(kind, tokens, offsets)
    dv = vec.vectorizer
    times = {"vocabulary dict": [], "table (with its build)": [],
             "SequenceVectorizer.fit_transform (vocabulary and rows)": []}
    for _ in range(rounds):
        c = time.process_time()
        SequenceVectorizer().fit_transform(kind, tokens, offsets)
        times["SequenceVectorizer.fit_transform (vocabulary and rows)"].append(
            time.process_time() - c)
        c = time.process_time()
        flat = vocabulary_rows(tokens, dv.vocabulary_, dv.separator)
        times["vocabulary dict"].append(time.process_time() - c)
        c = time.process_time()
        rows = vocabulary_rows(tokens, dv.vocabulary_, dv.separator,
                               VocabularyTable(dv.feature_names_, dv.separator))
        times["table (with its build)"].append(time.process_time() - c)
        assert all(np.array_equal(a, b) for a, b in zip(flat[:2], rows[:2]))
    print(f"fit's dict-to-CSR pass over {len(tokens):,} training tokens, CPU s "
          f"(median of {rounds}, load {os.getloadavg()[0]:.2f}): "
          + ", ".join(f"{name} {np.median(t):.3f}" for name, t in times.items()))


def timed(predict, X):
    w, c = time.perf_counter(), time.process_time()
    y = predict(X)
    return y, time.perf_counter() - w, time.process_time() - c


def main(argv=None):
    args = parse_args(argv)
    print_run_header(["sklearn_crfloss", "sklearn_crfsuite", "pycrfsuite", "scikit-learn"])
    X_train, y_train = load_conll2000("train", download_if_missing=False)
    X_test, _ = load_conll2000("test", download_if_missing=False)
    featurizer = TemplateFeatures(CONLL2000_TEMPLATE).fit(X_train)
    F_test = featurizer.transform(X_test)
    n_tokens = sum(map(len, F_test))
    F_train = featurizer.transform(X_train)
    if args.fit_transform:
        fit_transform_rounds(F_train, args.fit_transform)
    if args.cache and os.path.exists(args.cache):
        with open(args.cache, "rb") as f:
            ours, theirs = pickle.load(f)
    else:
        ours, theirs = fit_models(args.max_iter, F_train, y_train)
        if args.cache:
            with open(args.cache, "wb") as f:
                pickle.dump((ours, theirs), f)
    del F_train  # not traversed by the garbage collector during the timing
    ours.set_params(n_jobs=args.n_jobs)
    p_ours, p_theirs = ours.predict(F_test), theirs.predict(F_test)  # warm-up (lookup table)
    agree = np.mean(np.concatenate(p_ours) == np.concatenate(p_theirs))
    print(f"data    : test {len(F_test):,} sentences / {n_tokens:,} tokens; "
          f"token agreement of the two models {100 * agree:.2f} %")
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(ours.predict, F_test)
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)
    rows = []
    print(f"{'round':>5}  {'load1':>5}  {'ours s':>7}  {'ours CPU':>8}  {'crfsuite s':>10}  "
          f"{'crfsuite CPU':>12}  {'ours tok/s':>10}  {'crfsuite tok/s':>14}  "
          f"{'ratio':>5}  {'CPU ratio':>9}")
    for r in range(args.rounds):
        load = os.getloadavg()[0]
        order = [("ours", ours), ("theirs", theirs)]
        if r % 2:
            order.reverse()
        t = {}
        for name, model in order:
            _, wall, cpu = timed(model.predict, F_test)
            t[name] = (wall, cpu)
        ratio = t["theirs"][0] / t["ours"][0]
        cpu_ratio = t["theirs"][1] / t["ours"][1]
        rows.append((ratio, cpu_ratio))
        print(f"{r + 1:>5}  {load:>5.2f}  {t['ours'][0]:>7.3f}  {t['ours'][1]:>8.3f}  "
              f"{t['theirs'][0]:>10.3f}  {t['theirs'][1]:>12.3f}  "
              f"{n_tokens / t['ours'][0]:>10,.0f}  {n_tokens / t['theirs'][0]:>14,.0f}  "
              f"{ratio:>5.2f}  {cpu_ratio:>9.2f}", flush=True)
    ratios = np.array(rows)
    print(f"median ratio of tokens/s (ours / CRFsuite): wall {np.median(ratios[:, 0]):.2f}x, "
          f"CPU {np.median(ratios[:, 1]):.2f}x; load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
