"""Side-by-side benchmark of sklearn-crfloss and sklearn-crfsuite on CoNLL-2000.

Trains the same L2-regularised linear-chain CRF on CoNLL-2000 text chunking
with :class:`sklearn_crfloss.CRFTagger` and with
:class:`sklearn_crfsuite.CRF` (CRFsuite's L-BFGS), one after the other in the
same process, and prints a table of training time, iterations, model size,
test quality, prediction speed and peak memory.

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/bench_conll2000.py \\
        [--n-jobs 1 2] [--C 1.0] [--max-iter N] [--train-sentences N] \\
        [--repeat-predict K] [--skip-crfsuite] [--stage-iter N] \\
        [--loss-evals K] [--json PATH]

One run fits sklearn-crfloss once per ``--n-jobs`` value (default 1 and 2),
then sklearn-crfsuite, then measures the memory of each stage of our fit and
the cost of one objective evaluation of other losses relative to CLL.

The data folder must contain ``conll2000/train.txt`` and
``conll2000/test.txt`` (nothing is downloaded).

Data and features
-----------------
The CoNLL-2000 training (8,936 sentences, 211,727 tokens) and test (2,012
sentences, 47,377 tokens) sets are loaded with
:func:`sklearn_crfloss.datasets.load_conll2000` and turned *once* into
per-token feature dicts with
``TemplateFeatures(CONLL2000_TEMPLATE).fit_transform`` (CRF++'s chunking
template: 19 string-valued attributes per token).  Both tools get exactly
these dicts.  ``{"U05": "He/reckons"}`` becomes the indicator attribute
``U05:He/reckons`` in both (python-crfsuite's key/value join, which
sklearn-crfloss follows); both with value 1.
``--train-sentences N`` keeps the first N training sentences (the test set
is always complete).

The two models
--------------
sklearn-crfloss minimises

    sum_i -log p(y_i | x_i; theta) + ||theta||^2 / (2 C)

(``loss='cll', prior='l2'``), CRFsuite minimises

    sum_i -log p(y_i | x_i; w) + c1 ||w||_1 + c2 ||w||^2,

so with ``c1 = 0`` and ``c2 = 1 / (2 C)`` (0.5 for the default ``C = 1``)
the objectives are the same.  Both penalise every parameter, transition
weights included (sklearn-crfloss also its start/end potentials).  Model
structure:

- state features: both train only the (attribute, label) pairs that occur
  in the training data (``all_possible_states=False`` in both, CRFsuite's
  default ``feature.possible_states=0``), so the state-feature counts should
  be identical;
- transitions: sklearn-crfloss always trains a dense L x L transition matrix
  plus L start and L end potentials; CRFsuite is given
  ``all_possible_transitions=True`` (dense L x L) and has no start/end
  potentials, so sklearn-crfloss has 2 L more parameters (44 for L = 22
  labels);
- no frequency cut-off in either (``min_freq`` 1 / 0).

Stopping: both use L-BFGS and stop when the objective improved by less than
``1e-5`` relative over the last 10 iterations (CRFsuite ``delta=1e-5``,
``period=10``; sklearn-crfloss ``tol=1e-5``), or after ``--max-iter``
iterations (default 1000, far more than either needs).  Secondary rules
differ: CRFsuite also stops when ``||g|| / max(1, ||w||) < epsilon = 1e-5``
and uses 6 L-BFGS corrections with a More-Thuente line search;
sklearn-crfloss uses scipy's L-BFGS-B with 10 corrections and its own
``pgtol``/``ftol`` tests.  The iteration counts therefore differ somewhat
even for identical objectives; the "final objective" row (CRFsuite's
logged ``Loss``, which includes the L2 term, vs ``CRFTagger.objective_``)
tells whether both reached the same optimum.

What is measured
----------------
fit s
    Wall seconds of ``fit(X_train_dicts, y_train)``.  For sklearn-crfloss
    this includes vectorising the dicts (DictVectorizer), building the
    feature index and L-BFGS; for sklearn-crfsuite it includes passing the
    dicts to CRFsuite, its feature generation, L-BFGS and writing the model
    file.  ``fit CPU s`` is the process CPU time over the same interval
    (CPU / wall > 1 means several threads were busy).
iterations
    ``CRFTagger.n_iter_``; for CRFsuite the number of iterations in
    ``training_log_``.  CRFsuite's number of objective evaluations (sum of
    its line-search trials) is printed as an informative line.
s / iteration
    fit seconds / iterations, i.e. *including* the fixed costs
    (vectorisation, feature generation); and "L-BFGS only": the seconds
    between the callbacks of the first and the last iteration divided by
    the iterations between them (sklearn-crfloss), CRFsuite's logged
    seconds of iterations 2..n (its log also gives its split between
    feature generation and training). CRFsuite times its iterations with
    ``clock()`` (``train_lbfgs.c: lbfgs_progress``): process CPU seconds,
    equal to its wall seconds (it is single-threaded) only on a quiet
    machine; under load its logged figure is smaller than its wall time
    while ours is wall time. ``CPU s / iteration`` compares CPU with CPU.
parameters / features
    ``CRFTagger.n_parameters_`` (free state weights + L x L transitions +
    start + end) vs CRFsuite's "Number of features" from its training log
    (state features + transitions).  The state-feature counts are printed
    separately.
test F1 (%)
    :func:`sklearn_crfloss.metrics.segment_f1_score` (conlleval chunk F1,
    micro-averaged) on the test set, in percent, computed with the same
    function for both tools.
token accuracy (%)
    :func:`sklearn_crfloss.metrics.token_accuracy` on the test set.
predict tokens/s
    Test tokens divided by the best (smallest) wall time of
    ``--repeat-predict`` calls of ``predict(X_test_dicts)`` (vectorisation
    of the dicts included for both tools).
peak MB, peak-over-start MB
    Peak resident set size (``VmHWM``) of the process during ``fit``, after
    resetting the high-water mark by writing ``5`` to
    ``/proc/self/clear_refs`` right before the fit; and that peak minus the
    RSS at the reset (the memory the fit itself needed, since both runs
    share the process and the loaded data).  If the reset is not possible,
    the sklearn-crfloss figure is the :mod:`tracemalloc` peak of the fit
    (Python/numpy allocations only) and the CRFsuite figure is not
    available; the table says which method was used.

stage memory (sklearn-crfloss)
    The stages of ``CRFTagger.fit`` run one by one with the package's
    private classes (as ``fit`` calls them), resetting nothing in between:
    the peak RSS over the RSS before the first stage, after check and
    encoding, vectorisation (``SequenceVectorizer``), the parameter layout
    (observed pairs), the objective's set-up (``CRFObjective``) and
    ``--stage-iter`` L-BFGS iterations (enough to fill the L-BFGS memory),
    with ``n_jobs`` = the largest ``--n-jobs``.
loss ratios
    Seconds of one objective evaluation (``CRFObjective.value_and_grad``,
    value and gradient, prior included, one thread) of ``cll``,
    ``softmax_margin``, ``risk``, ``labelwise`` and ``mce_f`` at the
    parameters of the first sklearn-crfloss fit, the median of
    ``--loss-evals`` rounds (the losses alternate within a round), and
    their ratio to CLL's.

The run order is sklearn-crfloss (each ``--n-jobs``), then
sklearn-crfsuite, then the stage memory, each in a child process forked
from the main one once the features exist (``_common.run_forked``): the
runs share the data and the features, and each starts from the same memory
state (in one process a fit after another reuses the pages the first one
freed, and would show a smaller peak). CRFsuite is single-threaded;
``--n-jobs`` only applies to sklearn-crfloss.  Timings depend on the machine
and its load: the script prints the machine (nproc, CPU model, load
average), the library versions, the thread pools and the exact command line
so that a run can be reproduced.  Use ``--json PATH`` to store all figures.

Published reference (data README): CRFsuite L-BFGS, c2=0.5, this template:
F1 93.66, 456,238 state features, 195 iterations.
"""

