"""LOPTagger's label experts with observation-dependent label bigrams on CoNLL-2000.

Fits ``LOPTagger(experts='label')`` (Smith & Osborne 2005: one expert per
chunk type besides the monolithic one, unregularised experts, uniform
weights) on the first ``--train-sentences`` CoNLL-2000 chunking training
sentences twice, in one process: with CRF++'s ``CONLL2000_TEMPLATE`` and
with the same template plus ``B01:%x[0,1]`` and ``B02:%x[-1,1]/%x[0,1]``
(observation-dependent label bigrams, which each label expert trains in its
own labels' entries). Prints test F1 (conlleval) of the pool and of its
monolithic expert, the experts, the pool's bigram blocks, and the wall and
CPU time of each fit (process time: the machine is shared).

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/bench_lop_label_bigrams.py \\
        [--train-sentences N] [--max-iter N]
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

from sklearn_crfloss import CRFTagger, LOPTagger  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.metrics import segment_f1_score  # noqa: E402

BIGRAM_LINES = "B01:%x[0,1]\nB02:%x[-1,1]/%x[0,1]\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-sentences", type=int, default=1000)
    parser.add_argument("--max-iter", type=int, default=100,
                        help="L-BFGS iterations of every expert")
    args = parser.parse_args()
    _common.print_run_header(["sklearn_crfloss", "numpy", "scipy"])
    X_train, y_train, X_test, y_test = _common.conll2000_run()
    X_train, y_train = X_train[:args.train_sentences], y_train[:args.train_sentences]
    rows = []
    for name, template in [("CONLL2000_TEMPLATE", CONLL2000_TEMPLATE),
                           ("+ B01, B02", CONLL2000_TEMPLATE + BIGRAM_LINES)]:
        features = TemplateFeatures(template).fit([])
        F_train, F_test = features.transform(X_train), features.transform(X_test)
        lop = LOPTagger(experts="label", estimator=CRFTagger(prior="none", n_jobs=1,
                                                             max_iter=args.max_iter))
        t0, c0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unregularised experts stop at max_iter
            lop.fit(F_train, y_train)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        blocks = lop.pool_.bigram_coef_
        rows.append([name, len(lop.experts_),
                     f"{100 * segment_f1_score(y_test, lop.experts_[0].predict(F_test)):.2f}",
                     f"{100 * segment_f1_score(y_test, lop.predict(F_test)):.2f}",
                     "none" if blocks is None else f"{blocks.shape[0]} x {blocks.shape[1]}^2",
                     f"{seconds:.1f}", f"{cpu:.1f}"])
        print(rows[-1], f"load {open('/proc/loadavg').read().split()[:3]}", flush=True)
    print(_common.format_table(
        ["template", "experts", "monolithic F1", "pool F1", "pool blocks", "fit wall s",
         "fit CPU s"], rows))


if __name__ == "__main__":
    main()
