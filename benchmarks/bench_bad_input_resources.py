"""Peak memory of feature_hashing and the time of a huge n_best on 60 CoNLL-2000 sentences.

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/bench_bad_input_resources.py 4194304

Argument: a ``feature_hashing`` value, ``none`` (DictVectorizer) or ``nbest``
(``predict_nbest(n_best=10**6)`` on a 3-token sentence). Run one argument
per process: the peak RSS is the process's, and includes loading the whole
CoNLL-2000 training file and the imports.
"""

import resource
import sys
import time
import warnings

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.datasets import load_conll2000
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures


def main(what):
    warnings.simplefilter("ignore")  # ConvergenceWarning of max_iter=20
    X, y = load_conll2000("train")
    X, y = X[:60], y[:60]
    dicts = TemplateFeatures(CONLL2000_TEMPLATE).fit_transform(X)
    t0 = time.perf_counter()
    if what == "nbest":
        crf = CRFTagger(max_iter=20).fit(dicts, y)
        t0 = time.perf_counter()
        (listed,) = crf.predict_nbest([dicts[0][:3]], n_best=10**6)
        print(f"n_best=10**6 on 3 tokens: {len(listed)} labellings, "
              f"{time.perf_counter() - t0:.3f} s")
    else:
        hashing = None if what == "none" else int(what)
        crf = CRFTagger(feature_hashing=hashing, max_iter=20).fit(dicts, y)
        crf.predict(dicts)
        print(f"feature_hashing={hashing}: coef_ {crf.coef_.shape}, "
              f"fit+predict {time.perf_counter() - t0:.2f} s")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main(sys.argv[1])
