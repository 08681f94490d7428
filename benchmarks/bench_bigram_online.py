"""Observation-dependent label bigrams with SGD and the online rules on CoNLL-2000.

Trains :class:`sklearn_crfloss.CRFTagger` on the full CoNLL-2000 chunking
training set with CRF++'s template ``CONLL2000_TEMPLATE`` (one dense
transition matrix) and with the same template plus ``B01:%x[0,1]`` and
``B02:%x[-1,1]/%x[0,1]`` (an (n_labels, n_labels) block of transition
weights per POS tag and POS bigram), for each route asked: ``sgd`` (CLL +
L2, C=1, ``solver='sgd'``: averaged SGD, 10 epochs), ``perceptron`` and
``max_margin`` (their default solvers, 10 epochs). Prints test F1
(conlleval), epochs, wall and CPU time of the fit, and the load average.

``--plain-sgd-epochs K`` only times K epochs of SGD on the plain template
(the fit's CPU seconds, ``eta0=0.1``), to compare two builds of the SGD
kernel. ``--kernel-epochs K`` only times K epochs of the compiled SGD loop
(CLL, from zero, a fixed step; no vectorisation, calibration or objective
evaluation) on the first ``--train-sentences`` sentences, plain template
beside the bigram template.

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/bench_bigram_online.py \\
        [--routes sgd perceptron max_margin] [--plain-sgd-epochs K]
        [--kernel-epochs K --train-sentences N [--templates plain bigram]]
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.metrics import segment_f1_score  # noqa: E402
from sklearn_crfloss.losses import ConditionalLogLikelihood  # noqa: E402
from sklearn_crfloss.solvers import SGD  # noqa: E402
from sklearn_crfloss.solvers._sgd import _ScaledModel  # noqa: E402
from bench_bigram_templates import BIGRAM_LINES  # noqa: E402

ROUTES = {"sgd": dict(loss="cll", solver="sgd"), "perceptron": dict(loss="perceptron"),
          "max_margin": dict(loss="max_margin")}


def _load():
    return open("/proc/loadavg").read().split()[:3]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routes", nargs="+", choices=sorted(ROUTES), default=sorted(ROUTES))
    parser.add_argument("--plain-sgd-epochs", type=int, default=0)
    parser.add_argument("--kernel-epochs", type=int, default=0)
    parser.add_argument("--train-sentences", type=int, default=None)
    parser.add_argument("--templates", nargs="+", choices=["plain", "bigram"],
                        default=["plain", "bigram"],
                        help="--kernel-epochs: which templates (plain alone runs with the "
                             "kernel of a build without bigram support too)")
    args, X_train, y_train, X_test, y_test = _common.parse_conll2000_run(parser)
    if args.kernel_epochs:
        for name, template in [("plain", CONLL2000_TEMPLATE),
                               ("+ B01, B02", CONLL2000_TEMPLATE + BIGRAM_LINES)]:
            if ("plain" if name == "plain" else "bigram") not in args.templates:
                continue
            seconds = _kernel_epochs(TemplateFeatures(template).fit_transform(X_train), y_train,
                                     args.kernel_epochs)
            print(f"{name}: CPU s per epoch of the compiled loop "
                  f"{' '.join(f'{t:.3f}' for t in seconds)}; load {_load()}", flush=True)
        return
    if args.plain_sgd_epochs:
        F_train = TemplateFeatures(CONLL2000_TEMPLATE).fit_transform(X_train)
        crf = CRFTagger(C=1.0, solver=SGD(eta0=0.1, random_state=0), n_jobs=1,
                        max_iter=args.plain_sgd_epochs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # max_iter reached
            c0 = time.process_time()
            crf.fit(F_train, y_train)
        cpu = time.process_time() - c0
        print(f"plain SGD: {args.plain_sgd_epochs} epochs, fit CPU s {cpu:.2f}; "
              f"load {_load()}", flush=True)
        return
    rows = []
    for route in args.routes:
        for name, template in [("plain", CONLL2000_TEMPLATE),
                               ("+ B01, B02", CONLL2000_TEMPLATE + BIGRAM_LINES)]:
            features = TemplateFeatures(template).fit([])
            F_train, F_test = features.transform(X_train), features.transform(X_test)
            crf = CRFTagger(C=1.0, n_jobs=1, random_state=0, **ROUTES[route])
            load = _load()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # max_iter reached
                t0, c0 = time.perf_counter(), time.process_time()
                crf.fit(F_train, y_train)
                seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            f1 = segment_f1_score(y_test, crf.predict(F_test))
            blocks = crf.bigram_attributes_
            rows.append([route, name, f"{100 * f1:.2f}", crf.n_iter_, f"{seconds:.1f}",
                         f"{cpu:.1f}", crf.n_parameters_, 0 if blocks is None else len(blocks),
                         " ".join(load) + " / " + " ".join(_load())])
            print(_common.format_table(["route", "template", "F1", "epochs", "fit wall s",
                                        "fit CPU s", "parameters", "bigram attrs",
                                        "load before / after"], rows), flush=True)


def _kernel_epochs(F, y, k):
    """CPU seconds of each of k epochs of the compiled CLL loop from zero (fixed step)."""
    probe = CRFTagger(C=1.0, solver="sgd", max_iter=1)
    captured = {}
    original = probe._train

    def capture(obj, loss, prior, solver, x0, from_zero, **kwargs):
        captured["obj"] = obj
        return original(obj, loss, prior, solver, x0, from_zero, **kwargs)

    probe._train = capture
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probe.fit(F, y)
    obj = captured["obj"]
    n = len(y)
    seconds = []
    for rep in range(k):
        model = _ScaledModel(obj, np.zeros(obj.n_params), ConditionalLogLikelihood(), 0, None,
                             None)
        order = np.random.default_rng(rep).permutation(n)
        c0 = time.process_time()
        model.run(order, (0.05, 1.0 / n, 1.0 / n, 1.0))
        seconds.append(time.process_time() - c0)
    return seconds


if __name__ == "__main__":
    main()
