"""Where the time of one CRFTagger fit goes, per objective evaluation.

Fits ``CRFTagger(loss='cll', prior='l2', C=1.0)`` on CoNLL-2000 (CRF++
template features) for ``--max-iter`` iterations and reports the wall and
process CPU time spent in each stage, accumulated by wrapping the stage
functions:

- ``fused kernel``: ``_forward_backward.cll_features_batch``, the whole model
  side of the conditional log-likelihood (per sequence: the unary rows from
  the features, the scaled forward-backward, the expected counts scattered
  into the gradient),
- ``objective``: one whole evaluation (the kernel plus the numpy glue: the
  dense rows of the hybrid weights, the threads' accumulators, the observed
  counts, the prior),
- ``lbfgs``: scipy's L-BFGS-B step (``setulb``), per iteration.

Usage::

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/profile_fit.py [--max-iter 30] [--n-jobs 2]
"""

import argparse
import collections
import time
import warnings

import scipy.optimize._lbfgsb_py as lbfgsb_py

import sklearn_crfloss._model._objective as objective_module
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures

wall = collections.defaultdict(float)
cpu = collections.defaultdict(float)
counts = collections.defaultdict(int)


def timed(owner, name, key):
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            wall[key] += time.perf_counter() - t0
            cpu[key] += time.process_time() - c0
            counts[key] += 1

    setattr(owner, name, wrapper)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-iter", type=int, default=30)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    timed(objective_module, "cll_features_batch", "fused kernel")
    timed(objective_module.CRFObjective, "value_and_grad", "objective")
    timed(lbfgsb_py._lbfgsb, "setulb", "lbfgs")

    X, y = load_conll2000("train")
    features = TemplateFeatures(CONLL2000_TEMPLATE).fit_transform(X)
    crf = CRFTagger(max_iter=args.max_iter, n_jobs=args.n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        crf.fit(features, y)
        fit = time.perf_counter() - t0
    n_eval = counts["objective"]
    print(f"fit {fit:.2f} s, {crf.n_iter_} iterations, {n_eval} objective evaluations, "
          f"n_jobs={args.n_jobs}")
    print(f"{'':17s} {'wall s':>8s} {'CPU s':>8s}")
    for key in ("fused kernel", "objective"):
        print(f"{key:17s} {wall[key] / n_eval:8.4f} {cpu[key] / n_eval:8.4f}  per evaluation")
    print(f"{'lbfgs':17s} {wall['lbfgs'] / crf.n_iter_:8.4f} {cpu['lbfgs'] / crf.n_iter_:8.4f}"
          "  per iteration (scipy setulb)")


if __name__ == "__main__":
    main()
