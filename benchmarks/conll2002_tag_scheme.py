"""Which tag scheme to train in: ``CRFTagger(tag_scheme=...)`` on CoNLL-2002 esp.

Two versions of the corpus: the labels as distributed (IOB2) and the same
chunks written in IOB1 (:func:`sklearn_crfloss.segments.convert_scheme` on
train, testa and testb). On each, CLL + L2 is fitted with ``tag_scheme=None``
(the labels as given, the baseline), ``'iob2'``, ``'iobes'`` and ``'bilou'``;
the predictions come back in the version's own scheme and are scored with
conlleval segment F1 against its gold labels. Every row is tested against the
baseline on esp.testb with :func:`sklearn_crfloss.metrics.paired_bootstrap_test`
(paired over sentences).

Features: ``featurize`` of ``examples/conll2002_cost_losses.py`` (the
features of the Gimpel & Smith table), C = 50 (CLL's C chosen on testa
there), L-BFGS, tol 1e-5, ``n_jobs=1``. Run from a checkout::

    SKLEARN_CRFLOSS_DATA=../shared/data nice -n 10 python benchmarks/conll2002_tag_scheme.py
"""

import argparse
import os
import sys
import time


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "examples"))

from _common import parse_significance_run  # noqa: E402
from conll2002_cost_losses import featurize  # noqa: E402

from sklearn_crfloss import CRFTagger, metrics  # noqa: E402
from sklearn_crfloss.datasets import load_conll2002  # noqa: E402
from sklearn_crfloss.segments import convert_scheme  # noqa: E402

SCHEMES = [None, "iob2", "iobes", "bilou"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--inputs", nargs="+", default=["iob2", "iob1"], choices=["iob2", "iob1"],
                   help="versions of the corpus: as distributed (iob2) or written in IOB1")
    p.add_argument("--C", type=float, default=50.0)
    p.add_argument("--max-iter", type=int, default=1000)
    args = parse_significance_run(p, argv)

    (X_tr, y_tr), (X_a, y_a), (X_b, y_b) = (load_conll2002("esp", part)
                                            for part in ("train", "testa", "testb"))
    if args.train_sentences:
        X_tr, y_tr = X_tr[:args.train_sentences], y_tr[:args.train_sentences]
    F_tr, F_a, F_b = featurize(X_tr), featurize(X_a), featurize(X_b)
    for given in args.inputs:
        gold = [y if given == "iob2" else convert_scheme(y, "iob1") for y in (y_tr, y_a, y_b)]
        rows = {}
        for scheme in SCHEMES:
            t0 = time.perf_counter()
            crf = CRFTagger(C=args.C, max_iter=args.max_iter, tol=1e-5, n_jobs=1,
                            tag_scheme=scheme).fit(F_tr, gold[0])
            rows[scheme] = dict(pred_a=crf.predict(F_a), pred_b=crf.predict(F_b),
                                fit_s=time.perf_counter() - t0, n_iter=crf.n_iter_,
                                n_labels=len(crf.classes_))
            print(f"  {given}: tag_scheme={scheme!r} fitted in {rows[scheme]['fit_s']:.0f} s "
                  f"({crf.n_iter_} iterations), load {open('/proc/loadavg').read().split()[0]}",
                  flush=True)
        print(f"\nlabels as given: {given.upper()}; tests on esp.testb against "
              f"tag_scheme=None (paired bootstrap: {args.n_resamples} resamples, "
              f"random_state={args.random_state})\n")
        print("| tag_scheme | labels | testa F1 | testb F1 | diff. | 95% CI | bootstrap p "
              "| fit s | iterations |")
        print("|---|---|---|---|---|---|---|---|---|")
        for scheme, r in rows.items():
            boot = metrics.paired_bootstrap_test(gold[2], r["pred_b"], rows[None]["pred_b"],
                                                 n_resamples=args.n_resamples,
                                                 random_state=args.random_state)
            lo, hi = boot.confidence_interval
            print(f"| {scheme} | {r['n_labels']} "
                  f"| {100 * metrics.segment_f1_score(gold[1], r['pred_a']):.2f} "
                  f"| {100 * boot.score_a:.2f} | {100 * boot.difference:+.2f} "
                  f"| [{100 * lo:+.2f}, {100 * hi:+.2f}] | {boot.pvalue:.3g} "
                  f"| {r['fit_s']:.0f} | {r['n_iter']} |", flush=True)
        print()


if __name__ == "__main__":
    main()
