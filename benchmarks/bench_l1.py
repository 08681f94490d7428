"""L1-regularised CRF on CoNLL-2000: our OWL-QN and L-BFGS-B split against CRFsuite's OWL-QN.

Trains ``CRFTagger(loss='cll', prior='l1', C=C)`` (penalty ``||theta||_1 /
C``) with each ``--solvers`` entry, and ``sklearn_crfsuite.CRF(
algorithm='lbfgs', c1=1/C, c2=0)`` (CRFsuite switches to OWL-QN when
``c1 > 0``), on the same feature dicts (``TemplateFeatures(
CONLL2000_TEMPLATE)``), one after the other in one process. Both train the
(attribute, label) pairs seen in training, all transitions, and stop when
the objective improved by less than ``--tol`` relative over 10 iterations
(CRFsuite's ``delta``/``period``) or after ``--max-iter`` iterations.

Solvers (ours):

* ``owlqn``: ``solver='owlqn'`` (libLBFGS's OWL-QN through PyLBFGS, the
  library CRFsuite uses), the default for ``prior='l1'``;
* ``lbfgs``: ``solver='lbfgs'``, scipy's L-BFGS-B on the split
  ``theta = z+ - z-``, ``z >= 0`` (twice the variables).

Reported per run: wall and CPU seconds of ``fit`` (ours include the
vectorisation), iterations, test segment F1 (conlleval), non-zero state
weights (ours: non-zero entries of ``coef_``; CRFsuite: the state features of
its model, which keeps the non-zero ones only), final objective (ours:
``objective_``; CRFsuite: its log's loss, which includes the L1 term), and
the ratios to CRFsuite. The machine's load average is printed; under load,
compare the ratios of one run. Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/bench_l1.py \\
        [--C 1] [--n-jobs 2] [--solvers owlqn lbfgs] [--train-sentences N]

Timed runs are never tests; see benchmarks/README.md for measured tables.
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

from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.metrics import segment_f1_score  # noqa: E402


def run_ours(solver, args, F_train, y_train, F_test, y_test):
    crf = CRFTagger(loss="cll", prior="l1", C=args.C, solver=solver, max_iter=args.max_iter,
                    tol=args.tol, n_jobs=args.n_jobs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        with Timer() as t:
            crf.fit(F_train, y_train)
    res = dict(fit_s=t.wall, fit_cpu_s=t.cpu, n_iter=crf.n_iter_,
               f1=100 * segment_f1_score(y_test, crf.predict(F_test)),
               nonzero_state=int(np.count_nonzero(crf.coef_)),
               objective=float(crf.objective_), converged=crf.converged_,
               warnings=[str(w.message) for w in caught])
    del crf
    gc.collect()
    return res


def run_crfsuite(args, F_train, y_train, F_test, y_test):
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=1.0 / args.C, c2=0.0,
                               max_iterations=args.max_iter, epsilon=1e-5, period=10,
                               delta=args.tol, min_freq=0, all_possible_states=False,
                               all_possible_transitions=True)
    with Timer() as t:
        crf.fit(F_train, y_train)
    log = crf.training_log_
    res = dict(fit_s=t.wall, fit_cpu_s=t.cpu, n_iter=len(log.iterations),
               f1=100 * segment_f1_score(y_test, crf.predict(F_test)),
               nonzero_state=len(crf.state_features_),
               objective=(log.last_iteration or {}).get("loss"),
               converged=len(log.iterations) < args.max_iter, warnings=[])
    del crf
    gc.collect()
    return res


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--C", type=float, default=1.0, help="prior='l1' C; CRFsuite c1 = 1/C")
    p.add_argument("--n-jobs", type=int, default=2, help="CRFTagger's kernel threads")
    p.add_argument("--max-iter", type=int, default=1000)
    p.add_argument("--tol", type=float, default=1e-5, help="tol; CRFsuite delta (period 10)")
    p.add_argument("--solvers", nargs="+", default=["owlqn", "lbfgs"],
                   choices=["owlqn", "lbfgs"])
    p.add_argument("--train-sentences", type=int, default=None)
    p.add_argument("--skip-crfsuite", action="store_true")
    args = p.parse_args(argv)

    print_run_header(['numpy', 'scipy', 'PyLBFGS', 'python-crfsuite'])
    X_train, y_train = load_conll2000("train")
    X_test, y_test = load_conll2000("test")
    if args.train_sentences:
        X_train, y_train = X_train[:args.train_sentences], y_train[:args.train_sentences]
    feats = TemplateFeatures(CONLL2000_TEMPLATE).fit(X_train)
    F_train, F_test = feats.transform(X_train), feats.transform(X_test)

    results = {}
    for solver in args.solvers:
        results[solver] = run_ours(solver, args, F_train, y_train, F_test, y_test)
        print(f"{solver}: {results[solver]}", flush=True)
    if not args.skip_crfsuite:
        results["crfsuite"] = run_crfsuite(args, F_train, y_train, F_test, y_test)
        print(f"crfsuite: {results['crfsuite']}", flush=True)
    print(f"load at the end: {os.getloadavg()}")

    ref = results.get("crfsuite")
    header = ["", *(f"ours {s}" for s in args.solvers)] + (["CRFsuite OWL-QN"] if ref else [])
    rows = []
    for label, key, spec in [("fit s", "fit_s", ".1f"), ("fit CPU s", "fit_cpu_s", ".1f"),
                             ("iterations", "n_iter", "d"), ("test F1", "f1", ".2f"),
                             ("non-zero state weights", "nonzero_state", ",d"),
                             ("final objective", "objective", ",.2f")]:
        row = [label] + [format(results[s][key], spec) for s in args.solvers]
        if ref:
            row.append(format(ref[key], spec) if ref[key] is not None else "n/a")
        rows.append(row)
    if ref:
        for key, label in [("fit_s", "fit s / CRFsuite"), ("fit_cpu_s", "CPU s / CRFsuite")]:
            rows.append([label] + [f"{results[s][key] / ref[key]:.2f}" for s in args.solvers]
                        + ["1.00"])
        rows.append(["F1 - CRFsuite"] + [f"{results[s]['f1'] - ref['f1']:+.2f}"
                                          for s in args.solvers] + ["0"])
    print(format_table(header, rows))
    return results


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - t0:.0f} s")
