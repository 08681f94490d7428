"""Where the peak memory of a CoNLL-2000 fit sits: peak RSS and tracemalloc by allocation site.

Fits ``CRFTagger(loss='cll', prior='l2', C=1)`` on the CoNLL-2000 training
set (CRF++ chunking template, the feature dicts built before the
measurement) for ``--max-iter`` L-BFGS iterations, twice, each in a
process forked from the one holding the data:

1. peak RSS over the start (``VmHWM`` after a reset), as
   ``bench_conll2000.py`` measures it, and the RSS after each stage of the
   fit (the stage split of ``bench_conll2000.stage_memory``);
2. under :mod:`tracemalloc`: its peak, a snapshot taken by the
   ``callback`` after iteration ``--snapshot-iter`` (the L-BFGS state live,
   between two evaluations) and one at the highest traced point of the
   next iteration (see :func:`traced`), their live memory grouped by the
   line of the package (or of scikit-learn) that allocated it (numpy and
   scipy frames skipped, so an array is charged to the caller that asked
   for it). tracemalloc counts allocated bytes, RSS the pages touched: an
   ``np.zeros`` array whose pages are never written counts in the first
   only.

tracemalloc sees the allocations of Python and numpy, not ``malloc`` in C
libraries: libLBFGS's vectors (its history of ``m`` pairs ``s``, ``y``
and its ``x``, ``xp``, ``g``, ``gp``, ``d`` copies) are listed from their
sizes (``lbfgs.c``: ``(2 m + 5) n`` doubles with PyLBFGS's copy of ``x``),
and the per-thread scratch of the compiled kernels is part of numpy arrays
the package allocates.

3. the peak RSS of each of the first three objective evaluations by
   themselves (the objective set up as ``bench_conll2000.stage_memory``
   sets it up, private API): what the first evaluation adds once.

With ``--crfsuite``, first the peak RSS over the start of
``sklearn_crfsuite.CRF(algorithm='lbfgs', c1=0, c2=1/(2C),
all_possible_transitions=True)`` fitting the same feature dicts for the
same ``--max-iter`` iterations in its own forked process (as
``bench_conll2000.run_crfsuite`` measures it), and the ratio of the two.

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/fit_memory.py \\
        [--max-iter 20] [--snapshot-iter 10] [--n-jobs 2] [--top 14] [--crfsuite]
"""

import argparse
import gc
import os
import sys
import tracemalloc
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import PeakMemory, print_run_header, run_forked  # noqa: E402
from bench_conll2000 import stage_memory  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402

MB = 1024.0 * 1024.0
SKIPPED = (f"{os.sep}numpy{os.sep}", f"{os.sep}scipy{os.sep}", "<frozen", "tracemalloc")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-iter", type=int, default=20)
    p.add_argument("--snapshot-iter", type=int, default=10)
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--top", type=int, default=14, help="allocation sites listed")
    p.add_argument("--tol", type=float, default=1e-5)
    p.add_argument("--C", type=float, default=1.0)
    p.add_argument("--crfsuite", action="store_true",
                   help="also sklearn-crfsuite's peak RSS on the same dicts and iterations")
    args = p.parse_args(argv)
    args.stage_iter = args.max_iter  # for bench_conll2000.stage_memory
    return args


def model(args, callback=None):
    return CRFTagger(loss="cll", prior="l2", C=args.C, max_iter=args.max_iter, tol=args.tol,
                     n_jobs=args.n_jobs, callback=callback)


def peak_rss(args, F_train, y_train):
    """Peak RSS over the start of the public fit (MB) and the sizes of its results."""
    crf = model(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with PeakMemory() as mem:
            crf.fit(F_train, y_train)
    return {"method": mem.method, "peak_over_start_mb": mem.delta_mb,
            "n_params": int(crf.n_parameters_), "n_features": int(crf.n_features_in_)}


def crfsuite_peak_rss(args, F_train, y_train):
    """Peak RSS over the start of sklearn-crfsuite's fit for ``args.max_iter`` iterations (MB)."""
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=1.0 / (2.0 * args.C),
                               max_iterations=args.max_iter, delta=args.tol, min_freq=0,
                               all_possible_states=False, all_possible_transitions=True)
    with PeakMemory(allow_tracemalloc=False) as mem:
        crf.fit(F_train, y_train)
    return mem.delta_mb


