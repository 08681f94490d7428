"""Solver table on CoNLL-2000: sklearn-crfloss's solvers against CRFsuite's, and time-to-F1 curves.

One run, one process, the same ``TemplateFeatures(CONLL2000_TEMPLATE)``
dicts for both tools:

====================  =====================================  ==========================================
row                   sklearn-crfloss                        sklearn-crfsuite
====================  =====================================  ==========================================
CLL + L2, L-BFGS      ``CRFTagger(solver='lbfgs')``          ``CRF(algorithm='lbfgs', c1=0, c2=0.5)``
CLL + L2, SGD         ``CRFTagger(solver='sgd')`` (defaults) ``CRF(algorithm='l2sgd', c2=0.5)``
CLL + L1              ``CRFTagger(prior='l1', C=1)``         ``CRF(algorithm='lbfgs', c1=1, c2=0)``
====================  =====================================  ==========================================

(``C = 1`` everywhere: ``||theta||^2 / (2 C)`` is CRFsuite's
``c2 ||w||^2`` with ``c2 = 0.5``, ``||theta||_1 / C`` its ``c1 ||w||_1`` with
``c1 = 1``.) Both tools train only the (attribute, label) pairs seen in
training and a dense transition matrix (``all_possible_transitions=True``);
each tool runs its solver's defaults (stopping rules, SGD calibration and
epochs; ``random_state=0`` for ours). CRFsuite is single-threaded; ours
runs ``n_jobs=--n-jobs`` (default 1) threads in its batch kernels (SGD is
serial).

Columns: wall and CPU seconds of ``fit`` on the feature dicts (vectorisation
included for both), iterations (epochs for SGD), test segment F1
(conlleval, :func:`sklearn_crfloss.metrics.segment_f1_score`), non-zero state
weights, and the wall-time ratio ours / CRFsuite's matching solver.

Time-to-F1 curves: each of our fits runs twice with the same parameters
(deterministic: same iterates). The first run is timed, with a callback
that only records a time stamp per iteration; the second one evaluates the
test F1 of a snapshot of the model after every iteration (the callback's
three-argument form). The curve pairs the time stamps of the first run with
the F1 of the second, so that no evaluation time counts as training time.
CRFsuite exposes no intermediate models: its final points are written
instead. The curves go to ``--csv`` (numbers only), drawn by
``doc/user_guide/solvers.rst`` at documentation build time.

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data nice -n 10 python benchmarks/bench_solvers.py \\
        [--n-jobs 1] [--rows lbfgs,sgd,l1] [--skip-crfsuite] [--no-curves] \\
        [--csv doc/user_guide/data/time_to_f1.csv] [--json PATH]

CSV columns: ``run, iteration, seconds, test_f1`` with ``run`` 1 = CLL+L2
L-BFGS, 2 = CLL+L2 SGD, 3 = CLL+L1 (ours, one line per iteration), and
11, 12, 13 = CRFsuite's lbfgs, l2sgd, L1 lbfgs (one line: the final model).
"""

import argparse
import csv
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import Timer, command_line, format_table, machine_info, versions  # noqa: E402

from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.metrics import segment_f1_score  # noqa: E402

