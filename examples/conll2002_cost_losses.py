"""
Cost-sensitive training on CoNLL-2002 Spanish NER (Gimpel & Smith 2010, Table 1 layout)
=======================================================================================

Trains the perceptron, MIRA, CLL, max-margin, risk, JRB and softmax-margin on
esp.train, chooses the prior strength C and the cost multiplier m on esp.testa
(development), and reports segment F1 on esp.testb with the fit time of the
chosen setting. The paper's L2 coefficients 0.01, 0.1, 1 multiply
``sum theta^2``; our penalty is ``||theta||^2 / (2 C)``, so they are
``C = 50, 5, 0.5`` here. Costs are Hamming with ``m`` in {1, 5, 10, 20}.
Nonconvex risk and JRB start from the CLL fit of the same C (as
``init='cll'`` does, with the CLL fit shared across m; its time is
included in their fit seconds).

Features (per token, documented so the table can be reproduced): the
lower-cased word, its last 2 and 3 characters, whether it is title-case,
upper-case or a number, its POS tag, and the same for the previous and the
next token (the feature set of the sklearn-crfsuite CoNLL-2002 tutorial).

Usage::

    SKLEARN_CRFLOSS_DATA=../shared/data python examples/conll2002_cost_losses.py [--quick] [--n-jobs 2]

``--quick`` uses the first 2,000 training sentences and one C per method;
``--n-jobs`` fits that many grid points in parallel (joblib), each
single-threaded; ``--methods`` runs a subset of the rows.
"""

# %%
import argparse
import copy
import json
import time
import warnings

from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2002
from sklearn_crfloss.losses import MIRA, JensenRiskBound, MaxMargin, Risk, SoftmaxMargin
from sklearn_crfloss.metrics import segment_f1_score


def token_features(sentence, t):
    word, pos = sentence[t][0], sentence[t][1]
    feats = {"bias": 1.0, "w": word.lower(), "suf3": word[-3:], "suf2": word[-2:],
             "title": word.istitle(), "upper": word.isupper(), "digit": word.isdigit(),
             "pos": pos}
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


