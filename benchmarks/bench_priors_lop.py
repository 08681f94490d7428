"""Priors and opinion pools (Smith & Osborne 2005) on CoNLL-2002 Spanish NER and CoNLL-2000 POS.

Usage (from the checkout root, one experiment per call, n_jobs=1)::

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/bench_priors_lop.py ner-prior --prior l2 --grid 1 3 10 30
    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/bench_priors_lop.py ner-prior --prior l1 --grid 1 3 10 30
    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/bench_priors_lop.py ner-lop --experts simple
    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/bench_priors_lop.py pos-prior --prior l2 --grid 1 10

``ner-prior``: for each C in the grid, train on esp.train, score segment F1
on esp.testa; the C with the best testa F1 is reported with its esp.testb
F1 (same model, no refit), the fraction of exactly-zero parameters
(``sparsity_``), the number of C values tried and the total training time.
``ner-lop``: the unregularised monolithic CRF (the LOP's first expert) and
the LOP with trained weights (``weights='fit'``) and with uniform fixed
weights, on testa and testb. ``lop-pipeline``: the opinion pool as a user builds it,
``make_pipeline(TemplateFeatures(), LOPTagger(experts=..., weights='cv'))``
on the (word, POS) tokens of CoNLL-2002 (CRF++'s CoNLL-2000 template, every
LOPTagger default but the weights), compared with the unregularised
monolithic CRF (its first expert) for three ways of setting the weights:
uniform, held-out folds (``'cv'``, 3 folds, experts refitted per fold) and
the training likelihood (``'fit'``, computed on the same experts); paired
bootstrap and McNemar tests on esp.testb against the monolithic CRF.
``--weights uniform`` fits the default pool only (no folds).
``pos-*``: the same on CoNLL-2000 with the POS
tags collapsed to 5 classes (section 5.2), features from words only, the
last 1,000 training sentences as the development split; accuracy.
"""

import argparse
import json
import sys
import time

import numpy as np

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000, load_conll2002
from sklearn_crfloss.features import TemplateFeatures
from sklearn_crfloss.lop import LOPTagger, template_positions
from sklearn_crfloss.metrics import segment_f1_score, token_accuracy
from sklearn_crfloss.priors import GaussianPrior, HyperbolicPrior, LaplacianPrior


def _template(lower, shape, suffix, pos=None):
    """A CRF++ template over the columns given: the lower-cased word in a window
    of 5 and its bigrams around the token, the word (column 0), the POS tags
    in a window of 3 (if any), the shape in a window of 3 and the suffix."""
    words = [f"%x[-2,{lower}]", f"%x[-1,{lower}]", "%x[0,0]", f"%x[1,{lower}]",
             f"%x[2,{lower}]", f"%x[0,{lower}]", f"%x[-1,{lower}]/%x[0,{lower}]",
             f"%x[0,{lower}]/%x[1,{lower}]"]
    rows = [f"U0{i}:{x}" for i, x in enumerate(words)]
    if pos is not None:
        rows += [f"U1{i}:%x[{o},{pos}]" for i, o in enumerate((-1, 0, 1))]
    rows += [f"U2{i}:%x[{o},{shape}]" for i, o in enumerate((-1, 0, 1))]
    return "\n".join(rows + [f"U23:%x[0,{suffix}]"]) + "\n"


# Columns: 0 word, 1 POS, 2 lower-cased word, 3 word shape, 4 3-suffix.
NER_TEMPLATE = _template(lower=2, shape=3, suffix=4, pos=1)

# Words only (section 5.2): columns 0 word, 1 lower-cased, 2 shape, 3 3-suffix.
POS_TEMPLATE = _template(lower=1, shape=2, suffix=3)


def shape(w):
    s = "".join("X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c
                for c in w)
    out = []
    for c in s:  # collapse runs
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


def ner_data():
    data = {}
    for sub in ("train", "testa", "testb"):
        X, y = load_conll2002("esp", sub)
        X = [[(w, p, w.lower(), shape(w), w[-3:].lower()) for w, p in s] for s in X]
        data[sub] = (X, y)
    feats = TemplateFeatures(NER_TEMPLATE).fit([])
    return {k: (feats.transform(X), y) for k, (X, y) in data.items()}, feats


