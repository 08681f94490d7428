"""
======================================================
Per-type F1 of Spanish NER with a recall-oriented cost
======================================================

Named entity recognition on CoNLL-2002 Spanish (types ``PER``, ``LOC``,
``ORG``, ``MISC``) with two training losses of
:class:`~sklearn_crfloss.CRFTagger`: the conditional log-likelihood
(``loss='cll'``) and softmax-margin (Gimpel & Smith 2010) with a
**recall-oriented cost**, a :class:`~sklearn_crfloss.losses.LabelCost` that
charges 3 for labelling an entity token ``O`` and 1 for every other mistake.
The bars are the per-type segment F1 of
:func:`~sklearn_crfloss.metrics.segment_report` (conlleval's per-type
table), which also gives the precision and recall printed below.

A small run for the documentation: the first 1,000 training sentences,
50 L-BFGS iterations, scored on the first 500 sentences of ``esp.testb``.
``examples/conll2002_cost_losses.py`` runs the cost-sensitive losses on the
whole data set with C and the cost chosen on ``esp.testa``.
"""

# %%
# Features: the word, its shape and suffixes, its POS tag, and the same for
# the neighbouring tokens, as feature dicts.
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2002
from sklearn_crfloss.losses import SoftmaxMargin
from sklearn_crfloss.metrics import segment_report


def token_features(sentence, t):
    word, pos = sentence[t]
    feats = {"bias": 1.0, "w": word.lower(), "suf3": word[-3:], "title": word.istitle(),
             "upper": word.isupper(), "digit": word.isdigit(), "pos": pos}
    for offset, name in ((-1, "prev"), (1, "next")):
        if 0 <= t + offset < len(sentence):
            w, p = sentence[t + offset]
            feats.update({f"{name}_w": w.lower(), f"{name}_title": w.istitle(),
                          f"{name}_pos": p})
    return feats


def sentence_features(sentences):
    return [[token_features(s, t) for t in range(len(s))] for s in sentences]


X_train, y_train = load_conll2002("esp", "train")
X_test, y_test = load_conll2002("esp", "testb")
X_train, y_train = sentence_features(X_train[:1000]), y_train[:1000]
X_test, y_test = sentence_features(X_test[:500]), y_test[:500]

# %%
# The recall-oriented cost: predicting ``O`` where the gold label is part of
# an entity costs 3.
entity_labels = sorted({label for seq in y_train for label in seq if label != "O"})
recall_cost = {(label, "O"): 3.0 for label in entity_labels}
models = {
    "cll": CRFTagger(loss="cll", C=1.0, max_iter=50),
    "softmax-margin, recall cost": CRFTagger(loss=SoftmaxMargin(cost=recall_cost), C=1.0,
                                             max_iter=50),
}
warnings.simplefilter("ignore", ConvergenceWarning)  # 50 iterations: a quick run
reports = {}
for name, crf in models.items():
    crf.fit(X_train, y_train)
    reports[name] = segment_report(y_test, crf.predict(X_test), output_dict=True)
    print(name)
    print(segment_report(y_test, crf.predict(X_test)))

# %%
# Per-type F1 (and the micro average over all entities). The cost makes the
# tagger propose more entities (the ``n_pred`` column of the tables above);
# on this small training set the extra ones are mostly wrong, so precision
# falls and F1 does not improve. How large a cost pays off is a matter for
# development data, as ``examples/conll2002_cost_losses.py`` chooses the
# Hamming cost multiplier on ``esp.testa``.
types = ["PER", "LOC", "ORG", "MISC", "micro avg"]
fig, ax = plt.subplots(figsize=(6.4, 4.2))
width = 0.38
x = np.arange(len(types))
for i, (name, report) in enumerate(reports.items()):
    f1 = [100 * report[t]["f1-score"] for t in types]
    bars = ax.bar(x + (i - 0.5) * width, f1, width, label=name)
    ax.bar_label(bars, fmt="%.1f", fontsize="x-small")
ax.set_xticks(x, types)
ax.set_ylabel("segment F1 (%) on esp.testb[:500]")
ax.set_title("Per-type F1, CoNLL-2002 Spanish (1,000 training sentences)")
ax.set_ylim(0, 100)
ax.legend(loc="upper right", fontsize="small")
fig.tight_layout()
plt.show()