#: (row key, our estimator, CRFsuite parameters, run ids in the CSV)
ROWS = {
    "lbfgs": ("CLL+L2 L-BFGS", dict(solver="lbfgs"),
              dict(algorithm="lbfgs", c1=0.0, c2=0.5), (1, 11)),
    "sgd": ("CLL+L2 SGD", dict(solver="sgd", random_state=0),
            dict(algorithm="l2sgd", c2=0.5), (2, 12)),
    "l1": ("CLL+L1", dict(prior="l1", C=1.0),
           dict(algorithm="lbfgs", c1=1.0, c2=0.0), (3, 13)),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n-jobs", type=int, default=1, help="n_jobs of CRFTagger")
    p.add_argument("--rows", default="lbfgs,sgd,l1", help="comma-separated rows to run")
    p.add_argument("--skip-crfsuite", action="store_true")
    p.add_argument("--no-curves", action="store_true",
                   help="skip the second (evaluating) run of our fits")
    p.add_argument("--train-sentences", type=int, default=None,
                   help="use only the first N training sentences (a quick check)")
    p.add_argument("--csv", default=None, help="write the time-to-F1 curves here")
    p.add_argument("--json", default=None, help="write every figure here")
    args = p.parse_args(argv)
    args.rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = set(args.rows) - set(ROWS)
    if unknown:
        p.error(f"unknown rows {sorted(unknown)}; choose among {sorted(ROWS)}")
    return args


def load_features(train_sentences):
    try:
        X_train, y_train = load_conll2000("train", download_if_missing=False)
        X_test, y_test = load_conll2000("test", download_if_missing=False)
    except FileNotFoundError as exc:
        sys.exit(f"CoNLL-2000 not found ({exc}); set SKLEARN_CRFLOSS_DATA.")
    if train_sentences:
        X_train, y_train = X_train[:train_sentences], y_train[:train_sentences]
    template = TemplateFeatures(CONLL2000_TEMPLATE)
    return template.fit_transform(X_train), y_train, template.transform(X_test), y_test


def run_ours(params, n_jobs, F_train, y_train, F_test, y_test, curves):
    """Timed fit (time stamps only), then, if ``curves``, the evaluating fit."""
    est = CRFTagger(n_jobs=n_jobs, **params)
    stamps = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with Timer() as t:
            t0 = time.perf_counter()
            est.set_params(callback=lambda k, f: stamps.append(time.perf_counter() - t0))
            est.fit(F_train, y_train)
    res = {"wall_s": t.wall, "cpu_s": t.cpu, "n_iter": int(est.n_iter_),
           "init_n_iter": int(est.init_n_iter_), "converged": bool(est.converged_),
           "test_f1": segment_f1_score(y_test, est.predict(F_test)),
           "nonzero_state": int(np.count_nonzero(est.coef_)),
           "objective": float(est.objective_), "stamps": stamps, "curve": None}
    if curves:
        scores = []
        again = clone(est).set_params(
            callback=lambda k, f, model: scores.append(segment_f1_score(y_test,
                                                                        model.predict(F_test))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            again.fit(F_train, y_train)
        if len(scores) != len(stamps):
            raise RuntimeError(f"the evaluating run made {len(scores)} iterations, the timed "
                               f"run {len(stamps)}: not the same iterates")
        res["curve"] = list(zip(range(1, len(stamps) + 1), stamps, scores))
    return res


def run_crfsuite(params, F_train, y_train, F_test, y_test):
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(all_possible_transitions=True, **params)
    with Timer() as t:
        crf.fit(F_train, y_train)
    return {"wall_s": t.wall, "cpu_s": t.cpu, "n_iter": len(crf.training_log_.iterations),
            "test_f1": segment_f1_score(y_test, crf.predict(F_test)),
            "nonzero_state": sum(1 for w in crf.state_features_.values() if w != 0.0),
            "objective": float(crf.training_log_.last_iteration.get("loss", float("nan")))}


def main(argv=None):
    args = parse_args(argv)
    info = {"command": command_line(["SKLEARN_CRFLOSS_DATA"]), "machine": machine_info(),
            "versions": versions(["sklearn-crfloss", "numpy", "scipy", "scikit-learn",
                                  "python-crfsuite", "sklearn-crfsuite"])}
    print(info["command"])
    print("machine:", info["machine"])
    print("versions:", info["versions"], flush=True)
    F_train, y_train, F_test, y_test = load_features(args.train_sentences)
    results = {}
    for key in args.rows:
        title, ours, theirs, _ = ROWS[key]
        print(f"--- {title}: sklearn-crfloss", flush=True)
        results[(key, "ours")] = run_ours(ours, args.n_jobs, F_train, y_train, F_test, y_test,
                                          not args.no_curves)
        if not args.skip_crfsuite:
            print(f"--- {title}: sklearn-crfsuite", flush=True)
            results[(key, "crfsuite")] = run_crfsuite(theirs, F_train, y_train, F_test, y_test)
        print("    load average", os.getloadavg(), flush=True)
    header = ["row", "tool", "wall s", "CPU s", "iterations", "test F1 %",
              "non-zero state w.", "wall ours/CRFsuite"]
    table = []
    for key in args.rows:
        for tool in ("ours", "crfsuite"):
            r = results.get((key, tool))
            if r is None:
                continue
            theirs = results.get((key, "crfsuite"))
            ratio = (f"{r['wall_s'] / theirs['wall_s']:.2f}"
                     if tool == "ours" and theirs else "")
            n_iter = str(r["n_iter"]) + (f" (+{r['init_n_iter']} init)"
                                         if r.get("init_n_iter") else "")
            table.append([ROWS[key][0], "sklearn-crfloss" if tool == "ours" else "CRFsuite",
                          f"{r['wall_s']:.1f}", f"{r['cpu_s']:.1f}", n_iter,
                          f"{100 * r['test_f1']:.2f}", f"{r['nonzero_state']:,}", ratio])
    print()
    print(format_table(header, table))
    sgd, lbfgs_cs = results.get(("sgd", "ours")), results.get(("lbfgs", "crfsuite"))
    if sgd and lbfgs_cs:
        print(f"\nsgd (defaults): F1 {100 * sgd['test_f1']:.2f} in {sgd['wall_s']:.1f} s = "
              f"{sgd['wall_s'] / lbfgs_cs['wall_s']:.2f}x CRFsuite L-BFGS's "
              f"{lbfgs_cs['wall_s']:.1f} s")
        if sgd["curve"]:
            hit = next((c for c in sgd["curve"] if c[2] >= 0.935), None)
            if hit:
                print(f"sgd first reaches F1 >= 93.5 after epoch {hit[0]}, {hit[1]:.1f} s "
                      f"({hit[1] / lbfgs_cs['wall_s']:.2f}x)")
    print("load average at the end", os.getloadavg())
    if args.csv:
        os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["run", "iteration", "seconds", "test_f1"])
            for key in args.rows:
                ours_id, theirs_id = ROWS[key][3]
                r = results[(key, "ours")]
                for k, sec, f1 in r["curve"] or []:
                    w.writerow([ours_id, k, f"{sec:.3f}", f"{f1:.5f}"])
                r = results.get((key, "crfsuite"))
                if r:
                    w.writerow([theirs_id, r["n_iter"], f"{r['wall_s']:.3f}",
                                f"{r['test_f1']:.5f}"])
        print("curves written to", args.csv)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"info": info, "results": {f"{k}/{t}": v for (k, t), v in
                                                 results.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
