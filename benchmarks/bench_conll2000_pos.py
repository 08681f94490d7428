"""POS tagging at label scale: sklearn-crfloss beside sklearn-crfsuite on CoNLL-2000 POS.

Both tools get the same feature dicts (``featurize`` of
``examples/conll2000_pos.py``: word-only features) of
``load_conll2000(task="pos")`` (44 tags) and train CLL + L2 (``C=1`` here,
``c1=0, c2=0.5`` in CRFsuite: the same objective) for ``--max-iter``
L-BFGS iterations (60), one thread, one after the other in the same
process. Reported: CPU seconds per iteration (iterations 2..n: the
process CPU time at our callback, CRFsuite's per-iteration times, which it
measures with ``clock()``, also CPU time; CPU time is what a shared machine
leaves comparable), our wall seconds per iteration, their ratio, the
iterations run and the test token accuracy of each.

``--synthetic L [L ...]`` times our kernels alone at other label counts:
a CLL fit of ``--max-iter`` iterations on random sequences (an HMM with L
states, each emitting one of 20 L symbols from a sparse, state-specific
distribution, ``--synthetic-tokens`` tokens in sentences of 24), with one
feature dict per token (the symbol and its two neighbours): seconds per
iteration and seconds per iteration / (tokens x L^2), which stays flat if
the time grows as T x L^2, beside sklearn-crfsuite's seconds per iteration
on the same dicts (at most 20 iterations each).

``--profile`` splits one CLL evaluation on CoNLL-2000 POS (at the
parameters after ``--max-iter`` iterations, one thread) into the scaled
forward-backward on the unary potentials (the L x L products, exp, the
scaling) and the rest (the unary rows from the features, the scatter of
the expected counts, the glue): CPU seconds, best of 5.

``--kernels L [L ...]`` times the L x L kernels alone on random potentials
(sentences of 24 tokens, T x L^2 about 93 million, the size of 48,000
tokens at L = 44): :func:`sklearn_crfloss.inference.forward_backward`
(forward, backward, marginals and pair sums) and
:func:`sklearn_crfloss.inference.viterbi`, one thread, CPU seconds (the
best of 5) and nanoseconds per T x L^2.

Usage (from a checkout)::

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/bench_conll2000_pos.py \\
        [--max-iter 60] [--train-sentences N] [--skip-crfsuite] \\
        [--synthetic 44 100 500 --synthetic-tokens 20000] [--kernels 22 44 100 500]
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
from sklearn_crfloss.inference import forward_backward, viterbi  # noqa: E402
from sklearn_crfloss.metrics import token_accuracy  # noqa: E402


def print_row(*cells, header=False):
    """One row of a Markdown table (and the separator after a header)."""
    print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)
    if header:
        print("|" + "---|" * len(cells))


def load_avg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_ours(F_train, y_train, F_test, y_test, max_iter, C=1.0):
    """Fit CRFTagger; seconds per iteration 2..n from the callback, and accuracy."""
    stamps = []
    crf = CRFTagger(loss="cll", prior="l2", C=C, max_iter=max_iter, tol=0.0, n_jobs=1,
                    callback=lambda k, value: stamps.append((time.perf_counter(),
                                                             time.process_time())))
    t0 = time.perf_counter()
    crf.fit(F_train, y_train)
    fit_s = time.perf_counter() - t0
    acc = token_accuracy(y_test, crf.predict(F_test)) if F_test is not None else float("nan")
    n = len(stamps) - 1
    return dict(s_per_iter=(stamps[-1][1] - stamps[0][1]) / n,
                wall_per_iter=(stamps[-1][0] - stamps[0][0]) / n, fit_s=fit_s,
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
    return dict(s_per_iter=sum(times) / len(times), wall_per_iter=float("nan"), fit_s=fit_s,
                n_iter=len(crf.training_log_.iterations),
                accuracy=(token_accuracy(y_test, crf.predict(F_test)) if F_test is not None
                          else float("nan")),
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


def time_kernels(n_labels, repeats=5, seed=0):
    """CPU seconds (best of ``repeats``) of forward_backward and viterbi, and T."""
    rng = np.random.default_rng(seed)
    T = int(48000 * (44 / n_labels) ** 2) // 24 * 24
    U = rng.normal(size=(T, n_labels))
    trans = 0.5 * rng.normal(size=(n_labels, n_labels))
    start, end = rng.normal(size=n_labels), rng.normal(size=n_labels)
    offsets = np.arange(0, T + 1, 24, dtype=np.intp)
    best = {}
    for name, kernel in (("forward_backward", forward_backward), ("viterbi", viterbi)):
        kernel(U, trans, start, end, offsets, n_threads=1)
        times = []
        for _ in range(repeats):
            t0 = time.process_time()
            kernel(U, trans, start, end, offsets, n_threads=1)
            times.append(time.process_time() - t0)
        best[name] = min(times)
    return best, T


def profile(F_train, y_train, max_iter):
    """CPU seconds of one CLL evaluation and of its forward-backward alone."""
    sys.path.insert(0, HERE)
    from _common import training_objective

    from sklearn_crfloss.losses import get_loss
    from sklearn_crfloss.priors import get_prior

    crf = CRFTagger(max_iter=max_iter, n_jobs=1).fit(F_train, y_train)
    objective, theta, _, offsets = training_objective(crf, F_train, y_train)
    Xc = crf.vectorizer_.transform([t for s in F_train for t in s]).tocsr()
    U = np.ascontiguousarray(Xc @ crf.coef_.T)
    loss, prior = get_loss("cll"), get_prior("l2")
    steps = {"CLL evaluation": lambda: objective.value_and_grad(theta, loss, prior, 1.0),
             "forward_backward": lambda: forward_backward(U, crf.transition_, crf.start_,
                                                          crf.end_, offsets, n_threads=1)}
    best = {}
    for name, step in steps.items():
        step()
        times = []
        for _ in range(5):
            t0 = time.process_time()
            step()
            times.append(time.process_time() - t0)
        best[name] = min(times)
    return best


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-iter", type=int, default=60)
    p.add_argument("--train-sentences", type=int, default=None)
    p.add_argument("--skip-crfsuite", action="store_true")
    p.add_argument("--skip-conll", action="store_true")
    p.add_argument("--synthetic", type=int, nargs="*", default=[])
    p.add_argument("--synthetic-tokens", type=int, default=20000)
    p.add_argument("--kernels", type=int, nargs="*", default=[])
    p.add_argument("--profile", action="store_true")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)
    print("command:", " ".join(["python"] + sys.argv), flush=True)
    if not args.skip_conll:
        (X_tr, y_tr), (X_te, y_te) = (load_conll2000(s, task="pos") for s in ("train", "test"))
        if args.train_sentences:
            X_tr, y_tr = X_tr[:args.train_sentences], y_tr[:args.train_sentences]
        F_tr, F_te = featurize(X_tr), featurize(X_te)
        print(f"CoNLL-2000 POS: {len(X_tr)} sentences, {sum(map(len, X_tr))} tokens", flush=True)
        rows = [("sklearn-crfloss", run_ours)] if args.max_iter else []
        if not args.skip_crfsuite:
            rows.append(("sklearn-crfsuite", run_crfsuite))
        res = {}
        for name, run in rows:
            before = load_avg()
            res[name] = run(F_tr, y_tr, F_te, y_te, args.max_iter)
            print(f"  {name}: done (load average before {before}, after {load_avg()})",
                  flush=True)
        print()
        print_row("tool", "labels", "parameters", "iterations", "CPU s/iteration",
                  "wall s/iteration", "fit s", "token accuracy", header=True)
        for name, r in res.items():
            print_row(name, r["n_labels"], r["n_parameters"], r["n_iter"],
                      f"{r['s_per_iter']:.3f}", f"{r['wall_per_iter']:.3f}", f"{r['fit_s']:.1f}",
                      f"{100 * r['accuracy']:.2f}")
        if args.profile:
            best = profile(F_tr, y_tr, args.max_iter)
            total, fb = best["CLL evaluation"], best["forward_backward"]
            print(f"\none CLL evaluation: {total:.3f} CPU s; forward_backward on U alone "
                  f"{fb:.3f} s ({100 * fb / total:.0f}%); the rest {total - fb:.3f} s "
                  f"(load average {load_avg()})", flush=True)
        if len(res) == 2:
            a, b = res["sklearn-crfloss"], res["sklearn-crfsuite"]
            print(f"\nratio of CPU s/iteration (ours / CRFsuite): {a['s_per_iter'] / b['s_per_iter']:.2f}"
                  f"; accuracy difference {100 * (a['accuracy'] - b['accuracy']):+.2f}", flush=True)
    if args.kernels:
        print()
        print_row("labels L", "tokens T", "forward_backward s", "ns per T x L^2", "viterbi s",
                  "ns per T x L^2", "load average", header=True)
        for L in args.kernels:
            best, T = time_kernels(L)
            fb, vit = best["forward_backward"], best["viterbi"]
            print_row(L, T, f"{fb:.4f}", f"{1e9 * fb / (T * L * L):.3f}", f"{vit:.4f}",
                      f"{1e9 * vit / (T * L * L):.3f}", load_avg())
    if args.synthetic:
        print()
        print_row("labels L", "tokens T", "CPU s/iteration", "ns per T x L^2",
                  "CRFsuite s/iteration", "ratio", "load average", header=True)
        for L in args.synthetic:
            X, y = synthetic(L, args.synthetic_tokens)
            n_iter = min(args.max_iter, 20)
            r = run_ours(X, y, None, None, n_iter)
            c = (None if args.skip_crfsuite else run_crfsuite(X, y, None, None, n_iter))
            T = sum(map(len, X))
            theirs = "--" if c is None else f"{c['s_per_iter']:.3f}"
            ratio = "--" if c is None else f"{r['s_per_iter'] / c['s_per_iter']:.2f}"
            print_row(L, T, f"{r['s_per_iter']:.3f}", f"{1e9 * r['s_per_iter'] / (T * L * L):.2f}",
                      theirs, ratio, load_avg())


if __name__ == "__main__":
    main()
