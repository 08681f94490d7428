"""The task graph of ``DaskCRFTagger.predict`` on a bag: does it carry the model?

Fits ``DaskCRFTagger(C=1)`` on a ``LocalCluster`` (``--workers`` single-thread
processes) on the first ``--train-sentences`` CoNLL-2002 Spanish training
sentences (``NERFeatures``, ``--max-iter`` L-BFGS iterations: the size of the
model does not depend on them), then builds the bag of predictions for
esp.testb (its sentences made into features on the workers) and reports, in MiB of ``cloudpickle``: the model
(``to_local()``), the graph of the input bag, and the graph of the
predictions with the model scattered to the workers (``predict``) and, for
comparison, with the model inside the graph (the model passed to
``map_partitions`` itself), and whether computing each printed dask's "Sending
large graph" warning. Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/dask_predict_graph.py \\
        [--train-sentences 2000] [--max-iter 30] [--workers 2]
"""

import argparse
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import print_run_header  # noqa: E402

import cloudpickle  # noqa: E402
import dask.bag as db  # noqa: E402
from dask.distributed import Client, LocalCluster  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from sklearn_crfloss.dask import DaskCRFTagger  # noqa: E402
from sklearn_crfloss.datasets import load_conll2002  # noqa: E402
from sklearn_crfloss.features import NERFeatures  # noqa: E402

_MIB = 2.0 ** 20


def _graph_mib(bag):
    return len(cloudpickle.dumps(dict(bag.__dask_graph__()))) / _MIB


def _features(part):
    return NERFeatures().fit_transform(list(part))


def _predict_partition(part, model):
    return model.predict(list(part))


def _compute(bag):
    """The predictions and whether dask warned of a large graph."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = bag.compute()
    return out, any("large graph" in str(w.message) for w in caught)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train-sentences", type=int, default=2000)
    parser.add_argument("--max-iter", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)
    print_run_header(["sklearn_crfloss", "dask", "distributed"])
    X, y = load_conll2002("esp", "train")
    Xt, _ = load_conll2002("esp", "testb")
    features = NERFeatures()
    F = features.fit_transform(X[:args.train_sentences])
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        parts = 2 * args.workers
        est = DaskCRFTagger(client=client, max_iter=args.max_iter, n_jobs=1).fit(
            db.from_sequence(F, npartitions=parts),
            db.from_sequence(y[:args.train_sentences], npartitions=parts))
        # the test sentences, made into features on the workers: the input's
        # graph holds the words, not the feature dicts
        bag = db.from_sequence(Xt, npartitions=parts).map_partitions(_features)
        model = est.to_local()
        scattered = est.predict(bag)
        inside = bag.map_partitions(_predict_partition, model)
        print(f"model (to_local, cloudpickle): {len(cloudpickle.dumps(model)) / _MIB:.2f} MiB")
        print(f"graph of the input bag: {_graph_mib(bag):.2f} MiB")
        for name, result in (("predict (model scattered)", scattered),
                             ("model inside the graph", inside)):
            labels, warned = _compute(result)
            print(f"graph of {name}: {_graph_mib(result):.2f} MiB; dask warned of a large "
                  f"graph: {warned}; {len(labels)} sentences tagged")
        assert _compute(scattered)[0] == _compute(inside)[0]


if __name__ == "__main__":
    main()
