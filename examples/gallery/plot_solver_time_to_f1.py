"""
=====================
Time to F1 per solver
=====================

How fast each training procedure of :class:`~sklearn_crfloss.CRFTagger`
reaches a good segment F1 on CoNLL-2000 chunking: L-BFGS on the conditional
log-likelihood (``solver='lbfgs'``, the default), stochastic gradient descent
on the same objective (``solver='sgd'``) and the averaged structured
perceptron (``loss='perceptron'``, which has no prior).

Each point is a separate fit from zero with a budget of ``max_iter``
iterations (L-BFGS) or epochs (SGD, perceptron); the x-axis is the CPU time
of that fit (:func:`time.process_time`, steadier than wall time on a shared
machine) and the y-axis the test F1 of the model it returned.

A small run for the documentation: 500 training and 500 test sentences. The
solver table on the whole data set, against sklearn-crfsuite, is in
``benchmarks/``.
"""

# %%
# Features are computed once (the template transformer fitted on the training
# sentences), so the timings are those of training alone.
import time
import warnings

import matplotlib.pyplot as plt
from sklearn.exceptions import ConvergenceWarning

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
from sklearn_crfloss.metrics import segment_f1_score

X_train, y_train = load_conll2000("train")
X_test, y_test = load_conll2000("test")
X_train, y_train, X_test, y_test = X_train[:500], y_train[:500], X_test[:500], y_test[:500]
features = TemplateFeatures(CONLL2000_TEMPLATE)
F_train = features.fit_transform(X_train)
F_test = features.transform(X_test)

# %%
# The solvers and their budgets. A fit stopped by its budget warns; that is
# the point of the experiment, so the warning is silenced.
warnings.simplefilter("ignore", ConvergenceWarning)
solvers = {
    "L-BFGS (cll)": (dict(loss="cll", solver="lbfgs"), [2, 4, 8, 16, 32, 64]),
    "SGD (cll)": (dict(loss="cll", solver="sgd", random_state=0), [1, 2, 4, 8]),
    "averaged perceptron": (dict(loss="perceptron", random_state=0), [1, 2, 4, 8]),
}
results = {}
for name, (params, budgets) in solvers.items():
    points = []
    for max_iter in budgets:
        crf = CRFTagger(C=1.0, max_iter=max_iter, **params)
        t0 = time.process_time()
        crf.fit(F_train, y_train)
        seconds = time.process_time() - t0
        f1 = segment_f1_score(y_test, crf.predict(F_test))
        points.append((seconds, f1))
        print(f"{name:>20}  max_iter {max_iter:3d}  {seconds:6.2f} s CPU  F1 {100 * f1:.2f}")
    results[name] = points

# %%
# Test F1 against the CPU time of the fit. The online solvers make one pass
# over the sentences per epoch and are good after a few epochs; L-BFGS needs
# a few dozen iterations (each one pass for the objective and its gradient)
# but ends at the optimum of the regularised likelihood.
fig, ax = plt.subplots(figsize=(6.4, 4.2))
for (name, points), marker in zip(results.items(), "osD"):
    seconds, f1 = zip(*points)
    ax.plot(seconds, [100 * f for f in f1], marker=marker, label=name)
ax.set_xscale("log")
ax.set_xlabel("CPU seconds of the fit (log scale)")
ax.set_ylabel("test segment F1 (%)")
ax.set_title("Time to F1 per solver (CoNLL-2000, 500 sentences)")
ax.legend()
ax.grid(alpha=0.3)
fig.tight_layout()
plt.show()