def site(trace):
    """The innermost frame of a traceback outside numpy, scipy and the import machinery."""
    for frame in reversed(trace):  # most recent call first
        if not any(s in frame.filename for s in SKIPPED):
            path = frame.filename
            for root in ("sklearn_crfloss", "sklearn", "benchmarks"):
                k = path.rfind(os.sep + root + os.sep)
                if k >= 0:
                    path = path[k + 1:]
                    break
            return f"{path}:{frame.lineno}"
    return "(numpy/scipy internals)"


def traced(args, F_train, y_train):
    """tracemalloc's peak and the live memory by allocation site at two moments.

    After iteration ``snapshot_iter`` (between evaluations) and at the
    highest point of the next iteration: during it a profile hook reads the
    traced memory at every call and return (numpy's allocations included)
    and takes a snapshot at each new maximum (1 MB above the last).
    """
    taken = {}

    def hook(frame, event, arg):
        current = tracemalloc.get_traced_memory()[0]
        if current > taken.get("top", 0) + MB:
            taken["top"] = current
            taken["top_snapshot"] = tracemalloc.take_snapshot()

    def callback(iteration, objective):
        if iteration == args.snapshot_iter:
            taken["between"] = tracemalloc.get_traced_memory()[0]
            taken["between_snapshot"] = tracemalloc.take_snapshot()
            taken["top"] = taken["between"]
            sys.setprofile(hook)
        elif iteration == args.snapshot_iter + 1:
            sys.setprofile(None)

    tracemalloc.start(30)
    base = tracemalloc.get_traced_memory()[0]
    crf = model(args, callback)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf.fit(F_train, y_train)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out = {"peak_mb": (peak - base) / MB}
    for moment in ("between", "top"):
        sites = {}
        for stat in taken[moment + "_snapshot"].statistics("traceback"):
            name = site(stat.traceback)
            sites[name] = sites.get(name, 0) + stat.size
        out[moment] = {"live_mb": (taken[moment] - base) / MB,
                       "sites": {k: v / MB for k, v in sites.items()}}
    return out


