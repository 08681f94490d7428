"""CoNLL-2000 streamed through ``CRFTagger.partial_fit``: test F1 and peak memory per pass.

The training sentences (token tuples, 10 MB) are read once; the stream is
their chunks of ``--chunk`` sentences, and each chunk's feature dicts (CRF++
template, :class:`~sklearn_crfloss.features.TemplateFeatures`) are made when
the chunk is trained on and dropped after it, so no more than one chunk's
dicts exist at a time. ``CRFTagger(feature_hashing=2**20)`` (SGD, averaged,
``C=1``) gets one ``partial_fit`` per chunk, ``--passes`` times over the
training set. After each pass: test F1 (conlleval), seconds, and the peak
resident memory over the start of the stream (VmHWM reset at the start).

Usage::

    SKLEARN_CRFLOSS_DATA=/path/to/data python benchmarks/bench_partial_fit.py
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402
from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.metrics import segment_f1_score  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--hashing", type=int, default=2**20)
    parser.add_argument("--C", type=float, default=1.0)
    args = parser.parse_args(argv)
    X_train, y_train, X_test, y_test = _common.conll2000_run()
    classes = sorted({label for labels in y_train for label in labels})
    features = TemplateFeatures(CONLL2000_TEMPLATE).fit(X_train[:1])
    crf = CRFTagger(feature_hashing=args.hashing, C=args.C, random_state=0, n_jobs=1)
    rows = []
    with _common.PeakMemory(allow_tracemalloc=False) as mem:
        t0 = time.perf_counter()
        for p in range(args.passes):
            for k in range(0, len(X_train), args.chunk):
                chunk = features.transform(X_train[k:k + args.chunk])
                crf.partial_fit(chunk, y_train[k:k + args.chunk], classes=classes)
                del chunk
            seconds = time.perf_counter() - t0
            peak = _common._proc_status_kb("VmHWM") / 1024.0 - mem.rss_before_mb
            f1 = 100 * segment_f1_score(y_test, crf.predict(features.transform(X_test)))
            rows.append([p + 1, f"{f1:.2f}", f"{seconds:.1f}", f"{peak:.0f}"])
            print(rows[-1], flush=True)
    print(_common.format_table(["pass", "test F1", "s (cumulative)", "peak over start MB"],
                               rows))
    print(f"peak after {args.passes} passes / after 1 pass: "
          f"{float(rows[-1][3]) / float(rows[0][3]):.2f}")
    print("load average at the end:", os.getloadavg())


if __name__ == "__main__":
    main()
