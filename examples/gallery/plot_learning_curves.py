"""
========================================
Learning curves of three training losses
========================================

Segment F1 on held-out CoNLL-2000 sentences as the training set grows, for
three training losses of :class:`~sklearn_crfloss.CRFTagger`: the conditional
log-likelihood (``loss='cll'``), softmax-margin (``loss='softmax_margin'``,
Gimpel & Smith 2010, the likelihood with the Hamming cost inside the
partition function) and the averaged structured perceptron
(``loss='perceptron'``, Collins 2002). The curves come from scikit-learn's
:func:`~sklearn.model_selection.learning_curve` run on a
:class:`~sklearn.pipeline.Pipeline` of
:class:`~sklearn_crfloss.features.TemplateFeatures` and the tagger, scored
with :data:`~sklearn_crfloss.metrics.segment_f1_scorer`.

A small run for the documentation: at most 400 training sentences, 400 test
sentences, 50 L-BFGS iterations and 5 perceptron epochs. The full data set
(about 93.7 F1 with C = 1) is in ``examples/conll2000_chunking.py``.
"""

# %%
# The data: the first 400 sentences of the training set and the first 400 of
# the test set, joined into one list with a single predefined split, so that
# ``learning_curve`` trains on prefixes of the training part and always
# scores on the same test sentences.
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import learning_curve
from sklearn.pipeline import make_pipeline

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
from sklearn_crfloss.metrics import segment_f1_scorer

X_train, y_train = load_conll2000("train")
X_test, y_test = load_conll2000("test")
n_train, n_test = 400, 400
X = X_train[:n_train] + X_test[:n_test]
y = y_train[:n_train] + y_test[:n_test]
split = [(np.arange(n_train), np.arange(n_train, n_train + n_test))]

# %%
# One tagger per loss. The iteration budgets are those of a quick run; the
# L-BFGS fits may stop on their budget, which warns.
models = {
    "cll": CRFTagger(loss="cll", C=1.0, max_iter=50),
    "softmax_margin": CRFTagger(loss="softmax_margin", C=1.0, max_iter=50),
    "perceptron": CRFTagger(loss="perceptron", max_iter=5, random_state=0),
}
warnings.simplefilter("ignore", ConvergenceWarning)

train_sizes = [50, 100, 200, 400]
curves = {}
for name, crf in models.items():
    model = make_pipeline(TemplateFeatures(CONLL2000_TEMPLATE), crf)
    sizes, train_scores, test_scores = learning_curve(
        model, X, y, train_sizes=train_sizes, cv=split, scoring=segment_f1_scorer)
    curves[name] = (sizes, train_scores[:, 0], test_scores[:, 0])
    print(f"{name:>15}: test F1 " + "  ".join(
        f"{n}: {100 * s:.1f}" for n, s in zip(sizes, test_scores[:, 0])))

# %%
# Test F1 (solid) and training F1 (dashed) against the number of training
# sentences. With a few hundred sentences the three losses are within a
# point or two of each other; the training F1 shows how far each fits the
# training data (the perceptron has no prior).
fig, ax = plt.subplots(figsize=(6.4, 4.2))
for (name, (sizes, train_f1, test_f1)), color in zip(curves.items(), ["C0", "C1", "C2"]):
    ax.plot(sizes, 100 * test_f1, "o-", color=color, label=f"{name} (test)")
    ax.plot(sizes, 100 * train_f1, "--", color=color, alpha=0.6, label=f"{name} (train)")
ax.set_xscale("log")
ax.set_xticks(train_sizes, [str(n) for n in train_sizes])
ax.minorticks_off()
ax.set_xlabel("training sentences (CoNLL-2000)")
ax.set_ylabel("segment F1 (%)")
ax.set_title("Learning curves per training loss")
ax.legend(fontsize="small", ncol=2)
ax.grid(alpha=0.3)
fig.tight_layout()
plt.show()
