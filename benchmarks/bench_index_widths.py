"""One CLL evaluation on CoNLL-2000 with 32-bit or 64-bit index arrays.

The objective keeps the CSR's own int32 row pointers (the feature kernels are
compiled for int32 and intp ones) and the dense rows' pair indices
(``StateWeights.hot_index``, ``hot_position``) as int32 where they fit. This
times ``CRFObjective.value_and_grad`` (CLL + L2, ``C = 1``) on the objective
of a short fit (CRF++ template features) with those arrays as int32 and as
int64 copies, in one process, interleaved, BLAS limited to one thread as in
``fit``, and checks that both give the same value and gradient, bitwise.
With ``--n-jobs 1`` the times are the thread's CPU time, else wall time.

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/bench_index_widths.py [--n-jobs 1] [--repeats 30]
"""

import argparse
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from _common import print_run_header, training_objective
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
from sklearn_crfloss.losses import ConditionalLogLikelihood
from sklearn_crfloss.priors import get_prior


def widths(objective):
    """``{width: (csr, hot_index, hot_position)}`` for int32 and int64 index arrays."""
    csr, weights = objective.csr, objective.state_weights
    return {name: ((csr[0].astype(dtype),) + csr[1:], weights.hot_index.astype(dtype),
                   weights.hot_position.astype(dtype))
            for name, dtype in (("int32", np.int32), ("int64", np.int64))}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    print_run_header(("sklearn_crfloss", "numpy", "scipy"))
    X, y = load_conll2000("train")
    F = TemplateFeatures(CONLL2000_TEMPLATE).fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRFTagger(max_iter=5).fit(F, y)
    objective, theta, _, _ = training_objective(crf, F, y, n_threads=args.n_jobs)
    loss, prior = ConditionalLogLikelihood(), get_prior("l2")
    clock = time.thread_time if args.n_jobs == 1 else time.perf_counter
    ways = widths(objective)
    times = {way: [] for way in ways}
    results = {}
    weights = objective.state_weights
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(args.repeats):
            for way, (csr, hot_index, hot_position) in ways.items():
                objective.csr, weights.hot_index, weights.hot_position = csr, hot_index, hot_position
                t0 = clock()
                value, grad = objective.value_and_grad(theta, loss, prior, 1.0)
                times[way].append(clock() - t0)
                results[way] = (value, grad.copy())
    same = (results["int32"][0] == results["int64"][0]
            and np.array_equal(results["int32"][1], results["int64"][1]))
    kind = "thread CPU" if args.n_jobs == 1 else "wall"
    print(f"n_jobs={args.n_jobs}, {args.repeats} interleaved repeats, {kind} ms per evaluation:")
    for way, t in times.items():
        print(f"  {way}  min {1e3 * min(t):7.2f}  median {1e3 * np.median(t):7.2f}")
    print(f"bitwise the same value and gradient: {same}")


if __name__ == "__main__":
    main()
