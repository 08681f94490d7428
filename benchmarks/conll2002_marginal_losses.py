"""CoNLL-2002 Spanish NER with the marginal-based losses (Tsuboi & Kashima, Table 1 layout).

Trains :class:`sklearn_crfloss.CRFTagger` with ``loss='pointwise'``
(``point``), ``loss=MixedLoss(markov_order=k)`` (``k=1..5``) and
``loss='cll'`` (``seq``) on ``esp.train``, evaluates conlleval segment
precision / recall / F1 on ``esp.testb`` (and on ``esp.testa``, the
development set the paper chooses the prior on), Viterbi decoding.
The nonconvex losses start from the CLL fit (``init='cll'``); the CLL fit
with the same ``C`` is computed once and reused through ``warm_start``
(equivalent to ``init='cll'``, which would refit it for every loss).

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/conll2002_marginal_losses.py \\
        [--losses point k1 k3 seq] [--C 1.0 ...] [--max-iter N] [--train-sentences N]

With ``--learning-curve 100 200 ...`` it runs the layout of Tsuboi &
Kashima's Table 2 instead: for each size, the first N training sentences,
no prior (``prior='none'``), F1 averaged over testa and testb.

Feature template (in the spirit of the S3 features of Altun et al. 2003,
used by Tsuboi & Kashima, Section 4.2): for the tokens at offsets -1, 0 and
+1, the lower-cased word and the spelling features ``init_cap``,
``all_caps``, ``has_digit``, ``all_digits``, ``has_hyphen``, ``punct`` (no
letter or digit), ``ends_period``, the 3-letter suffix and the 3-letter
prefix (lower-cased); plus a bias attribute; features outside the sentence
are omitted. The labels are the 9 IOB2 labels (current label only: label
transitions are the CRF's transition matrix).
"""

import argparse
import time
import warnings

from sklearn.exceptions import ConvergenceWarning

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2002
from sklearn_crfloss.losses import MixedLoss
from sklearn_crfloss.metrics import segment_f1_score, segment_precision_score, segment_recall_score


def _word_features(word):
    lower = word.lower()
    return {
        "w": lower,
        "init_cap": word[:1].isupper(),
        "all_caps": word.isupper(),
        "has_digit": any(c.isdigit() for c in word),
        "all_digits": word.isdigit(),
        "has_hyphen": "-" in word,
        "punct": not any(c.isalnum() for c in word),
        "ends_period": word.endswith("."),
        "suf3": lower[-3:],
        "pre3": lower[:3],
    }


def s3_features(sentence):
    """Feature dicts of one sentence of (word, POS) tuples (window -1..+1)."""
    base = [_word_features(tok[0]) for tok in sentence]
    out = []
    for t in range(len(sentence)):
        feats = {"bias": 1.0}
        for off in (-1, 0, 1):
            if 0 <= t + off < len(sentence):
                for k, v in base[t + off].items():
                    if v is True:
                        feats[f"{off}:{k}"] = 1.0
                    elif isinstance(v, str):
                        feats[f"{off}:{k}"] = v
        out.append(feats)
    return out


LOSSES = {"point": 0, "k1": 1, "k2": 2, "k3": 3, "k4": 4, "k5": 5}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--losses", nargs="+", default=["point", "k3", "seq"])
    parser.add_argument("--C", type=float, nargs="+", default=[1.0])
    parser.add_argument("--max-iter", type=int, default=1000)
    parser.add_argument("--train-sentences", type=int, default=None)
    parser.add_argument("--learning-curve", type=int, nargs="+", default=None)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)

    X_train, y_train = load_conll2002("esp", "train")
    if args.train_sentences:
        X_train, y_train = X_train[:args.train_sentences], y_train[:args.train_sentences]
    X_a, y_a = load_conll2002("esp", "testa")
    X_b, y_b = load_conll2002("esp", "testb")
    F_train = [s3_features(s) for s in X_train]
    F_a = [s3_features(s) for s in X_a]
    F_b = [s3_features(s) for s in X_b]
    print(f"train {len(F_train)} sentences, testa {len(F_a)}, testb {len(F_b)}", flush=True)
    if args.learning_curve:
        return learning_curve(args, F_train, y_train, F_a, y_a, F_b, y_b)
    print("| loss | C | testa F1 | testb P | testb R | testb F1 | iterations | fit s |")
    print("|---|---|---|---|---|---|---|---|")
    for C in args.C:
        t0 = time.perf_counter()
        cll = CRFTagger(C=C, max_iter=args.max_iter, n_jobs=1).fit(F_train, y_train)
        t_cll = time.perf_counter() - t0
        for name in args.losses:
            if name == "seq":
                crf, secs, iters = cll, t_cll, f"{cll.n_iter_}"
            else:
                crf = CRFTagger(C=C, max_iter=args.max_iter, n_jobs=1, warm_start=True,
                                loss=MixedLoss(markov_order=LOSSES[name]))
                crf.__dict__.update({k: v for k, v in cll.__dict__.items() if k.endswith("_")})
                t0 = time.perf_counter()
                crf.fit(F_train, y_train)
                secs = t_cll + time.perf_counter() - t0
                iters = f"{cll.n_iter_} + {crf.n_iter_}"
            pa = crf.predict(F_a)
            pb = crf.predict(F_b)
            print(f"| {name} | {C:g} | {100 * segment_f1_score(y_a, pa):.2f} "
                  f"| {100 * segment_precision_score(y_b, pb):.2f} "
                  f"| {100 * segment_recall_score(y_b, pb):.2f} "
                  f"| {100 * segment_f1_score(y_b, pb):.2f} | {iters} | {secs:.0f} |",
                  flush=True)


def _fit_all(losses, F, y, max_iter, **params):
    """The CLL fit and every requested loss warm-started from it: {name: tagger}."""
    cll = CRFTagger(max_iter=max_iter, n_jobs=1, **params).fit(F, y)
    out = {}
    for name in losses:
        if name == "seq":
            out[name] = cll
            continue
        crf = CRFTagger(max_iter=max_iter, n_jobs=1, warm_start=True,
                        loss=MixedLoss(markov_order=LOSSES[name]), **params)
        crf.__dict__.update({k: v for k, v in cll.__dict__.items() if k.endswith("_")})
        out[name] = crf.fit(F, y)
    return out


def learning_curve(args, F_train, y_train, F_a, y_a, F_b, y_b):
    """Tsuboi & Kashima Table 2 layout: average F1 (testa, testb), no prior."""
    print("| sentences | " + " | ".join(args.losses) + " |")
    print("|---" * (len(args.losses) + 1) + "|")
    for n in args.learning_curve:
        models = _fit_all(args.losses, F_train[:n], y_train[:n], args.max_iter, prior="none")
        cells = []
        for name in args.losses:
            crf = models[name]
            f1 = 0.5 * (segment_f1_score(y_a, crf.predict(F_a))
                        + segment_f1_score(y_b, crf.predict(F_b)))
            cells.append(f"{100 * f1:.2f}")
        print(f"| {n} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
