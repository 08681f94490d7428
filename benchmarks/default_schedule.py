"""Candidate default batch schedules on CoNLL-2000: evaluations, objective, F1, time.

Each candidate is a ``CRFTagger`` configuration (public API) trained on the
full CoNLL-2000 training set with ``TemplateFeatures(CONLL2000_TEMPLATE)``
dicts, ``C = 1``; the objective evaluations are counted by wrapping the
objective's ``loss_value_and_grad`` (one call = one evaluation of the loss
and its gradient on the full batch; the count includes the one evaluation
``fit`` makes at the returned parameters for ``objective_``). Evaluations,
iterations and the objective do not depend on the machine's load; the
seconds do (the load average is printed with every row).

Candidates (``--candidates``, comma-separated):

``today``
    ``CRFTagger()`` (``solver=None``; ``loss``/``prior`` from ``--loss`` and
    ``--prior``).
``lbfgs``
    ``solver='lbfgs'`` (libLBFGS L-BFGS from zero).
``sgdK``
    ``solver=[('sgd', K), 'lbfgs']``: K averaged SGD epochs (calibrated
    ``eta0``, ``random_state=--seed``), then L-BFGS from their (averaged)
    parameters; ``sgdK_owlqn`` the same with ``'owlqn'``.
``mM``
    ``solver=LBFGS(max_corrections=M)``.
``sgdK_mM``
    Both.
``iterN``
    ``solver='lbfgs', max_iter=N`` (the first N iterations of the run from
    zero: the iterates are the same, so this scores a stopping rule that
    would stop at N).
``freqB``
    L-BFGS (libLBFGS) in the variables ``u = s * theta``, a diagonal
    preconditioner by feature frequency: ``s_k = sqrt(1 / C + B h_k)`` with
    ``h_k`` the number of training tokens of the attribute of state weight
    ``k`` divided by the number of labels (the loss's curvature at zero),
    the gold counts for the transition and boundary weights
    (:class:`FrequencyScaledLBFGS`, defined here).
``l1warmK``
    ``prior='l1'`` only: K SGD epochs with ``prior='l2'``, then OWL-QN with
    ``prior='l1'`` from their parameters (``warm_start=True``).

For ``lbfgs``/``today`` the script also prints, from the recorded
trajectory (objective and gradient norm at every accepted point), where
other stopping rules would have stopped: the objective's rule at other
``tol`` values and a gradient-norm rule ``||g|| <= eps max(1, |f|)``.

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/default_schedule.py \\
        --candidates today,sgd1,sgd2,sgd3 --n-jobs 2 [--loss cll] [--prior l2] \\
        [--json out.json] [--repeat 1]

Results are appended to ``--json`` (one record per run) so that several
invocations can be tabulated together (``--table out.json``).
"""

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import Timer, cached, command_line, format_table  # noqa: E402

from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss._model import _objective  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.metrics import segment_f1_score  # noqa: E402
from sklearn_crfloss.solvers import LBFGS, OWLQN, minimize_liblbfgs  # noqa: E402


