"""MCE-F from MAP on CoNLL-2002 Spanish NER (Suzuki et al. 2006's NER direction).

MAP (``loss='cll'``, L2) with C chosen on esp.testa from ``--map-C-grid``;
then MCE-F (``loss='mce_f'``, package defaults otherwise) warm-started from
that MAP model with its own C chosen on esp.testa from ``--mcef-C-grid``
(the start's C stays MAP's). The chosen pair is tested on esp.testb against
MAP: paired bootstrap of segment F1 over sentences
(:func:`sklearn_crfloss.metrics.paired_bootstrap_test`) and McNemar's test
on sentence and token correctness (:func:`sklearn_crfloss.metrics.mcnemar_test`).
Features: ``featurize`` of ``examples/conll2002_cost_losses.py``. Run from a
checkout, with ``nice`` on a shared machine::

    SKLEARN_CRFLOSS_DATA=../shared/data nice -n 15 python benchmarks/mcef_ner.py \\
        --map-C-grid 5 50 --mcef-C-grid 5 50 500

Every fit is cached under ``--cache`` (the MAP models as pickles, each
MCE-F fit's scores and predictions), so a run cut short resumes. MCE-F fits
use ``random_state=0`` (the default solver's SGD epochs shuffle).
"""

import argparse
import copy
import os
import sys
import time
import warnings

from sklearn.exceptions import ConvergenceWarning

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "examples"))

from _common import add_bootstrap_arguments, cached, paired_tests_line  # noqa: E402
from conll2002_cost_losses import featurize  # noqa: E402
from conll2002_significance import as_lists  # noqa: E402

from sklearn_crfloss import CRFTagger, metrics  # noqa: E402
from sklearn_crfloss.datasets import load_conll2002  # noqa: E402
from sklearn_crfloss.losses import SegmentFScoreMCE  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--map-C-grid", type=float, nargs="+", default=[5.0, 50.0])
    p.add_argument("--mcef-C-grid", type=float, nargs="+", default=[5.0, 50.0, 500.0])
    p.add_argument("--mcef-max-iter", type=int, default=None,
                   help="max_iter of the MCE-F stage (default: the estimator's)")
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--segment-match", default="labels", choices=["labels", "chunks"])
    p.add_argument("--cache", default="benchmarks/results/mcef_ner")
    p.add_argument("--seeds", type=int, nargs="*", default=[],
                   help="refit the chosen MCE-F C with these random_state values too")
    add_bootstrap_arguments(p)
    args = p.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)
    print("command:", " ".join(["python"] + sys.argv), flush=True)
    (X_tr, y_tr), (X_a, y_a), (X_b, y_b) = (load_conll2002("esp", part)
                                            for part in ("train", "testa", "testb"))
    if args.train_sentences:
        X_tr, y_tr = X_tr[:args.train_sentences], y_tr[:args.train_sentences]
    F_tr, F_a, F_b = featurize(X_tr), featurize(X_a), featurize(X_b)

    def evaluate(crf, name, secs):
        pred_a, pred_b = as_lists(crf.predict(F_a)), as_lists(crf.predict(F_b))
        f1_a = metrics.segment_f1_score(y_a, pred_a)
        print(f"  {name}: testa F1 {100 * f1_a:.2f}, {crf.n_iter_} iterations, "
              f"{secs:.0f} s, stop {crf.stop_reason_}", flush=True)
        return f1_a, pred_b

    os.makedirs(args.cache, exist_ok=True)
    n_tr = len(F_tr)

    def fit_map(C):
        t0 = time.perf_counter()
        crf = CRFTagger(loss="cll", C=C, n_jobs=args.n_jobs).fit(F_tr, y_tr)
        return crf, time.perf_counter() - t0

    maps = {}
    for C in args.map_C_grid:
        crf, secs = cached(os.path.join(args.cache, f"map-{n_tr}-{C:g}.pkl"),
                           lambda C=C: fit_map(C))
        maps[C] = (crf,) + evaluate(crf, f"MAP C={C:g}", secs)
    map_C = max(maps, key=lambda c: maps[c][1])
    start, _, map_b = maps[map_C]
    mcefs = {}
    loss = SegmentFScoreMCE(segment_match=args.segment_match)

    def fit_mcef(C, seed=0):
        crf = copy.deepcopy(start).set_params(loss=loss, C=C, warm_start=True,
                                              random_state=seed)
        if args.mcef_max_iter:
            crf.set_params(max_iter=args.mcef_max_iter)
        t0 = time.perf_counter()
        crf.fit(F_tr, y_tr)
        secs = time.perf_counter() - t0
        return evaluate(crf, f"MCE-F from MAP(C={map_C:g}) C={C:g}", secs) + (
            crf.n_iter_, crf.stop_reason_, secs)

    def cached_mcef(C, seed=0):
        name = (f"mcef-{n_tr}-{map_C:g}-{C:g}-{args.segment_match}-{args.mcef_max_iter}"
                + (f"-s{seed}" if seed else "") + ".pkl")
        f1_a, pred_b, n_iter, stop, secs = cached(os.path.join(args.cache, name),
                                                  lambda: fit_mcef(C, seed))
        print(f"  MCE-F from MAP(C={map_C:g}) C={C:g} random_state={seed}: testa F1 "
              f"{100 * f1_a:.2f}, {n_iter} iterations, {secs:.0f} s, stop {stop} (load "
              f"{os.getloadavg()[0]:.1f})", flush=True)
        return f1_a, pred_b

    for C in args.mcef_C_grid:
        mcefs[C] = cached_mcef(C)
    mcef_C = max(mcefs, key=lambda c: mcefs[c][0])
    pred_b = mcefs[mcef_C][1]
    print(f"\nesp.testb, MCE-F from MAP (C={mcef_C:g}) vs MAP (C={map_C:g}): "
          + paired_tests_line(y_b, pred_b, map_b, args.n_resamples, args.random_state),
          flush=True)
    for seed in args.seeds:
        pred_b = cached_mcef(mcef_C, seed)[1]
        print(f"esp.testb, random_state={seed}: "
              + paired_tests_line(y_b, pred_b, map_b, args.n_resamples, args.random_state),
              flush=True)


if __name__ == "__main__":
    main()