import argparse
import gc
import json
import math
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import (  # noqa: E402
    PeakMemory,
    Timer,
    command_line,
    format_table,
    machine_info,
    run_forked,
    thread_info,
    training_objective,
    versions,
)

from sklearn.exceptions import ConvergenceWarning  # noqa: E402

import sklearn_crfloss  # noqa: E402
from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.datasets import get_data_home, load_conll2000  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.losses import get_loss  # noqa: E402
from sklearn_crfloss.metrics import segment_f1_score, token_accuracy  # noqa: E402
from sklearn_crfloss.priors import get_prior  # noqa: E402

#: The losses whose evaluation cost is compared with CLL's (issue 13).
RATIO_LOSSES = ["cll", "softmax_margin", "risk", "labelwise", "mce_f"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Benchmark sklearn-crfloss against sklearn-crfsuite on CoNLL-2000.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--n-jobs", type=int, nargs="+", default=[1, 2],
                   help="n_jobs of CRFTagger, one fit each (CRFsuite is single-threaded)")
    p.add_argument("--C", type=float, default=1.0,
                   help="inverse L2 strength; CRFsuite gets c2 = 1/(2C)")
    p.add_argument("--max-iter", type=int, default=1000,
                   help="maximum L-BFGS iterations for both tools")
    p.add_argument("--tol", type=float, default=1e-5,
                   help="relative improvement over 10 iterations (CRFsuite delta)")
    p.add_argument("--train-sentences", type=int, default=None,
                   help="use only the first N training sentences")
    p.add_argument("--repeat-predict", type=int, default=3,
                   help="predict the test set K times, report the fastest")
    p.add_argument("--skip-crfsuite", action="store_true",
                   help="run sklearn-crfloss only")
    p.add_argument("--stage-iter", type=int, default=20,
                   help="L-BFGS iterations of the stage-memory run (0: skip it)")
    p.add_argument("--loss-evals", type=int, default=3,
                   help="rounds of the per-loss evaluation timing (0: skip it)")
    p.add_argument("--json", metavar="PATH", default=None,
                   help="also write all figures to this JSON file")
    args = p.parse_args(argv)
    if args.repeat_predict < 1:
        p.error("--repeat-predict must be >= 1")
    if args.max_iter < 1:
        p.error("--max-iter must be >= 1")
    if args.train_sentences is not None and args.train_sentences < 1:
        p.error("--train-sentences must be >= 1")
    if min(args.n_jobs) < 1:
        p.error("--n-jobs values must be >= 1")
    return args


