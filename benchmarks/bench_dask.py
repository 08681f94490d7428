"""CoNLL-2000 on a LocalCluster: ``DaskCRFTagger(C=1)`` against ``CRFTagger(C=1)``.

The CRF++ template features (``TemplateFeatures(CONLL2000_TEMPLATE)``) are
made once here for ``CRFTagger``, and on the workers for ``DaskCRFTagger``
(a bag of the raw sentences in ``--partitions`` partitions, mapped to feature
dicts and persisted on the workers before the clock starts: the data lie
where they are trained on). Timed: ``fit`` only. Reported: final objective,
iterations, test F1 (conlleval), wall seconds, for ``DaskCRFTagger(n_jobs=1)``
on a cluster of ``--workers`` single-thread worker processes and
``CRFTagger(n_jobs=2)`` (alternately, ``--rounds`` times), then
``CRFTagger(n_jobs=1)``.

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/bench_dask.py
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402
import dask.bag as db  # noqa: E402
from dask.distributed import Client, LocalCluster, wait  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.dask import DaskCRFTagger  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.metrics import segment_f1_score  # noqa: E402


def _features(sentences):
    return TemplateFeatures(CONLL2000_TEMPLATE).fit_transform(list(sentences))


def persisted_bags(client, X, y, n_partitions):
    """Bags of the feature dicts (made on the workers) and labels, persisted there."""
    Xb = db.from_sequence(X, npartitions=n_partitions).map_partitions(_features)
    yb = db.from_sequence(y, npartitions=n_partitions)
    Xb, yb = client.persist([Xb, yb])
    wait([Xb, yb])
    return Xb, yb


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--max-iter", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    X_train, y_train, X_test, y_test = _common.conll2000_run()
    F_train, F_test = _features(X_train), _features(X_test)
    rows = []

    def record(name, crf, seconds):
        f1 = 100 * segment_f1_score(y_test, crf.predict(F_test))
        rows.append([name, f"{crf.objective_:.6f}", crf.n_iter_, f"{f1:.2f}",
                     f"{seconds:.1f}", str(os.getloadavg()[0])])
        print(rows[-1], flush=True)
        return crf.objective_

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        Xb, yb = persisted_bags(client, X_train, y_train, args.partitions)
        # Interleaved rounds (the machine is shared: its load drifts).
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            crf = DaskCRFTagger(C=args.C, n_jobs=1, max_iter=args.max_iter).fit(Xb, yb)
            dask_obj = record(f"DaskCRFTagger, {args.workers} workers x 1 thread, "
                              f"{crf.n_partitions_} partitions", crf, time.perf_counter() - t0)
            t0 = time.perf_counter()
            crf = CRFTagger(C=args.C, n_jobs=2, max_iter=args.max_iter).fit(F_train, y_train)
            record("CRFTagger(n_jobs=2)", crf, time.perf_counter() - t0)
            print(f"wall DaskCRFTagger / CRFTagger(n_jobs=2): "
                  f"{float(rows[-2][4]) / float(rows[-1][4]):.2f}", flush=True)
    t0 = time.perf_counter()
    crf = CRFTagger(C=args.C, n_jobs=1, max_iter=args.max_iter).fit(F_train, y_train)
    obj = record("CRFTagger(n_jobs=1)", crf, time.perf_counter() - t0)
    print(f"relative objective difference, DaskCRFTagger vs CRFTagger(n_jobs=1): "
          f"{abs(dask_obj - obj) / abs(obj):.2e} (bitwise equal: {dask_obj == obj})")
    print(_common.format_table(["fit", "final objective", "iterations", "test F1",
                                "wall s", "load (1 min) after"], rows))


if __name__ == "__main__":
    main()
