"""Every loss with every applicable solver on a CoNLL-2000 subset: the default solvers' evidence.

For each ``--losses`` entry and each ``--solvers`` entry that accepts it
(``CRFTagger`` raises ValueError otherwise, and the pair is skipped), fits
``CRFTagger(loss=..., solver=..., prior='l2', C=--C)`` on the first
``--train-sentences`` training sentences and reports:

* fit seconds and CPU seconds (the ``init='cll'`` stage included for the
  losses that start from a CLL fit, ``needs_init``: every solver of such a
  loss starts from the same CLL fit, so the differences are the solver's);
* iterations (epochs for ``sgd``) of the loss's training;
* the final training objective (loss + prior), recomputed at the returned
  parameters on the layout the solver trained (``sgd``, whose epochs report
  their summed losses, and the dense layout of the online solvers
  included), so all solvers of a loss compare on the same function up to
  that layout;
* test segment F1 (conlleval) on the first ``--test-sentences`` test
  sentences.

Solver names are those of ``CRFTagger(solver=...)``; ``default`` is
``solver=None``, and ``paper`` the schedule ``[('sgd', 10), 'quickprop']``
run in full. Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/solver_defaults.py \\
        [--train-sentences 1000] [--test-sentences 500] [--max-iter 200] \\
        [--losses cll mce_f ...] [--solvers lbfgs owlqn rprop quickprop sgd default]

Timed runs are never tests; see benchmarks/README.md for the measured table.
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import Timer, command_line  # noqa: E402

from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss._model._objective import CRFObjective  # noqa: E402
from sklearn_crfloss._model._parameters import ParameterLayout, observed_pairs  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.losses import LOSSES, get_loss  # noqa: E402
from sklearn_crfloss.metrics import segment_f1_score  # noqa: E402
from sklearn_crfloss.priors import GaussianPrior  # noqa: E402

SOLVER_SPECS = {
    "lbfgs": "lbfgs",
    "owlqn": "owlqn",
    "rprop": "rprop",
    "quickprop": "quickprop",
    "sgd": "sgd",
    "paper": [("sgd", 10), "quickprop"],
    "default": None,
}


def final_objective(crf, F, y, loss_name, C):
    """Loss + L2 prior at the fitted parameters, on the layout the fit trained."""
    Xc = crf.vectorizer_.transform([t for s in F for t in s]).tocsr()
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in y])]).astype(np.intp)
    y_enc = np.searchsorted(crf.classes_, np.concatenate(y)).astype(np.intp)
    L = crf.classes_.shape[0]
    W = crf.coef_.T
    observed = observed_pairs(Xc, y_enc, L)
    dense = not np.all(W.ravel()[np.setdiff1d(np.arange(W.size), observed)] == 0)
    layout = ParameterLayout(Xc.shape[1], L, None if dense else observed)
    objective = CRFObjective(Xc, y_enc, offsets, layout)
    loss = get_loss(loss_name)
    if hasattr(loss, "set_classes"):
        loss.set_classes(crf.classes_)
    theta = layout.pack(W, crf.transition_, crf.start_, crf.end_)
    return objective.value_and_grad(theta, loss, GaussianPrior(), C)[0]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train-sentences", type=int, default=1000)
    p.add_argument("--test-sentences", type=int, default=500)
    p.add_argument("--losses", nargs="+", default=[k for k in LOSSES
                                                    if k not in ("perceptron", "mira")])
    p.add_argument("--solvers", nargs="+", default=list(SOLVER_SPECS),
                   choices=list(SOLVER_SPECS))
    p.add_argument("--max-iter", type=int, default=200,
                   help="iterations of the batch solvers (the sgd stages keep their epochs)")
    p.add_argument("--sgd-epochs", type=int, default=10)
    p.add_argument("--eta0", type=float, default=None,
                   help="eta0 of the sgd stages (default: the estimator's 'auto')")
    p.add_argument("--C", type=float, default=1.0)
    args = p.parse_args(argv)
    print("command:", command_line(["SKLEARN_CRFLOSS_DATA"]))
    print("load:", os.getloadavg(), flush=True)
    X, y = load_conll2000("train")
    Xt, yt = load_conll2000("test")
    X, y = X[:args.train_sentences], y[:args.train_sentences]
    Xt, yt = Xt[:args.test_sentences], yt[:args.test_sentences]
    feats = TemplateFeatures(CONLL2000_TEMPLATE).fit(X)
    F, Ft = feats.transform(X), feats.transform(Xt)

    rows = []
    for loss_name in args.losses:
        init = "cll" if getattr(get_loss(loss_name), "needs_init", False) else None
        for key in args.solvers:
            spec = SOLVER_SPECS[key]
            max_iter = args.sgd_epochs if key == "sgd" else args.max_iter
            crf = CRFTagger(loss=loss_name, solver=spec, init=init, C=args.C,
                            max_iter=max_iter, eta0="auto" if args.eta0 is None else args.eta0, random_state=0,
                           n_jobs=1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                try:
                    with Timer() as t:
                        crf.fit(F, y)
                except ValueError as exc:
                    print(f"{loss_name:15s} {key:10s} refused: {exc}", flush=True)
                    continue
            f1 = 100 * segment_f1_score(yt, crf.predict(Ft))
            obj = final_objective(crf, F, y, loss_name, args.C)
            row = (loss_name, key, init or "-", t.wall, t.cpu, crf.n_iter_, obj, f1)
            rows.append(row)
            print(f"{loss_name:15s} {key:10s} init={init or '-':4s} fit {t.wall:7.1f}s "
                  f"cpu {t.cpu:7.1f}s iters {crf.n_iter_:4d} objective {obj:12.2f} "
                  f"F1 {f1:.2f}", flush=True)
    print("load:", os.getloadavg())
    print()
    print("| loss | solver | init | fit s | CPU s | iterations | objective | test F1 |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.1f} | {r[4]:.1f} | {r[5]} | "
              f"{r[6]:.2f} | {r[7]:.2f} |")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - t0:.0f} s")