def collapse(tag):
    if tag.startswith("NN"):
        return "N"
    if tag.startswith("VB"):
        return "V"
    if tag.startswith("JJ"):
        return "J"
    if tag.startswith("RB"):
        return "R"
    return "O"


def pos_data():
    Xtr, _ = load_conll2000("train")
    Xte, _ = load_conll2000("test")
    feats = TemplateFeatures(POS_TEMPLATE).fit([])

    def prep(X):
        toks = [[(w, w.lower(), shape(w), w[-3:].lower()) for w, p in s] for s in X]
        return feats.transform(toks), [[collapse(p) for w, p in s] for s in X]

    Xa, ya = prep(Xtr)
    Xb, yb = prep(Xte)
    return {"train": (Xa[:-1000], ya[:-1000]), "dev": (Xa[-1000:], ya[-1000:]),
            "test": (Xb, yb)}, feats


def make_prior(name, beta):
    return {"l2": GaussianPrior(), "l1": LaplacianPrior(), "hyperbolic": HyperbolicPrior(beta),
            "l2-fd": GaussianPrior(feature_dependent=True),
            "l1-fd": LaplacianPrior(feature_dependent=True),
            "hyperbolic-fd": HyperbolicPrior(beta, feature_dependent=True)}[name]


def run_prior(args, data, metric, dev, test):
    rows = []
    total = 0.0
    for C in args.grid:
        if args.prior == "none":
            crf = CRFTagger(prior="none", n_jobs=1)
        else:
            prior = make_prior(args.prior, args.beta)
            if args.mean:
                prior = GaussianPrior(mean=args.mean, feature_dependent=args.prior == "l2-fd")
            crf = CRFTagger(prior=prior, C=C, n_jobs=1, max_iter=args.max_iter)
        t0 = time.perf_counter()
        crf.fit(*data["train"])
        fit_s = time.perf_counter() - t0
        total += fit_s
        s_dev = metric(data[dev][1], crf.predict(data[dev][0]))
        s_test = metric(data[test][1], crf.predict(data[test][0]))
        row = dict(C=C, dev=round(100 * s_dev, 2), test=round(100 * s_test, 2),
                   sparsity=round(crf.sparsity_, 4), n_params=crf.n_parameters_,
                   n_iter=crf.n_iter_, fit_s=round(fit_s, 1))
        print(json.dumps(row), flush=True)
        rows.append(row)
        if args.prior == "none":
            break
    best = max(rows, key=lambda r: r["dev"])
    print("BEST", json.dumps(dict(prior=args.prior, mean=args.mean, beta=args.beta, **best,
                                  n_tried=len(rows), total_fit_s=round(total, 1))), flush=True)


def run_lop(args, data, feats, metric, dev, test):
    lop = LOPTagger(experts=args.experts, positions=template_positions(feats), weights="fit",
                    estimator=CRFTagger(prior="none", n_jobs=1), random_state=0, n_jobs=1)
    t0 = time.perf_counter()
    lop.fit(*data["train"])
    fit_s = time.perf_counter() - t0
    n = len(lop.experts_)
    mono = lop.with_weights(np.eye(n)[0])
    for name, model in (("unreg. monolithic", mono), (f"LOP {args.experts} (fit w)", lop),
                        (f"LOP {args.experts} (uniform w)", lop.with_weights(np.ones(n)))):
        s_dev = metric(data[dev][1], model.predict(data[dev][0]))
        s_test = metric(data[test][1], model.predict(data[test][0]))
        print(json.dumps(dict(model=name, dev=round(100 * s_dev, 2), test=round(100 * s_test, 2),
                              weights=np.round(model.weights_, 4).tolist(),
                              expert_sizes=[len(c) for c in lop.expert_columns_],
                              total_fit_s=round(fit_s, 1))), flush=True)