def load_data(train_sentences):
    data_home = get_data_home()
    try:
        X_train, y_train = load_conll2000("train", download_if_missing=False)
        X_test, y_test = load_conll2000("test", download_if_missing=False)
    except FileNotFoundError as exc:
        sys.exit(
            f"CoNLL-2000 not found under {data_home!r} ({exc}). Set "
            "SKLEARN_CRFLOSS_DATA to the shared data folder."
        )
    if train_sentences is not None:
        X_train, y_train = X_train[:train_sentences], y_train[:train_sentences]
    return data_home, X_train, y_train, X_test, y_test


def time_predict(predict, X, repeat):
    """Return (predictions of the last call, best wall seconds)."""
    best = math.inf
    y_pred = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        y_pred = predict(X)
        best = min(best, time.perf_counter() - t0)
    return [list(s) for s in y_pred], best


def quality(y_test, y_pred):
    return {
        "test_f1": segment_f1_score(y_test, y_pred),
        "token_accuracy": token_accuracy(y_test, y_pred),
    }


def loss_ratios(crf, F_train, y_train, C, rounds):
    """Seconds per objective evaluation of RATIO_LOSSES at crf's parameters, one thread."""
    objective, theta, _, _ = training_objective(crf, F_train, y_train, n_threads=1)
    prior = get_prior("l2")
    losses = {}
    for name in RATIO_LOSSES:
        loss = get_loss(name)
        if hasattr(loss, "set_classes"):
            loss.set_classes(crf.classes_)
        objective.value_and_grad(theta, loss, prior, C)  # warm-up (buffers, counts)
        losses[name] = loss
    times = {name: [] for name in RATIO_LOSSES}
    for _ in range(rounds):  # losses innermost: a change of load hits all alike
        for name, loss in losses.items():
            t0 = time.perf_counter()
            objective.value_and_grad(theta, loss, prior, C)
            times[name].append(time.perf_counter() - t0)
    seconds = {name: float(np.median(t)) for name, t in times.items()}
    return {name: {"s_per_eval": sec, "ratio_to_cll": sec / seconds["cll"]}
            for name, sec in seconds.items()}


