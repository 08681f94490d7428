"""
Cost-sensitive training on CoNLL-2002 Spanish NER (Gimpel & Smith 2010, Table 1 layout)
=======================================================================================

Trains the perceptron, MIRA, CLL, max-margin, risk, JRB and softmax-margin on
esp.train, chooses the prior strength C and the cost multiplier m on esp.testa
(development), and reports segment F1 on esp.testb with the fit time of the
chosen setting. The paper's L2 coefficients 0.01, 0.1, 1 multiply
``sum theta^2``; our penalty is ``||theta||^2 / (2 C)``, so they are
``C = 50, 5, 0.5`` here. Costs are Hamming with ``m`` in {1, 5, 10, 20}.
Nonconvex risk and JRB start from a CLL fit (``init='cll'``).

Features (per token, documented so the table can be reproduced): the
lower-cased word, its last 2 and 3 characters, whether it is title-case,
upper-case or a number, its POS tag, and the same for the previous and the
next token (the feature set of the sklearn-crfsuite CoNLL-2002 tutorial).

Usage::

    SKLEARN_CRFLOSS_DATA=../shared/data python examples/conll2002_cost_losses.py [--quick] [--n-jobs 1]

``--quick`` uses the first 2,000 training sentences and one C per method.
"""

# %%
import argparse
import time
import warnings

from sklearn.exceptions import ConvergenceWarning

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2002
from sklearn_crfloss.losses import MIRA, JensenRiskBound, MaxMargin, Risk, SoftmaxMargin
from sklearn_crfloss.metrics import segment_f1_score


def token_features(sentence, t):
    word, pos = sentence[t][0], sentence[t][1]
    feats = {
        "bias": 1.0,
        "w": word.lower(),
        "suf3": word[-3:],
        "suf2": word[-2:],
        "title": word.istitle(),
        "upper": word.isupper(),
        "digit": word.isdigit(),
        "pos": pos,
    }
    for offset, name in ((-1, "prev"), (1, "next")):
        k = t + offset
        if 0 <= k < len(sentence):
            w, p = sentence[k][0], sentence[k][1]
            feats.update({f"{name}:w": w.lower(), f"{name}:title": w.istitle(),
                          f"{name}:upper": w.isupper(), f"{name}:pos": p})
        else:
            feats[f"{name}:boundary"] = True
    return feats


def featurize(X):
    return [[token_features(s, t) for t in range(len(s))] for s in X]


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)

    X_train, y_train = load_conll2002("esp", "train")
    X_dev, y_dev = load_conll2002("esp", "testa")
    X_test, y_test = load_conll2002("esp", "testb")
    if args.quick:
        X_train, y_train = X_train[:2000], y_train[:2000]
    F_train, F_dev, F_test = featurize(X_train), featurize(X_dev), featurize(X_test)

    Cs = [5.0] if args.quick else [50.0, 5.0, 0.5]
    ms = [1.0, 5.0] if args.quick else [1.0, 5.0, 10.0, 20.0]
    common = dict(n_jobs=args.n_jobs, random_state=0)
    methods = {
        "Perceptron": [dict(loss="perceptron", max_iter=args.epochs)],
        "MIRA": [dict(loss=MIRA(cost_scale=m), C=C, max_iter=args.epochs)
                 for C in [0.01, 0.1, 1.0] for m in ms],
        "CLL": [dict(loss="cll", C=C) for C in Cs],
        "Max-margin": [dict(loss=MaxMargin(cost_scale=m), C=C, max_iter=args.epochs)
                       for C in Cs for m in ms],
        "Risk": [dict(loss=Risk(cost_scale=m), C=C, init="cll")
                 for C in Cs for m in ms],
        "JRB": [dict(loss=JensenRiskBound(cost_scale=m), C=C, init="cll")
                for C in Cs for m in ms],
        "Softmax-margin": [dict(loss=SoftmaxMargin(cost_scale=m), C=C)
                           for C in Cs for m in ms],
    }
    print(f"train {len(X_train)} sentences; dev esp.testa {len(X_dev)}; test esp.testb {len(X_test)}")
    print(f"{'method':16s} {'dev F1':>7s} {'test F1':>7s} {'fit s':>7s}  setting")
    for name, grid in methods.items():
        best = None
        for params in grid:
            crf = CRFTagger(**common, **params)
            t0 = time.perf_counter()
            crf.fit(F_train, y_train)
            seconds = time.perf_counter() - t0
            dev = segment_f1_score(y_dev, crf.predict(F_dev))
            if best is None or dev > best[0]:
                best = (dev, crf, seconds, params)
        dev, crf, seconds, params = best
        test = segment_f1_score(y_test, crf.predict(F_test))
        shown = {k: v for k, v in params.items() if k != "loss"}
        cost = getattr(params["loss"], "cost_scale", None)
        if cost is not None:
            shown["m"] = cost
        print(f"{name:16s} {100 * dev:7.2f} {100 * test:7.2f} {seconds:7.1f}  {shown}", flush=True)


if __name__ == "__main__":
    main()
