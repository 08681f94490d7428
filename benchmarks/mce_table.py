"""Suzuki et al. (2006) Tables 1 and 2 on CoNLL-2000: ML, MAP, MCE, MCE-F.

Rows (``--rows``, any subset, in this order):

* ``ml``       -- loss='cll', prior='none'
* ``map``      -- loss='cll', prior='l2'
* ``mce_log``  -- loss=MinimumClassificationError(smoothing='logistic'), prior='l2'
* ``mce_sig``  -- loss=MinimumClassificationError(smoothing='sigmoid'), prior='l2'
* ``mcef_sig`` -- loss=SegmentFScoreMCE(false_positives='max_incorrect') (a variant; sigmoid), prior='l2'
* ``mcef_sig_g`` -- SegmentFScoreMCE(false_positives='gold') (the paper's
  false positives; ``beta='auto'``: -1 from zero, 0 from MAP)
* ``mcef_sig_v`` -- SegmentFScoreMCE(false_positives='viterbi'), the
  continuous variant (not in the paper), prior='l2'

(``--segment-match chunks``: the MCE-F rows compare segments as chunks),
each MCE row from zero (``--init zero``, Table 1) and/or from MAP
initialisation (``--init map``, Table 2: the MAP fit with the same C,
continued with ``set_params(loss=...)`` and ``warm_start=True``, which is what
``init='cll'`` does in one fit). alpha=1, beta=0, psi=inf as in the paper.

C: ``--C 1`` uses one value for every row; ``--C-grid 0.1 1 10`` selects C
on a development split, the last ``--dev`` training sentences (the paper's
footnote 3: the last 2,000), trained on the rest, then refits on the full
training set. ``--select each`` (default) chooses C separately for MAP and
for every MCE row and initialisation; the ``map`` initialisation starts
from the MAP model with MAP's chosen C (on the development split: the MAP
fit on the rest), then trains the row's loss with the row's C.
``--select map`` chooses C for the MAP row only and uses it for every row
(one grid instead of one per row; ML has no C). ``--select joint`` chooses
the C of a row from MAP together with the C of its MAP start (every pair of
``--C-grid`` x ``--stage-C-grid``; each MAP start is fitted once).
``--stage-C-grid`` is the grid of the MCE rows' C (default: ``--C-grid``,
which is then the grid of MAP and of the starts). ``--cache DIR`` keeps
every fit (MAP models, each row's predictions) so a run cut short
resumes; the rows from zero run with ``init=None``. The paper's grid is
``--C-grid 1e-5 1e-4 ... 1e5``. Features: ``--template conll2000`` (the
CRF++ template, ``CONLL2000_TEMPLATE``, default) or ``suzuki2006`` (the
paper's section 5.2, ``SUZUKI2006_TEMPLATE``), computed once.

Solver of the MCE rows: ``--solver default`` (``solver=None``: the loss's
default, Suzuki et al.'s schedule, whose ten SGD epochs run from zero only),
a name (``lbfgs``, ``rprop``, ``quickprop``, ``owlqn``, ``sgd``), or
``paper`` (``[('sgd', 10), 'quickprop']`` run in full whatever the start);
``--eta0`` is the estimator's (the SGD epochs' first step; default
``'auto'``). For the rows from MAP initialisation the training objective at
the MAP solution and at the end, and its fall in percent, are reported.

Reports test segment F1 (conlleval), sentence accuracy, fit seconds,
iterations, seconds per iteration (between the first and the last
iteration callback, so vectorisation is excluded) and that time relative to
the ``map`` row's (CLL). With a ``map`` row, a second table tests every
other row against it on the test set (as the paper's section 5.3): the
paired bootstrap of segment F1 over sentences
(:func:`sklearn_crfloss.metrics.paired_bootstrap_test`, ``--n-resamples``,
``random_state=0``) and McNemar's test on sentence and on token correctness
(:func:`sklearn_crfloss.metrics.mcnemar_test`). Run from a checkout::

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/mce_table.py \\
        --rows map mcef_sig --init map --C 1 --n-jobs 1

Timed runs are never tests; see benchmarks/README.md for measured tables.
"""

import argparse
import sys
import time
import os

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import training_objective  # noqa: E402
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, SUZUKI2006_TEMPLATE, TemplateFeatures
from sklearn_crfloss.losses import MinimumClassificationError, SegmentFScoreMCE, get_loss
from sklearn_crfloss.metrics import (mcnemar_test, paired_bootstrap_test, segment_f1_score,
                                     sequence_accuracy)

TEMPLATES = {"conll2000": CONLL2000_TEMPLATE, "suzuki2006": SUZUKI2006_TEMPLATE}

