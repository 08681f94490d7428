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

import numpy as np

from _common import short_fit_objective, time_evaluations


def widths(objective):
    """``{width: set_up}``: the row pointers and pair indices as int32, or as int64 copies."""
    csr, weights = objective.csr, objective.state_weights

    def use(dtype):
        arrays = ((csr[0].astype(dtype),) + csr[1:], weights.hot_index.astype(dtype),
                  weights.hot_position.astype(dtype))

        def set_up():
            objective.csr, weights.hot_index, weights.hot_position = arrays

        return set_up

    return {"int32": use(np.int32), "int64": use(np.int64)}


def main():
    args, objective, theta = short_fit_objective()
    time_evaluations(objective, theta, widths(objective), args.n_jobs, args.repeats)


if __name__ == "__main__":
    main()
