"""Early stopping's patience (``n_iter_no_change``) per solver, measured on CoNLL subsets.

For each data set (``conll2000``: chunking, the CRF++ template; ``conll2002``:
Spanish NER, ``NERFeatures``) and each solver, on the first
``--train-sentences`` training sentences:

* the *full fit*: ``CRFTagger(C=--C, solver=...)`` without early stopping
  on all of them, scored (segment F1, conlleval) on the test set
  (CoNLL-2000 test, CoNLL-2002 esp.testb);
* for each ``--seeds`` value, one fit with ``early_stopping=True``,
  ``random_state=seed`` (the held-out tenth of the training sentences) and a
  patience too large to stop, which records the held-out score after every
  iteration (``validation_scores_``) and, through a callback taking the
  model, the test F1 of every iteration. Early stopping with patience ``p``
  is then replayed on the recorded scores with the monitor's rule (stop
  when the held-out score has not improved by more than ``tol`` for ``p``
  iterations; keep the best iteration): L-BFGS and OWL-QN are
  deterministic and SGD's shuffling does not depend on when it stops, so
  the replay gives the run that patience ``p`` would have made. One run
  per seed is checked against a real fit with ``--check-patience``.

The tables give, per solver and patience, the test F1 of the parameters
kept minus that of the last iteration of the same run (mean and worst over
the seeds, in F1 points), and the iterations run; one line per solver gives
the full fit's test F1 and how far the runs on 90% of the sentences end
from it. Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/early_stopping_patience.py \\
        [--datasets conll2000 conll2002] [--solvers lbfgs owlqn sgd] \\
        [--train-sentences 2000] [--seeds 0 1 2] [--cache DIR]

Timed runs are never tests; see benchmarks/README.md for the measured table.
"""

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import cached, format_table, print_run_header  # noqa: E402

from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000, load_conll2002  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, NERFeatures, TemplateFeatures  # noqa: E402
from sklearn_crfloss.metrics import segment_f1_score  # noqa: E402

#: The estimator parameters of each solver (besides ``C``).
SOLVERS = {
    "lbfgs": dict(solver="lbfgs"),
    "owlqn": dict(solver="owlqn", prior="l1"),
    "rprop": dict(solver="rprop"),
    "sgd": dict(solver="sgd", max_iter=30),
}

PATIENCES = (2, 3, 5, 10, 15, 20, 30, 40, 50, 60, 80, "never")

#: Large enough that early stopping never stops: the run records every iteration.
NEVER = 10 ** 6


def load(dataset, n_train):
    """Training features and labels (first ``n_train`` sentences), test features and labels."""
    if dataset == "conll2000":
        X, y = load_conll2000("train")
        Xt, yt = load_conll2000("test")
        features = TemplateFeatures(CONLL2000_TEMPLATE)
    else:
        X, y = load_conll2002("esp", "train")
        Xt, yt = load_conll2002("esp", "testb")
        features = NERFeatures()
    F = features.fit_transform(X[:n_train])
    return F, y[:n_train], features.transform(Xt), yt


def record_run(params, F, y, Ft, yt, seed):
    """One early-stopping fit that never stops: held-out scores and test F1 per iteration."""
    test_f1 = []

    def callback(k, objective, model):
        test_f1.append(segment_f1_score(yt, model.predict(Ft)))

    crf = CRFTagger(**params, early_stopping=True, n_iter_no_change=NEVER, random_state=seed,
                    callback=callback).fit(F, y)
    assert len(test_f1) == len(crf.validation_scores_) == crf.n_iter_
    return dict(validation=list(crf.validation_scores_), test=test_f1,
                tol=crf.tol, stop_reason=crf.stop_reason_)