def run_ours(args, n_jobs, F_train, y_train, F_test, y_test, n_test_tokens, ratios=False):
    stamps = []

    def on_iteration(iteration, objective):  # public CRFTagger callback
        stamps.append((time.perf_counter(), time.process_time()))

    crf = CRFTagger(loss="cll", prior="l2", C=args.C, max_iter=args.max_iter,
                    tol=args.tol, n_jobs=n_jobs, callback=on_iteration)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        with PeakMemory() as mem, Timer() as t:
            t_start = time.perf_counter()
            crf.fit(F_train, y_train)
            t_end = time.perf_counter()
    conv_warnings = [str(w.message) for w in caught
                     if issubclass(w.category, ConvergenceWarning)]
    y_pred, pred_s = time_predict(crf.predict, F_test, args.repeat_predict)
    n_labels = len(crf.classes_)
    n_state = crf.n_parameters_ - n_labels * n_labels - 2 * n_labels
    theta_norm = math.sqrt(
        float(np.sum(crf.coef_ ** 2) + np.sum(crf.transition_ ** 2)
              + np.sum(crf.start_ ** 2) + np.sum(crf.end_ ** 2))
    )
    # Iterations 2..n only, from the callback time stamps.
    between = len(stamps) - 1
    res = {
        "n_jobs": n_jobs,
        "fit_s": t.wall,
        "fit_cpu_s": t.cpu,
        "n_iter": int(crf.n_iter_),
        "s_per_iter": t.wall / max(crf.n_iter_, 1),
        "s_per_iter_lbfgs": (stamps[-1][0] - stamps[0][0]) / between if between else None,
        "cpu_per_iter_lbfgs": (stamps[-1][1] - stamps[0][1]) / between if between else None,
        "setup_to_first_iter_s": stamps[0][0] - t_start if stamps else None,
        "after_last_iter_s": t_end - stamps[-1][0] if stamps else None,
        "n_parameters": int(crf.n_parameters_),
        "n_state_features": int(n_state),
        "n_transition_parameters": n_labels * n_labels + 2 * n_labels,
        "n_attributes": int(crf.n_features_in_),
        "n_labels": n_labels,
        "predict_s": pred_s,
        "predict_tokens_per_s": n_test_tokens / pred_s,
        "peak_mb": mem.peak_mb,
        "peak_over_start_mb": mem.delta_mb,
        "memory_method": mem.method,
        "final_objective": float(crf.objective_),
        "parameter_norm": theta_norm,
        "converged": bool(crf.converged_),
        "convergence_warnings": conv_warnings,
        **quality(y_test, y_pred),
    }
    if ratios and args.loss_evals:
        res["loss_ratios"] = loss_ratios(crf, F_train, y_train, args.C, args.loss_evals)
    del crf
    gc.collect()
    return res


