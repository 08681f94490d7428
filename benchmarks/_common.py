"""Helpers shared by the benchmark scripts (machine, versions, peak memory, tables).

Not part of the package: the scripts in this folder add the folder to
``sys.path`` and ``import _common``.
"""

import gc
import os
import pickle
import platform
import re
import shlex
import sys
import time
import traceback
import tracemalloc
from importlib import metadata

__all__ = [
    "print_run_header",
    "PeakMemory",
    "add_bootstrap_arguments",
    "cached",
    "Timer",
    "command_line",
    "conll2000_run",
    "parse_conll2000_run",
    "run_forked",
    "format_table",
    "paired_tests_line",
    "machine_info",
    "thread_info",
    "versions",
]

_MB = 1024.0 * 1024.0


def cached(path, compute):
    """The pickle at ``path``, or ``compute()`` pickled there (a run cut short resumes)."""
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    value = compute()
    with open(path + ".tmp", "wb") as f:
        pickle.dump(value, f)
    os.replace(path + ".tmp", path)
    return value


def _proc_status_kb(field):
    """Value of ``field`` (e.g. ``VmHWM``) in /proc/self/status in kB, or None."""
    try:
        with open("/proc/self/status") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(rf"^{field}:\s+(\d+)\s+kB", text, re.MULTILINE)
    return int(m.group(1)) if m else None


def _reset_hwm():
    """Reset the peak resident set size (Linux >= 4.0); return True on success."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    # The reset sets VmHWM to the current VmRSS; check that it did happen.
    hwm, rss = _proc_status_kb("VmHWM"), _proc_status_kb("VmRSS")
    return hwm is not None and rss is not None and hwm <= rss + 1024


class PeakMemory:
    """Context manager measuring the peak memory of the block it wraps.

    Preferred method (``method == "VmHWM"``): reset the kernel's resident-set
    high-water mark by writing ``5`` to ``/proc/self/clear_refs``, run the
    block, then read ``VmHWM`` from ``/proc/self/status``.  It sees every
    allocation of the process, C libraries included.  ``peak_mb`` is the
    absolute peak RSS and ``delta_mb`` the peak minus the RSS at entry.

    Fallback (``method == "tracemalloc"``, used when the reset is not
    possible): :mod:`tracemalloc` peak of the block, which only sees
    allocations made through Python's allocators (numpy arrays included, C
    libraries such as CRFsuite not); ``peak_mb`` is then None and ``delta_mb``
    the traced peak.  Pass ``allow_tracemalloc=False`` to get None for both
    instead (for blocks whose memory lives in C libraries).
    """

    def __init__(self, allow_tracemalloc=True):
        self.allow_tracemalloc = allow_tracemalloc
        self.method = None
        self.peak_mb = None
        self.delta_mb = None
        self.rss_before_mb = None

    def __enter__(self):
        gc.collect()
        if _reset_hwm():
            self.method = "VmHWM"
            self.rss_before_mb = _proc_status_kb("VmRSS") / 1024.0
        elif self.allow_tracemalloc:
            self.method = "tracemalloc"
            tracemalloc.start()
            tracemalloc.reset_peak()
        else:
            self.method = "unavailable"
        return self

    def __exit__(self, *exc):
        if self.method == "VmHWM":
            self.peak_mb = _proc_status_kb("VmHWM") / 1024.0
            self.delta_mb = self.peak_mb - self.rss_before_mb
        elif self.method == "tracemalloc":
            self.delta_mb = tracemalloc.get_traced_memory()[1] / _MB
            tracemalloc.stop()
        return False


class Timer:
    """Context manager recording wall (``wall``) and process CPU (``cpu``) seconds."""

    def __enter__(self):
        self._w = time.perf_counter()
        self._c = time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self._w
        self.cpu = time.process_time() - self._c
        return False


def run_forked(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` in a child process forked from this one; its (pickled) result.

    Every run starts from the parent's memory state: in one process a fit
    after another reuses the pages the first one freed (the allocator keeps
    them), and its peak RSS over the start would look smaller. The child
    shares the parent's data (copy on write). Call it before the parent has
    started OpenMP threads. On platforms without ``fork`` the call runs in
    this process. An exception in the child is raised again here (as a
    RuntimeError with the child's traceback).
    """
    if not hasattr(os, "fork"):
        return fn(*args, **kwargs)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        try:
            payload = pickle.dumps(("ok", fn(*args, **kwargs)))
        except BaseException:
            payload = pickle.dumps(("error", traceback.format_exc()))
        with os.fdopen(write_fd, "wb") as f:
            f.write(payload)
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as f:
        status, value = pickle.loads(f.read())
    os.waitpid(pid, 0)
    if status != "ok":
        raise RuntimeError(f"the forked run failed:\n{value}")
    return value


