"""POS tagging at label scale: sklearn-crfloss beside sklearn-crfsuite on CoNLL-2000 POS.

Both tools get the same feature dicts (``featurize`` of
``examples/conll2000_pos.py``: word-only features) of
``load_conll2000(task="pos")`` (44 tags) and train CLL + L2 (``C=1`` here,
``c1=0, c2=0.5`` in CRFsuite: the same objective) for ``--max-iter``
L-BFGS iterations (60), one thread, one after the other in the same
process. Reported: seconds per iteration (iterations 2..n: our
callback's time stamps, CRFsuite's per-iteration times), their ratio, the
iterations run and the test token accuracy of each.

``--synthetic L [L ...]`` times our kernels alone at other label counts:
a CLL fit of ``--max-iter`` iterations on random sequences (an HMM with L
states, each emitting one of 20 L symbols from a sparse, state-specific
distribution, ``--synthetic-tokens`` tokens in sentences of 24), with one
feature dict per token (the symbol and its two neighbours): seconds per
iteration and seconds per iteration / (tokens x L^2), which stays flat if
the time grows as T x L^2.

Usage (from a checkout)::

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/bench_conll2000_pos.py \\
        [--max-iter 60] [--train-sentences N] [--skip-crfsuite] \\
        [--synthetic 44 100 500 --synthetic-tokens 20000]
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "examples"))

from conll2000_pos import featurize  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000  # noqa: E402
from sklearn_crfloss.metrics import token_accuracy  # noqa: E402


def load_avg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_ours(F_train, y_train, F_test, y_test, max_iter, C=1.0):
    """Fit CRFTagger; seconds per iteration 2..n from the callback, and accuracy."""
    stamps = []
    crf = CRFTagger(loss="cll", prior="l2", C=C, max_iter=max_iter, tol=0.0, n_jobs=1,
                    callback=lambda k, value: stamps.append(time.perf_counter()))
    t0 = time.perf_counter()
    crf.fit(F_train, y_train)
    fit_s = time.perf_counter() - t0
    acc = token_accuracy(y_test, crf.predict(F_test)) if F_test is not None else float("nan")
    return dict(s_per_iter=(stamps[-1] - stamps[0]) / (len(stamps) - 1), fit_s=fit_s,
                n_iter=crf.n_iter_, accuracy=acc, n_labels=len(crf.classes_),
                n_parameters=crf.n_parameters_)


def run_crfsuite(F_train, y_train, F_test, y_test, max_iter, C=1.0):
    """Fit sklearn_crfsuite.CRF; seconds per iteration 2..n from its log, and accuracy."""
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=1.0 / (2.0 * C),
                               max_iterations=max_iter, delta=0.0, min_freq=0,
                               all_possible_states=False, all_possible_transitions=True)
    t0 = time.perf_counter()
    crf.fit(F_train, y_train)
    fit_s = time.perf_counter() - t0
    times = [it["time"] for it in crf.training_log_.iterations[1:]]
    return dict(s_per_iter=sum(times) / len(times), fit_s=fit_s,
                n_iter=len(crf.training_log_.iterations),
                accuracy=token_accuracy(y_test, crf.predict(F_test)),
                n_labels=len(crf.classes_), n_parameters=crf.training_log_.featgen_num_features)


def synthetic(n_labels, n_tokens, seed=0, length=24):
    """HMM-like sequences with ``n_labels`` states; feature dicts of symbol windows."""
    rng = np.random.default_rng(seed)
    n_sym = 20 * n_labels
    trans = rng.dirichlet(np.full(n_labels, 0.1), size=n_labels)
    X, y = [], []
    for _ in range(n_tokens // length):
        s = [int(rng.integers(n_labels))]
        for _ in range(length - 1):
            s.append(int(rng.choice(n_labels, p=trans[s[-1]])))
        # a state emits one of its 20 own symbols (80%) or any symbol
        own = rng.integers(20, size=length) + 20 * np.array(s)
        sym = np.where(rng.random(length) < 0.8, own, rng.integers(n_sym, size=length))
        pad = ["<s>"] + [str(v) for v in sym] + ["</s>"]
        X.append([{"w": pad[t + 1], "w-1": pad[t], "w+1": pad[t + 2]} for t in range(length)])
        y.append([f"S{v}" for v in s])
    return X, y


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-iter", type=int, default=60)
    p.add_argument("--train-sentences", type=int, default=None)
    p.add_argument("--skip-crfsuite", action="store_true")
    p.add_argument("--skip-conll", action="store_true")
    p.add_argument("--synthetic", type=int, nargs="*", default=[])
    p.add_argument("--synthetic-tokens", type=int, default=20000)
    args = p.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)
    print("command:", " ".join(["python"] + sys.argv), flush=True)
    if not args.skip_conll:
        (X_tr, y_tr), (X_te, y_te) = (load_conll2000(s, task="pos") for s in ("train", "test"))
        if args.train_sentences:
            X_tr, y_tr = X_tr[:args.train_sentences], y_tr[:args.train_sentences]
        F_tr, F_te = featurize(X_tr), featurize(X_te)
        print(f"CoNLL-2000 POS: {len(X_tr)} sentences, {sum(map(len, X_tr))} tokens", flush=True)
        rows = [("sklearn-crfloss", run_ours)]
        if not args.skip_crfsuite:
            rows.append(("sklearn-crfsuite", run_crfsuite))
        res = {}
        for name, run in rows:
            before = load_avg()
            res[name] = run(F_tr, y_tr, F_te, y_te, args.max_iter)
            print(f"  {name}: done (load average before {before}, after {load_avg()})",
                  flush=True)
        print("\n| tool | labels | parameters | iterations | s/iteration | fit s "
              "| token accuracy |")
        print("|---|---|---|---|---|---|---|")
        for name, r in res.items():
            print(f"| {name} | {r['n_labels']} | {r['n_parameters']} | {r['n_iter']} "
                  f"| {r['s_per_iter']:.3f} | {r['fit_s']:.1f} | {100 * r['accuracy']:.2f} |")
        if len(res) == 2:
            a, b = res["sklearn-crfloss"], res["sklearn-crfsuite"]
            print(f"\nratio of s/iteration (ours / CRFsuite): {a['s_per_iter'] / b['s_per_iter']:.2f}"
                  f"; accuracy difference {100 * (a['accuracy'] - b['accuracy']):+.2f}", flush=True)
    if args.synthetic:
        print("\n| labels L | tokens T | s/iteration | ns per T x L^2 | load average |")
        print("|---|---|---|---|---|")
        for L in args.synthetic:
            X, y = synthetic(L, args.synthetic_tokens)
            r = run_ours(X, y, None, None, min(args.max_iter, 20))
            T = sum(map(len, X))
            print(f"| {L} | {T} | {r['s_per_iter']:.3f} | {1e9 * r['s_per_iter'] / (T * L * L):.2f} "
                  f"| {load_avg()} |", flush=True)


if __name__ == "__main__":
    main()
