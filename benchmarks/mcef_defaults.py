"""MCE-F from MAP: candidate defaults screened on the development split.

Suzuki et al. (2006), Table 2 protocol on CoNLL-2000: the last ``--dev``
training sentences are held out (the paper's footnote 3), MAP
(``loss='cll'``, L2, ``C = --init-C``) is fitted once on the rest, then
every ``--variant`` continues MCE-F (Eq. 16, ``false_positives='gold'``)
from that model (``warm_start=True``) and is scored on the held-out
sentences. ``--init zero`` runs the variants from zero parameters instead
(Table 1), to check that a candidate default does not hurt MCE-F from zero.

Variants (``NAME`` or ``NAME:VALUE``)::

    default          the package defaults (alpha=1, C=--C, the loss's solver)
    alpha:A          SegmentFScoreMCE(alpha=A)
    C:C              the MCE-F stage's C (the start keeps --init-C)
    centred:C        GaussianPrior(mean=<the start's parameters>) with this C:
                     MCE-F as a regularised refinement of MAP
    centred_alpha:A  the centred prior (C=--C) and alpha=A
    solver:S         solver S ('rprop', 'quickprop', 'sgd', 'paper' =
                     [('sgd', 10), 'quickprop'])
    epochs:N         N SGD epochs, then QuickProp ([('sgd', N), 'quickprop'])
    batch:N          the SGD epochs on minibatches of N sequences
                     ([(SGD(batch_size=N), 10), 'quickprop'])
    eta0:E           the SGD epochs' first step size (a float; 'auto' is the
                     default, calibrated on minibatches of the same size)
    average:A        the SGD epochs' averaging (0: none, K: after K
                     sequences; the default starts after one epoch)
    second:S         ten SGD epochs, then solver S ([('sgd', 10), S], e.g. 'lbfgs')
    tol:T            the estimator's tol (the stopping test of every stage)
    halvings:N       ten SGD epochs, then QuickProp halving a step that raises
                     the objective N times (then 2 N times along the negative
                     gradient) before it stops (the solver's default: 5)
    anneal:A         alpha=A first (the default solver), then the paper's
                     alpha=1 continued from that model (the default solver)
    then:B           the variant's fit, then MCE-F with beta=B ('auto': 0 from
                     a fit) continued from that model (the default solver)
    chunks           segment_match='chunks'
    fp:F             SegmentFScoreMCE(false_positives=F)
    beta:B           SegmentFScoreMCE(beta=B), the sigmoid's offset (Eq. 8)
    seed:S           the estimator's random_state (default 0): the SGD
                     epochs' order and calibration sample

Variants joined by ``+`` combine (``C:10+epochs:30``).

With ``--curve`` every fit records the development F1 after each
iteration (a three-argument callback; iteration numbers run on across the
stages of a schedule) and prints the best one and where it was.

Every fit is cached (``--cache``: the MAP start as a pickle, each variant's
development F1 and predictions as JSON), so a run cut short resumes; with
``--test`` the variants are refitted on the full training set and tested
against MAP of the same start C (paired bootstrap and McNemar)::

    SKLEARN_CRFLOSS_DATA=../shared/data nice -n 15 python benchmarks/mcef_defaults.py \\
        --variant default alpha:0.1 C:10 centred:1 solver:paper

Timed runs are never tests; see benchmarks/README.md for measured tables.
"""

import argparse
import copy
import hashlib
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import cached, training_objective  # noqa: E402
from mce_table import conll2000_features  # noqa: E402
from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.losses import SegmentFScoreMCE  # noqa: E402
from sklearn_crfloss.metrics import (mcnemar_test, paired_bootstrap_test,  # noqa: E402
                                     segment_f1_score)
from sklearn_crfloss.priors import GaussianPrior  # noqa: E402
from sklearn_crfloss.solvers import SGD, QuickProp  # noqa: E402

