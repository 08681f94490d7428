"""Significance tests for the CoNLL-2002 tables (Tsuboi & Kashima; Gimpel & Smith).

Refits only the configurations chosen on esp.testa in the earlier runs
(examples/README.md), on the full esp.train, predicts esp.testa and
esp.testb, and tests every row against its table's baseline on esp.testb
with :func:`sklearn_crfloss.metrics.paired_bootstrap_test` (segment F1,
paired over sentences) and :func:`sklearn_crfloss.metrics.mcnemar_test`
(sentence and token correctness).

Tables (``--tables``):

``tk``
    Tsuboi & Kashima, Table 1 layout, features of
    ``benchmarks/conll2002_marginal_losses.py`` (``s3_features``), C = 3
    (chosen on testa among {1, 3}): ``seq`` (CLL, the baseline), ``k3``
    (``MixedLoss(markov_order=3)``) and ``point`` (``'pointwise'``), the
    last two warm-started from the ``seq`` fit (= ``init='cll'``).
``gs``
    Gimpel & Smith, Table 1 layout, features of
    ``examples/conll2002_cost_losses.py`` (``featurize``): CLL with C = 50
    (chosen on testa, the baseline), CLL with C = 5 (the same C as the
    chosen softmax-margin) and softmax-margin C = 5, m = 1 (chosen on testa).

Every fit: L-BFGS, tol 1e-5, max_iter 1000, ``n_jobs=1``. The predictions are
pickled (``--predictions``) so that the tests can be rerun without refitting
(``--tests-only``). Run from a checkout, with ``nice`` on a shared machine::

    SKLEARN_CRFLOSS_DATA=../shared/data nice -n 10 python benchmarks/conll2002_significance.py \\
        --tables tk gs --predictions /tmp/conll2002_predictions.pkl
"""

import argparse
import copy
import os
import pickle
import sys
import time
import warnings

from sklearn.exceptions import ConvergenceWarning

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "examples"))

from _common import add_bootstrap_arguments  # noqa: E402
from conll2002_cost_losses import featurize  # noqa: E402
from conll2002_marginal_losses import s3_features  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.datasets import load_conll2002  # noqa: E402
from sklearn_crfloss.losses import MixedLoss, SoftmaxMargin  # noqa: E402
from sklearn_crfloss import metrics  # noqa: E402

COMMON = dict(n_jobs=1, max_iter=1000, tol=1e-5)

# table -> (features, baseline row, [(row, parameters, warm start from row or None)])
TABLES = {
    "tk": (lambda X: [s3_features(s) for s in X], "seq", [
        ("seq", dict(loss="cll", C=3.0), None),
        ("k3", dict(loss=MixedLoss(markov_order=3), C=3.0), "seq"),
        ("point", dict(loss="pointwise", C=3.0), "seq"),
    ]),
    "gs": (featurize, "CLL C=50", [
        ("CLL C=50", dict(loss="cll", C=50.0), None),
        ("CLL C=5", dict(loss="cll", C=5.0), None),
        ("softmax-margin C=5 m=1", dict(loss=SoftmaxMargin(cost_scale=1.0), C=5.0), None),
    ]),
}

# further pairs tested, (row, against): softmax-margin against CLL at the same C
EXTRA = {"gs": [("softmax-margin C=5 m=1", "CLL C=5")]}


def as_lists(pred):
    """Predictions as lists of lists of str, whatever ``predict`` returns."""
    return [[str(t) for t in p] for p in pred]


def fit_table(name, data):
    """Fit the rows of one table; returns {row: dict(pred_a, pred_b, fit_s, n_iter)}."""
    make_features, _, rows = TABLES[name]
    (X_tr, y_tr), (X_a, _), (X_b, _) = data
    F_tr, F_a, F_b = make_features(X_tr), make_features(X_a), make_features(X_b)
    fitted, out = {}, {}
    for row, params, start in rows:
        t0 = time.perf_counter()
        if start is None:
            crf = CRFTagger(**COMMON, **params)
        else:
            crf = copy.deepcopy(fitted[start]).set_params(**params, warm_start=True)
        crf.fit(F_tr, y_tr)
        secs = time.perf_counter() - t0
        fitted[row] = crf
        iters = (f"{fitted[start].n_iter_} + {crf.n_iter_}" if start else str(crf.n_iter_))
        out[row] = dict(pred_a=as_lists(crf.predict(F_a)), pred_b=as_lists(crf.predict(F_b)),
                        fit_s=secs + (out[start]["fit_s"] if start else 0.0), n_iter=iters,
                        converged=bool(crf.converged_))
        print(f"  {name}: {row} fitted in {secs:.0f} s ({iters} iterations)", flush=True)
    return out


def report(name, results, y_a, y_b, n_resamples, seed):
    """Markdown table: scores and the tests of every row against the baseline."""
    baseline = TABLES[name][1]
    print(f"\n{name}: tests on esp.testb against {baseline} "
          f"(paired bootstrap: {n_resamples} resamples, random_state={seed})\n")
    print("| row | against | testa F1 | testb F1 | diff. | 95% CI | bootstrap p | "
          "McNemar p (sent.) | McNemar p (tokens) | fit s | iterations |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    pairs = [(row, baseline) for row in results] + EXTRA.get(name, [])
    for row, against in pairs:
        r, base_b = results[row], results[against]["pred_b"]
        boot = metrics.paired_bootstrap_test(y_b, r["pred_b"], base_b, n_resamples=n_resamples,
                                             random_state=seed)
        sent = metrics.mcnemar_test(y_b, r["pred_b"], base_b, unit="sentence")
        tok = metrics.mcnemar_test(y_b, r["pred_b"], base_b, unit="token")
        lo, hi = boot.confidence_interval
        print(f"| {row} | {against} | {100 * metrics.segment_f1_score(y_a, r['pred_a']):.2f} "
              f"| {100 * boot.score_a:.2f} | {100 * boot.difference:+.2f} "
              f"| [{100 * lo:+.2f}, {100 * hi:+.2f}] | {boot.pvalue:.3g} | {sent.pvalue:.3g} "
              f"| {tok.pvalue:.3g} | {r['fit_s']:.0f} | {r['n_iter']} |", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES))
    p.add_argument("--predictions", default="conll2002_predictions.pkl",
                   help="pickle of the predictions (written after each table, read by "
                        "--tests-only)")
    p.add_argument("--tests-only", action="store_true", help="do not refit; read --predictions")
    add_bootstrap_arguments(p)
    args = p.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)
    print("command:", " ".join(["python"] + sys.argv), flush=True)

    data = tuple(load_conll2002("esp", part) for part in ("train", "testa", "testb"))
    if args.train_sentences:
        data = ((data[0][0][:args.train_sentences], data[0][1][:args.train_sentences]),) + data[1:]
    saved = {}
    if os.path.exists(args.predictions):
        with open(args.predictions, "rb") as fh:
            saved = pickle.load(fh)
    for name in args.tables:
        if not args.tests_only:
            t0 = time.perf_counter()
            saved[name] = fit_table(name, data)
            print(f"  {name}: {time.perf_counter() - t0:.0f} s in all", flush=True)
            with open(args.predictions, "wb") as fh:
                pickle.dump(saved, fh)
    for name in args.tables:
        report(name, saved[name], data[1][1], data[2][1], args.n_resamples, args.random_state)


if __name__ == "__main__":
    main()