class FrequencyScaledLBFGS(LBFGS):
    """L-BFGS on ``u = s * theta``, ``s_k = sqrt(1 / C + beta h_k)`` (see the module)."""

    def __init__(self, beta=1.0, max_corrections=6):
        self.beta = beta
        self.max_corrections = max_corrections
        self.backend = "liblbfgs"

    def solve(self, objective, loss, prior, C, x0, monitor):
        L, n_state = objective.n_labels, objective.layout.n_state
        indices = objective.csr[1]
        n_a = np.bincount(indices, minlength=objective.n_features).astype(float)
        h = np.empty(objective.n_params)
        h[:n_state] = n_a[objective.layout.state_index // L] / L
        h[n_state:] = objective.observed_counts()[n_state:]
        s = np.sqrt(1.0 / C + self.beta * np.maximum(h, 0.0))

        def fun(u):
            value, grad = objective.value_and_grad(u / s, loss, prior, C)
            return value, grad / s

        u = minimize_liblbfgs(fun, s * x0, monitor, max_corrections=self.max_corrections,
                              epsilon=1e-8, name="L-BFGS", to_theta=lambda u: u / s)
        return u / s


class EvaluationCounter:
    """Counts full-batch evaluations; records (value, ||grad||) of ``value_and_grad``."""

    def __init__(self):
        cls = _objective.CRFObjective
        self._orig = (cls.loss_value_and_grad, cls.value_and_grad)
        self.n = 0
        self.trace = []
        counter = self

        def loss_value_and_grad(obj, theta, loss, **kwargs):  # (out=: the solver's vector)
            counter.n += 1
            return counter._orig[0](obj, theta, loss, **kwargs)

        def value_and_grad(obj, theta, loss, prior, C, **kwargs):
            value, grad = counter._orig[1](obj, theta, loss, prior, C, **kwargs)
            counter.trace.append((float(value), float(np.linalg.norm(grad))))
            return value, grad

        cls.loss_value_and_grad = loss_value_and_grad
        cls.value_and_grad = value_and_grad

    def reset(self):
        self.n = 0
        self.trace = []


def load_features():
    def compute():
        X_train, y_train = load_conll2000("train", download_if_missing=False)
        X_test, y_test = load_conll2000("test", download_if_missing=False)
        template = TemplateFeatures(CONLL2000_TEMPLATE)
        return template.fit_transform(X_train), y_train, template.transform(X_test), y_test

    return cached(os.environ.get("CONLL2000_FEATURES_CACHE", "/tmp/conll2000_template.pkl"),
                  compute)


def candidate_params(name, loss, prior, seed):
    """CRFTagger parameters of a candidate (``l1warm`` is handled by :func:`run`)."""
    base = dict(loss=loss, prior=prior, C=1.0)
    batch = "owlqn" if name.endswith("_owlqn") else "lbfgs"
    name = name.removesuffix("_owlqn")
    if name == "today":
        return base
    if name == "lbfgs":
        return dict(base, solver="lbfgs")
    if name.startswith("freq"):
        return dict(base, solver=FrequencyScaledLBFGS(float(name[4:])))
    if name.startswith("iter"):
        return dict(base, solver="lbfgs", max_iter=int(name[4:]))
    parts = name.split("_")
    m = next((int(p[1:]) for p in parts if p.startswith("m")), None)
    k = next((int(p[3:]) for p in parts if p.startswith("sgd")), None)
    second = batch if m is None else (LBFGS if batch == "lbfgs" else OWLQN)(max_corrections=m)
    if k is None:
        return dict(base, solver=second)
    return dict(base, solver=[("sgd", k), second], random_state=seed)


def run(name, n_jobs, loss, prior, seed, data, counter):
    F_train, y_train, F_test, y_test = data
    counter.reset()
    stamps = []
    load = os.getloadavg()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with Timer() as t:
            t0 = time.perf_counter()
            cb = lambda k, f: stamps.append((time.perf_counter() - t0, counter.n))  # noqa: E731
            if name.startswith("l1warm"):
                est = CRFTagger(prior="l2", C=1.0, solver="sgd", max_iter=int(name[6:]),
                                random_state=seed, n_jobs=n_jobs, loss=loss, callback=cb)
                est.fit(F_train, y_train)
                est.set_params(prior="l1", solver=None, max_iter=None, warm_start=True)
                est.fit(F_train, y_train)
            else:
                est = CRFTagger(n_jobs=n_jobs, callback=cb,
                                **candidate_params(name, loss, prior, seed))
                est.fit(F_train, y_train)
    trace = list(counter.trace)
    return {
        "name": name, "loss": loss, "prior": prior, "n_jobs": n_jobs, "load": load,
        "objective": float(est.objective_), "evaluations": counter.n,
        "n_iter": int(est.n_iter_), "converged": bool(est.converged_),
        "stop_reason": est.stop_reason_ if hasattr(est, "stop_reason_") else None,
        "test_f1": 100 * segment_f1_score(y_test, est.predict(F_test)),
        "nonzero_state": int(np.count_nonzero(est.coef_)),
        "wall_s": t.wall, "cpu_s": t.cpu, "stamps": stamps,
        "trace": trace, "loss_curve": [float(v) for v in est.loss_curve_],
    }


def stopping_rules(rec):
    """Where other stopping rules stop on a run from zero's accepted points."""
    stamps, trace = rec["stamps"], rec["trace"]
    # accepted point of iteration k: the last evaluation before its report
    points = [trace[n - 1] for _, n in stamps if n >= 1]
    f = np.array([p[0] for p in points])
    g = np.array([p[1] for p in points])
    best = np.minimum.accumulate(f)
    ref = f.min()
    rows = []
    for tol in (1e-5, 3e-5, 1e-4):
        for period in (10, 5):
            k = next((k for k in range(period, len(f))
                      if (best[k - period] - best[k]) / max(abs(best[k]), 1) < tol), None)
            if k is not None:
                rows.append((f"objective tol={tol:g} period={period}", k + 1,
                             stamps[k][1], f[k], (f[k] - ref) / ref))
    for eps in (1e-3, 3e-4, 1e-4, 3e-5):
        k = next((k for k in range(len(f)) if g[k] <= eps * max(1, abs(f[k]))), None)
        if k is not None:
            rows.append((f"|g| <= {eps:g} max(1,|f|)", k + 1, stamps[k][1], f[k],
                         (f[k] - ref) / ref))
    for rel in (1e-4, 3e-5, 1e-5):
        k = next((k for k in range(len(f)) if (f[k] - ref) / ref <= rel), None)
        if k is not None:
            rows.append((f"first within {rel:g} of the run's final", k + 1, stamps[k][1], f[k],
                         g[k] / abs(f[k])))
    return rows


def table(records):
    refs = {}
    for r in records:
        if r["name"] in ("today", "lbfgs") and r["prior"] == r.get("prior"):
            refs.setdefault((r["loss"], r["prior"]), r["objective"])
    rows = []
    for r in records:
        ref = refs.get((r["loss"], r["prior"]), r["objective"])
        rows.append((r["name"], r["loss"], r["prior"], r["n_jobs"], r["evaluations"],
                     r["n_iter"], f"{r['objective']:.2f}",
                     f"{(r['objective'] - ref) / ref:+.1e}", f"{r['test_f1']:.2f}",
                     r["nonzero_state"], f"{r['cpu_s']:.1f}", f"{r['wall_s']:.1f}",
                     f"{r['load']:.2f}"))
    return format_table(("candidate", "loss", "prior", "n_jobs", "evals", "iters", "objective",
                         "rel. to today", "test F1", "non-zero state", "CPU s", "wall s",
                         "load"), rows)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--candidates", default="today")
    p.add_argument("--n-jobs", type=int, nargs="+", default=[2])
    p.add_argument("--loss", default="cll")
    p.add_argument("--prior", default="l2")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--json", default=None, help="append the records to this file")
    p.add_argument("--table", default=None, help="only print the table of this file")
    args = p.parse_args(argv)
    if args.table:
        with open(args.table) as f:
            print(table([json.loads(line) for line in f if line.strip()]))
        return
    print(command_line(("SKLEARN_CRFLOSS_DATA",)), flush=True)
    data = load_features()
    counter = EvaluationCounter()
    records = []
    for _ in range(args.repeat):
        for name in args.candidates.split(","):
            for n_jobs in args.n_jobs:
                rec = run(name, n_jobs, args.loss, args.prior, args.seed, data, counter)
                records.append(rec)
                print(table([rec]).splitlines()[-1], flush=True)
                if args.json:
                    with open(args.json, "a") as f:
                        f.write(json.dumps(rec) + "\n")
                if name in ("today", "lbfgs") and args.prior != "l1" and rec["stamps"]:
                    print(format_table(("rule", "stops at iter", "evals", "objective",
                                        "rel. to final / |g|/|f|"),
                                       [(a, b, c, f"{d:.3f}", f"{e:.1e}")
                                        for a, b, c, d, e in stopping_rules(rec)]), flush=True)
    print(table(records))


if __name__ == "__main__":
    main()
