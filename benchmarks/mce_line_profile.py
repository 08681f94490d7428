"""The MCE-F objective along the steepest-descent direction at the MAP solution.

Why L-BFGS stops on ``loss='mce_f'`` (Suzuki et al. 2006, Eq. 16 with the
false positives of the maximum incorrect output): fits MAP (``loss='cll'``, ``prior='l2'``) on
the first ``--train-sentences`` CoNLL-2000 training sentences with the CRF++
template, then prints the change of the MCE-F training objective (prior
included) along ``-g / |g|`` for steps ``t`` from 1e-6 to 1, next to the
first-order prediction ``-t |g|``. Where the two part, the set of false
positive segments (those of the maximum incorrect output) has changed and
the objective has jumped. Run from a checkout::

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/mce_line_profile.py \\
        --train-sentences 1000 --alpha 1

Timed runs are never tests; the measured output is in benchmarks/README.md.
"""

import argparse
import warnings
import os
import sys

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import training_objective  # noqa: E402
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
from sklearn_crfloss.losses import SegmentFScoreMCE
from sklearn_crfloss.priors import GaussianPrior


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train-sentences", type=int, default=1000)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--C", type=float, default=1.0)
    p.add_argument("--false-positives", default="max_incorrect",
                   choices=["max_incorrect", "viterbi"])
    args = p.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)
    X, y = load_conll2000("train")
    X, y = X[:args.train_sentences], y[:args.train_sentences]
    F = TemplateFeatures(CONLL2000_TEMPLATE).fit(X).transform(X)
    crf = CRFTagger(C=args.C, n_jobs=1).fit(F, y)
    objective, theta, _, _ = training_objective(crf, F, y)
    loss = SegmentFScoreMCE(alpha=args.alpha, false_positives=args.false_positives)
    loss.set_classes(crf.classes_)

    def obj(theta):
        return objective.value_and_grad(theta, loss, GaussianPrior(), args.C)

    f0, g = obj(theta)
    gnorm = float(np.linalg.norm(g))
    print(f"MAP solution ({len(F)} sentences, C={args.C:g}): MCE-F objective {f0:.4f}, "
          f"|gradient| {gnorm:.3f}")
    print("| step t | f(theta - t g/|g|) - f(theta) | first-order prediction -t|g| |")
    print("|---|---|---|")
    for t in [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]:
        f1, _ = obj(theta - t * g / gnorm)
        print(f"| {t:g} | {f1 - f0:+.4e} | {-t * gnorm:+.4e} |")


if __name__ == "__main__":
    main()
