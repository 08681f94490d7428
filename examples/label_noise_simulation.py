"""
Label noise: conditional log-likelihood vs pointwise vs maximum labelwise accuracy
================================================================================

The simulation of Gross et al. (2006), Section 4.1 and Figure 1b, on the
two-state HMM of :func:`sklearn_crfloss.datasets.make_hmm_sequences`: the
training labels are corrupted by flipping each run of ``'C'`` labels to
``'I'`` with probability ``p``; every model is tested on clean labels of an
independent test set. Losses: ``'cll'``, ``'pointwise'`` and ``'labelwise'``
(sigmoid ``Q``, ``alpha=15``, started from the CLL fit with ``init='cll'``),
each decoded with MEA (posterior) and Viterbi. Token accuracy is averaged
over ``--repeats`` independent draws of the training and test sets.

Run from a checkout::

    python examples/label_noise_simulation.py

Options: ``--n-sequences``, ``--length`` (training set size), ``--repeats``,
``--C``, ``--out`` (the PNG of the plot, default
``examples/label_noise.png``).
"""

# %%
import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import make_hmm_sequences
from sklearn_crfloss.metrics import token_accuracy

NOISE = [0.0, 0.05, 0.1, 0.2, 0.3, 0.4]
MODELS = [  # (name, CRFTagger parameters)
    ("cll", dict(loss="cll")),
    ("pointwise", dict(loss="pointwise", init="cll")),
    ("labelwise", dict(loss="labelwise", init="cll")),
]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-sequences", type=int, default=50)
    parser.add_argument("--length", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--C", type=float, default=10.0)
    parser.add_argument("--out", default="examples/label_noise.png")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)

    # %%
    # Accuracy on clean test labels for every noise level, model and decoder.
    acc = {(m, d): np.zeros((len(NOISE), args.repeats))
           for m, _ in MODELS for d in ("mea", "viterbi")}
    t0 = time.perf_counter()
    for r in range(args.repeats):
        X_test, _, y_test = make_hmm_sequences(args.n_sequences, args.length,
                                               random_state=1000 + r)
        for k, p in enumerate(NOISE):
            X, y, _ = make_hmm_sequences(args.n_sequences, args.length, noise=p,
                                         random_state=r)
            for name, params in MODELS:
                crf = CRFTagger(C=args.C, n_jobs=1, **params).fit(X, y)
                for dec in ("mea", "viterbi"):
                    crf.set_params(decoder=dec)
                    acc[name, dec][k, r] = token_accuracy(y_test, crf.predict(X_test))
        print(f"repeat {r + 1}/{args.repeats} done ({time.perf_counter() - t0:.0f} s)")

    # %%
    # Table: mean accuracy (and the standard error over repeats).
    header = "| p | " + " | ".join(f"{m} {d}" for m, _ in MODELS for d in ("mea", "viterbi"))
    print(header + " |")
    print("|---" * (1 + 2 * len(MODELS)) + "|")
    for k, p in enumerate(NOISE):
        cells = []
        for m, _ in MODELS:
            for d in ("mea", "viterbi"):
                a = acc[m, d][k]
                cells.append(f"{a.mean():.4f} ± {a.std(ddof=1) / np.sqrt(a.size):.4f}"
                             if a.size > 1 else f"{a.mean():.4f}")
        print(f"| {p} | " + " | ".join(cells) + " |")

    # %%
    # Plot in the layout of Gross et al., Figure 1b.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for m, _ in MODELS:
        for d, style in (("mea", "-"), ("viterbi", ":")):
            a = acc[m, d]
            err = a.std(axis=1, ddof=1) / np.sqrt(a.shape[1]) if a.shape[1] > 1 else None
            ax.errorbar(NOISE, a.mean(axis=1), yerr=err, linestyle=style, marker="o",
                        capsize=2, label=f"{m} ({d})")
    ax.set_xlabel("noise parameter p")
    ax.set_ylabel("labelwise accuracy (clean test labels)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"plot saved to {args.out}")


if __name__ == "__main__":
    main()
