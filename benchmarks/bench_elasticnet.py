"""Elastic net on CoNLL-2002 Spanish with the sklearn-crfsuite tutorial's features.

Trains ``CRFTagger(prior=ElasticNetPrior(l1_ratio=c1 / (c1 + 2 c2)),
C=1 / (c1 + 2 c2))`` (OWL-QN, the default solver for the elastic net) and
``sklearn_crfsuite.CRF(algorithm='lbfgs', c1=c1, c2=c2,
all_possible_transitions=True)`` (CRFsuite's OWL-QN) on the tutorial's
``word2features`` dicts of ``esp.train``, one after the other in one
process, both to convergence (relative improvement below ``--tol`` over 10
iterations, CRFsuite's ``delta``/``period``; at most ``--max-iter``
iterations), with ``n_jobs=--n-jobs`` for ours (CRFsuite has one thread).
The same feature dicts feed both; each fit's wall time includes its own
feature conversion.

Reported: fit wall and CPU seconds, iterations, ``esp.testb`` segment F1
(conlleval), flat weighted F1 over the labels other than ``O`` (the
tutorial's score), non-zero state weights, and the ratios to CRFsuite. The
machine's load average is printed at the start and the end. Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/bench_elasticnet.py \\
        [--c1 0.1] [--c2 0.1] [--n-jobs 1] [--train-sentences N]

Timed runs are never tests; see benchmarks/README.md for the measured table.
"""

import argparse
import gc
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import Timer, format_table, print_run_header  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.datasets import load_conll2002  # noqa: E402
from sklearn_crfloss.metrics import flat_f1_score, segment_f1_score  # noqa: E402
from sklearn_crfloss.priors import ElasticNetPrior  # noqa: E402


def word2features(sent, i):
    """The feature dict of token ``i``: sklearn-crfsuite's tutorial (the same dicts)."""
    word = sent[i][0]
    postag = sent[i][1]
    features = {
        "bias": 1.0,
        "word.lower()": word.lower(),
        "word[-3:]": word[-3:],
        "word[-2:]": word[-2:],
        "word.isupper()": word.isupper(),
        "word.istitle()": word.istitle(),
        "word.isdigit()": word.isdigit(),
        "postag": postag,
        "postag[:2]": postag[:2],
    }
    for offset, prefix, boundary in ((-1, "-1", "BOS"), (1, "+1", "EOS")):
        if 0 <= i + offset < len(sent):
            word1, postag1 = sent[i + offset][0], sent[i + offset][1]
            features.update({
                f"{prefix}:word.lower()": word1.lower(),
                f"{prefix}:word.istitle()": word1.istitle(),
                f"{prefix}:word.isupper()": word1.isupper(),
                f"{prefix}:postag": postag1,
                f"{prefix}:postag[:2]": postag1[:2],
            })
        else:
            features[boundary] = True
    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]


def scores(y_test, y_pred, classes):
    labels = [c for c in classes if c != "O"]
    return dict(f1=100 * segment_f1_score(y_test, y_pred),
                flat_f1=100 * flat_f1_score(y_test, y_pred, average="weighted",
                                            labels=labels))


def run_ours(args, F_train, y_train, F_test, y_test):
    scale = args.c1 + 2 * args.c2
    crf = CRFTagger(prior=ElasticNetPrior(l1_ratio=args.c1 / scale), C=1 / scale,
                    max_iter=args.max_iter, tol=args.tol, n_jobs=args.n_jobs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Timer() as t:
            crf.fit(F_train, y_train)
    res = dict(fit_s=t.wall, fit_cpu_s=t.cpu, n_iter=crf.n_iter_,
               nonzero_state=int(np.count_nonzero(crf.coef_)),
               **scores(y_test, crf.predict(F_test), crf.classes_.tolist()),
               converged=crf.converged_, warnings=[str(w.message) for w in caught])
    del crf
    gc.collect()
    return res


def run_crfsuite(args, F_train, y_train, F_test, y_test):
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=args.c1, c2=args.c2,
                               max_iterations=args.max_iter, period=10, delta=args.tol,
                               all_possible_transitions=True)
    with Timer() as t:
        crf.fit(F_train, y_train)
    y_pred = [list(p) for p in crf.predict(F_test)]
    res = dict(fit_s=t.wall, fit_cpu_s=t.cpu, n_iter=len(crf.training_log_.iterations),
               nonzero_state=len(crf.state_features_),
               **scores(y_test, y_pred, list(crf.classes_)))
    del crf
    gc.collect()
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--c1", type=float, default=0.1, help="CRFsuite's L1 coefficient")
    p.add_argument("--c2", type=float, default=0.1, help="CRFsuite's L2 coefficient")
    p.add_argument("--n-jobs", type=int, default=1, help="our kernel threads")
    p.add_argument("--max-iter", type=int, default=1000)
    p.add_argument("--tol", type=float, default=1e-5,
                   help="relative improvement over 10 iterations (CRFsuite's delta)")
    p.add_argument("--train-sentences", type=int, default=None)
    args = p.parse_args(argv)

    print_run_header(['numpy', 'PyLBFGS', 'python-crfsuite', 'sklearn-crfsuite'])
    train_sents, y_train = load_conll2002("esp", "train")
    test_sents, y_test = load_conll2002("esp", "testb")
    if args.train_sentences:
        train_sents, y_train = train_sents[:args.train_sentences], y_train[:args.train_sentences]
    F_train = [sent2features(s) for s in train_sents]
    F_test = [sent2features(s) for s in test_sents]

    results = {"ours": run_ours(args, F_train, y_train, F_test, y_test)}
    print(f"ours: {results['ours']}", flush=True)
    results["crfsuite"] = run_crfsuite(args, F_train, y_train, F_test, y_test)
    print(f"crfsuite: {results['crfsuite']}", flush=True)
    print(f"load at the end: {tuple(round(v, 2) for v in os.getloadavg())}")

    ours, ref = results["ours"], results["crfsuite"]
    rows = [[label, format(ours[key], spec), format(ref[key], spec)]
            for label, key, spec in [("fit s", "fit_s", ".1f"), ("fit CPU s", "fit_cpu_s", ".1f"),
                                     ("iterations", "n_iter", "d"),
                                     ("testb segment F1", "f1", ".2f"),
                                     ("testb flat weighted F1", "flat_f1", ".2f"),
                                     ("non-zero state weights", "nonzero_state", ",d")]]
    rows.append(["fit s / CRFsuite", f"{ours['fit_s'] / ref['fit_s']:.2f}", "1.00"])
    rows.append(["segment F1 - CRFsuite", f"{ours['f1'] - ref['f1']:+.2f}", "0"])
    print(format_table(["", "ours (elastic net, OWL-QN)", "CRFsuite (c1, c2)"], rows))
    return results


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - t0:.0f} s")
