"""How many threads the compiled kernels run: ``n_jobs`` resolved, bounded, reproducible.

An estimator's ``n_jobs`` is resolved as scikit-learn resolves it
(:func:`joblib.effective_n_jobs`: None is 1, -1 all cores, -2 all but one)
and then bounded by the cores this process may use
(:func:`joblib.cpu_count`), since the kernels allocate scratch rows per
thread: ``n_jobs=10**6`` runs as many threads as there are cores.

The batch kernels add their sums into ``N_BLOCKS`` (4) accumulators, one per
block of chunks of sequences, when the blocks fit in memory
(:func:`accumulator_blocks`); a thread count that divides ``N_BLOCKS`` runs
whole blocks, in order, so the sums, rounding included, do not depend on it.
Any other count up to ``N_BLOCKS`` (3) is lowered to the largest divisor of
``N_BLOCKS`` below it, so that 1, 2, 3 and 4 threads give the same sums; more
threads than blocks keep one accumulator per thread (faster on many cores,
with sums that depend on the thread count).
"""

from joblib import cpu_count, effective_n_jobs

from ._forward_backward import N_BLOCKS

__all__ = ["kernel_threads", "usable_threads"]


def usable_threads(n_threads):
    """The threads the kernels run for ``n_threads`` requested (at least 1).

    Parameters
    ----------
    n_threads : int
        Requested threads (values below 1 count as 1).

    Returns
    -------
    int
        At most the usable cores; below ``N_BLOCKS``, a divisor of it.
    """
    n = max(1, min(int(n_threads), cpu_count()))
    if n < N_BLOCKS:
        while N_BLOCKS % n:
            n -= 1
    return n


def kernel_threads(n_jobs):
    """The kernels' threads for an estimator's ``n_jobs`` (see the module docstring).

    Parameters
    ----------
    n_jobs : int or None
        As scikit-learn's: None is 1 (outside a joblib ``parallel_config``),
        negative values count back from the number of cores.

    Returns
    -------
    int
    """
    return usable_threads(effective_n_jobs(n_jobs))
