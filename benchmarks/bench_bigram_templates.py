"""Observation-dependent label bigrams on CoNLL-2000: F1 and cost beside the plain template.

Trains :class:`sklearn_crfloss.CRFTagger` (CLL + L2, C=1, L-BFGS, n_jobs=1)
on the full CoNLL-2000 chunking training set twice, in one process: with
CRF++'s template ``CONLL2000_TEMPLATE`` (a plain ``B`` line: one dense
transition matrix), and with the same template plus the CRF++ bigram lines
``B01:%x[0,1]`` (the POS tag of the token) and ``B02:%x[-1,1]/%x[0,1]``
(the POS bigram), which give each such attribute an (n_labels, n_labels)
block of transition weights. Prints test F1 (conlleval), iterations, wall
and CPU time of the fit, CPU time per iteration, parameters, and the CPU
time of one objective evaluation of each (process time: the machine is
shared): by the fused CLL kernel the fit uses, and by the general path
(unary potentials, forward-backward, X.T @ dU), timed alternately.

``--plain-only --compare-kernel PATH`` times the plain template's
evaluation with this installation's fused kernel and with the
``cll_features_batch`` of another build's ``_forward_backward*.so``
(PATH), alternately in one process.

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/bench_bigram_templates.py \\
        [--max-iter N] [--train-sentences N] [--evals K] \\
        [--plain-only [--compare-kernel PATH]]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.losses import ConditionalLogLikelihood  # noqa: E402
from sklearn_crfloss.metrics import segment_f1_score  # noqa: E402

BIGRAM_LINES = "B01:%x[0,1]\nB02:%x[-1,1]/%x[0,1]\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=None)
    parser.add_argument("--train-sentences", type=int, default=None)
    parser.add_argument("--evals", type=int, default=5,
                        help="objective evaluations timed at the fitted parameters")
    parser.add_argument("--plain-only", action="store_true",
                        help="only time the plain template's objective evaluation and predict "
                             "(no fit): run with two builds to compare the dense fast path")
    parser.add_argument("--compare-kernel", default=None,
                        help="with --plain-only: another build's _forward_backward*.so, whose "
                             "fused kernel is timed alternately with this one's")
    args, X_train, y_train, X_test, y_test = _common.parse_conll2000_run(parser)
    if args.plain_only:
        features = TemplateFeatures(CONLL2000_TEMPLATE).fit([])
        F_train, F_test = features.transform(X_train), features.transform(X_test)
        crf = CRFTagger(C=1.0, n_jobs=1, max_iter=20)
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            crf.fit(F_train, y_train)
        if args.compare_kernel:
            _compare_kernels(crf, F_train, y_train, args.evals, args.compare_kernel)
            return
        eval_s = _eval_seconds(crf, F_train, y_train, args.evals)[0]
        predict_s = []
        for _ in range(args.evals):
            c0 = time.process_time()
            crf.predict(F_test)
            predict_s.append(time.process_time() - c0)
        print(f"plain template: CPU s/eval {eval_s:.4f} (median of {args.evals}), "
              f"CPU s/predict(test) {np.median(predict_s):.4f}; "
              f"load {open('/proc/loadavg').read().split()[:3]}", flush=True)
        return
    rows = []
    for name, template in [("CONLL2000_TEMPLATE", CONLL2000_TEMPLATE),
                           ("+ B01, B02", CONLL2000_TEMPLATE + BIGRAM_LINES)]:
        features = TemplateFeatures(template).fit([])
        F_train, F_test = features.transform(X_train), features.transform(X_test)
        crf = CRFTagger(C=1.0, n_jobs=1, max_iter=args.max_iter)
        t0, c0 = time.perf_counter(), time.process_time()
        crf.fit(F_train, y_train)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        f1 = segment_f1_score(y_test, crf.predict(F_test))
        blocks = getattr(crf, "bigram_attributes_", None)
        n_blocks = 0 if blocks is None else len(blocks)
        eval_s, general_s = _eval_seconds(crf, F_train, y_train, args.evals)
        rows.append([name, f"{100 * f1:.2f}", crf.n_iter_, f"{seconds:.1f}", f"{cpu:.1f}",
                     f"{cpu / max(crf.n_iter_, 1):.3f}", f"{eval_s:.3f}", f"{general_s:.3f}",
                     crf.n_parameters_, n_blocks, str(crf.stop_reason_)])
        print(_common.format_table(["template", "F1", "iter", "fit wall s", "fit CPU s",
                                    "CPU s/iter", "CPU s/eval", "general CPU s/eval",
                                    "parameters", "bigram attrs", "stop"], rows), flush=True)
        print(f"load average: {open('/proc/loadavg').read().split()[:3]}", flush=True)
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")


class _GeneralPathCLL(ConditionalLogLikelihood):
    """CLL by the general path: the objective fuses the exact class only."""


def _training_objective(crf, F, y):
    """The bound training objective of a fit like ``crf``'s, and a theta near its start."""
    probe = CRFTagger(C=1.0, n_jobs=1, max_iter=1)
    objective = {}
    original = probe._train

    def capture(obj, loss, prior, solver, x0, from_zero, **kwargs):
        objective["obj"], objective["x0"] = obj, x0
        return original(obj, loss, prior, solver, x0, from_zero, **kwargs)

    probe._train = capture
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probe.fit(F, y)
    return objective["obj"], objective["x0"] + 0.01


def _eval_seconds(crf, F, y, k):
    """Median CPU seconds of one CLL evaluation: fused kernel, general path (alternately)."""
    obj, theta = _training_objective(crf, F, y)
    times = {ConditionalLogLikelihood: [], _GeneralPathCLL: []}
    for _ in range(k):
        for kind in times:
            t0 = time.process_time()
            obj.loss_value_and_grad(theta, kind())
            times[kind].append(time.process_time() - t0)
    return tuple(float(np.median(t)) for t in times.values())


def _compare_kernels(crf, F, y, k, path):
    """Time the plain fused evaluation with this build's kernel and another's, alternately."""
    import importlib.util

    from sklearn_crfloss._model import _objective

    spec = importlib.util.spec_from_file_location(
        "sklearn_crfloss." + Path(path).name.split(".")[0], path)
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)
    obj, theta = _training_objective(crf, F, y)
    kernels = {"this build": _objective.cll_features_batch, path: other.cll_features_batch}
    times, results = {name: [] for name in kernels}, {}
    for _ in range(k):
        for name, kernel in kernels.items():
            _objective.cll_features_batch = kernel
            t0 = time.process_time()
            results[name] = obj.loss_value_and_grad(theta, ConditionalLogLikelihood())
            times[name].append(time.process_time() - t0)
    _objective.cll_features_batch = kernels["this build"]
    (v0, g0), (v1, g1) = results.values()
    for name, t in times.items():
        print(f"{name}: CPU s/eval median {np.median(t):.4f} (of {k}: "
              f"{', '.join(f'{x:.4f}' for x in t)})")
    print(f"same value and gradient bit for bit: {v0 == v1 and np.array_equal(g0, g1)}; "
          f"load {open('/proc/loadavg').read().split()[:3]}", flush=True)


if __name__ == "__main__":
    main()
