"""The package's feature sets against the baselines, on the full data (first-order CRF).

- CoNLL-2000 chunking: ``ChunkFeatures()`` against
  ``TemplateFeatures(CONLL2000_TEMPLATE)``, ``CRFTagger()`` defaults, test
  segment F1.
- CoNLL-2002 Spanish NER: ``NERFeatures()`` (with ``tag_scheme`` None and
  ``'iobes'``) against the features of ``examples/conll2002_cost_losses.py``,
  ``CRFTagger()`` defaults otherwise, esp.testb segment F1.

Each row is tested against its baseline with
:func:`sklearn_crfloss.metrics.paired_bootstrap_test` (paired over
sentences). ``--dev`` scores on a development split instead (CoNLL-2000:
the last 1,000 training sentences held out; CoNLL-2002: esp.testa) and
takes feature-set parameters as JSON, for choosing the design. Run from a
checkout::

    SKLEARN_CRFLOSS_DATA=../shared/data nice -n 10 python benchmarks/feature_sets.py
"""

import argparse
import json
import os
import sys
import time


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "examples"))

from _common import parse_significance_run  # noqa: E402
from conll2002_cost_losses import featurize  # noqa: E402

from sklearn_crfloss import CRFTagger, metrics  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000, load_conll2002  # noqa: E402
from sklearn_crfloss.features import (CONLL2000_TEMPLATE, ChunkFeatures, NERFeatures,  # noqa: E402
                                      TemplateFeatures)


def _data(task, dev):
    """``(X_train, y_train, X_test, y_test)`` of ``task`` ('chunking', 'pos' or 'ner')."""
    if task in ("chunking", "pos"):
        X, y = load_conll2000("train", task=task)
        if dev:
            return X[:-1000], y[:-1000], X[-1000:], y[-1000:]
        return (X, y, *load_conll2000("test", task=task))
    return (*load_conll2002("esp", "train"), *load_conll2002("esp", "testa" if dev else "testb"))


def _fit(name, featurize_fn, data, n_jobs, score=metrics.segment_f1_score, **params):
    """Featurize, fit ``CRFTagger(n_jobs=n_jobs, **params)``, predict the test set, score it.

    Returns a dict: ``name``, ``f1`` (``score`` of the test predictions), ``n_iter``,
    ``fit_s`` (wall seconds, features included), ``cpu_s`` and ``pred``.
    """
    X_tr, y_tr, X_te, y_te = data
    t0, c0 = time.perf_counter(), time.process_time()
    F_tr, F_te = featurize_fn(X_tr), featurize_fn(X_te)
    crf = CRFTagger(n_jobs=n_jobs, **params).fit(F_tr, y_tr)
    pred = crf.predict(F_te)
    row = dict(name=name, f1=score(y_te, pred), n_iter=int(crf.n_iter_),
               fit_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0, pred=pred)
    print(f"  {name}: {score.__name__} {100 * row['f1']:.2f}, {row['n_iter']} iterations, "
          f"{row['fit_s']:.0f} s wall / {row['cpu_s']:.0f} s CPU, "
          f"load {open('/proc/loadavg').read().split()[0]}", flush=True)
    return row


def _table(rows, baseline, y_true, args):
    print(f"\n| features | F1 | diff. | 95% CI | bootstrap p | iterations | s |\n|---|---|---|---|---|---|---|")
    for r in rows:
        boot = metrics.paired_bootstrap_test(y_true, r["pred"], baseline["pred"],
                                             n_resamples=args.n_resamples,
                                             random_state=args.random_state)
        lo, hi = boot.confidence_interval
        print(f"| {r['name']} | {100 * r['f1']:.2f} | {100 * boot.difference:+.2f} "
              f"| [{100 * lo:+.2f}, {100 * hi:+.2f}] | {boot.pvalue:.3g} | {r['n_iter']} "
              f"| {r['fit_s']:.0f} |", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=["chunking", "ner"], choices=["chunking", "ner"])
    p.add_argument("--dev", action="store_true", help="score on the development split")
    p.add_argument("--params", default="{}", help="JSON parameters of ChunkFeatures/NERFeatures")
    p.add_argument("--n-jobs", type=int, default=1)
    args = parse_significance_run(p, argv)
    params = json.loads(args.params)
    if "chunking" in args.tasks:
        data = _data("chunking", args.dev)
        base = _fit("TemplateFeatures(CONLL2000_TEMPLATE)",
                    TemplateFeatures(CONLL2000_TEMPLATE).fit([]).transform, data, args.n_jobs)
        new = _fit(f"ChunkFeatures(**{params})", ChunkFeatures(**params).fit([]).transform, data,
                   args.n_jobs)
        _table([base, new], base, data[3], args)
    if "ner" in args.tasks:
        data = _data("ner", args.dev)
        base = _fit("examples/conll2002_cost_losses.py featurize", featurize, data, args.n_jobs)
        feats = NERFeatures(**params).fit([]).transform
        rows = [base] + [_fit(f"NERFeatures(**{params}), tag_scheme={s!r}", feats, data,
                              args.n_jobs, tag_scheme=s) for s in (None, "iobes")]
        _table(rows, base, data[3], args)


if __name__ == "__main__":
    main()