SOLVERS = {"paper": [("sgd", 10), "quickprop"]}
ETA0 = []  # the first step size of every SGD stage run (recorded with each fit)
_sgd_solve = SGD.solve


def _recording_solve(self, *args, **kwargs):
    try:
        return _sgd_solve(self, *args, **kwargs)
    finally:
        ETA0.append(getattr(self, "eta0_", None))


SGD.solve = _recording_solve


def make_stage(variant, args, theta0):
    """``(loss, set_params kwargs)`` of one variant (``+`` joins variants)."""
    loss_kw, params = {}, dict(C=args.C, solver=None, prior="l2")
    for part in variant.split("+"):
        _apply(part, args, theta0, loss_kw, params)
    sgd_kw, epochs = params.pop("sgd", {}), params.pop("epochs", None)
    if sgd_kw or epochs is not None:
        if params["solver"] is not None:
            raise ValueError(f"{variant!r}: SGD options and a solver variant do not combine")
        params["solver"] = [(SGD(random_state=params.get("random_state", 0), **sgd_kw),
                             epochs or 10), "quickprop"]
    return SegmentFScoreMCE(**loss_kw), params


def _apply(variant, args, theta0, loss_kw, params):
    name, _, value = variant.partition(":")
    if name == "epochs":
        params["epochs"] = int(value)
    elif name == "seed":
        params["random_state"] = int(value)
    elif name == "batch":
        params.setdefault("sgd", {})["batch_size"] = int(value)
    elif name == "eta0":
        params.setdefault("sgd", {})["eta0"] = float(value)
    elif name == "average":
        params.setdefault("sgd", {})["average"] = int(value) or False
    elif name == "second":
        params["solver"] = [("sgd", 10), value]
    elif name == "halvings":
        params["solver"] = [("sgd", 10), _quickprop(int(value))]
    elif name == "tol":
        params["tol"] = float(value)
    elif name == "anneal":
        params["anneal"] = float(value)
    elif name == "then":
        params["then_beta"] = value if value == "auto" else float(value)
    elif name == "alpha":
        loss_kw["alpha"] = float(value)
    elif name == "C":
        params["C"] = float(value)
    elif name in ("centred", "centred_alpha"):
        params["prior"] = GaussianPrior(mean=theta0)
        if name == "centred":
            params["C"] = float(value)
        else:
            loss_kw["alpha"] = float(value)
    elif name == "solver":
        params["solver"] = SOLVERS.get(value, value)
    elif name == "beta":
        loss_kw["beta"] = float(value)
    elif name == "fp":
        loss_kw["false_positives"] = value
    elif name == "chunks":
        loss_kw["segment_match"] = "chunks"
    elif name != "default":
        raise ValueError(f"unknown variant {variant!r}")


def _quickprop(halvings):
    """A QuickProp that halves a rising step ``halvings`` times (its fall-back twice that)."""
    return type(f"QuickProp{halvings}", (QuickProp,), {"max_halvings": halvings})()