def stage_memory(args, n_jobs, F_train, y_train):
    """Peak RSS over the start after each stage of fit, run one by one (private API)."""
    from _common import _proc_status_kb, _reset_hwm

    from sklearn_crfloss._model._objective import CRFObjective
    from sklearn_crfloss._model._parameters import ParameterLayout, observed_pairs
    from sklearn_crfloss._data._validation import check_sequences, encode_labels
    from sklearn_crfloss._data._vectorize import SequenceVectorizer
    from sklearn_crfloss.solvers import ConvergenceMonitor, make_solver

    gc.collect()
    if not _reset_hwm():
        return None
    start = _proc_status_kb("VmRSS")
    stages = []

    def mark(name, seconds):
        stages.append({"stage": name, "seconds": seconds,
                       "peak_over_start_mb": (_proc_status_kb("VmHWM") - start) / 1024,
                       "rss_over_start_mb": (_proc_status_kb("VmRSS") - start) / 1024})

    with Timer() as t:
        kind, tokens, offsets = check_sequences(F_train)
        classes, y_enc = encode_labels(y_train, np.diff(offsets))
    mark("check and encode", t.wall)
    with Timer() as t:
        features = SequenceVectorizer()
        Xc = features.fit_transform(kind, tokens, offsets)
    mark("vectorise", t.wall)
    with Timer() as t:
        L = classes.shape[0]
        layout = ParameterLayout(Xc.shape[1], L, observed_pairs(Xc, y_enc, L))
    mark("parameter layout", t.wall)
    with Timer() as t:
        objective = CRFObjective(Xc, y_enc, offsets, layout, n_threads=n_jobs)
    mark("objective set-up", t.wall)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with Timer() as t:
            monitor = ConvergenceMonitor(args.tol, args.stage_iter)
            make_solver("lbfgs").solve(objective, get_loss("cll"), get_prior("l2"), args.C,
                                       layout.zeros(), monitor)
    mark(f"L-BFGS ({monitor.n_iter} iterations)", t.wall)
    del features, Xc, layout, objective
    gc.collect()
    return stages


def run_crfsuite(args, F_train, y_train, F_test, y_test, n_test_tokens):
    import sklearn_crfsuite

    crf = sklearn_crfsuite.CRF(
        algorithm="lbfgs",
        c1=0.0,
        c2=1.0 / (2.0 * args.C),
        max_iterations=args.max_iter,
        epsilon=1e-5,          # CRFsuite defaults, spelled out
        period=10,
        delta=args.tol,
        min_freq=0,
        all_possible_states=False,
        all_possible_transitions=True,
    )
    with PeakMemory(allow_tracemalloc=False) as mem, Timer() as t:
        crf.fit(F_train, y_train)
    log = crf.training_log_
    n_iter = len(log.iterations)
    y_pred, pred_s = time_predict(crf.predict, F_test, args.repeat_predict)
    # The model dump (Tagger.info) lists the state features and transitions.
    n_state = len(crf.state_features_)
    n_trans = len(crf.transition_features_)
    last = log.last_iteration or {}
    n_evals = sum(it.get("linesearch_trials", 0) for it in log.iterations)
    # Iterations 2..n only, from CRFsuite's per-iteration times.
    iter_times = [it.get("time") for it in log.iterations[1:]]
    s_per_iter_lbfgs = (sum(iter_times) / len(iter_times)
                        if iter_times and None not in iter_times else None)
    res = {
        "fit_s": t.wall,
        "fit_cpu_s": t.cpu,
        "n_iter": n_iter,
        "s_per_iter": t.wall / max(n_iter, 1),
        "s_per_iter_lbfgs": s_per_iter_lbfgs,
        "cpu_per_iter_lbfgs": s_per_iter_lbfgs,  # single-threaded
        "n_parameters": log.featgen_num_features,
        "n_state_features": n_state,
        "n_transition_parameters": n_trans,
        "n_attributes": crf.num_attributes_,
        "n_labels": len(crf.classes_),
        "n_evaluations": n_evals,
        "featgen_s": log.featgen_seconds,
        "training_s": log.training_seconds,
        "predict_s": pred_s,
        "predict_tokens_per_s": n_test_tokens / pred_s,
        "peak_mb": mem.peak_mb,
        "peak_over_start_mb": mem.delta_mb,
        "memory_method": mem.method,
        "final_objective": last.get("loss"),
        "parameter_norm": last.get("feature_norm"),
        "converged": n_iter < args.max_iter,
        **quality(y_test, y_pred),
    }
    del crf
    gc.collect()
    return res


