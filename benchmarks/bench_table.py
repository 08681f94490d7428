"""One table, one run per row: sklearn-crfloss beside sklearn-crfsuite on three tasks.

For CoNLL-2000 chunking (``TemplateFeatures(CONLL2000_TEMPLATE)``),
CoNLL-2000 POS (``featurize`` of ``examples/conll2000_pos.py``, 44 tags)
and CoNLL-2002 Spanish NER (sklearn-crfsuite's tutorial features,
``word2features`` of ``bench_crfsuite_tutorial.py``), both tools get the
same feature dicts and train the same objective to convergence: CLL + L2,
``CRFTagger(loss='cll', prior='l2', C=C)`` with its default solver at
``n_jobs`` 1 and 2, and ``sklearn_crfsuite.CRF(algorithm='lbfgs', c1=0,
c2=1/(2C))`` (single-threaded), both stopping when the objective improved
by less than ``--tol`` relative over 10 iterations (CRFsuite's
``delta``/``period``). Each row is one fit in a process forked from the
one holding the features (``_common.run_forked``), through
``bench_conll2000.run_ours`` / ``run_crfsuite``; it reports CPU and wall
seconds of ``fit`` (ours include the vectorisation, CRFsuite's its
feature generation), L-BFGS iterations, full-batch objective evaluations
(ours: calls of the objective's loss and gradient, counted by
``default_schedule.EvaluationCounter``; CRFsuite: the line-search trials
of its log), the final objective, test F1 (conlleval segment F1; token
accuracy for POS), peak RSS over the start of ``fit`` (``VmHWM``) and the
1-minute load average before and after the row.

``--grid`` adds the time of a 5-fold ``GridSearchCV`` over six values of
``C`` (``--grid-C``) on the chunking features (the first
``--grid-sentences`` training sentences), scored by segment F1 with the
same scorer for both tools, ``GridSearchCV(n_jobs=1)``, each fit at
``n_jobs=1``; CPU and wall seconds of ``fit`` (including the refit).

The timings depend on the machine's load: read the load columns, and
compare the tools within a row group. ``--quick`` runs the whole table on
small subsets (a smoke test of the script, not a measurement). Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/bench_table.py \\
        [--tasks chunk pos ner] [--n-jobs 1 2] [--grid] [--quick] [--json out.json]
"""

import argparse
import json
import os
import sys
import warnings
from types import SimpleNamespace

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "examples"))

from _common import Timer, format_table, print_run_header, run_forked  # noqa: E402
from bench_conll2000 import run_crfsuite, run_ours  # noqa: E402
from bench_crfsuite_tutorial import word2features  # noqa: E402
from conll2000_pos import featurize as pos_featurize  # noqa: E402
from default_schedule import EvaluationCounter  # noqa: E402
from sklearn.exceptions import ConvergenceWarning, UndefinedMetricWarning  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000, load_conll2002  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.metrics import segment_f1_score  # noqa: E402

TASKS = ("chunk", "pos", "ner")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    p.add_argument("--n-jobs", type=int, nargs="+", default=[1, 2])
    p.add_argument("--C", type=float, default=1.0, help="CRFsuite gets c2 = 1/(2C)")
    p.add_argument("--tol", type=float, default=1e-5)
    p.add_argument("--max-iter", type=int, default=1000)
    p.add_argument("--train-sentences", type=int, default=None,
                   help="the first N training sentences of each task (all: None)")
    p.add_argument("--skip-crfsuite", action="store_true")
    p.add_argument("--grid", action="store_true", help="time the 5-fold GridSearchCV too")
    p.add_argument("--grid-C", type=float, nargs="+", default=[0.1, 0.3, 1.0, 3.0, 10.0, 30.0])
    p.add_argument("--grid-sentences", type=int, default=2000,
                   help="chunking training sentences the grid search sees (all: 0)")
    p.add_argument("--quick", action="store_true",
                   help="300 training sentences per task, a grid on 300 (a smoke test)")
    p.add_argument("--json", metavar="PATH", default=None)
    args = p.parse_args(argv)
    if args.quick:
        args.train_sentences, args.grid_sentences, args.grid = 300, 300, True
    return args


def features(task, train_sentences):
    """``(F_train, y_train, F_test, y_test)``: the task's feature dicts and labels."""
    if task == "ner":
        (X_train, y_train), (X_test, y_test) = (load_conll2002("esp", s, download_if_missing=False)
                                                for s in ("train", "testb"))
        def featurize(X):  # noqa: E306
            return [[word2features(s, i) for i in range(len(s))] for s in X]
    else:
        kind = "pos" if task == "pos" else "chunking"
        (X_train, y_train), (X_test, y_test) = (
            load_conll2000(s, task=kind, download_if_missing=False) for s in ("train", "test"))
        if task == "pos":
            featurize = pos_featurize
        else:
            featurize = TemplateFeatures(CONLL2000_TEMPLATE).fit(X_train).transform
    if train_sentences:
        X_train, y_train = X_train[:train_sentences], y_train[:train_sentences]
    return featurize(X_train), y_train, featurize(X_test), y_test