#: ``--segment-match`` of the MCE-F rows (segments compared as label strings or chunks).
SEGMENT_MATCH = ["labels"]

ROWS = {
    "ml": ("ML", lambda: "cll", "none"),
    "map": ("MAP", lambda: "cll", "l2"),
    "mce_log": ("MCE(log)", lambda: MinimumClassificationError(smoothing="logistic"), "l2"),
    "mce_sig": ("MCE(sig)", lambda: MinimumClassificationError(smoothing="sigmoid"), "l2"),
    "mcef_sig": ("MCE-F(sig)",
                 lambda: SegmentFScoreMCE(false_positives="max_incorrect",
                                          segment_match=SEGMENT_MATCH[0]), "l2"),
    "mcef_sig_g": ("MCE-F(sig,gold)",
                   lambda: SegmentFScoreMCE(false_positives="gold",
                                            segment_match=SEGMENT_MATCH[0]), "l2"),
    "mcef_sig_v": ("MCE-F(sig,vit)",
                   lambda: SegmentFScoreMCE(false_positives="viterbi",
                                            segment_match=SEGMENT_MATCH[0]), "l2"),
}


class IterationClock:
    """Callback recording the time of every L-BFGS iteration."""

    def __init__(self):
        self.times = []

    def __call__(self, iteration, objective):
        self.times.append(time.perf_counter())

    def per_iteration(self):
        t = self.times
        return (t[-1] - t[0]) / (len(t) - 1) if len(t) > 1 else float("nan")


SOLVER_SPECS = {"default": None, "paper": [("sgd", 10), "quickprop"]}


def conll2000_features(template, train_sentences=None, test_sentences=None):
    """CoNLL-2000 feature dicts of ``TEMPLATES[template]``, fitted on the training prefix.

    Returns ``(F_train, y_train, F_test, y_test)``; ``train_sentences`` and
    ``test_sentences`` (None: all) take prefixes for quick runs.
    """
    X_train, y_train = load_conll2000("train")
    X_test, y_test = load_conll2000("test")
    X_train, y_train = X_train[:train_sentences], y_train[:train_sentences]
    X_test, y_test = X_test[:test_sentences], y_test[:test_sentences]
    feats = TemplateFeatures(TEMPLATES[template]).fit(X_train)
    return feats.transform(X_train), y_train, feats.transform(X_test), y_test


def fit(X, y, loss, prior, C, args, warm_from=None):
    clock = IterationClock()
    max_iter = args.max_iter if loss == "cll" else (args.mce_max_iter or args.max_iter)
    solver = None if loss == "cll" else SOLVER_SPECS.get(args.solver, args.solver)
    eta0 = "auto" if args.eta0 is None else args.eta0
    if warm_from is None:
        crf = CRFTagger(loss=loss, prior=prior, C=C, max_iter=max_iter, solver=solver,
                        eta0=eta0, random_state=0, n_jobs=args.n_jobs, callback=clock,
                        init=None)  # from zero (Table 1); from MAP: warm_from
    else:
        crf = warm_from
        crf.set_params(loss=loss, C=C, warm_start=True, callback=clock, max_iter=max_iter,
                       solver=solver, eta0=eta0, random_state=0)
    t0 = time.perf_counter()
    crf.fit(X, y)
    return crf, time.perf_counter() - t0, clock.per_iteration()


def evaluate(crf, X, y):
    pred = [[str(t) for t in p] for p in crf.predict(X)]  # lists of str, whatever predict returns
    return 100 * segment_f1_score(y, pred), 100 * sequence_accuracy(y, pred), pred


def copy_fitted(crf):
    """A fitted copy (warm start mutates the estimator)."""
    import copy

    return copy.deepcopy(crf)