def machine_info():
    """Dict with nproc, usable CPUs, CPU model, memory, load average, platform."""
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = None
    mem_total = None
    try:
        with open("/proc/meminfo") as f:
            m = re.search(r"MemTotal:\s+(\d+)", f.read())
            mem_total = round(int(m.group(1)) / 1024 / 1024, 1) if m else None
    except OSError:
        pass
    try:
        load = tuple(round(v, 2) for v in os.getloadavg())
    except OSError:
        load = None
    return {
        "nproc": os.cpu_count(),
        "usable_cpus": usable,
        "cpu_model": model or platform.processor() or "unknown",
        "mem_total_gb": mem_total,
        "loadavg_1_5_15": load,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def versions(modules):
    """Dict ``{distribution: version}`` for the given distribution names."""
    out = {}
    for name in modules:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def thread_info():
    """Short description of the thread pools (BLAS, OpenMP) and thread env vars."""
    env = {
        k: os.environ[k]
        for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
        if k in os.environ
    }
    pools = []
    try:
        from threadpoolctl import threadpool_info

        for p in threadpool_info():
            pools.append(
                f"{p.get('internal_api')}={p.get('num_threads')}"
                f" ({os.path.basename(p.get('filepath', ''))})"
            )
    except Exception as exc:  # informative only
        pools.append(f"threadpoolctl unavailable: {exc}")
    return {"env": env, "pools": pools}


def command_line(env_vars=()):
    """The command line that started this process, with the given env vars."""
    prefix = [f"{k}={shlex.quote(os.environ[k])}" for k in env_vars if k in os.environ]
    return " ".join(prefix + [shlex.quote(sys.executable)] + [shlex.join(sys.argv)])


def add_bootstrap_arguments(parser):
    """The options of the CoNLL-2002 significance scripts: a training prefix and the bootstrap."""
    parser.add_argument("--train-sentences", type=int, default=None,
                        help="prefix, quick checks")
    parser.add_argument("--n-resamples", type=int, default=9999)
    parser.add_argument("--random-state", type=int, default=0)


def parse_significance_run(parser, argv):
    """Add the bootstrap options, parse, silence ConvergenceWarning, print command and load.

    Returns
    -------
    argparse.Namespace
    """
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    add_bootstrap_arguments(parser)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)
    print("command:", " ".join(["python"] + sys.argv), flush=True)
    print("load average:", open("/proc/loadavg").read().strip(), flush=True)
    return args


def paired_tests_line(y_true, pred_a, pred_b, n_resamples, random_state, metric=None):
    """One line: paired bootstrap of ``metric`` (a - b; default segment F1) and McNemar on
    sentences and tokens."""
    from sklearn_crfloss import metrics

    boot = metrics.paired_bootstrap_test(y_true, pred_a, pred_b, n_resamples=n_resamples,
                                         metric=metric or metrics.segment_f1_score,
                                         random_state=random_state)
    sent, tok = (metrics.mcnemar_test(y_true, pred_a, pred_b, unit=u).pvalue
                 for u in ("sentence", "token"))
    lo, hi = (100 * v for v in boot.confidence_interval)
    return (f"{100 * boot.score_a:.2f} vs {100 * boot.score_b:.2f}; difference "
            f"{100 * boot.difference:+.2f} [{lo:+.2f}, {hi:+.2f}], bootstrap p={boot.pvalue:.3g} "
            f"({n_resamples} resamples); McNemar p={sent:.3g} (sentences), {tok:.3g} (tokens)")


def format_table(header, rows):
    """Plain-text table: first column left-aligned, the others right-aligned."""
    cols = list(zip(*([header] + rows)))
    widths = [max(len(str(c)) for c in col) for col in cols]
    lines = []
    for k, row in enumerate([header] + rows):
        cells = [
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def training_objective(crf, F, y, n_threads=1):
    """The training objective of a fitted CRFTagger on feature dicts, as ``fit`` builds it.

    Returns ``(objective, theta, y_enc, offsets)``: a
    ``sklearn_crfloss._model._objective.CRFObjective`` over the model's attributes
    with CRFsuite-style observed (attribute, label) pairs, and the model's
    parameters packed in its layout. Evaluate with
    ``objective.value_and_grad(theta, loss, prior, C)``.
    """
    import numpy as np

    from sklearn_crfloss._model._objective import CRFObjective
    from sklearn_crfloss._model._parameters import ParameterLayout, observed_pairs

    Xc = crf.vectorizer_.transform([t for s in F for t in s]).tocsr()
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in y])]).astype(np.intp)
    y_enc = np.searchsorted(crf.classes_, np.concatenate(y)).astype(np.intp)
    L = crf.classes_.shape[0]
    layout = ParameterLayout(Xc.shape[1], L, observed_pairs(Xc, y_enc, L))
    objective = CRFObjective(Xc, y_enc, offsets, layout, n_threads=n_threads, owns_features=True)
    theta = layout.pack(crf.coef_.T, crf.transition_, crf.start_, crf.end_)
    return objective, theta, y_enc, offsets


