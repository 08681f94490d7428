"""CPU time of the chain kernels by vector build (baseline, AVX2, AVX-512).

A portable build compiles the chain kernel modules once per vector build
(``_ext/meson.build``; ``sklearn_crfloss._chain._dispatch`` picks, module by
module, the widest copy the CPU runs). This decides which copies pay for
their compile time. It records the arguments of the kernels' calls during
real work on CoNLL-2000 (CRF++ template features, ``n_jobs=1``): one or two
training iterations of the losses that call each kernel (CLL, the fused
marginal losses, ``mixed``, MCE, MCE-F on labels and on chunks, softmax-margin),
``predict``, ``predict_marginals``, ``predict_nbest`` and a
label-bigram template (``B01:%x[0,1]``: position-dependent transitions), and
``inference.marginals_vjp`` and ``segment_margins`` on potentials of the
data's shape.
For each kernel function it keeps the largest call (most bytes of array
arguments), then replays that call with each build's function, the builds
alternating in a rotating order, ``--repeats`` rounds, on fresh copies of
the arrays; it reports the median CPU time (process time: the machine may
be shared) per build and the ratio to the baseline, and per module the sum
over its functions.

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/bench_simd_builds.py \\
        [--train-sentences N] [--repeats R] [--modules _viterbi,_potentials]

Builds that this installation lacks for a module are left out of its rows.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

from sklearn_crfloss import CRFTagger, inference  # noqa: E402
from sklearn_crfloss._chain import _dispatch  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.losses import SegmentFScoreMCE  # noqa: E402

BUILDS = ("baseline", "avx2", "avx512")


def available(module):
    """The builds of one kernel module this installation has, by name."""
    found = {}
    for build in BUILDS:
        suffix = "" if build == "baseline" else f"_{build}"
        try:
            found[build] = __import__(f"sklearn_crfloss._chain.{module}{suffix}",
                                      fromlist=["_"])
        except ImportError:
            continue
    return found


def array_bytes(args, kwargs):
    return sum(a.nbytes for a in (*args, *kwargs.values()) if isinstance(a, np.ndarray))


def install_recorders(modules, calls):
    """Wrap every module attribute of the package that is a kernel function of any build."""
    kernels = {}
    for module, builds in modules.items():
        for build, mod in builds.items():
            for name in dir(mod):
                fn = getattr(mod, name)
                if callable(fn) and not name.startswith("_") and not isinstance(fn, type):
                    kernels[id(fn)] = (module, name, fn)

    def recorder(module, name, fn):
        def wrapped(*args, **kwargs):
            size = array_bytes(args, kwargs)
            key = (module, name)
            if key not in calls or calls[key][0] < size:
                calls[key] = (size, [a.copy() if isinstance(a, np.ndarray) else a for a in args],
                              {k: v.copy() if isinstance(v, np.ndarray) else v
                               for k, v in kwargs.items()})
            return fn(*args, **kwargs)
        return wrapped

    for mod in [m for n, m in list(sys.modules.items()) if n.startswith("sklearn_crfloss")]:
        for attr, value in list(vars(mod).items()):
            if id(value) in kernels and kernels[id(value)][2] is value:
                setattr(mod, attr, recorder(*kernels[id(value)]))


def workloads(X, y):
    """The fits and predictions whose kernel calls are recorded."""
    template = TemplateFeatures(CONLL2000_TEMPLATE)
    F = template.fit_transform(X)
    bigram = TemplateFeatures(CONLL2000_TEMPLATE + "\nB01:%x[0,1]\n")
    Fb = bigram.fit_transform(X)
    fits = [("cll", dict(loss="cll")), ("risk", dict(loss="risk")),
            ("labelwise", dict(loss="labelwise")), ("pointwise", dict(loss="pointwise")),
            ("mixed", dict(loss="mixed")), ("softmax_margin", dict(loss="softmax_margin")),
            ("mce", dict(loss="mce", solver="lbfgs")), ("mce_f", dict(loss="mce_f", solver="lbfgs")),
            ("mce_f chunks", dict(loss=SegmentFScoreMCE(segment_match="chunks"), solver="lbfgs"))]
    crf = None
    for label, params in fits:
        t0 = time.process_time()
        try:
            model = CRFTagger(max_iter=2, n_jobs=1, **params).fit(F, y)
        except Exception as exc:  # a loss that refuses these settings is reported, not fatal
            print(f"  fit {label}: skipped ({type(exc).__name__}: {exc})")
            continue
        print(f"  fit {label}: {time.process_time() - t0:.1f} s CPU")
        crf = model if label == "cll" else crf
    crf.predict(F)
    crf.predict_marginals(F)
    crf.predict_nbest(F[:2000], n_best=5)
    model = CRFTagger(max_iter=2, n_jobs=1).fit(Fb, y)
    model.predict(Fb)
    model.predict_marginals(Fb)
    # The public inference functions that no fit above reaches, on potentials
    # of the data's shape (the first label as the one-token gold segments).
    rng = np.random.default_rng(0)
    lengths = np.array([len(s) for s in y])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
    L = len(crf.classes_)
    unary, transition = rng.normal(size=(offsets[-1], L)), rng.normal(size=(L, L))
    start, end = rng.normal(size=L), rng.normal(size=L)
    inference.marginals_vjp(unary, transition, start, end, offsets,
                            rng.normal(size=unary.shape))
    gold = rng.integers(L, size=offsets[-1]).astype(np.intp)
    segments = (np.arange(len(y)), np.zeros(len(y), dtype=np.intp), np.minimum(lengths, 2))
    inference.segment_margins(unary, transition, start, end, offsets, gold, segments,
                              coef=np.ones(len(y)))


def replay(calls, modules, repeats):
    """Median CPU seconds per (module, function, build), builds alternating."""
    times = {}
    for (module, name), (_, args, kwargs) in sorted(calls.items()):
        builds = [b for b in BUILDS if b in modules[module]]
        samples = {b: [] for b in builds}
        for r in range(repeats):
            order = builds[r % len(builds):] + builds[:r % len(builds)]
            for build in order:
                fn = getattr(modules[module][build], name)
                a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
                k = {n: v.copy() if isinstance(v, np.ndarray) else v for n, v in kwargs.items()}
                t0 = time.process_time()
                fn(*a, **k)
                samples[build].append(time.process_time() - t0)
        times[module, name] = {b: float(np.median(s)) for b, s in samples.items()}
        times[module, name]["spread"] = {b: (min(s), max(s)) for b, s in samples.items()}
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train-sentences", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--modules", default=",".join(_dispatch.MODULES))
    args, X, y, _, _ = _common.parse_conll2000_run(parser)
    print(_common.thread_info())
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}")
    modules = {m: available(m) for m in args.modules.split(",")}
    calls = {}
    install_recorders(modules, calls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        workloads(X, y)
    never = sorted({(m, n) for m, b in modules.items() for n in dir(b["baseline"])
                    if n.endswith("_batch") or n.startswith("pair_")} - set(calls))
    print("kernel functions not called by the workloads:", never or "none")
    times = replay(calls, modules, args.repeats)
    rows, per_module = [], {}
    for (module, name), t in sorted(times.items()):
        builds = [b for b in BUILDS if b in t]
        base = t["baseline"]
        for b in builds:
            per_module.setdefault(module, {}).setdefault(b, 0.0)
            per_module[module][b] += t[b]
        rows.append([f"{module}.{name}", f"{calls[module, name][0] / 2**20:.0f} MB",
                     *[f"{t[b] * 1e3:.1f}" if b in t else "-" for b in BUILDS],
                     *[f"{t[b] / base:.3f}" if b in t else "-" for b in BUILDS[1:]],
                     " ".join(f"{b} {lo * 1e3:.0f}-{hi * 1e3:.0f}" for b, (lo, hi)
                              in t["spread"].items())])
    for module, t in sorted(per_module.items()):
        rows.append([f"{module} (sum)", "", *[f"{t[b] * 1e3:.1f}" if b in t else "-" for b in BUILDS],
                     *[f"{t[b] / t['baseline']:.3f}" if b in t else "-" for b in BUILDS[1:]], ""])
    print(_common.format_table(["kernel", "args", "baseline ms", "avx2 ms", "avx512 ms",
                                "avx2/base", "avx512/base", "min-max ms"], rows))
    print(f"CPU ms, median of {args.repeats}; load average at end: "
          f"{open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
