"""The accuracy page's tables: features, first vs second order, the loss, on three tasks.

For each task, rows (``--rows``), each tested against its baseline row
with :func:`sklearn_crfloss.metrics.paired_bootstrap_test` (paired over
sentences; McNemar's tests too, :func:`_common.paired_tests_line`):

- ``baseline``: the baseline features, ``CRFTagger()`` defaults (CLL, L2
  with ``C=1``, first order): CoNLL-2000 chunking
  ``TemplateFeatures(CONLL2000_TEMPLATE)``; CoNLL-2000 POS the ``featurize``
  of ``examples/conll2000_pos.py``; CoNLL-2002 Spanish NER the ``featurize``
  of ``examples/conll2002_cost_losses.py`` (the sklearn-crfsuite tutorial's
  kind);
- ``features``: the package's set (``ChunkFeatures()``, ``POSFeatures()``,
  ``NERFeatures()``), the same model; against ``baseline``;
- ``order2``: the package's set, ``CRFTagger(order=2)``; against ``features``;
- ``softmax_margin``: the package's set, ``loss='softmax_margin'``; against
  ``features``;
- ``softmax_margin_order2``: both; against ``softmax_margin``.

Scores: test segment F1 (chunking; NER on esp.testb), token accuracy
(POS). The models are those of ``benchmarks/second_order.py`` (its
``ROWS``), the data and the fit those of ``benchmarks/feature_sets.py``.
``--cache DIR`` keeps each row's predictions in ``DIR`` (a row already
there is not fitted again), so rows can be run in separate processes and
tested against a baseline fitted by another. ``--quick``: the first 500
training and 300 test sentences, 20 L-BFGS iterations, 999 resamples (a
check that the script runs, not a result). Run from a checkout::

    SKLEARN_CRFLOSS_DATA=../shared/data nice -n 10 python benchmarks/accuracy.py \\
        --tasks chunking pos ner --cache /tmp/accuracy
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir, "examples"))

import conll2000_pos  # noqa: E402
import conll2002_cost_losses  # noqa: E402
from _common import cached, paired_tests_line, parse_significance_run  # noqa: E402
from feature_sets import _data, _fit  # noqa: E402
from second_order import ROWS as MODELS  # noqa: E402

from sklearn_crfloss import metrics  # noqa: E402
from sklearn_crfloss.features import (CONLL2000_TEMPLATE, ChunkFeatures, NERFeatures,  # noqa: E402
                                      POSFeatures, TemplateFeatures)

#: Per task: (baseline features name, its transform), (package set name, its transform), score.
TASKS = {
    "chunking": (("TemplateFeatures(CONLL2000_TEMPLATE)",
                  lambda X: TemplateFeatures(CONLL2000_TEMPLATE).fit([]).transform(X)),
                 ("ChunkFeatures()", lambda X: ChunkFeatures().fit([]).transform(X)),
                 metrics.segment_f1_score),
    "pos": (("examples/conll2000_pos.py featurize", conll2000_pos.featurize),
            ("POSFeatures()", lambda X: POSFeatures().fit([]).transform(X)),
            metrics.token_accuracy),
    "ner": (("examples/conll2002_cost_losses.py featurize", conll2002_cost_losses.featurize),
            ("NERFeatures()", lambda X: NERFeatures().fit([]).transform(X)),
            metrics.segment_f1_score),
}

#: Row: (package features?, model of second_order.ROWS, the row it is tested against).
ROWS = {
    "baseline": (False, "order=1", None),
    "features": (True, "order=1", "baseline"),
    "order2": (True, "order=2", "features"),
    "softmax_margin": (True, "order=1, loss='softmax_margin'", "features"),
    "softmax_margin_order2": (True, "order=2, loss='softmax_margin'", "softmax_margin"),
}


def _cut(data, args):
    """The training set cut to ``--train-sentences``, the test set to ``--test-sentences``."""
    X_tr, y_tr, X_te, y_te = data
    n, m = args.train_sentences or len(X_tr), args.test_sentences or len(X_te)
    return X_tr[:n], y_tr[:n], X_te[:m], y_te[:m]


def _cache_path(task, name, args):
    """The pickle of row ``name`` of ``task`` in ``--cache`` (the subset in its name)."""
    suffix = (f"_n{args.train_sentences}_m{args.test_sentences}_i{args.max_iter}"
              if args.train_sentences or args.test_sentences or args.max_iter else "")
    return os.path.join(args.cache, f"{task}_{name}{suffix}.pkl")


def _row(task, name, data, args):
    """Fit row ``name`` of ``task`` (or load it from ``--cache``); its result dict."""
    (base_name, base_fn), (set_name, set_fn), score = TASKS[task]
    package, model, _ = ROWS[name]
    params = dict(MODELS[model])
    if args.max_iter is not None:
        params["max_iter"] = args.max_iter
    label = f"{task} {name}: {set_name if package else base_name}, {model}"

    def compute():
        return _fit(label, set_fn if package else base_fn, data, args.n_jobs, score=score,
                    **params)

    path = args.cache and _cache_path(task, name, args)
    if not (path and os.path.exists(path)):
        return cached(path, compute) if path else compute()
    row = cached(path, compute)
    print(f"  {label}: {100 * row['f1']:.2f} ({row['n_iter']} iterations, "
          f"{row['fit_s']:.0f} s wall / {row.get('cpu_s', float('nan')):.0f} s CPU)", flush=True)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    p.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--cache", default=None, help="folder for each row's predictions")
    p.add_argument("--quick", action="store_true", help="a small subset: a check, not a result")
    p.add_argument("--test-sentences", type=int, default=None, help="test prefix")
    p.add_argument("--max-iter", type=int, default=None, help="L-BFGS iterations (timing)")
    args = parse_significance_run(p, argv)
    if args.quick:
        args.train_sentences, args.test_sentences = 500, 300
        args.max_iter, args.n_resamples = 20, 999
    if args.cache:
        os.makedirs(args.cache, exist_ok=True)
    for task in args.tasks:
        data = _cut(_data(task, dev=False), args)
        print(f"{task}: {len(data[0])} training, {len(data[2])} test sentences", flush=True)
        results = {name: _row(task, name, data, args) for name in args.rows}
        score = TASKS[task][2]
        for name, row in list(results.items()):
            base = ROWS[name][2]
            if base is None:
                continue
            if base not in results:
                if not (args.cache and os.path.exists(_cache_path(task, base, args))):
                    print(f"{task} {name} vs {base}: {base} not run", flush=True)
                    continue
                results[base] = _row(task, base, data, args)
            print(f"{task} {name} vs {base}: " + paired_tests_line(
                data[3], row["pred"], results[base]["pred"], args.n_resamples,
                args.random_state, metric=score), flush=True)


if __name__ == "__main__":
    main()