def traced_peak(args, F_train, y_train):
    """Where the fit's traced peak happens: the package's call stack at the highest point."""
    top = {"mb": 0.0, "stack": ""}

    def hook(frame, event, arg):
        current = tracemalloc.get_traced_memory()[0] / MB
        if current > top["mb"] + 0.5:
            stack = []
            while frame is not None:
                if any(s in frame.f_code.co_filename for s in ("sklearn_crfloss", "sklearn")):
                    stack.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
                frame = frame.f_back
            top.update(mb=current, stack=" < ".join(stack[:6]), event=f"{event} {arg!r:.60}")

    tracemalloc.start(1)
    base = tracemalloc.get_traced_memory()[0] / MB
    crf = model(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sys.setprofile(hook)
        try:
            crf.fit(F_train, y_train)
        finally:
            sys.setprofile(None)
    tracemalloc.stop()
    top["mb"] -= base
    return top


def evaluation_peaks(args, F_train, y_train, n_evaluations=3):
    """Peak RSS over the start of each of the first objective evaluations (private API)."""
    import numpy as np

    from _common import _proc_status_kb, _reset_hwm
    from sklearn_crfloss._data._validation import check_sequences, encode_labels
    from sklearn_crfloss._data._vectorize import SequenceVectorizer
    from sklearn_crfloss._model._objective import CRFObjective
    from sklearn_crfloss._model._parameters import ParameterLayout, observed_pairs
    from sklearn_crfloss.losses import get_loss
    from sklearn_crfloss.priors import get_prior

    kind, tokens, offsets = check_sequences(F_train)
    classes, y_enc = encode_labels(y_train, np.diff(offsets))
    Xc = SequenceVectorizer().fit_transform(kind, tokens, offsets)
    L = classes.shape[0]
    layout = ParameterLayout(Xc.shape[1], L, observed_pairs(Xc, y_enc, L))
    objective = CRFObjective(Xc, y_enc, offsets, layout, n_threads=args.n_jobs)
    theta, loss, prior = layout.zeros(), get_loss("cll"), get_prior("l2")
    out = []
    for _ in range(n_evaluations):
        gc.collect()
        if not _reset_hwm():
            return None
        start = _proc_status_kb("VmRSS")
        grad = objective.value_and_grad(theta, loss, prior, args.C)[1]
        out.append(((_proc_status_kb("VmHWM") - start) / 1024,
                    (_proc_status_kb("VmRSS") - start) / 1024))
        del grad
    return out


def main(argv=None):
    args = parse_args(argv)
    print_run_header(["sklearn_crfloss", "numpy", "scipy", "scikit-learn"])
    X_train, y_train = load_conll2000("train", download_if_missing=False)
    F_train = TemplateFeatures(CONLL2000_TEMPLATE).fit(X_train).transform(X_train)
    del X_train
    rss = run_forked(peak_rss, args, F_train, y_train)
    stages = run_forked(stage_memory, args, args.n_jobs, F_train, y_train)
    tm = run_forked(traced, args, F_train, y_train)
    n = rss["n_params"]
    m = 6  # LBFGS(max_corrections=6), the default
    print(f"fit: {args.max_iter} L-BFGS iterations, n_jobs={args.n_jobs}, {n:,} parameters, "
          f"{rss['n_features']:,} attributes")
    print(f"peak RSS over the start ({rss['method']}): {rss['peak_over_start_mb']:.0f} MB")
    if args.crfsuite:
        theirs = run_forked(crfsuite_peak_rss, args, F_train, y_train)
        print(f"sklearn-crfsuite, the same dicts and iterations: {theirs:.0f} MB; ratio "
              f"{rss['peak_over_start_mb'] / theirs:.2f}")
    if stages:
        print("by stage (bench_conll2000.stage_memory): " + "; ".join(
            f"{s['stage']}: peak {s['peak_over_start_mb']:.0f}, after {s['rss_over_start_mb']:.0f}"
            for s in stages))
    between, top = tm["between"], tm["top"]
    print(f"tracemalloc: peak {tm['peak_mb']:.1f} MB over the start; live after iteration "
          f"{args.snapshot_iter}: {between['live_mb']:.1f} MB; at the highest point of "
          f"iteration {args.snapshot_iter + 1}: {top['live_mb']:.1f} MB; by allocation site "
          "(MB between iterations / at that point):")
    names = sorted(top["sites"], key=lambda k: -top["sites"][k])
    for name in names[:args.top]:
        print(f"  {between['sites'].get(name, 0.0):8.1f} {top['sites'][name]:8.1f}  {name}")
    print(f"  {sum(between['sites'].get(k, 0.0) for k in names[args.top:]):8.1f} "
          f"{sum(top['sites'][k] for k in names[args.top:]):8.1f}  "
          f"(the other {len(names) - args.top} sites)")
    evaluations = run_forked(evaluation_peaks, args, F_train, y_train)
    if evaluations:
        print("objective evaluations at theta = 0 (peak RSS over each one's start / RSS "
              "after, MB): " + "; ".join(f"{k + 1}: {p:.1f} / {a:.1f}"
                                         for k, (p, a) in enumerate(evaluations)))
    where = run_forked(traced_peak, args, F_train, y_train)
    print(f"the traced peak ({where['mb']:.1f} MB) at {where['event']} in {where['stack']}")
    print(f"not traced: libLBFGS (2 m + 5) n doubles = {(2 * m + 5) * n * 8 / MB:.1f} MB "
          f"(m = {m}: history {2 * m * n * 8 / MB:.1f} MB)")


if __name__ == "__main__":
    main()
