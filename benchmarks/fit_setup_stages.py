"""Where a CoNLL-2000 fit spends its time outside the objective evaluations, stage by stage.

Fits ``CRFTagger(max_iter=..., n_jobs=...)`` on the CoNLL-2000 training
dicts (``TemplateFeatures(CONLL2000_TEMPLATE)``: 8,936 sentences, 211,727
tokens, 338,500 attributes) ``--repeats`` times in one process and prints,
for each stage, the smallest wall time over the repeats: the whole fit, the
objective evaluations (``CRFObjective.value_and_grad``: their number and
seconds), the fit outside them, and the set-up and finishing steps (each
timed by a wrapper around the function of that name where the code has one:
the script runs on older trees too, and a step a tree does not have is not
printed). The wrappers cost a few microseconds per call; they are put only
on functions called a few times per fit.

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/fit_setup_stages.py \\
        [--repeats 3] [--n-jobs 2] [--max-iter 1 | --default-fit]

``--default-fit`` fits with the estimator's default ``max_iter`` (once per
repeat). The machine may be shared: the 1-minute load average is printed
with each repeat, and the minima are the figures to compare.
"""

import argparse
import collections
import functools
import os
import time
import warnings

import sklearn_crfloss._data._vectorize as vectorize
import sklearn_crfloss._model._objective as objective
import sklearn_crfloss._model._parameters as parameters
import sklearn_crfloss._tagger as tagger
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures

TIMES = collections.defaultdict(float)
CALLS = collections.Counter()

# (module or class, function names): the set-up and finishing steps of a fit.
STEPS = [
    (tagger, ["check_sequences", "encode_labels", "make_layout", "observed_pairs",
              "make_objective", "release_free_heap"]),
    (vectorize, ["vocabulary_names", "VocabularyTable", "vocabulary_rows", "vocabulary_fit",
                 "_pack", "pack_names", "column_counts"]),
    (tagger.SequenceVectorizer, ["fit_transform"]),
    (tagger.CRFTagger, ["_snapshot"]),
    (parameters.ParameterLayout, ["unpack"]),
]
EVALUATIONS = "objective evaluations"


def _wrap(owner, name, label):
    function = getattr(owner, name)

    @functools.wraps(function)
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            TIMES[label] += time.perf_counter() - start
            CALLS[label] += 1

    setattr(owner, name, timed)


def _wrap_property(owner, name):
    prop = getattr(owner, name)

    def timed(self):
        start = time.perf_counter()
        try:
            return prop.fget(self)
        finally:
            TIMES[f"SequenceVectorizer.{name} (read)"] += time.perf_counter() - start

    setattr(owner, name, property(timed, prop.fset))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--max-iter", type=int, default=1)
    p.add_argument("--default-fit", action="store_true",
                   help="the estimator's default max_iter")
    args = p.parse_args()
    X, y = load_conll2000("train")
    F = TemplateFeatures(CONLL2000_TEMPLATE).fit_transform(X)
    for owner, names in STEPS:
        for name in names:
            if name in vars(owner):
                _wrap(owner, name, name)
    for name in ("attributes", "vectorizer"):
        if isinstance(vars(tagger.SequenceVectorizer).get(name), property):
            _wrap_property(tagger.SequenceVectorizer, name)
    _wrap(objective.CRFObjective, "value_and_grad", EVALUATIONS)
    warnings.simplefilter("ignore")
    best, calls = {}, None
    for r in range(args.repeats):
        TIMES.clear()
        CALLS.clear()
        params = {"n_jobs": args.n_jobs}
        if not args.default_fit:
            params["max_iter"] = args.max_iter
        model = CRFTagger(**params)
        load = os.getloadavg()[0]
        start = time.perf_counter()
        model.fit(F, y)
        total = time.perf_counter() - start
        TIMES["fit"] = total
        TIMES["fit outside the evaluations"] = total - TIMES[EVALUATIONS]
        print(f"repeat {r}: fit {total:.3f} s, {CALLS[EVALUATIONS]} evaluations "
              f"{TIMES[EVALUATIONS]:.3f} s, n_iter_ {model.n_iter_}, load {load:.2f}",
              flush=True)
        best = {k: min(best.get(k, float("inf")), v) for k, v in TIMES.items()}
        calls = dict(CALLS)
    print(f"minimum over {args.repeats} repeats (n_jobs={args.n_jobs}, "
          f"max_iter={'default' if args.default_fit else args.max_iter}):")
    for name, seconds in sorted(best.items(), key=lambda kv: -kv[1]):
        print(f"  {name:42s} {seconds:7.3f} s" + (f"  ({calls[name]} calls)"
                                                  if calls.get(name, 1) > 1 else ""))


if __name__ == "__main__":
    main()
