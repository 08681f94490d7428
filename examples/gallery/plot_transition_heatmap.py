"""
===============================================
Transition weights of a chunker, as a heat map
===============================================

The ``transition_`` matrix of a :class:`~sklearn_crfloss.CRFTagger` trained
for CoNLL-2000 chunking (IOB2 labels such as ``B-NP``, ``I-NP``, ``O``):
``transition_[i, j]`` is the score added when label ``classes_[i]`` is
followed by ``classes_[j]``. The model learns the grammar of the labels from
the data alone: ``I-X`` may only follow ``B-X`` or ``I-X``, so every other
transition into ``I-X`` gets a negative weight, while the likely ones
(``B-NP -> I-NP``, ``I-NP -> I-NP``) get large positive weights. The
``start_`` and ``end_`` potentials (first and last label of a sentence) are
shown in the same way.

A small run for the documentation: a CLL fit on the first 1,000 training
sentences with the CRF++ template, 100 L-BFGS iterations at most.
"""

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures

X_train, y_train = load_conll2000("train")
features = TemplateFeatures(CONLL2000_TEMPLATE)
F_train = features.fit_transform(X_train[:1000])
warnings.simplefilter("ignore", ConvergenceWarning)
crf = CRFTagger(loss="cll", C=1.0, max_iter=100).fit(F_train, y_train[:1000])

# %%
# Labels that occur in fewer than 20 training tokens are left out of the
# picture (their weights are small: the prior keeps them near 0). The
# ``start_`` potentials are drawn as an extra first row and the ``end_``
# potentials as an extra last column. The colour scale is symmetric around
# 0: red for what the model favours, blue for what it penalises.
counts = {c: 0 for c in crf.classes_}
for seq in y_train[:1000]:
    for label in seq:
        counts[label] += 1
keep = np.array([counts[c] >= 20 for c in crf.classes_])
labels = list(crf.classes_[keep])
T = crf.transition_[np.ix_(keep, keep)]
n = len(labels)
grid = np.full((n + 1, n + 1), np.nan)
grid[1:, :n] = T
grid[0, :n] = crf.start_[keep]
grid[1:, n] = crf.end_[keep]
limit = np.nanmax(np.abs(grid))

fig, ax = plt.subplots(figsize=(6.8, 6.0))
image = ax.imshow(np.ma.masked_invalid(grid), cmap="RdBu_r", vmin=-limit, vmax=limit)
ax.set_xticks(np.arange(n + 1), labels + ["(end)"], rotation=90, fontsize="small")
ax.set_yticks(np.arange(n + 1), ["(start)"] + labels, fontsize="small")
ax.axhline(0.5, color="k", linewidth=0.8)
ax.axvline(n - 0.5, color="k", linewidth=0.8)
ax.set_xlabel("to label")
ax.set_ylabel("from label")
ax.set_title("transition_, with start_ (top row) and end_ (last column)")
fig.colorbar(image, ax=ax, shrink=0.8, label="weight")
fig.tight_layout()
plt.show()

# %%
# The strongest transitions, as numbers.
order = np.argsort(T, axis=None)
for k in list(order[:5]) + list(order[-5:]):
    i, j = np.unravel_index(k, T.shape)
    print(f"{labels[i]:>7} -> {labels[j]:<7} {T[i, j]:+.2f}")
