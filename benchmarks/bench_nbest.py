"""Time and peak memory of ``viterbi_nbest`` for growing ``n_best``.

    python benchmarks/bench_nbest.py 1000 8000 30000 100000 1000000

A chain of 40 tokens and 2 labels with random potentials (seed 0), and the
same on 22 labels (CoNLL-2000's chunk labels) with 100 tokens: each
``n_best`` is timed once per run (``--repeat`` runs, the minimum printed),
with the peak RSS of the process after it. Run the largest ``n_best`` last:
the peak RSS only grows. ``--tagger``: ``CRFTagger.predict_nbest`` instead,
on one 40-token sentence of a two-label model (the list of label lists and
log-probabilities it returns included).
"""

import argparse
import resource
import time

import warnings

import numpy as np

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.inference import viterbi_nbest


def chain(n_tokens, n_labels, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n_tokens, n_labels)), rng.normal(size=(n_labels, n_labels)),
            rng.normal(size=n_labels), rng.normal(size=n_labels),
            np.array([0, n_tokens], dtype=np.intp))


def tagger(n_best_values, repeat):
    rng = np.random.default_rng(0)
    X = [[{"w": str(rng.integers(0, 5))} for _ in range(40)] for _ in range(20)]
    y = [["A" if rng.random() < 0.5 else "B" for _ in range(40)] for _ in range(20)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRFTagger().fit(X, y)
    print("predict_nbest, 40 tokens, 2 labels")
    print("  n_best  listed   seconds  s per 10,000  peak RSS (MB)")
    for n_best in n_best_values:
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            (listed,) = crf.predict_nbest(X[:1], n_best=n_best)
            times.append(time.perf_counter() - t0)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{n_best:8d} {len(listed):7d} {min(times):9.3f} "
              f"{min(times) / len(listed) * 1e4:13.4f} {rss:14.0f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n_best", type=int, nargs="+")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shapes", default="40x2,100x22",
                        help="tokens x labels of the chains, comma-separated")
    parser.add_argument("--tagger", action="store_true")
    args = parser.parse_args()
    if args.tagger:
        return tagger(args.n_best, args.repeat)
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    print("tokens labels   n_best  listed   seconds  s per 10,000  peak RSS (MB)")
    for n_best in args.n_best:
        for n_tokens, n_labels in shapes:
            potentials = chain(n_tokens, n_labels)
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                paths, scores = viterbi_nbest(*potentials, n_best)
                times.append(time.perf_counter() - t0)
            listed = int(np.isfinite(scores).sum())
            best = min(times)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{n_tokens:6d} {n_labels:6d} {n_best:8d} {listed:7d} {best:9.3f} "
                  f"{best / max(listed, 1) * 1e4:13.4f} {rss:14.0f}", flush=True)


if __name__ == "__main__":
    main()