def run_lop_pipeline(args):
    """Pipeline([TemplateFeatures(), LOPTagger(...)]) vs the unregularised CRF on CoNLL-2002."""
    from sklearn.pipeline import make_pipeline

    from sklearn_crfloss.lop import _fit_weights
    from sklearn_crfloss.metrics import mcnemar_test, paired_bootstrap_test

    data = {sub: load_conll2002("esp", sub) for sub in ("train", "testa", "testb")}
    X, y = data["train"]
    if args.train_sentences:
        X, y = X[:args.train_sentences], y[:args.train_sentences]
    pipe = make_pipeline(TemplateFeatures(), LOPTagger(experts=args.experts, weights=args.weights))
    t0 = time.perf_counter()
    pipe.fit(X, y)
    fit_s = time.perf_counter() - t0
    feats, lop = pipe
    n = len(lop.experts_)
    models = {"unreg. monolithic": lop.with_weights(np.eye(n)[0]),
              "uniform": lop.with_weights(np.ones(n))}
    if args.weights == "cv":
        models["cv (3 folds)"] = lop
    # weights on the training likelihood, same experts
    F = feats.transform(X)
    pool = lop.pool_
    unary, offsets = pool._potentials(F)
    y_enc = np.searchsorted(pool.classes_, np.concatenate(y))
    parts = [(e._potentials(F)[0], e.transition_, e.start_, e.end_) for e in lop.experts_]
    w_fit, _ = _fit_weights([(parts, y_enc, offsets)], lop.max_iter, lop.tol)
    models["fit (training likelihood)"] = lop.with_weights(w_fit)
    base = None
    for name, model in models.items():
        pred = {sub: [[str(t) for t in p] for p in model.predict(feats.transform(data[sub][0]))]
                for sub in ("testa", "testb")}
        row = dict(model=name, experts=args.experts, weights=np.round(model.weights_, 4).tolist(),
                   testa=round(100 * segment_f1_score(data["testa"][1], pred["testa"]), 2),
                   testb=round(100 * segment_f1_score(data["testb"][1], pred["testb"]), 2),
                   train_sentences=len(X), expert_sizes=[len(c) for c in lop.expert_columns_],
                   total_fit_s=round(fit_s, 1))
        if base is None:
            base = pred["testb"]
        else:
            y_b = data["testb"][1]
            boot = paired_bootstrap_test(y_b, pred["testb"], base, random_state=0)
            row.update(diff_testb=round(100 * boot.difference, 2),
                       ci=[round(100 * v, 2) for v in boot.confidence_interval],
                       p_bootstrap=round(boot.pvalue, 4),
                       p_mcnemar_sent=float("%.3g" % mcnemar_test(y_b, pred["testb"], base).pvalue),
                       p_mcnemar_tok=float("%.3g" % mcnemar_test(y_b, pred["testb"], base,
                                                                 unit="token").pvalue))
        print(json.dumps(row), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=["ner-prior", "ner-lop", "pos-prior", "pos-lop",
                                         "lop-pipeline"])
    parser.add_argument("--prior", default="l2",
                        choices=["none", "l2", "l1", "hyperbolic", "l2-fd", "l1-fd",
                                 "hyperbolic-fd"])
    parser.add_argument("--grid", type=float, nargs="+", default=[1.0])
    parser.add_argument("--beta", type=float, default=1.0)
    parser.add_argument("--mean", type=float, default=0.0)
    parser.add_argument("--experts", default="simple")
    parser.add_argument("--max-iter", type=int, default=None,
                        help="max_iter of the prior fits (default: CRFTagger's, 1000)")
    parser.add_argument("--train-sentences", type=int, default=None,
                        help="train on this prefix of the training set only")
    parser.add_argument("--weights", choices=["cv", "uniform"], default="cv",
                        help="lop-pipeline: the pool's weights ('cv' also reports uniform)")
    args = parser.parse_args(argv)
    print("command:", " ".join(["python"] + sys.argv), flush=True)
    if args.task == "lop-pipeline":
        return run_lop_pipeline(args)
    if args.task.startswith("ner"):
        data, feats = ner_data()
        metric, dev, test = segment_f1_score, "testa", "testb"
    else:
        data, feats = pos_data()
        metric, dev, test = token_accuracy, "dev", "test"
    if args.train_sentences:
        Xtr, ytr = data["train"]
        data["train"] = (Xtr[:args.train_sentences], ytr[:args.train_sentences])
    if args.task.endswith("prior"):
        run_prior(args, data, metric, dev, test)
    else:
        run_lop(args, data, feats, metric, dev, test)


if __name__ == "__main__":
    main()
