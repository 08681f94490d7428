"""Time of one objective evaluation (value and gradient) per loss on CoNLL-2002.

Gross et al. (2006), Section 3.2.2: the labelwise gradient costs "approximately
three times" the log-likelihood gradient. This times, on ``esp.train`` with
the features of ``conll2002_marginal_losses.py`` and ``n_jobs=1``:

* the loss alone on the potentials (``loss.value_and_grad``), and
* the whole objective (``U = X @ W``, loss, ``X.T @ dU``, prior), which is
  what one L-BFGS function evaluation costs,

at the parameters of a short CLL fit (``--warm-iter`` iterations), taking the
median of ``--repeats`` calls (the losses alternate within each repeat).
``--losses`` picks the losses (registry names, the first is the reference
of the ratios); e.g. ``--losses cll risk jrb softmax_margin`` compares the
Jensen risk bound with risk (Gimpel & Smith 2010, section 3.1).

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/time_marginal_losses.py \\
        [--train-sentences N] [--repeats 5] [--warm-iter 5] [--losses cll labelwise]
"""

import argparse
import time
import warnings
import os
import sys

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import training_objective  # noqa: E402
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2002
from sklearn_crfloss.losses import get_loss
from sklearn_crfloss.priors import get_prior

from conll2002_marginal_losses import s3_features


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train-sentences", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warm-iter", type=int, default=5)
    parser.add_argument("--losses", nargs="+", default=["cll", "pointwise", "mixed", "labelwise"],
                        help="registry names; the first is the reference of the ratios")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)
    X, y = load_conll2002("esp", "train")
    if args.train_sentences:
        X, y = X[:args.train_sentences], y[:args.train_sentences]
    F = [s3_features(s) for s in X]
    crf = CRFTagger(C=1.0, max_iter=args.warm_iter, n_jobs=1).fit(F, y)
    # Rebuild the training objective exactly as fit does.
    objective, theta, y_enc, offsets = training_objective(crf, F, y)
    print(f"{len(F)} sentences, {objective.n_tokens} tokens, {objective.n_features} "
          f"attributes, {objective.n_labels} labels, {objective.layout.n_state} state parameters")
    U, T, s, e = (np.array(a) for a in objective.potentials(theta))
    setups = {}
    for name in args.losses:
        loss = get_loss(name)

        def obj(theta, loss=loss):
            return objective.value_and_grad(theta, loss, get_prior("l2"), 1.0)

        setups[name] = (obj, theta, (U, T, s, e), get_loss(name))
    # Repeats outermost, losses innermost: a change of machine load during
    # the run hits every loss alike.
    t_loss = {name: [] for name in args.losses}
    t_obj = {name: [] for name in args.losses}
    for _ in range(args.repeats):
        for name, (obj, theta, (U, T, s, e), loss) in setups.items():
            t0 = time.perf_counter()
            loss.value_and_grad(U, T, s, e, y_enc, offsets, n_threads=1)
            t_loss[name].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            obj(theta)
            t_obj[name].append(time.perf_counter() - t0)
    rows = [(name, np.median(t_loss[name]), np.median(t_obj[name])) for name in args.losses]
    base_loss, base_obj = rows[0][1], rows[0][2]
    print(f"| loss | loss only (s) | ratio to {args.losses[0]} | objective (s) | ratio to {args.losses[0]} |")
    print("|---|---|---|---|---|")
    for name, tl, to in rows:
        print(f"| {name} | {tl:.3f} | {tl / base_loss:.2f} | {to:.3f} | {to / base_obj:.2f} |")


if __name__ == "__main__":
    main()
