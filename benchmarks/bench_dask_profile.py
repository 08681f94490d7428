"""Where DaskCRFTagger's time goes on CoNLL-2000: one evaluation of the CLL objective.

Measured in one process, against the same evaluation of ``CRFTagger``'s
objective with 1 and 2 threads: the parameter count and the bytes sent
and received per evaluation, the wall time of one distributed evaluation
(each worker's actor called directly with the parameters its sequences
use, one reply from each, the client's reduction), the compute time on
each worker (inside the call), the round trips of calls to an actor on
every worker (empty, with the parameters out, with the parameters out and
the replies back), and the client's reduction of the replies.
``--evaluations`` repeats each, interleaved; median and minimum reported.
Also, on each worker, the CPU time and the minor page faults of one
evaluation there (``getrusage``: less disturbed by the machine's load than
wall times).

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/bench_dask_profile.py
"""

import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402


class Probe:
    """An actor next to a worker's data: the parts of one evaluation, timed apart."""

    def __init__(self, data):
        self.data = data
        self.reply = None

    def empty(self):
        return 0

    def parameters_out(self, values):
        return 0

    def replies_back(self, values, loss, exact):
        if self.reply is None:
            self.reply = self.data.evaluate(values, loss, exact)
        return self.reply

    def compute(self, values, loss, exact):
        t0 = time.perf_counter()
        self.data.evaluate(values, loss, exact)
        return time.perf_counter() - t0

    def usage(self, values, loss, exact, n):
        """Per evaluation: thread CPU ms, system CPU ms, minor page faults."""
        self.data.evaluate(values, loss, exact)
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.thread_time()
        for _ in range(n):
            self.data.evaluate(values, loss, exact)
        r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.thread_time()
        return (1000 * (t1 - t0) / n, 1000 * (r1.ru_stime - r0.ru_stime) / n,
                (r1.ru_minflt - r0.ru_minflt) / n)


def _nbytes(reply):
    return sum(v.nbytes for k, v in reply.items() if isinstance(v, np.ndarray)) + sum(
        v.nbytes for v in reply.get("state", ()))


def main(argv=None):
    import _common
    from bench_dask import _features, persisted_bags
    from dask.distributed import Client, LocalCluster

    from sklearn_crfloss import CRFTagger
    from sklearn_crfloss.dask import DaskCRFTagger
    from sklearn_crfloss.losses import get_loss

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster processes")
    parser.add_argument("--partitions", type=int, default=4, help="of the training bags")
    parser.add_argument("--evaluations", type=int, default=20,
                        help="objective evaluations timed")
    args = parser.parse_args(argv)
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
    times = {}

    def timed(name, fn):
        t0 = time.perf_counter()
        out = fn()
        times.setdefault(name, []).append(time.perf_counter() - t0)
        return out

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        Xb, yb = persisted_bags(client, X_train, y_train, args.partitions)
        DaskCRFTagger(C=1, n_jobs=1, max_iter=1).fit(Xb, yb)
        remote = objectives["DaskCRFTagger"]
        client.direct_to_workers = True  # as DaskCRFTagger calls its actors
        probes = client.gather([client.submit(Probe, data, actor=True, workers=[w])
                                for w, data in remote.parts])
        values = [theta[take] for take in remote._take]
        replies = [p.replies_back(v, loss, remote.exact).result() for p, v in zip(probes, values)]
        print(f"per evaluation: {sum(v.nbytes for v in values) / 1e6:.2f} MB out "
              f"({', '.join(str(v.shape[0]) for v in values)} parameters), "
              f"{sum(_nbytes(r) for r in replies) / 1e6:.2f} MB back; exact={remote.exact}")

        def on_all(method, *per_probe):
            calls = [getattr(p, method)(*a) for p, *a in zip(probes, *per_probe)]
            return [c.result() for c in calls]

        n = [loss] * len(probes)
        e = [remote.exact] * len(probes)
        for _ in range(args.evaluations):
            for threads in (1, 2):
                local.n_threads = threads
                timed(f"CRFTagger objective, {threads} thread(s)",
                      lambda: local.loss_value_and_grad(theta, loss))
            timed(f"DaskCRFTagger objective ({args.workers} workers)",
                  lambda: remote.loss_value_and_grad(theta, loss))
            times.setdefault("compute inside the slowest worker's call", []).append(
                max(on_all("compute", values, n, e)))
            timed("round trip to every worker's actor, empty call",
                  lambda: [c.result() for c in [p.empty() for p in probes]])
            timed("... the parameters out, nothing back", lambda: on_all("parameters_out", values))
            timed("... the parameters out, the replies back",
                  lambda: on_all("replies_back", values, n, e))
            timed("the client's reduction of the replies", lambda: remote._cll(theta, replies))
        usage = on_all("usage", values, n, e, [args.evaluations] * len(probes))
    for i, (cpu, system, faults) in enumerate(usage):
        print(f"worker {i}, one evaluation there: {cpu:.1f} ms thread CPU, {system:.1f} ms "
              f"system CPU (process), {faults:.0f} minor page faults")
    print(_common.format_table(["what", "median ms", "min ms"],
                               [[k, f"{1000 * np.median(v):.1f}", f"{1000 * min(v):.1f}"]
                                for k, v in times.items()]))
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
