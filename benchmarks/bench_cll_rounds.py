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

from _common import short_fit_objective, time_evaluations
from sklearn_crfloss._model._objective import CRFObjective


def main():
    args, objective, theta = short_fit_objective()

    def rounds(max_threads):
        return lambda: setattr(CRFObjective, "ROUNDS_MAX_THREADS", max_threads)

    time_evaluations(objective, theta, {"apart": rounds(0), "rounds": rounds(64)}, args.n_jobs,
                     args.repeats)


if __name__ == "__main__":
    main()
