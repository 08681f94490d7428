"""Where the time of one CRFTagger fit goes, per objective evaluation.

Fits ``CRFTagger(loss='cll', prior='l2', C=1.0)`` on CoNLL-2000 (CRF++
template features) for ``--max-iter`` iterations and reports the wall time
spent in each stage, accumulated by wrapping the stage functions:

- ``potentials``: the feature kernel ``U = X @ W`` (``_potentials.dense_potentials``),
- ``forward_backward``: the sum-product kernel inside the loss,
- ``gradient``: the feature kernel ``dW = X.T @ dU`` (``_potentials.dense_gradient``),
- ``objective``: one whole evaluation (the above plus numpy glue and the prior),
- ``lbfgs``: scipy's L-BFGS-B step (``setulb``), per iteration.

Usage::

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/profile_fit.py [--max-iter 30] [--n-jobs 2]
"""

import argparse
import collections
import time
import warnings

import scipy.optimize._lbfgsb_py as lbfgsb_py

import sklearn_crfloss._objective as objective_module
import sklearn_crfloss.losses._likelihood as likelihood_module
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures

totals = collections.defaultdict(float)
counts = collections.defaultdict(int)


def timed(owner, name, key):
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            totals[key] += time.perf_counter() - t0
            counts[key] += 1

    setattr(owner, name, wrapper)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-iter", type=int, default=30)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    timed(objective_module, "dense_potentials", "potentials")
    timed(objective_module, "dense_gradient", "gradient")
    timed(likelihood_module, "forward_backward", "forward_backward")
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
    for key in ("potentials", "forward_backward", "gradient", "objective"):
        print(f"{key:17s} {totals[key] / n_eval:.4f} s per evaluation")
    print(f"{'lbfgs':17s} {totals['lbfgs'] / crf.n_iter_:.4f} s per iteration (scipy setulb)")


if __name__ == "__main__":
    main()