def run(F_tr, y_tr, F_ev, y_ev, args, tag):
    """MAP start and every variant on one split; ``tag`` names the split in the cache."""
    key = f"{tag}-{args.template}-{args.init_C:g}-{len(F_tr)}-{len(F_ev)}"

    def fit_map():
        t0 = time.perf_counter()
        crf = CRFTagger(C=args.init_C, n_jobs=args.n_jobs).fit(F_tr, y_tr)
        return crf, time.perf_counter() - t0

    start, sec = cached(os.path.join(args.cache, f"map-{key}.pkl"), fit_map)
    map_pred = [list(p) for p in start.predict(F_ev)]
    print(f"[{tag}] MAP C={args.init_C:g}: F1 {100 * segment_f1_score(y_ev, map_pred):.2f}, "
          f"{start.n_iter_} iterations, {sec:.0f} s", flush=True)
    objective, theta0, _, _ = training_objective(start, F_tr, y_tr, n_threads=args.n_jobs)
    assert theta0.size == start.n_parameters_
    for alpha in args.saturation_alphas:
        loss = SegmentFScoreMCE(alpha=alpha)
        loss.set_classes(start.classes_)
        value = objective.value_and_grad(theta0, loss, GaussianPrior(), args.C)[0]
        print(f"[{tag}] at the start, alpha={alpha:g}: saturation_ {loss.saturation_:.3f}, "
              f"objective {value:.1f}", flush=True)
    out = {}
    for variant in args.variant:
        vkey = hashlib.md5(f"{key}-{variant}-{args.C:g}-{args.init}-{args.max_iter}"
                           f"{'-curve' if args.curve else ''}".encode()).hexdigest()[:10]
        path = os.path.join(args.cache, f"var-{vkey}.pkl")

        def fit_variant(variant=variant):
            loss, params = make_stage(variant, args, theta0)
            anneal, then = params.pop("anneal", None), params.pop("then_beta", None)
            seed = params.pop("random_state", 0)
            final_loss, two = loss, anneal is not None or then is not None
            if anneal is not None:  # the first stage at the small slope
                loss = copy.deepcopy(loss).set_params(alpha=anneal)
            if then is not None:  # the second stage at another offset
                final_loss = copy.deepcopy(loss).set_params(beta=then)
            curve = []
            if args.curve:
                params["callback"] = lambda k, value, model: curve.append(
                    (k, float(value), 100 * segment_f1_score(y_ev, model.predict(F_ev))))
            t0 = time.perf_counter()
            del ETA0[:]
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if args.init == "map":
                    crf = copy.deepcopy(start)
                    crf.set_params(loss=loss, warm_start=True, max_iter=args.max_iter,
                                   random_state=seed, **params)
                else:
                    if params["prior"] != "l2":
                        raise ValueError("the centred prior needs --init map")
                    crf = CRFTagger(loss=loss, max_iter=args.max_iter, random_state=seed,
                                    n_jobs=args.n_jobs, init=None, **params)
                crf.fit(F_tr, y_tr)
                if two:
                    first = list(map(float, crf.loss_curve_))
                    crf.set_params(loss=final_loss, warm_start=True, init=None)
                    crf.fit(F_tr, y_tr)
            sec = time.perf_counter() - t0
            sat = getattr(crf.loss, "saturation_", float("nan"))
            pred = [list(p) for p in crf.predict(F_ev)]
            return dict(variant=variant, f1=100 * segment_f1_score(y_ev, pred), pred=pred,
                        n_iter=crf.n_iter_, stop=crf.stop_reason_, sec=sec, eta0=list(ETA0),
                        saturation=sat, loss_curve=list(map(float, crf.loss_curve_)),
                        first_curve=first if two else None, dev_curve=curve,
                        warnings=sorted({str(w.message)[:90] for w in caught}))

        r = cached(path, fit_variant)
        out[variant] = r
        curve = r["loss_curve"]
        fall = 100 * (1 - curve[-1] / curve[0]) if len(curve) > 1 and curve[0] else 0.0
        print(f"[{tag}] {variant:<18} init={args.init} F1 {r['f1']:.2f} "
              f"({r['f1'] - 100 * segment_f1_score(y_ev, map_pred):+.2f}) "
              f"iters {r['n_iter']} ({r['stop']}) objective -{fall:.1f}% "
              f"{r['sec']:.0f} s  load {os.getloadavg()[0]:.1f}  {r['warnings']}"
              + (f" eta0 {', '.join(f'{e:.3g}' for e in r['eta0'] if e)}" if r.get("eta0") else "")
              + f"  final objective {curve[-1]:.1f}", flush=True)
        if r.get("dev_curve"):
            _print_curve(tag, r["dev_curve"])
    return map_pred, out


