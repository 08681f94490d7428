"""Fitted-model digests and CLL seconds per iteration on CoNLL-2000.

A reorganisation of the package must not change any result: this script
fits four models on the full CoNLL-2000 training set with the CRF++
template and prints a digest of each fitted ``coef_`` (and of all the fitted
arrays), so that two checkouts can be compared bitwise, plus the CLL
seconds per L-BFGS iteration at ``n_jobs=1``:

- CLL with L-BFGS (the defaults, ``C=1``);
- CLL with ``solver='sgd'`` (10 averaged epochs, ``random_state=0``);
- MCE-F with its default schedule (``random_state=0``);
- a logarithmic opinion pool (``LOPTagger()``: the monolithic and the
  reduced expert, uniform weights; experts capped at ``--lop-max-iter``).

Run from a checkout whose package is importable, data in
``SKLEARN_CRFLOSS_DATA``::

    python benchmarks/layout_digests.py [--only cll,sgd,mcef,lop] [--timing-iter 30]
"""

import argparse
import hashlib
import time

import numpy as np

from _common import conll2000_run, print_run_header
from sklearn_crfloss import CRFTagger
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
from sklearn_crfloss.lop import LOPTagger
from sklearn_crfloss.metrics import segment_f1_score


def digest(array):
    """First 16 hex digits of the SHA-256 of an array's bytes."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def all_arrays_digest(est):
    """Digest of every fitted ndarray attribute (sorted by name)."""
    h = hashlib.sha256()
    for name in sorted(vars(est)):
        value = getattr(est, name)
        if name.endswith("_") and isinstance(value, np.ndarray) and value.dtype != object:
            h.update(name.encode())
            h.update(np.ascontiguousarray(value).tobytes())
    return h.hexdigest()[:16]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="cll,sgd,mcef,lop",
                        help="the digest fits to run, comma-separated ('' for none)")
    parser.add_argument("--n-jobs", type=int, default=2, help="threads of the digest fits")
    parser.add_argument("--timing-iter", type=int, default=30,
                        help="L-BFGS iterations of the n_jobs=1 timing fit (0: skip)")
    parser.add_argument("--timing-repeats", type=int, default=2)
    parser.add_argument("--lop-max-iter", type=int, default=60)
    args = parser.parse_args()
    print_run_header(["numpy", "scipy", "sklearn"])
    X_train, y_train, X_test, y_test = conll2000_run()
    template = TemplateFeatures(CONLL2000_TEMPLATE)
    F_train = template.fit_transform(X_train)
    F_test = template.transform(X_test)
    models = {
        "cll": lambda: CRFTagger(n_jobs=args.n_jobs),
        "sgd": lambda: CRFTagger(solver="sgd", random_state=0, n_jobs=args.n_jobs),
        "mcef": lambda: CRFTagger(loss="mce_f", random_state=0, n_jobs=args.n_jobs),
        "lop": lambda: LOPTagger(estimator=CRFTagger(prior="none", max_iter=args.lop_max_iter,
                                                     n_jobs=1), n_jobs=args.n_jobs),
    }
    for name in filter(None, args.only.split(",")):
        est = models[name]()
        t0 = time.perf_counter()
        est.fit(F_train, y_train)
        seconds = time.perf_counter() - t0
        f1 = segment_f1_score(y_test, est.predict(F_test))
        # a pool: its experts' weights and the pooled model's, in order
        coef = est.coef_ if name != "lop" else np.concatenate(
            [e.coef_.ravel() for e in est.experts_] + [est.pool_.coef_.ravel()])
        arrays = all_arrays_digest(est if name != "lop" else est.pool_)
        print(f"{name}: coef_ {digest(coef)}  all arrays {arrays}  "
              f"test F1 {100 * f1:.4f}  n_iter_ {getattr(est, 'n_iter_', '-')}  "
              f"fit {seconds:.1f} s", flush=True)
    for repeat in range(args.timing_repeats if args.timing_iter else 0):
        cpu, n_iter = {}, {}
        for k in (2, args.timing_iter):
            est = CRFTagger(n_jobs=1, max_iter=k, tol=0.0)
            t0 = time.process_time()
            est.fit(F_train, y_train)
            cpu[k], n_iter[k] = time.process_time() - t0, est.n_iter_
        k = args.timing_iter
        per_iter = (cpu[k] - cpu[2]) / (n_iter[k] - n_iter[2])
        print(f"timing run {repeat + 1}: CLL L-BFGS n_jobs=1, iterations {n_iter[2]}..{n_iter[k]}: "
              f"{per_iter:.4f} CPU s/iteration (fits of {cpu[2]:.2f} and {cpu[k]:.2f} CPU s)",
              flush=True)

if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    main()
