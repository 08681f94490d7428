"""Second-order against first-order CRFs on CoNLL-2000 chunking (full data, test segment F1).

``ChunkFeatures()`` features, ``CRFTagger(order=1)`` against
``CRFTagger(order=2)`` (the allowed label pairs: those seen in training)
and ``CRFTagger(order=2, constraints='iob2')`` (the pairs the IOB2 scheme
allows), defaults otherwise; ``--rows`` also offers both orders with
``loss='softmax_margin'``. Each row is tested against the ``--baseline``
one (default ``order=1``) with the paired bootstrap over sentences and McNemar's
tests (``_common.paired_tests_line``). The CPU seconds per L-BFGS
iteration are the median difference of ``time.process_time()`` between
consecutive calls of the fit's ``callback`` (line-search evaluations
included), at ``n_jobs=1``. Run from a checkout::

    SKLEARN_CRFLOSS_DATA=../shared/data nice -n 10 python benchmarks/second_order.py
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _common import paired_tests_line, parse_significance_run  # noqa: E402

from sklearn_crfloss import CRFTagger, metrics  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000  # noqa: E402
from sklearn_crfloss.features import ChunkFeatures  # noqa: E402

ROWS = {"order=1": dict(order=1), "order=2": dict(order=2),
        "order=2, constraints='iob2'": dict(order=2, constraints="iob2"),
        "order=1, loss='softmax_margin'": dict(order=1, loss="softmax_margin"),
        "order=2, loss='softmax_margin'": dict(order=2, loss="softmax_margin")}
DEFAULT_ROWS = ["order=1", "order=2", "order=2, constraints='iob2'"]


def _fit(name, params, F_tr, y_tr, F_te, y_te, max_iter):
    ticks = []
    t0, c0 = time.perf_counter(), time.process_time()
    crf = CRFTagger(n_jobs=1, max_iter=max_iter,
                    callback=lambda it, obj: ticks.append(time.process_time()), **params)
    crf.fit(F_tr, y_tr)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    pred = crf.predict(F_te)
    per_iter = float(np.median(np.diff(ticks))) if len(ticks) > 1 else float("nan")
    pairs = "" if crf.allowed_pairs_ is None else f", {int(crf.allowed_pairs_.sum())} pairs"
    print(f"  {name}: F1 {100 * metrics.segment_f1_score(y_te, pred):.2f}, "
          f"{crf.n_iter_} iterations ({crf.stop_reason_}), {crf.n_parameters_} parameters"
          f"{pairs}, fit {wall:.0f} s wall / {cpu:.0f} s CPU, {per_iter:.3f} CPU s per "
          f"iteration, load {open('/proc/loadavg').read().split()[0]}", flush=True)
    return pred, per_iter


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", nargs="+", default=DEFAULT_ROWS, choices=list(ROWS))
    p.add_argument("--baseline", default="order=1", choices=list(ROWS),
                   help="the row the others are tested against")
    p.add_argument("--max-iter", type=int, default=None,
                   help="L-BFGS iterations (default: the estimator's); timing runs")
    args = parse_significance_run(p, argv)
    X_tr, y_tr = load_conll2000("train")
    X_te, y_te = load_conll2000("test")
    if args.train_sentences:
        X_tr, y_tr = X_tr[:args.train_sentences], y_tr[:args.train_sentences]
    features = ChunkFeatures().fit([])
    F_tr, F_te = features.transform(X_tr), features.transform(X_te)
    results = {name: _fit(name, ROWS[name], F_tr, y_tr, F_te, y_te, args.max_iter)
               for name in args.rows}
    if args.baseline in results:
        base, base_time = results[args.baseline]
        for name, (pred, per_iter) in results.items():
            if name != args.baseline:
                print(f"{name} vs {args.baseline}: "
                      + paired_tests_line(y_te, pred, base, args.n_resamples, args.random_state)
                      + f"; {per_iter / base_time:.2f}x the CPU seconds per iteration",
                      flush=True)


if __name__ == "__main__":
    main()