def replay(validation, tol, patience):
    """(iterations run, 0-based index of the kept iteration) of early stopping with ``patience``.

    The rule of ``ConvergenceMonitor``: an iteration counts as no change
    unless its score beats the best by more than ``tol * max(1, |best|)``;
    the run stops after ``patience`` such iterations in a row; the
    parameters of the highest score are kept.
    """
    best, best_k, no_change = None, 0, 0
    for k, score in enumerate(validation):
        if best is None or score > best + tol * max(1.0, abs(best)):
            no_change = 0
        else:
            no_change += 1
        if best is None or score > best:
            best, best_k = score, k
        if no_change >= patience:
            return k + 1, best_k
    return len(validation), best_k


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["conll2000", "conll2002"])
    parser.add_argument("--solvers", nargs="+", default=["lbfgs", "owlqn", "sgd"],
                        choices=sorted(SOLVERS))
    parser.add_argument("--train-sentences", type=int, default=2000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--check-patience", type=int, default=None,
                        help="also fit with this patience for real and compare with the replay")
    parser.add_argument("--cache", default=None,
                        help="folder of per-run pickles (a run cut short resumes)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)
    print_run_header(["sklearn_crfloss", "numpy", "scipy"])
    if args.cache:
        os.makedirs(args.cache, exist_ok=True)

    def run(name, compute):
        if not args.cache:
            return compute()
        return cached(os.path.join(args.cache, f"{name}_{args.train_sentences}.pkl"), compute)

    f1_rows, worst_rows, iter_rows = [], [], []
    for dataset in args.datasets:
        F, y, Ft, yt = load(dataset, args.train_sentences)
        for solver in args.solvers:
            params = dict(SOLVERS[solver], C=args.C)
            full = run(f"{dataset}_{solver}_full", lambda: (
                lambda crf: dict(f1=segment_f1_score(yt, crf.predict(Ft)), n_iter=crf.n_iter_))(
                    CRFTagger(**params, random_state=0).fit(F, y)))
            runs = [run(f"{dataset}_{solver}_seed{seed}",
                        lambda seed=seed: record_run(params, F, y, Ft, yt, seed))
                    for seed in args.seeds]
            final = np.array([r["test"][-1] for r in runs])
            print(f"{dataset} {solver}: full fit {full['n_iter']} iterations, test F1 "
                  f"{100 * full['f1']:.2f}; each seed's run on its 90% to the end: "
                  + ", ".join(f"{100 * r['test'][-1]:.2f} ({len(r['test'])} it, "
                              f"{r['stop_reason']})" for r in runs)
                  + f"; mean {100 * (final.mean() - full['f1']):+.2f} from the full fit",
                  flush=True)
            if args.check_patience is not None:
                p = args.check_patience
                real = CRFTagger(**params, early_stopping=True, n_iter_no_change=p,
                                 random_state=args.seeds[0]).fit(F, y)
                n_run, kept = replay(runs[0]["validation"], runs[0]["tol"], p)
                f1 = segment_f1_score(yt, real.predict(Ft))
                print(f"  check patience {p}: real fit {real.n_iter_} iterations, F1 "
                      f"{100 * f1:.4f}; replay {n_run} iterations, F1 "
                      f"{100 * runs[0]['test'][kept]:.4f}", flush=True)
            name = [dataset, solver]
            f1_rows.append(name + [f"{100 * final.mean():.2f}"])
            worst_rows.append(list(name))
            iter_rows.append(name + [f"{np.mean([len(r['test']) for r in runs]):.0f}"])
            for p in PATIENCES:
                outcomes = [replay(r["validation"], r["tol"], NEVER if p == "never" else p)
                            for r in runs]
                diff = 100 * (np.array([r["test"][k] for r, (_, k) in zip(runs, outcomes)])
                              - final)
                f1_rows[-1].append(f"{diff.mean():+.2f}")
                worst_rows[-1].append(f"{diff.min():+.2f}")
                iter_rows[-1].append(f"{np.mean([n for n, _ in outcomes]):.0f}")
    header = ["data", "solver"]
    print(f"\nTest F1 of the parameters early stopping keeps, minus that of the last iteration "
          f"of the same run (trained on the same 90%, run until the solver stopped), mean over "
          f"the {len(args.seeds)} seeds; 'end' is that last iteration's F1 ('never': the best "
          f"held-out iteration of the whole run):")
    print(format_table(header + ["end"] + [str(p) for p in PATIENCES], f1_rows))
    print("\nThe same, worst seed:")
    print(format_table(header + [str(p) for p in PATIENCES], worst_rows))
    print("\nIterations (epochs for SGD) run, mean over the seeds ('end': the run to the end):")
    print(format_table(header + ["end"] + [str(p) for p in PATIENCES], iter_rows))


if __name__ == "__main__":
    main()