def _print_curve(tag, curve):
    """The best development F1 of a ``--curve`` fit and the F1 every tenth iteration."""
    k, _, f1 = max(curve, key=lambda r: r[2])
    print(f"[{tag}]   best F1 {f1:.2f} at iteration {k}; per iteration (k: objective, F1): "
          + ", ".join(f"{k}: {v:.1f}, {f:.2f}" for k, v, f in curve
                      if k % 10 == 0 or k == curve[-1][0]), flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variant", nargs="*", default=["default"],
                   help="given without a value: only the MAP start")
    p.add_argument("--init", choices=["map", "zero"], default="map")
    p.add_argument("--init-C", type=float, default=1.0, help="C of the MAP start")
    p.add_argument("--C", type=float, default=1.0, help="C of the MCE-F stage")
    p.add_argument("--dev", type=int, default=2000)
    p.add_argument("--train-sentences", type=int, default=None, help="prefix, quick runs")
    p.add_argument("--template", default="conll2000", choices=["conll2000", "suzuki2006"])
    p.add_argument("--max-iter", type=int, default=60)
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--test", action="store_true",
                   help="refit on the full training set, test against MAP")
    p.add_argument("--saturation-alphas", type=float, nargs="*", default=[],
                   help="print the start's saturation_ at these alpha")
    p.add_argument("--against-C", type=float, nargs="*", default=[],
                   help="with --test: also test against MAP of these C")
    p.add_argument("--curve", action="store_true",
                   help="record the evaluation split's F1 after every iteration")
    p.add_argument("--n-resamples", type=int, default=2000)
    p.add_argument("--cache", default="benchmarks/results/mcef_defaults")
    args = p.parse_args(argv)
    os.makedirs(args.cache, exist_ok=True)
    print("command:", " ".join(["python"] + sys.argv), flush=True)
    F, y, F_te, y_te = conll2000_features(args.template, args.train_sentences,
                                          None if args.test else 0)
    if not args.test:
        n_fit = len(F) - args.dev
        run(F[:n_fit], y[:n_fit], F[n_fit:], y[n_fit:], args, "dev")
        return
    map_pred, out = run(F, y, F_te, y_te, args, "test")
    against = {args.init_C: map_pred}
    for C in args.against_C:
        start, _ = cached(os.path.join(
            args.cache, f"map-test-{args.template}-{C:g}-{len(F)}-{len(F_te)}.pkl"),
            lambda C=C: (CRFTagger(C=C, n_jobs=args.n_jobs).fit(F, y), None))
        against[C] = [list(p) for p in start.predict(F_te)]
        print(f"[test] MAP C={C:g}: F1 {100 * segment_f1_score(y_te, against[C]):.2f}, "
              f"{start.n_iter_} iterations", flush=True)
    for C, map_pred in against.items():
        _test_table(y_te, map_pred, out, C, args)


def _test_table(y_te, map_pred, out, C, args):
    print(f"\nagainst MAP (C={C:g}), {args.n_resamples} resamples, "
          f"load {os.getloadavg()}")
    print("| variant | test F1 | vs MAP | 95% CI | p (bootstrap) | p (McNemar sent. / tok.) |")
    print("|---|---|---|---|---|---|")
    for variant, r in out.items():
        boot = paired_bootstrap_test(y_te, r["pred"], map_pred, n_resamples=args.n_resamples,
                                     random_state=0)
        sent = mcnemar_test(y_te, r["pred"], map_pred, unit="sentence")
        tok = mcnemar_test(y_te, r["pred"], map_pred, unit="token")
        lo, hi = boot.confidence_interval
        print(f"| {variant} | {r['f1']:.2f} | {100 * boot.difference:+.2f} | "
              f"[{100 * lo:+.2f}, {100 * hi:+.2f}] | {boot.pvalue:.3g} | "
              f"{sent.pvalue:.2g} / {tok.pvalue:.2g} |", flush=True)


if __name__ == "__main__":
    main()
