"""Cost of one objective evaluation of every loss against CLL, in one process.

Loads CoNLL-2000, builds the CRF++ template features
(``TemplateFeatures(CONLL2000_TEMPLATE)``), fits ``CRFTagger(loss='cll',
C=1)`` (``--max-iter`` L-BFGS iterations) and times one evaluation of the
training objective (value and gradient, L2 prior included, ``n_threads``
OpenMP threads) of every loss at those parameters: the median of
``--rounds`` rounds, the losses alternating within a round so that a change
of the machine's load hits all of them alike.

Each loss is timed as ``CRFTagger.fit`` evaluates it, in process CPU
seconds (one thread: the time the evaluation computed, less sensitive to
other jobs on the machine than wall time). Process CPU time also counts
OpenBLAS's other threads, which a BLAS call on a long vector (the prior's
dot product, at the end of every evaluation) wakes and which then spin for
about 0.1 s, charged to whichever evaluation runs next; ``--blas-threads
N`` limits the BLAS pool to N threads while timing (``--blas-threads 1``
with ``--n-threads 1``: one thread in all), the default 0 leaves it as it
is (as the figures in benchmarks/README.md were measured). With ``--general`` every loss
but CLL is timed a second time through the general path (``U = X @ W``,
the loss's ``value_and_grad``, ``X.T @ dU``) in the same rounds: a
subclass of the loss class, which no fused kernel takes, with MCE-F's fast
label margins off (``_fast_path = False``); for MCE-F that is the code
before its fast path. The load average is printed before and after. Run
from a checkout::

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/bench_loss_costs.py --general

Timed runs are never tests; the measured output is in benchmarks/README.md.
"""

import argparse
import contextlib
import os
import pickle
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import command_line, machine_info, training_objective  # noqa: E402
from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.losses import get_loss  # noqa: E402
from sklearn_crfloss.priors import get_prior  # noqa: E402

#: (row name, loss name, parameters): every loss of the registry that trains by batches.
ROWS = [
    ("cll", "cll", {}),
    ("softmax_margin", "softmax_margin", {}),
    ("risk", "risk", {}),
    ("jrb", "jrb", {}),
    ("labelwise", "labelwise", {}),
    ("pointwise", "pointwise", {}),
    ("mixed", "mixed", {}),
    ("mce", "mce", {}),
    ("mce_f (labels)", "mce_f", {"segment_match": "labels"}),
    ("mce_f (chunks)", "mce_f", {"segment_match": "chunks"}),
    ("max_margin", "max_margin", {}),
    ("perceptron", "perceptron", {}),
]


def general(loss):
    """A copy of ``loss`` as an instance of a subclass: the fused kernels do not take it."""
    cls = type(loss)
    sub = type("General" + cls.__name__, (cls,), {})
    out = sub.__new__(sub)
    out.__dict__.update(loss.__dict__)
    out._fast_path = False  # MCE-F's label margins: the general code
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-iter", type=int, default=1000, help="L-BFGS iterations of the CLL fit")
    p.add_argument("--C", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--n-threads", type=int, default=1)
    p.add_argument("--blas-threads", type=int, default=0,
                   help="BLAS threads while timing (default 0: not limited)")
    p.add_argument("--train-sentences", type=int, default=None)
    p.add_argument("--only", default=None,
                   help="comma-separated row names to time (cll is always timed)")
    p.add_argument("--general", action="store_true",
                   help="also time the general path of the losses with a fused kernel")
    p.add_argument("--model-cache", default=None,
                   help="pickle of the CLL fit: read if it exists, else written")
    args = p.parse_args(argv)
    print(command_line(["SKLEARN_CRFLOSS_DATA"]))
    print(machine_info())
    print("load average at start:", open("/proc/loadavg").read().strip())
    warnings.simplefilter("ignore", ConvergenceWarning)
    X, y = load_conll2000("train", download_if_missing=False)
    if args.train_sentences:
        X, y = X[:args.train_sentences], y[:args.train_sentences]
    F = TemplateFeatures(CONLL2000_TEMPLATE).fit(X).transform(X)
    if args.model_cache and os.path.exists(args.model_cache):
        with open(args.model_cache, "rb") as f:
            crf = pickle.load(f)
    else:
        crf = CRFTagger(C=args.C, max_iter=args.max_iter, n_jobs=1).fit(F, y)
        if args.model_cache:
            with open(args.model_cache, "wb") as f:
                pickle.dump(crf, f)
    objective, theta, _, _ = training_objective(crf, F, y, n_threads=args.n_threads)
    prior = get_prior("l2")
    runs = {}
    only = None if args.only is None else {"cll", *args.only.split(",")}
    for name, loss_name, params in ROWS:
        if only is not None and name not in only:
            continue
        loss = get_loss(loss_name).set_params(**params)
        if hasattr(loss, "set_classes"):
            loss.set_classes(crf.classes_)
        runs[name] = loss
        if args.general and name != "cll":
            runs[name + " [general]"] = general(loss)
    blas = args.blas_threads
    print("BLAS threads while timing:", blas or "not limited")
    with warnings.catch_warnings(), (threadpool_limits(blas, user_api="blas") if blas
                                     else contextlib.nullcontext()):
        warnings.simplefilter("ignore")
        for loss in runs.values():  # warm-up: buffers, observed counts, caches
            objective.value_and_grad(theta, loss, prior, args.C)
        times = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, loss in runs.items():
                t0 = time.process_time()
                objective.value_and_grad(theta, loss, prior, args.C)
                times[name].append(time.process_time() - t0)
    print("load average at end:", open("/proc/loadavg").read().strip())
    cll = float(np.median(times["cll"]))
    print(f"\n{len(F)} sentences, {objective.n_tokens} tokens, {objective.n_labels} labels, "
          f"{args.n_threads} thread(s), median of {args.rounds} rounds\n")
    print("| loss | CPU s per evaluation | x CLL |")
    print("|---|---|---|")
    for name in runs:
        sec = float(np.median(times[name]))
        print(f"| {name} | {sec:.3f} | {sec / cll:.2f} |")


if __name__ == "__main__":
    main()
