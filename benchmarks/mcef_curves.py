"""MCE-F from MAP: the training objective and the development F1 per iteration.

Suzuki et al. (2006), Table 2: MCE-F (Eq. 16, the paper's false positives,
``false_positives='gold'``) trained from the MAP model. The last ``--dev``
CoNLL-2000 training sentences are held out (the paper's footnote 3); MAP
(``loss='cll'``, L2, ``C = --init-C``) is fitted on the rest, then for each
``--solver`` MCE-F (``C = --C``) continues from it (``warm_start=True``),
and after every iteration the script records the training objective and the
development segment F1 of the current parameters (a three-argument
callback). Iteration 0 is the MAP model. Writes a CSV (``--out``) with the
columns ``solver, iteration, objective, dev_f1`` and prints a summary.
``--C`` and ``--segment-match`` may list several values: every
(solver, C, segment_match) is run, and the CSV's ``solver`` column then
names all three. ``--solver default`` is the loss's default solver::

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/mcef_curves.py \\
        --init-C 1 --C 1 --solver quickprop rprop \\
        --out doc/user_guide/data/mcef_curves.csv

Timed runs are never tests; see benchmarks/README.md for measured tables.
"""

import argparse
import copy
import csv
import sys
import time
import warnings

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.losses import SegmentFScoreMCE
from sklearn_crfloss.metrics import segment_f1_score

from mce_table import conll2000_features, objective_at
from _common import command_line


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--init-C", type=float, default=1.0, help="C of the MAP start")
    p.add_argument("--C", type=float, nargs="+", default=[1.0], help="C of the MCE-F stage")
    p.add_argument("--segment-match", nargs="+", default=["chunks"],
                   choices=["chunks", "labels"])
    p.add_argument("--solver", nargs="+", default=["quickprop", "rprop"])
    p.add_argument("--dev", type=int, default=2000)
    p.add_argument("--template", default="conll2000")
    p.add_argument("--train-sentences", type=int, default=None)
    p.add_argument("--max-iter", type=int, default=200)
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    print("command:", command_line(["SKLEARN_CRFLOSS_DATA"]), flush=True)
    F, y, _, _ = conll2000_features(args.template, args.train_sentences, 0)
    n_fit = len(F) - args.dev
    F_tr, y_tr, F_dev, y_dev = F[:n_fit], y[:n_fit], F[n_fit:], y[n_fit:]
    print(f"train {len(F_tr)} sentences, dev {len(F_dev)}", flush=True)
    t0 = time.perf_counter()
    start = CRFTagger(C=args.init_C, n_jobs=args.n_jobs).fit(F_tr, y_tr)
    map_f1 = segment_f1_score(y_dev, start.predict(F_dev))
    print(f"MAP C={args.init_C:g}: {start.n_iter_} iterations, {time.perf_counter() - t0:.1f} s, "
          f"dev F1 {100 * map_f1:.2f}", flush=True)
    rows = []
    runs = [(solver, C, match) for solver in args.solver for C in args.C
            for match in args.segment_match]
    for solver, C, match in runs:
        name = solver if len(args.C) == len(args.segment_match) == 1 else (
            f"{solver} C={C:g} {match}")
        loss = SegmentFScoreMCE(segment_match=match)
        start_obj = objective_at(start, F_tr, y_tr, loss, C, args.n_jobs)
        rows.append((name, 0, start_obj, map_f1))

        def record(k, value, model, name=name):
            rows.append((name, k, value, segment_f1_score(y_dev, model.predict(F_dev))))

        crf = copy.deepcopy(start).set_params(
            loss=loss, C=C, warm_start=True, solver=None if solver == "default" else solver,
            max_iter=args.max_iter, callback=record)
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            crf.fit(F_tr, y_tr)
        seconds = time.perf_counter() - t0
        last = [r for r in rows if r[0] == name]
        best = max(last, key=lambda r: r[3])
        print(f"{name}: {crf.n_iter_} iterations in {seconds:.1f} s, stop_reason "
              f"{crf.stop_reason_!r}; objective {start_obj:.2f} -> {crf.objective_:.2f} "
              f"({100 * (crf.objective_ / start_obj - 1):+.2f}%); dev F1 {100 * map_f1:.2f} -> "
              f"{100 * last[-1][3]:.2f} (best {100 * best[3]:.2f} at iteration {best[1]})",
              flush=True)
        for w in caught:
            print(f"  warning: {w.message}", flush=True)
    if args.out:
        with open(args.out, "w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(["solver", "iteration", "objective", "dev_f1"])
            for solver, k, value, f1 in rows:
                out.writerow([solver, k, f"{value:.6f}", f"{f1:.5f}"])
        print(f"wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
