"""Where DaskCRFTagger's time goes on CoNLL-2000: one evaluation of the CLL objective.

Measured in one process, against the same evaluation of ``CRFTagger``'s
objective with 1 and 2 threads: the parameter count and bytes sent, the
wall time of one distributed evaluation (parameters to every worker, one
reply from each, the client's reduction), the compute time on each worker
(inside the task), and the round trips of empty tasks (scheduler latency),
of the parameters out and nothing back, and of the parameters out and a
gradient back. ``--evaluations`` evaluations each (best of, mean reported).

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/bench_dask_profile.py
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402


def _worker_compute(theta, loss, exact, data):
    t0 = time.perf_counter()
    data.evaluate(theta, loss, exact)
    return time.perf_counter() - t0


def _nothing(theta, data):
    return 0


def _gradient_back(theta, data):
    return 0.0, np.zeros(theta.shape[0])


def _load():
    return os.getloadavg()[0]


def main(argv=None):
    import _common
    from bench_dask import _features, persisted_bags
    from dask.distributed import Client, LocalCluster

    from sklearn_crfloss import CRFTagger
    from sklearn_crfloss.dask import DaskCRFTagger
    from sklearn_crfloss.losses import get_loss

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--evaluations", type=int, default=10)
    args = parser.parse_args(argv)
    N = args.evaluations
    X_train, y_train, _, _ = _common.conll2000_run()
    objectives = {}
    train = CRFTagger._train

    def keep(self, objective, *a, **k):  # the bound objective of a fit of one iteration
        objectives[type(self).__name__] = objective
        return train(self, objective, *a, **k)

    CRFTagger._train = keep
    CRFTagger(C=1, n_jobs=2, max_iter=1).fit(_features(X_train), y_train)
    local = objectives["CRFTagger"]
    loss = get_loss("cll")
    theta = np.random.default_rng(0).normal(scale=0.01, size=local.n_params)
    print(f"parameters: {local.n_params} ({local.n_params * 8 / 1e6:.2f} MB a vector)")

    def per_evaluation(fn):
        fn()
        t0 = time.perf_counter()
        for _ in range(N):
            fn()
        return 1000 * (time.perf_counter() - t0) / N

    for threads in (1, 2):
        local.n_threads = threads
        ms = per_evaluation(lambda: local.loss_value_and_grad(theta, loss))
        print(f"CRFTagger objective, {threads} thread(s): {ms:.1f} ms (load {_load():.2f})")
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        Xb, yb = persisted_bags(client, X_train, y_train, args.partitions)
        DaskCRFTagger(C=1, n_jobs=1, max_iter=1).fit(Xb, yb)
        remote = objectives["DaskCRFTagger"]
        ms = per_evaluation(lambda: remote.loss_value_and_grad(theta, loss))
        print(f"DaskCRFTagger objective ({args.workers} workers, exact={remote.exact}): "
              f"{ms:.1f} ms (load {_load():.2f})")
        seconds = client.gather([client.submit(_worker_compute, theta, loss, remote.exact, data,
                                               pure=False, workers=[w])
                                 for w, data in remote.parts])
        print("compute inside each worker's task: "
              + ", ".join(f"{1000 * s:.1f} ms" for s in seconds))
        for name, fn, arg in (("empty task", _nothing, 0),
                              ("parameters out, nothing back", _nothing, theta),
                              ("parameters out, a gradient back", _gradient_back, theta)):
            ms = per_evaluation(lambda: client.gather([
                client.submit(fn, arg, data, pure=False, workers=[w])
                for w, data in remote.parts]))
            print(f"round trip to every worker, {name}: {ms:.1f} ms")
    print(f"load after: {_load():.2f}")


if __name__ == "__main__":
    main()
