"""One CLL evaluation on CoNLL-2000 with the rows ordered by attribute class, and without.

The objective orders each token's stored features by class (dense row,
compact with 1, 2, 3 labels; ``StateWeights.order``), so that the feature
kernels' branches on the class are predicted. This times
``objective.value_and_grad`` (CLL + L2, C = 1, at a model fitted for 5
iterations) against the same objective on its rows in column order,
interleaved evaluation by evaluation in one process: the minimum and median
of ``--reps`` evaluations of each, wall and thread CPU time, and the
differences of the value and gradient. Also the time of the ordering pass.

    python benchmarks/bench_entry_order.py --n-jobs 1 --reps 30
"""

import argparse
import copy
import os
import time
import warnings

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from _common import command_line, machine_info, training_objective


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    print(command_line(["SKLEARN_CRFLOSS_DATA"]))
    print(machine_info())
    from sklearn_crfloss import CRFTagger
    from sklearn_crfloss._model._objective import kernel_csr
    from sklearn_crfloss.datasets import load_conll2000
    from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
    from sklearn_crfloss.losses import ConditionalLogLikelihood
    from sklearn_crfloss.priors import get_prior

    X, y = load_conll2000("train", download_if_missing=False)
    F = TemplateFeatures(CONLL2000_TEMPLATE).fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRFTagger(max_iter=5).fit(F, y)
    ordered, theta, _, _ = training_objective(crf, F, y, n_threads=args.n_jobs)
    indptr, indices, data, binary = ordered.csr
    generic = copy.copy(ordered)  # the same objective, its rows in column order
    generic.csr = kernel_csr(sp.csr_matrix((np.ones(indices.shape[0], dtype=np.int8), indices,
                                            indptr), shape=(ordered.n_tokens,
                                                            ordered.n_features)).sorted_indices())
    t0 = time.perf_counter()
    ordered.state_weights.order(generic.csr)
    print(f"ordering pass (a copy of {indices.shape[0]:,} entries): "
          f"{1e3 * (time.perf_counter() - t0):.1f} ms")
    loss, prior = ConditionalLogLikelihood(), get_prior("l2")

    variants = {"column order": generic, "class order": ordered}
    wall = {name: [] for name in variants}
    cpu = {name: [] for name in variants}
    results = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(args.reps):  # one evaluation of each in turn
            for name, objective in variants.items():
                t0, c0 = time.perf_counter(), time.thread_time()
                results[name] = objective.value_and_grad(theta, loss, prior, 1.0)
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(time.thread_time() - c0)
    base = min(cpu["column order"])
    for name in variants:
        value, grad = results[name]
        ref_value, ref_grad = results["column order"]
        print(f"{name:12s} wall min {min(wall[name]):.4f} med {np.median(wall[name]):.4f} | "
              f"cpu min {min(cpu[name]):.4f} med {np.median(cpu[name]):.4f} s | "
              f"cpu min / column order's {min(cpu[name]) / base:.3f} | f rel diff "
              f"{abs(value - ref_value) / abs(ref_value):.1e}, grad max abs diff "
              f"{np.max(np.abs(grad - ref_grad)):.1e}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
