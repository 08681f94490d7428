"""MCE-F from the MAP model on CoNLL-2000 with other solvers and step sizes.

A companion to ``mce_table.py`` (Suzuki et al. 2006, Table 2): fits MAP
(CLL + L2) once with ``SUZUKI2006_TEMPLATE`` features at ``--C``, then
continues a copy of it with ``SegmentFScoreMCE(false_positives='gold')``
(the default) and each solver setting below, ``warm_start=True``, at most
``--max-iter`` iterations, ``tol=1e-7``. For each it prints the iterations,
the training objective (MCE-F + L2 of ``--C``) at the MAP start and at the
end (the solvers return their best iterate), the test segment F1, the
paired bootstrap against MAP (2,000 resamples, ``random_state=0``), fit
seconds and the objective after every iteration (``loss_curve_``)::

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/mcef_from_map_solvers.py --C 10000

Timed runs are never tests; measured output is in benchmarks/README.md.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mce_table import conll2000_features, copy_fitted, evaluate, objective_at  # noqa: E402
from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.losses import SegmentFScoreMCE  # noqa: E402
from sklearn_crfloss.metrics import paired_bootstrap_test  # noqa: E402
from sklearn_crfloss.solvers import QuickProp, Rprop  # noqa: E402

SOLVERS = {
    "quickprop (default, epsilon=0.01)": lambda: QuickProp(),
    "quickprop epsilon=0.001": lambda: QuickProp(epsilon=0.001),
    "quickprop epsilon=0.0001": lambda: QuickProp(epsilon=0.0001),
    "rprop (delta0=0.01)": lambda: Rprop(),
    "rprop delta0=0.001": lambda: Rprop(delta0=0.001),
    "lbfgs": lambda: "lbfgs",
}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--C", type=float, default=10000.0)
    p.add_argument("--max-iter", type=int, default=200)
    p.add_argument("--n-jobs", type=int, default=2)
    args = p.parse_args(argv)
    print("command:", " ".join(["python"] + sys.argv), flush=True)
    F_train, y_train, F_test, y_test = conll2000_features("suzuki2006")
    t0 = time.perf_counter()
    base = CRFTagger(C=args.C, max_iter=1000, n_jobs=args.n_jobs).fit(F_train, y_train)
    f1_map, _, pred_map = evaluate(base, F_test, y_test)
    print(f"MAP C={args.C:g}: test F1 {f1_map:.2f}, "
          f"{base.n_iter_} iterations, {time.perf_counter() - t0:.0f} s", flush=True)
    for name, make_solver in SOLVERS.items():
        crf = copy_fitted(base)
        start = objective_at(crf, F_train, y_train, SegmentFScoreMCE(), args.C, args.n_jobs)
        crf.set_params(loss=SegmentFScoreMCE(), warm_start=True, solver=make_solver(),
                       max_iter=args.max_iter, tol=1e-7, random_state=0)
        t0 = time.perf_counter()
        crf.fit(F_train, y_train)
        seconds = time.perf_counter() - t0
        end = objective_at(crf, F_train, y_train, SegmentFScoreMCE(), args.C, args.n_jobs)
        f1, _, pred = evaluate(crf, F_test, y_test)
        test = paired_bootstrap_test(y_test, pred, pred_map, n_resamples=2000, random_state=0)
        print(f"{name:<34} iterations={crf.n_iter_:<3} objective {start:.1f} -> {end:.1f} "
              f"({100 * (1 - end / start):.1f}%)  test F1 "
              f"{f1:.2f} ({100 * test.difference:+.2f}, "
              f"p={test.pvalue:.3g})  {seconds:.0f} s", flush=True)
        print("    objective per iteration:", np.round(crf.loss_curve_, 1).tolist(), flush=True)


if __name__ == "__main__":
    main()