def _cache_file(args, kind, where):
    """Path of one cached fit under ``--cache`` (None: no cache)."""
    if not getattr(args, "cache", None):
        return None
    import hashlib
    import json

    spec = dict(where, kind=kind, template=args.template, solver=args.solver, eta0=args.eta0,
                max_iter=args.max_iter, mce_max_iter=args.mce_max_iter,
                segment_match=SEGMENT_MATCH[0])
    digest = hashlib.md5(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    return os.path.join(args.cache, f"{kind}-{digest}.pkl")


def _load(args, kind, where):
    import pickle

    path = _cache_file(args, kind, where)
    if path is None or not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        return pickle.load(f)


def _store(args, kind, where, value):
    import pickle

    path = _cache_file(args, kind, where)
    if path is None:
        return
    os.makedirs(args.cache, exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        pickle.dump(value, f)
    os.replace(path + ".tmp", path)


def map_start(X_tr, y_tr, C, args, map_models):
    """The MAP model of ``C`` on ``X_tr`` (fitted once: memory, then ``--cache``)."""
    if C not in map_models:
        where = dict(n_fit=len(X_tr), C=C)
        model = _load(args, "map", where)
        if model is None:
            model = fit(X_tr, y_tr, "cll", "l2", C, args)
            _store(args, "map", where, model)
        map_models[C] = model
    return map_models[C]


def fit_row(X_tr, y_tr, X_te, y_te, key, init, C, C_start, args, map_models):
    """Fit and score one row; the MAP start of ``init='map'`` comes from ``map_start``."""
    name, make_loss, prior = ROWS[key]
    start = end = float("nan")
    if init == "map":
        base_model = map_start(X_tr, y_tr, C_start, args, map_models)
        base = copy_fitted(base_model[0])
        start = objective_at(base, X_tr, y_tr, make_loss(), C, args.n_jobs)
        crf, sec, per_it = fit(X_tr, y_tr, make_loss(), prior, C, args, warm_from=base)
        end = objective_at(crf, X_tr, y_tr, make_loss(), C, args.n_jobs)
        sec_total = sec + base_model[1]
    elif key == "map":
        crf, sec, per_it = map_start(X_tr, y_tr, C, args, map_models)
        sec_total = sec
    else:
        crf, sec, per_it = fit(X_tr, y_tr, make_loss(), prior, C, args)
        sec_total = sec
    f1, acc, pred = evaluate(crf, X_te, y_te)
    return dict(row=name, key=key, init=init, C=C, f1=f1, acc=acc, C_start=C_start,
                max_iter=crf.max_iter, start=start, end=end, fit_s=sec_total,
                n_iter=crf.n_iter_, s_per_iter=per_it, converged=crf.converged_, pred=pred,
                load=os.getloadavg()[0])


def run_rows(X_tr, y_tr, X_te, y_te, rows, inits, C_of, args, log, map_models=None,
             start_of=None):
    """Fit and score ``rows`` x ``inits``; ``C_of(key, init)`` gives C (init '-' for ML, MAP).

    The ``map`` initialisation continues the MAP model of C ``start_of(key)``
    (default ``C_of('map', '-')``; fitted once, kept in ``map_models``: C ->
    (model, seconds, s/iter)).
    """
    if start_of is None:
        start_of = lambda key: C_of("map", "-")  # noqa: E731
    results = []
    map_models = {} if map_models is None else map_models
    for key in rows:
        for init in (["-"] if key in ("ml", "map") else inits):
            C = C_of(key, init)
            C_start = start_of(key) if init == "map" else None
            where = dict(n_fit=len(X_tr), n_eval=len(X_te), key=key, init=init, C=C,
                         C_start=C_start)
            row = _load(args, "row", where)
            if row is None:
                row = fit_row(X_tr, y_tr, X_te, y_te, key, init, C, C_start, args, map_models)
                _store(args, "row", where, row)
            results.append(row)
            log(row)
    return results, map_models


def select_C(F, y, args, log):
    """C per (row, init) on the development split (the last ``args.dev`` sentences).

    Returns ``(chosen, starts)``: ``chosen[(key, init)]`` the row's C and, with
    ``--select joint``, ``starts[key]`` the C of its MAP start, both chosen
    together over the grid's pairs (else ``starts`` is empty: MAP's C).
    """
    n_fit = len(F) - args.dev
    split = (F[:n_fit], y[:n_fit], F[n_fit:], y[n_fit:])
    chosen = {("ml", "-"): args.C_grid[0]}  # ML has no C
    starts = {}
    dev_maps = {}
    stage_grid = args.stage_C_grid or args.C_grid

    def best_pair(key):
        scores = {}
        for C_start in args.C_grid:
            for C in stage_grid:
                print(f"dev: {key} init=map C_start={C_start:g} C={C:g}", flush=True)
                res = run_rows(*split, [key], ["map"], lambda k, i, C=C: C, args, log,
                               dev_maps, start_of=lambda k, C_start=C_start: C_start)[0]
                scores[(C_start, C)] = res[-1]["f1"]
        starts[key], chosen[(key, "map")] = max(scores, key=scores.get)

    def best(key, init):
        scores = []
        grid = args.C_grid if key == "map" else stage_grid
        for C in grid:
            print(f"dev: {key} init={init} C={C:g}", flush=True)
            res = run_rows(*split, [key], [init],
                           lambda k, i, C=C: C if (k, i) == (key, init) else chosen[("map", "-")],
                           args, log, dev_maps)[0]
            scores.append(res[-1]["f1"])
        chosen[(key, init)] = grid[int(np.argmax(scores))]

    best("map", "-")
    for key in args.rows:
        if key in ("ml", "map"):
            continue
        for init in args.init:
            if args.select == "map":
                chosen[(key, init)] = chosen[("map", "-")]
            elif args.select == "joint" and init == "map":
                best_pair(key)
            else:
                best(key, init)
    return chosen, starts


def objective_at(crf, F, y, loss, C, n_jobs):
    """The training objective (``loss`` + L2 prior of ``C``) at a fitted model's parameters."""
    from sklearn_crfloss.priors import GaussianPrior

    objective, theta, _, _ = training_objective(crf, F, y, n_threads=n_jobs or 1)
    loss = get_loss(loss)
    loss.set_classes(crf.classes_)
    return objective.value_and_grad(theta, loss, GaussianPrior(), C)[0]


def significance_table(results, y_test, n_resamples):
    """Markdown table: every row against the MAP row on the test set."""
    base = next(r for r in results if r["key"] == "map")
    print(f"\nAgainst MAP (C={base['C']:g}) on the test set: paired bootstrap of segment F1 "
          f"({n_resamples} resamples, random_state=0), McNemar on sentences and tokens\n")
    print("| Row | init | C | F1 - MAP | 95% CI | p (bootstrap) | sent. acc. - MAP "
          "| p (McNemar, sent.) | p (McNemar, tokens) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if r is base:
            continue
        boot = paired_bootstrap_test(y_test, r["pred"], base["pred"], n_resamples=n_resamples,
                                     random_state=0)
        sent = mcnemar_test(y_test, r["pred"], base["pred"], unit="sentence")
        tok = mcnemar_test(y_test, r["pred"], base["pred"], unit="token")
        lo, hi = boot.confidence_interval
        C = "-" if r["key"] == "ml" else f"{r['C']:g}"
        print(f"| {r['row']} | {r['init']} | {C} | {100 * boot.difference:+.2f} "
              f"| [{100 * lo:+.2f}, {100 * hi:+.2f}] | {boot.pvalue:.3g} "
              f"| {100 * sent.difference:+.2f} | {sent.pvalue:.3g} | {tok.pvalue:.3g} |",
              flush=True)


def time_evaluations(F, y, map_crf, keys, repeats):
    """Seconds per objective evaluation (loss + gradient + prior) at the MAP solution.

    One L-BFGS iteration costs one evaluation plus line-search retries, so
    this is the per-iteration cost without the optimiser's path. The feature
    products are included, as in training; ``n_jobs`` threads.
    """
    from sklearn_crfloss.priors import GaussianPrior

    objective, theta, _, _ = training_objective(map_crf, F, y, n_threads=map_crf.n_jobs or 1)
    out = {}
    for key in ["map"] + [k for k in keys if k != "map"]:
        loss = get_loss(ROWS[key][1]())
        loss.set_classes(map_crf.classes_)

        def obj(theta, loss=loss):
            return objective.value_and_grad(theta, loss, GaussianPrior(), map_crf.C)

        obj(theta)  # warm-up (caches, e.g. the gold segments)
        t0 = time.perf_counter()
        for _ in range(repeats):
            obj(theta)
        out[key] = (time.perf_counter() - t0) / repeats
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    p.add_argument("--segment-match", choices=["labels", "chunks"], default="labels",
                   help="segment_match of the MCE-F rows")
    p.add_argument("--init", nargs="+", default=["zero", "map"], choices=["zero", "map"])
    p.add_argument("--C", type=float, default=None, help="one C for every row")
    p.add_argument("--C-grid", type=float, nargs="+", default=None)
    p.add_argument("--stage-C-grid", type=float, nargs="+", default=None,
                   help="with --C-grid: the grid of the MCE rows' C (default: --C-grid; "
                        "--C-grid is then the grid of MAP and of the MAP starts)")
    p.add_argument("--cache", default=None,
                   help="directory caching every fit (MAP models, rows' predictions), "
                        "so that a run cut short resumes")
    p.add_argument("--dev", type=int, default=2000, help="last training sentences held out")
    p.add_argument("--select", choices=["each", "map", "joint"], default="each",
                   help="with --C-grid: choose C per row ('each'), for the MAP row only "
                        "and use it for every row ('map'), or per row with the C of the "
                        "MAP start of the rows from MAP chosen with it ('joint')")
    p.add_argument("--init-C", type=float, default=None,
                   help="with --C: the C of the MAP start of the rows from MAP "
                        "(default: --C)")
    p.add_argument("--train-sentences", type=int, default=None, help="prefix, quick runs")
    p.add_argument("--test-sentences", type=int, default=None, help="prefix, quick runs")
    p.add_argument("--max-iter", type=int, default=1000)
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--time-evals", type=int, default=0,
                   help="if > 0: also time this many objective evaluations per loss "
                        "at the MAP solution (full training set)")
    p.add_argument("--mce-max-iter", type=int, default=None,
                   help="max_iter of the MCE stages (default: --max-iter)")
    p.add_argument("--solver", default="default",
                   help="solver of the MCE rows: default, paper, or a solver name")
    p.add_argument("--eta0", type=float, default=None,
                   help="the estimator's eta0 (first SGD step of the schedules; "
                        "default 'auto', calibrated)")
    p.add_argument("--template", choices=list(TEMPLATES), default="conll2000",
                   help="feature template: CONLL2000_TEMPLATE or SUZUKI2006_TEMPLATE")
    p.add_argument("--n-resamples", type=int, default=9999,
                   help="paired bootstrap resamples of the tests against MAP")
    args = p.parse_args(argv)
    SEGMENT_MATCH[0] = args.segment_match
    if (args.C is None) == (args.C_grid is None):
        p.error("give exactly one of --C and --C-grid")

    print("command:", " ".join(["python"] + sys.argv), flush=True)
    F_train, y_train, F_test, y_test = conll2000_features(
        args.template, args.train_sentences, args.test_sentences)
    print(f"train {len(F_train)} sentences, test {len(F_test)}", flush=True)

    def log(row):
        start = "" if row.get("C_start") is None else f" (start C={row['C_start']:g})"
        print(f"  {row['row']:<11} init={row['init']:<4} C={row['C']:<8g}{start} F1={row['f1']:.2f} "
              f"sent.acc={row['acc']:.2f} fit={row['fit_s']:.1f}s iters={row['n_iter']} "
              f"s/iter={row['s_per_iter']:.3f} converged={row['converged']} "
              f"objective {row['start']:.2f} -> {row['end']:.2f}", flush=True)

    start_of = None
    if args.C is not None:
        C_of = lambda key, init: args.C  # noqa: E731
        if args.init_C is not None:
            start_of = lambda key: args.init_C  # noqa: E731
    else:  # on the last --dev training sentences
        chosen, starts = select_C(F_train, y_train, args, log)
        print("chosen C:", {f"{k}/{i}": C for (k, i), C in chosen.items()},
              "starts:", starts, flush=True)
        C_of = lambda key, init: chosen[(key, init)]  # noqa: E731
        if starts:
            start_of = lambda key: starts.get(key, chosen[("map", "-")])  # noqa: E731

    print("test:", flush=True)
    results, map_models = run_rows(F_train, y_train, F_test, y_test, args.rows, args.init,
                                   C_of, args, log, start_of=start_of)
    if args.time_evals:
        C = C_of("map", "-")
        start = map_start(F_train, y_train, C, args, map_models)[0]
        t = time_evaluations(F_train, y_train, start, args.rows, args.time_evals)
        print("seconds per objective evaluation at the MAP solution (C=%g):" % C, flush=True)
        for key, sec in t.items():
            print(f"  {ROWS[key][0]:<15} {sec:.3f} s  ({sec / t['map']:.2f} x CLL)", flush=True)
    cll_per_iter = next((r["s_per_iter"] for r in results if r["row"] == "MAP"), float("nan"))
    print(f"\nsolver of the MCE rows: {args.solver} (eta0={args.eta0 or 'auto'}); "
          f"load {os.getloadavg()}")
    print("| Row | init | C | test F1 | sentence acc. | fit s | iterations | s/iter | "
          "s/iter vs CLL | objective from MAP (fall) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        C = "-" if r["key"] == "ml" else f"{r['C']:g}"  # ML has no prior
        if r.get("C_start") is not None:
            C = f"{C} (start {r['C_start']:g})"
        fall = (f"{r['start']:.1f} -> {r['end']:.1f} ({100 * (1 - r['end'] / r['start']):.1f}%)"
                if r["init"] == "map" else "-")
        print(f"| {r['row']} | {r['init']} | {C} | {r['f1']:.2f} | {r['acc']:.2f} | "
              f"{r['fit_s']:.0f} | {r['n_iter']} | {r['s_per_iter']:.3f} | "
              f"{r['s_per_iter'] / cll_per_iter:.2f} | {fall} |")
    if any(r["key"] == "map" for r in results) and len(results) > 1:
        significance_table(results, y_test, args.n_resamples)


if __name__ == "__main__":
    main()
