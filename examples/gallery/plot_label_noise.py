"""
==========================================================
Label noise: likelihood against maximum labelwise accuracy
==========================================================

A small version of the simulation of Gross et al. (2006), Section 4.1 and
Figure 1b: sequences of letters from the two-state HMM of
:func:`~sklearn_crfloss.datasets.make_hmm_sequences`, whose training labels
are corrupted by flipping each run of ``'C'`` labels to ``'I'`` with
probability ``p``. Two training losses of :class:`~sklearn_crfloss.CRFTagger`
are compared on clean test labels: the conditional log-likelihood
(``loss='cll'``) and the maximum labelwise accuracy loss
(``loss='labelwise'``, started from the CLL fit with ``init='cll'``), each
decoded with Viterbi and with maximum expected accuracy (``decoder='mea'``,
which needs no refit: the decoder is a prediction-time parameter).

A small run for the documentation: 20 training sequences of 300 letters and
2 repeats per noise level. ``examples/label_noise_simulation.py`` runs the
full simulation (50 sequences of 1000 letters, 5 repeats; results in
``benchmarks/README.md``).
"""

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import make_hmm_sequences
from sklearn_crfloss.metrics import token_accuracy

noise_levels = [0.0, 0.1, 0.2, 0.3, 0.4]
n_repeats = 2
models = {"cll": dict(loss="cll"), "labelwise": dict(loss="labelwise", init="cll")}
decoders = ["mea", "viterbi"]
warnings.simplefilter("ignore", ConvergenceWarning)

# %%
# Token accuracy on the clean labels of an independent test set, for every
# noise level, repeat, loss and decoder.
accuracy = {(m, d): np.zeros((len(noise_levels), n_repeats)) for m in models for d in decoders}
for r in range(n_repeats):
    X_test, _, y_test = make_hmm_sequences(20, 300, random_state=1000 + r)
    for k, p in enumerate(noise_levels):
        X, y, _ = make_hmm_sequences(20, 300, noise=p, random_state=r)
        for name, params in models.items():
            crf = CRFTagger(C=10.0, **params).fit(X, y)
            for decoder in decoders:
                crf.set_params(decoder=decoder)
                accuracy[name, decoder][k, r] = token_accuracy(y_test, crf.predict(X_test))

for (name, decoder), acc in accuracy.items():
    print(f"{name:>9} {decoder:>7}: " + "  ".join(
        f"p={p}: {a:.3f}" for p, a in zip(noise_levels, acc.mean(axis=1))))

# %%
# Mean accuracy over the repeats against the noise level, in the layout of
# the paper's Figure 1b (solid: MEA decoding, dotted: Viterbi). With two
# repeats of a small training set the differences are noisy; the full run's
# table in ``benchmarks/README.md`` has standard errors.
fig, ax = plt.subplots(figsize=(6.4, 4.2))
for name, color in zip(models, ["C0", "C1"]):
    for decoder, style in zip(decoders, ["-", ":"]):
        ax.plot(noise_levels, accuracy[name, decoder].mean(axis=1), linestyle=style,
                marker="o", color=color, label=f"{name} ({decoder})")
ax.set_xlabel("noise parameter p (probability of flipping a run of 'C')")
ax.set_ylabel("token accuracy on clean test labels")
ax.set_title("Label noise (two-state HMM, 20 x 300 letters)")
ax.legend()
ax.grid(alpha=0.3)
fig.tight_layout()
plt.show()
