"""A 16-fit GridSearchCV through joblib: sequential, local processes, dask, ray.

The search of the "Scaling out" page (``doc/scaling.rst``): a Pipeline of
``TemplateFeatures(CONLL2000_TEMPLATE)`` and ``CRFTagger(n_jobs=1)`` on the
first ``--sentences`` sentences of the CoNLL-2000 training set, over
``loss`` in {'cll', 'softmax_margin'} x ``C`` in {0.1, 10} x 4 folds = 16
fits (plus the refit of the best candidate), scored by segment F1. The same
search object runs

* ``sequential``: ``n_jobs=1``;
* ``loky``: ``n_jobs=2``, joblib's default process pool on this machine;
* ``dask``: inside ``joblib.parallel_backend("dask")`` with a
  ``dask.distributed.LocalCluster`` of ``--workers`` worker processes of
  one thread each (cluster start-up timed separately);
* ``ray``: inside ``joblib.parallel_backend("ray")`` after
  ``ray.util.joblib.register_ray()`` and ``ray.init(num_cpus=--workers)``
  (only if ray is installed; start-up timed separately).

Each backend's ``cv_results_['mean_test_score']`` is checked against the
first run's. Wall seconds (``time.perf_counter``), CPU seconds (this
process, plus the dask workers' processes for dask; not measured for the
loky and ray worker processes) and the load average before and after each
run are printed, as a Markdown table. ``--repeats`` interleaves rounds over
the backends, so that a change of the machine's load hits all of them.

Usage::

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/bench_search_backends.py \\
        [--sentences 1000] [--workers 2] [--repeats 1] [--backends sequential loky dask ray]
"""

import argparse
import os
import time
import warnings

import joblib
import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
from sklearn_crfloss.metrics import segment_f1_scorer


def make_search(max_iter):
    model = make_pipeline(TemplateFeatures(CONLL2000_TEMPLATE),
                          CRFTagger(n_jobs=1, max_iter=max_iter))
    grid = {"crftagger__loss": ["cll", "softmax_margin"], "crftagger__C": [0.1, 10.0]}
    return GridSearchCV(model, grid, cv=KFold(4), scoring=segment_f1_scorer)


def timed(label, fn, cpu=time.process_time):
    """Run fn; print and return (result, wall seconds, CPU seconds, load before/after)."""
    load0 = os.getloadavg()[0]
    c0, t0 = cpu(), time.perf_counter()
    out = fn()
    seconds, cpu_seconds = time.perf_counter() - t0, cpu() - c0
    print(f"  {label}: {seconds:.1f} s wall, {cpu_seconds:.1f} s CPU "
          f"(load average {load0:.1f} -> {os.getloadavg()[0]:.1f})", flush=True)
    return out, seconds, cpu_seconds, (load0, os.getloadavg()[0])


def run_backend(backend, search, X, y, n_workers):
    """One search on one backend: (fitted search, wall s, CPU s or None, start-up s, load)."""
    setup = None
    if backend == "sequential":
        fitted, seconds, cpu, load = timed("search", lambda: clone(search).fit(X, y))
    elif backend == "loky":  # CPU of the loky worker processes is not counted: None
        fitted, seconds, _, load = timed(
            "search", lambda: clone(search).set_params(n_jobs=n_workers).fit(X, y))
        cpu = None
    elif backend == "dask":
        (cluster, client), setup, _, _ = timed("cluster start", lambda: _dask(n_workers))

        def total_cpu():  # this process and the workers' processes
            return time.process_time() + sum(client.run(time.process_time).values())

        with joblib.parallel_backend("dask"):
            fitted, seconds, cpu, load = timed(
                "search", lambda: clone(search).set_params(n_jobs=-1).fit(X, y), total_cpu)
        client.close()
        cluster.close()
    elif backend == "ray":  # CPU of the ray workers is not counted: None
        import ray
        from ray.util.joblib import register_ray

        register_ray()
        _, setup, _, _ = timed("ray.init", lambda: ray.init(
            num_cpus=n_workers, include_dashboard=False, log_to_driver=False))
        with joblib.parallel_backend("ray"):
            fitted, seconds, _, load = timed(
                "search", lambda: clone(search).set_params(n_jobs=-1).fit(X, y))
        ray.shutdown()
        cpu = None
    else:
        raise ValueError(f"unknown backend {backend!r}")
    return fitted, seconds, cpu, setup, load


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=1,
                        help="rounds over the backends, interleaved")
    parser.add_argument("--backends", nargs="+", default=["sequential", "loky", "dask", "ray"])
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)

    X, y = load_conll2000("train")
    X, y = X[:args.sentences], y[:args.sentences]
    search = make_search(args.max_iter)
    print(f"{len(X)} sentences, {sum(map(len, X))} tokens; 4 candidates x 4 folds = 16 fits "
          f"+ 1 refit; {os.cpu_count()} CPUs", flush=True)
    rows, reference = [], None
    for r in range(args.repeats):
        for backend in args.backends:
            print(f"{backend} (round {r + 1})", flush=True)
            fitted, seconds, cpu, setup, load = run_backend(backend, search, X, y, args.workers)
            scores = fitted.cv_results_["mean_test_score"]
            if reference is None:
                reference = scores
            same = bool(np.allclose(scores, reference, rtol=1e-10, atol=0))
            rows.append((backend, r + 1, seconds, cpu, setup, load, same, fitted.best_params_))

    print("\n| backend | round | search wall s | search CPU s | start-up s | "
          "load average before -> after | same cv_results_ | best |")
    print("|---|---|---|---|---|---|---|---|")
    for backend, r, seconds, cpu, setup, load, same, best in rows:
        start = "-" if setup is None else f"{setup:.1f}"
        cpu = "-" if cpu is None else f"{cpu:.1f}"
        best = ", ".join(f"{k.split('__')[1]}={v}" for k, v in sorted(best.items()))
        print(f"| {backend} | {r} | {seconds:.1f} | {cpu} | {start} | "
              f"{load[0]:.1f} -> {load[1]:.1f} | {'yes' if same else 'NO'} | {best} |")


def _dask(n_workers):
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    return cluster, Client(cluster)


if __name__ == "__main__":
    main()
