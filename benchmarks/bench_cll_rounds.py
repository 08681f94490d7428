"""One CLL evaluation on CoNLL-2000 with the state blocks summed by rounds or apart.

The fused CLL kernel adds the expected counts of sequence ``k`` into block
``(k // 8) % n_blocks`` and the gradient is the blocks' sum in block order.
By rounds (``CRFObjective.ROUNDS_MAX_THREADS``), each thread fills one
block at a time and the blocks are added into the gradient between rounds;
apart, all the blocks are filled, then summed. This times
``CRFObjective.value_and_grad`` (CLL + L2, ``C = 1``) both ways in one
process, interleaved, on the objective of a short fit (CRF++ template
features), BLAS limited to one thread as in ``fit``, and checks that the
two give the same value and gradient, bitwise. With ``--n-jobs 1`` the
times are the thread's CPU time (steadier on a shared machine), else wall
time.

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/bench_cll_rounds.py [--n-jobs 1] [--repeats 30]
"""

import argparse
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from _common import print_run_header, training_objective
from sklearn_crfloss import CRFTagger
from sklearn_crfloss._model._objective import CRFObjective
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
from sklearn_crfloss.losses import ConditionalLogLikelihood
from sklearn_crfloss.priors import get_prior


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
    ways = {"apart": 0, "rounds": 64}
    times = {way: [] for way in ways}
    results = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(args.repeats):
            for way, max_threads in ways.items():
                CRFObjective.ROUNDS_MAX_THREADS = max_threads
                t0 = clock()
                results[way] = objective.value_and_grad(theta, loss, prior, 1.0)
                times[way].append(clock() - t0)
    same = (results["apart"][0] == results["rounds"][0]
            and np.array_equal(results["apart"][1], results["rounds"][1]))
    kind = "thread CPU" if args.n_jobs == 1 else "wall"
    print(f"n_jobs={args.n_jobs}, {args.repeats} interleaved repeats, {kind} ms per evaluation:")
    for way, t in times.items():
        print(f"  {way:7s} min {1e3 * min(t):7.2f}  median {1e3 * np.median(t):7.2f}")
    print(f"bitwise the same value and gradient: {same}")


if __name__ == "__main__":
    main()
