"""Cost of the fixed-block gradient accumulators (n_jobs-independent sums).

The kernels add the per-sequence gradients into N_BLOCKS accumulators of fixed
blocks of sequences and sum them in block order, so that the model does
not depend on ``n_jobs``; before, there was one accumulator per thread
(with one thread, the gradient itself). This times one evaluation of the
CLL objective and gradient on CoNLL-2000 (CRF++ template features, observed
pairs) both ways in one process, interleaved, for 1 and 2 threads, and
checks that the blocked gradients are bitwise equal across thread counts.

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/bench_block_accumulators.py
"""

import argparse
import time

import numpy as np

from sklearn_crfloss._chain import _forward_backward

from sklearn_crfloss._model import _objective
from sklearn_crfloss._model._parameters import ParameterLayout, observed_pairs
from sklearn_crfloss._data._validation import check_sequences, encode_labels
from sklearn_crfloss._data._vectorize import SequenceVectorizer
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
from sklearn_crfloss.losses import ConditionalLogLikelihood
from sklearn_crfloss.priors import get_prior

BLOCKED = _objective.accumulator_blocks


def per_thread(n_threads, n_values, max_bytes=None):
    """The accumulators before: one per thread."""
    return max(1, int(n_threads))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n-sentences", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=None,
                        help="override N_BLOCKS (the number of accumulator blocks)")
    args = parser.parse_args()
    if args.blocks is not None:
        _forward_backward.N_BLOCKS = args.blocks
    X, y = load_conll2000("train")
    X, y = X[:args.n_sentences], y[:args.n_sentences]
    dicts = TemplateFeatures(CONLL2000_TEMPLATE).fit_transform(X)
    kind, tokens, offsets = check_sequences(dicts)
    classes, y_enc = encode_labels(y, np.diff(offsets))
    Xc = SequenceVectorizer().fit_transform(kind, tokens, offsets)
    layout = ParameterLayout(Xc.shape[1], len(classes), observed_pairs(Xc, y_enc, len(classes)))
    theta = np.random.default_rng(0).normal(scale=0.01, size=layout.n_params)
    loss, prior = ConditionalLogLikelihood(), get_prior("l2")
    print(f"{offsets.shape[0] - 1} sentences, {Xc.shape[0]} tokens, {layout.n_params} parameters")
    grads = {}
    for n_threads in (1, 2):
        objective = _objective.CRFObjective(Xc, y_enc, offsets, layout, n_threads=n_threads)
        times = {"per thread": [], "blocks": []}
        for _ in range(args.repeats):
            for name, blocks in (("per thread", per_thread), ("blocks", BLOCKED)):
                _objective.accumulator_blocks = blocks
                t0 = time.perf_counter()
                _, g = objective.value_and_grad(theta, loss, prior, 1.0)
                times[name].append(time.perf_counter() - t0)
                grads[name, n_threads] = g.copy()
        _objective.accumulator_blocks = BLOCKED
        a, b = (np.median(times[k]) for k in ("per thread", "blocks"))
        print(f"n_threads={n_threads}: per thread {a * 1e3:.1f} ms, "
              f"{_forward_backward.N_BLOCKS} blocks {b * 1e3:.1f} ms, "
              f"ratio {b / a:.3f} (median of {args.repeats})")
    print("blocks, 1 vs 2 threads bitwise equal:",
          np.array_equal(grads["blocks", 1], grads["blocks", 2]))
    print("per thread, 1 vs 2 threads max abs difference:",
          float(np.abs(grads["per thread", 1] - grads["per thread", 2]).max()))


if __name__ == "__main__":
    main()