def short_fit_objective():
    """``(args, objective, theta)`` for timing one evaluation (``--n-jobs``, ``--repeats``).

    Parses the two options, prints the run's header, and builds the
    CoNLL-2000 training objective (CRF++ template features, ``n_jobs``
    threads) and the parameters of a 5-iteration fit
    (:func:`training_objective`).
    """
    import argparse
    import warnings

    from sklearn_crfloss import CRFTagger
    from sklearn_crfloss.datasets import load_conll2000
    from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures

    parser = argparse.ArgumentParser()
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    print_run_header(("sklearn_crfloss", "numpy", "scipy"))
    X, y = load_conll2000("train")
    F = TemplateFeatures(CONLL2000_TEMPLATE).fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf = CRFTagger(max_iter=5).fit(F, y)
    objective, theta, _, _ = training_objective(crf, F, y, n_threads=args.n_jobs)
    return args, objective, theta


def time_evaluations(objective, theta, ways, n_jobs, repeats):
    """Time CLL + L2 evaluations (``C = 1``) each way in turn, interleaved; print the figures.

    ``ways``: ``{name: set_up}``, ``set_up()`` called before each timed
    evaluation. BLAS is limited to one thread as in ``fit``; the clock is
    the thread's CPU time with ``n_jobs == 1``, else wall time. Prints the
    minimum and median milliseconds per way and whether every way gave the
    same value and gradient, bitwise.
    """
    import time

    import numpy as np
    from threadpoolctl import threadpool_limits

    from sklearn_crfloss.losses import ConditionalLogLikelihood
    from sklearn_crfloss.priors import get_prior

    loss, prior = ConditionalLogLikelihood(), get_prior("l2")
    clock = time.thread_time if n_jobs == 1 else time.perf_counter
    times = {way: [] for way in ways}
    results = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(repeats):
            for way, set_up in ways.items():
                set_up()
                t0 = clock()
                value, grad = objective.value_and_grad(theta, loss, prior, 1.0)
                times[way].append(clock() - t0)
                results[way] = (value, grad.copy())
    (value, grad), *others = results.values()
    same = all(v == value and np.array_equal(g, grad) for v, g in others)
    kind = "thread CPU" if n_jobs == 1 else "wall"
    print(f"n_jobs={n_jobs}, {repeats} interleaved repeats, {kind} ms per evaluation:")
    for way, t in times.items():
        print(f"  {way:7s} min {1e3 * min(t):7.2f}  median {1e3 * np.median(t):7.2f}")
    print(f"bitwise the same value and gradient: {same}")


def conll2000_run(train_sentences=None):
    """Print the command line and the machine; the CoNLL-2000 train and test sets.

    Returns ``(X_train, y_train, X_test, y_test)`` (token tuples and labels),
    the training set cut to its first ``train_sentences`` if that is given
    (not None or 0).
    """
    from sklearn_crfloss.datasets import load_conll2000

    print(command_line(["SKLEARN_CRFLOSS_DATA"]))
    print(machine_info())
    X_train, y_train = load_conll2000("train", download_if_missing=False)
    X_test, y_test = load_conll2000("test", download_if_missing=False)
    if train_sentences:
        X_train, y_train = X_train[:train_sentences], y_train[:train_sentences]
    return X_train, y_train, X_test, y_test


def parse_conll2000_run(parser, modules=("sklearn_crfloss", "numpy", "scipy")):
    """The arguments of ``parser`` (which has ``--train-sentences``), the run
    header (:func:`print_run_header`) printed, and :func:`conll2000_run`'s sets.

    Returns ``(args, X_train, y_train, X_test, y_test)``.
    """
    args = parser.parse_args()
    print_run_header(list(modules))
    return (args, *conll2000_run(args.train_sentences))


def print_run_header(modules):
    """Print the command line, the CPU count, the load average and the versions of ``modules``."""
    machine = machine_info()
    print(f"command : {command_line(['SKLEARN_CRFLOSS_DATA'])}")
    print(f"machine : nproc={machine['nproc']} load={machine['loadavg_1_5_15']}")
    print(f"versions: {versions(modules)}", flush=True)