def _fit_one(name, params, F_train, y_train, F_dev, y_dev, F_test, y_test, common, start=None):
    """Fit one grid point; ``start`` is a fitted CLL tagger to warm-start from."""
    warnings.simplefilter("ignore", ConvergenceWarning)
    if start is not None:
        crf = copy.deepcopy(start["model"])
        crf.set_params(**params, warm_start=True)
    else:
        crf = CRFTagger(**common, **params)
    t0 = time.perf_counter()
    crf.fit(F_train, y_train)
    seconds = time.perf_counter() - t0
    row = {
        "method": name,
        "setting": {k: v for k, v in params.items() if k != "loss"},
        "m": getattr(params["loss"], "cost_scale", None),
        "fit_s": seconds + (start["fit_s"] if start is not None else 0.0),
        "own_fit_s": seconds,
        "n_iter": int(crf.n_iter_),
        "init_n_iter": int(start["n_iter"]) if start is not None else 0,
        "s_per_iter": seconds / crf.n_iter_ if crf.n_iter_ else float("nan"),
        "dev_f1": segment_f1_score(y_dev, crf.predict(F_dev)),
        "test_f1": segment_f1_score(y_test, crf.predict(F_test)),
    }
    return row, crf


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="grid points fitted in parallel (joblib); each fit is single-threaded")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--methods", nargs="+", default=None,
                        help="subset of: Perceptron MIRA CLL Max-margin Risk JRB Softmax-margin")
    parser.add_argument("--jsonl", default=None, help="append one JSON line per grid point")
    parser.add_argument("--init-max-iter", type=int, default=None,
                        help="max_iter of risk and JRB after their CLL start (default: 1000)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)

    X_train, y_train = load_conll2002("esp", "train")
    X_dev, y_dev = load_conll2002("esp", "testa")
    X_test, y_test = load_conll2002("esp", "testb")
    if args.quick:
        X_train, y_train = X_train[:2000], y_train[:2000]
    F_train, F_dev, F_test = featurize(X_train), featurize(X_dev), featurize(X_test)
    data = (F_train, y_train, F_dev, y_dev, F_test, y_test)

    Cs = [5.0] if args.quick else [50.0, 5.0, 0.5]
    ms = [1.0, 5.0] if args.quick else [1.0, 5.0, 10.0, 20.0]
    capped = {} if args.init_max_iter is None else {"max_iter": args.init_max_iter}
    common = dict(n_jobs=1, random_state=0)
    # Risk and JRB are nonconvex and start from the CLL fit of the same C
    # (the same as init='cll', with the CLL fit shared across m; its time
    # is added to their fit seconds).
    methods = {
        "Perceptron": [dict(loss="perceptron", max_iter=args.epochs)],
        "MIRA": [dict(loss=MIRA(cost_scale=m), C=C, max_iter=args.epochs)
                 for C in [0.01, 0.1, 1.0] for m in ms],
        "CLL": [dict(loss="cll", C=C) for C in Cs],
        "Max-margin": [dict(loss=MaxMargin(cost_scale=m), C=C, max_iter=args.epochs)
                       for C in Cs for m in ms],
        "Risk": [dict(loss=Risk(cost_scale=m), C=C, **capped) for C in Cs for m in ms],
        "JRB": [dict(loss=JensenRiskBound(cost_scale=m), C=C, **capped)
                for C in Cs for m in ms],
        "Softmax-margin": [dict(loss=SoftmaxMargin(cost_scale=m), C=C)
                           for C in Cs for m in ms],
    }
    selected = args.methods or list(methods)
    needs_cll = any(name in ("Risk", "JRB") for name in selected)
    print(f"train {len(X_train)} sentences; dev esp.testa {len(X_dev)}; test esp.testb {len(X_test)}")
    parallel = Parallel(n_jobs=args.n_jobs, return_as="generator_unordered")

    def record(row):
        m = "-" if row["m"] is None else f"{row['m']:g}"
        print(f"  done {row['method']} {row['setting']} m={m}: dev {100 * row['dev_f1']:.2f} "
              f"test {100 * row['test_f1']:.2f} fit {row['fit_s']:.1f} s", flush=True)
        if args.jsonl:
            with open(args.jsonl, "a") as fh:
                fh.write(json.dumps(row) + "\n")
        return row

    rows = []
    cll_models = {}
    if "CLL" in selected or needs_cll:
        results = parallel(delayed(_fit_one)("CLL", p, *data, common) for p in methods["CLL"])
        for row, crf in results:
            record(row)
            cll_models[row["setting"]["C"]] = {"model": crf, "fit_s": row["fit_s"],
                                               "n_iter": row["n_iter"]}
            if "CLL" in selected:
                rows.append(row)
    jobs = []
    for name in selected:
        if name == "CLL":
            continue
        for params in methods[name]:
            start = cll_models[params["C"]] if name in ("Risk", "JRB") else None
            jobs.append(delayed(_fit_one)(name, params, *data, common, start))
    rows += [record(row) for row, _ in parallel(jobs)]
    order = {name: i for i, name in enumerate(methods)}
    rows.sort(key=lambda r: (order[r["method"]], -r["setting"].get("C", 0), r["m"] or 0))

    print(f"{'method':16s} {'C':>6s} {'m':>4s} {'dev F1':>7s} {'test F1':>7s} {'fit s':>7s} "
          f"{'iter':>9s} {'s/iter':>7s}")
    for row in rows:
        m = "-" if row["m"] is None else f"{row['m']:g}"
        C = row["setting"].get("C", "-")
        it = f"{row['init_n_iter']}+{row['n_iter']}" if row["init_n_iter"] else str(row["n_iter"])
        print(f"{row['method']:16s} {C!s:>6s} {m:>4s} {100 * row['dev_f1']:7.2f} "
              f"{100 * row['test_f1']:7.2f} {row['fit_s']:7.1f} {it:>9s} {row['s_per_iter']:7.3f}")
    print("\nChosen on esp.testa (dev F1), reported on esp.testb:")
    for name in selected:
        mine = [r for r in rows if r["method"] == name]
        best = max(mine, key=lambda r: r["dev_f1"])
        m = "" if best["m"] is None else f", m={best['m']:g}"
        print(f"{name:16s} dev {100 * best['dev_f1']:6.2f}  test {100 * best['test_f1']:6.2f}  "
              f"fit {best['fit_s']:7.1f} s  {best['setting']}{m}", flush=True)


if __name__ == "__main__":
    main()