def _fmt(value, spec):
    if value is None:
        return "n/a"
    if isinstance(value, float) and not math.isfinite(value):
        return "n/a"
    return format(value, spec)


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.2f}"


ROWS = [
    # (label, key, format, scale)
    ("fit s", "fit_s", ".1f", 1),
    ("fit CPU s", "fit_cpu_s", ".1f", 1),
    ("iterations", "n_iter", "d", 1),
    ("s / iteration (incl. vectorisation)", "s_per_iter", ".3f", 1),
    ("s / iteration (L-BFGS only, iter 2..n)", "s_per_iter_lbfgs", ".3f", 1),
    ("CPU s / iteration (L-BFGS only)", "cpu_per_iter_lbfgs", ".3f", 1),
    ("parameters / features", "n_parameters", ",d", 1),
    ("  state features", "n_state_features", ",d", 1),
    ("test F1 (%)", "test_f1", ".2f", 100),
    ("token accuracy (%)", "token_accuracy", ".2f", 100),
    ("predict tokens/s", "predict_tokens_per_s", ",.0f", 1),
    ("peak MB (VmHWM)", "peak_mb", ",.0f", 1),
    ("peak over start MB", "peak_over_start_mb", ",.0f", 1),
    ("final objective", "final_objective", ",.2f", 1),
    ("||theta||", "parameter_norm", ".2f", 1),
]


def build_table(ours, theirs):
    """One column per sklearn-crfloss run (n_jobs), CRFsuite, and the ratios to CRFsuite."""
    header = [""] + [f"crfloss n_jobs={r['n_jobs']}" for r in ours]
    if theirs is not None:
        header += ["sklearn-crfsuite"] + [f"ratio n_jobs={r['n_jobs']}" for r in ours]
    rows = []
    for label, key, spec, scale in ROWS:
        if key in ("peak_mb", "peak_over_start_mb") and ours[0]["memory_method"] != "VmHWM":
            label = f"{label} [{ours[0]['memory_method']}]"
        values = [r.get(key) * scale if r.get(key) is not None else None for r in ours]
        row = [label] + [_fmt(a, spec) for a in values]
        if theirs is not None:
            b = theirs.get(key)
            b = b * scale if b is not None else None
            row += [_fmt(b, spec)] + [_ratio(a, b) for a in values]
        rows.append(row)
    return format_table(header, rows)


def stage_table(stages):
    rows = [[s["stage"], f"{s['seconds']:.2f}", f"{s['peak_over_start_mb']:,.0f}",
             f"{s['rss_over_start_mb']:,.0f}"] for s in stages]
    return format_table(["stage (cumulative)", "s", "peak over start MB",
                         "RSS over start MB after"], rows)


def ratio_table(ratios):
    rows = [[name, f"{r['s_per_eval']:.3f}", f"{r['ratio_to_cll']:.2f}"]
            for name, r in ratios.items()]
    return format_table(["loss", "s per evaluation", "vs cll"], rows)