def load():
    return os.getloadavg()[0]


def row(tool, n_jobs, args, data):
    """One fit (in a forked process): the figures of the table's row."""
    run = SimpleNamespace(C=args.C, max_iter=args.max_iter, tol=args.tol, repeat_predict=1,
                          loss_evals=0)
    before = load()
    warnings.simplefilter("ignore", UndefinedMetricWarning)  # POS tags have no segments
    if tool == "crfsuite":
        res = run_crfsuite(run, *data, sum(map(len, data[3])))
    else:
        counter = EvaluationCounter()
        res = run_ours(run, n_jobs, *data, sum(map(len, data[3])))
        res["n_evaluations"] = counter.n
    res.update(tool=tool, n_jobs=n_jobs, load_before=before, load_after=load())
    return res


def grid_search(tool, args, F, y):
    """Seconds of a 5-fold GridSearchCV over ``args.grid_C`` (forked); the best C and score."""
    from sklearn.model_selection import GridSearchCV

    if tool == "crfsuite":
        import sklearn_crfsuite
        est = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, max_iterations=args.max_iter,
                                   delta=args.tol, min_freq=0, all_possible_transitions=True)
        grid = {"c2": [1.0 / (2.0 * C) for C in args.grid_C]}
    else:
        est = CRFTagger(loss="cll", prior="l2", tol=args.tol, max_iter=args.max_iter, n_jobs=1)
        grid = {"C": list(args.grid_C)}
    search = GridSearchCV(est, grid, cv=5, n_jobs=1,
                          scoring=lambda e, X, y_true: segment_f1_score(
                              y_true, [list(p) for p in e.predict(X)]))
    before = load()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with Timer() as t:
            search.fit(F, y)
    return {"tool": tool, "fit_s": t.wall, "fit_cpu_s": t.cpu, "best": search.best_params_,
            "best_score": float(search.best_score_), "load_before": before,
            "load_after": load(), "n_sentences": len(F)}


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def table(rows):
    header = ["task", "tool", "n_jobs", "CPU s", "wall s", "iters", "evals", "objective",
              "test F1 / acc", "peak MB", "load before/after"]
    out = []
    for r in rows:
        score = r["token_accuracy"] if r["task"] == "pos" else r["test_f1"]
        out.append([r["task"], "sklearn-crfsuite" if r["tool"] == "crfsuite" else "ours",
                    "1" if r["tool"] == "crfsuite" else str(r["n_jobs"]),
                    fmt(r["fit_cpu_s"], ".1f"), fmt(r["fit_s"], ".1f"), r["n_iter"],
                    fmt(r.get("n_evaluations"), "d"), fmt(r["final_objective"], ",.2f"),
                    fmt(100 * score, ".2f"), fmt(r["peak_over_start_mb"], ".0f"),
                    f"{r['load_before']:.1f}/{r['load_after']:.1f}"])
    return format_table(header, out)


def main(argv=None):
    args = parse_args(argv)
    print_run_header(["sklearn_crfloss", "numpy", "scipy", "scikit-learn", "sklearn_crfsuite"])
    print("timings on a machine shared with other jobs unless the load columns say otherwise")
    rows, grids = [], []
    for task in args.tasks:
        data = features(task, args.train_sentences)
        print(f"{task}: {len(data[0])} training, {len(data[2])} test sentences", flush=True)
        runs = [("ours", n) for n in args.n_jobs] + ([] if args.skip_crfsuite
                                                    else [("crfsuite", 1)])
        for tool, n_jobs in runs:
            res = run_forked(row, tool, n_jobs, args, data)
            res["task"] = task
            rows.append(res)
            print(table([res]).splitlines()[-1], flush=True)
        del data
    print()
    print(table(rows))
    if args.grid:
        F, y, _, _ = features("chunk", args.grid_sentences or None)
        for tool in ["ours"] + ([] if args.skip_crfsuite else ["crfsuite"]):
            g = run_forked(grid_search, tool, args, F, y)
            grids.append(g)
            print(f"GridSearchCV 5-fold x {len(args.grid_C)} C, chunking, {g['n_sentences']} "
                  f"sentences, {tool}: CPU {g['fit_cpu_s']:.1f} s, wall {g['fit_s']:.1f} s, "
                  f"best {g['best']} (F1 {100 * g['best_score']:.2f}), load "
                  f"{g['load_before']:.1f}/{g['load_after']:.1f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "rows": rows, "grid": grids}, f, indent=1,
                      default=lambda o: o.tolist() if isinstance(o, np.ndarray) else str(o))


if __name__ == "__main__":
    main()