def main(argv=None):
    args = parse_args(argv)
    cmd = command_line(["SKLEARN_CRFLOSS_DATA"])
    machine = machine_info()
    vers = versions(["numpy", "scipy", "scikit-learn", "sklearn-crfloss",
                     "python-crfsuite", "sklearn-crfsuite"])
    vers["sklearn_crfloss.__version__"] = sklearn_crfloss.__version__

    print("CoNLL-2000 benchmark: sklearn-crfloss vs sklearn-crfsuite")
    print(f"command : {cmd}")
    print(f"machine : nproc={machine['nproc']} usable={machine['usable_cpus']} "
          f"cpu={machine['cpu_model']!r} mem={machine['mem_total_gb']} GB "
          f"load(1/5/15 min)={machine['loadavg_1_5_15']}")
    print(f"platform: {machine['platform']}, Python {machine['python']}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    threads = thread_info()
    print(f"threads : n_jobs={args.n_jobs} (sklearn-crfloss only; CRFsuite is "
          f"single-threaded); pools: {'; '.join(threads['pools']) or 'none'}; "
          f"env: {threads['env'] or 'none'}")
    print(f"settings: C={args.C} (CRFsuite c2={1 / (2 * args.C):g}, c1=0), "
          f"tol/delta={args.tol:g} over 10 iterations, max_iter={args.max_iter}, "
          f"repeat_predict={args.repeat_predict}")
    sys.stdout.flush()

    t0 = time.perf_counter()
    data_home, X_train, y_train, X_test, y_test = load_data(args.train_sentences)
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    featurizer = TemplateFeatures(CONLL2000_TEMPLATE).fit(X_train)
    F_train = featurizer.transform(X_train)
    F_test = featurizer.transform(X_test)
    t_feat = time.perf_counter() - t0
    n_train_tokens = sum(map(len, y_train))
    n_test_tokens = sum(map(len, y_test))
    n_labels_train = len({lab for s in y_train for lab in s})
    print(f"data    : {data_home}: train {len(X_train):,} sentences / "
          f"{n_train_tokens:,} tokens / {n_labels_train} labels, test "
          f"{len(X_test):,} sentences / {n_test_tokens:,} tokens "
          f"(load {t_load:.1f} s, template features {t_feat:.1f} s, "
          f"{len(featurizer.keys_)} attributes per token)")
    sys.stdout.flush()

    ours = []
    n_runs = len(args.n_jobs) + (0 if args.skip_crfsuite else 1)
    for k, n_jobs in enumerate(args.n_jobs):
        print(f"\n[{k + 1}/{n_runs}] sklearn-crfloss CRFTagger(loss='cll', prior='l2', "
              f"C={args.C}, n_jobs={n_jobs}) ...", flush=True)
        res = run_forked(run_ours, args, n_jobs, F_train, y_train, F_test, y_test,
                         n_test_tokens, ratios=(k == 0))
        print(f"      fit {res['fit_s']:.1f} s, {res['n_iter']} iterations, "
              f"F1 {100 * res['test_f1']:.2f}", flush=True)
        for msg in res["convergence_warnings"]:
            print(f"      ConvergenceWarning: {msg}")
        ours.append(res)

    theirs = None
    if not args.skip_crfsuite:
        print(f"[{n_runs}/{n_runs}] sklearn-crfsuite CRF(algorithm='lbfgs', c1=0, "
              f"c2={1 / (2 * args.C):g}, all_possible_transitions=True) ...",
              flush=True)
        theirs = run_forked(run_crfsuite, args, F_train, y_train, F_test, y_test,
                            n_test_tokens)
        print(f"      fit {theirs['fit_s']:.1f} s, {theirs['n_iter']} iterations, "
              f"F1 {100 * theirs['test_f1']:.2f}", flush=True)

    stages = None
    if args.stage_iter:
        print(f"stage memory of the fit (n_jobs={max(args.n_jobs)}, "
              f"{args.stage_iter} L-BFGS iterations) ...", flush=True)
        stages = run_forked(stage_memory, args, max(args.n_jobs), F_train, y_train)

    print()
    print(build_table(ours, theirs))
    print()
    if stages:
        print(f"sklearn-crfloss fit by stage (n_jobs={max(args.n_jobs)}):")
        print(stage_table(stages))
        print()
    ratios = ours[0].get("loss_ratios")
    if ratios:
        print("seconds per objective evaluation (value and gradient, one thread) at the "
              f"parameters of the n_jobs={ours[0]['n_jobs']} fit:")
        print(ratio_table(ratios))
        print()
    L = ours[0]["n_labels"]
    first = ours[0]
    print("notes:")
    if theirs is not None:
        print("- ratio = sklearn-crfloss / sklearn-crfsuite (lower is better "
              "for time and memory, higher for quality and tokens/s).")
    print("- s / iteration (L-BFGS only): sklearn-crfloss from callback time stamps "
          "(last - first) / (n - 1); CRFsuite from its logged per-iteration seconds "
          "of iterations 2..n, which are CPU seconds (clock()): equal to its wall "
          "seconds on a quiet machine only. sklearn-crfloss (n_jobs="
          f"{first['n_jobs']}): {_fmt(first['setup_to_first_iter_s'], '.1f')} s from fit() "
          "to the end of iteration 1 (vectorisation, feature index, first iteration), "
          f"{_fmt(first['after_last_iter_s'], '.1f')} s after the last iteration.")
    print(f"- sklearn-crfloss parameters = {first['n_state_features']:,} state "
          f"weights + {L}x{L} transitions + {L} start + {L} end; "
          f"{first['n_attributes']:,} attributes.")
    if theirs is not None:
        print(f"- CRFsuite features = {theirs['n_state_features']:,} state features "
              f"(model dump) + {theirs['n_transition_parameters']:,} transitions; "
              f"{theirs['n_attributes']:,} attributes; "
              f"{theirs['n_evaluations']} objective evaluations "
              f"(line-search trials) in {theirs['n_iter']} iterations; "
              f"its log: feature generation {_fmt(theirs['featgen_s'], '.2f')} s, "
              f"L-BFGS {_fmt(theirs['training_s'], '.2f')} s.")
        for r in ours:
            diff = (r["final_objective"] - theirs["final_objective"]
                    if theirs["final_objective"] is not None else None)
            print(f"- n_jobs={r['n_jobs']}: test F1 difference (ours - crfsuite) "
                  f"{100 * (r['test_f1'] - theirs['test_f1']):+.2f} points; final "
                  f"objective difference {_fmt(diff, '+,.2f')} (ours has 2L extra "
                  "start/end parameters, so its optimum is <= CRFsuite's).")
    if first["memory_method"] != "VmHWM":
        print("- /proc/self/clear_refs could not reset VmHWM: the sklearn-crfloss "
              "memory figure is the tracemalloc peak of the fit (Python/numpy "
              "allocations only); no figure for CRFsuite.")
    else:
        print("- peak MB is the process's peak RSS during fit (data and features of "
              "all runs included); 'peak over start' subtracts the RSS just before fit.")
    print("- stopped by a convergence test (not max_iter): sklearn-crfloss "
          + ", ".join(f"n_jobs={r['n_jobs']} {r['converged']}" for r in ours)
          + (f", CRFsuite {theirs['converged']} (iterations < max_iter)"
             if theirs is not None else ""))
    machine_end = machine_info()["loadavg_1_5_15"]
    print(f"- load average at the end (1/5/15 min): {machine_end}")

    if args.json:
        payload = {
            "command": cmd,
            "args": vars(args),
            "machine": machine,
            "loadavg_end": machine_end,
            "versions": vers,
            "threads": threads,
            "data": {
                "data_home": data_home,
                "train_sentences": len(X_train), "train_tokens": n_train_tokens,
                "test_sentences": len(X_test), "test_tokens": n_test_tokens,
                "load_s": t_load, "template_features_s": t_feat,
            },
            "sklearn_crfloss": ours,
            "sklearn_crfsuite": theirs,
            "stage_memory": stages,
        }
        with open(args.json, "w") as f:
            json.dump(payload, f, indent=2, default=str)
        print(f"- figures written to {args.json}")
    return ours, theirs


if __name__ == "__main__":
    main()
