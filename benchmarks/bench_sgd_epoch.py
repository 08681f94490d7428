"""Cost of one SGD epoch of MCE-F against one L-BFGS iteration of CLL, in one process.

Loads CoNLL-2000, builds the CRF++ template features
(``TemplateFeatures(CONLL2000_TEMPLATE)``) and, in one process with
``n_jobs=1``:

- fits ``CRFTagger(loss='cll', solver='lbfgs')`` for ``--cll-iter``
  iterations and times every iteration (process CPU seconds between two
  calls of the estimator's ``callback``);
- fits ``CRFTagger(loss='mce_f', init=None, solver=SGD(eta0=--eta0,
  random_state=0, batch_size=b))`` for ``--epochs`` epochs for every batch
  size ``b`` of ``--batch-sizes`` and times every epoch the same way (the
  first epoch is not timed: it also holds the solver's set-up);
- prints the median CPU seconds per epoch, its ratio to the median CLL
  iteration, and a digest of each fit's ``loss_curve_`` and ``coef_``
  (the same digest before and after a change that must not change results);
- with ``--cll-sgd``: the same for ``loss='cll'`` with ``SGD(eta0=--eta0,
  random_state=0)``, whose epoch is the compiled per-sequence loop (what a
  compiled minibatch path costs at most: one kernel call per sequence), and
  the test F1 of that fit (``--epochs`` epochs);
- with ``--kernels``: the CPU seconds per epoch spent in the compiled
  kernels of the minibatch path (potentials, sparse step, and MCE-F's one
  compiled call ``mce_f_labels_batch``; in code before it, the max-marginal
  tables, maximum incorrect output, segment decoder, span margins and
  gradients), each call
  timed by a wrapper (which adds about 1 us a call); the rest of the epoch
  is Python and numpy work between them; and a second table with the CPU
  microseconds per call of the minibatch path's two SGD kernels
  (``batch_potentials``, ``sgd_step``), over all the calls of the fit;
- with ``--default-fit``: the whole default fit ``CRFTagger(loss='mce_f',
  init=None, n_jobs=1, random_state=0)``, its CPU seconds, its digest and
  its test F1.

The load average is printed before and after. Run from a checkout::

    SKLEARN_CRFLOSS_DATA=../shared/data python benchmarks/bench_sgd_epoch.py \\
        --batch-sizes 4,8,16,32,64 --default-fit

Timed runs are never tests; the measured output is in benchmarks/README.md.
"""

import argparse
import hashlib
import os
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import command_line, machine_info  # noqa: E402
import sklearn_crfloss  # noqa: E402
from sklearn_crfloss import CRFTagger  # noqa: E402
from sklearn_crfloss.datasets import load_conll2000  # noqa: E402
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures  # noqa: E402
from sklearn_crfloss.metrics import segment_f1_score  # noqa: E402
from sklearn_crfloss.solvers import SGD  # noqa: E402


def load():
    """Print the load average; return it as a string."""
    with open("/proc/loadavg") as f:
        return f.read().strip()


def digest(crf):
    """A short digest of the fit's ``loss_curve_`` and ``coef_`` (bitwise)."""
    h = hashlib.sha256()
    h.update(np.asarray(crf.loss_curve_, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(crf.coef_.toarray() if hasattr(crf.coef_, "toarray")
                                  else crf.coef_, dtype=np.float64).tobytes())
    return h.hexdigest()[:16]


#: CPU seconds spent in the wrapped kernels so far (``--kernels``).
_KERNEL_SECONDS = [0.0]
#: CPU seconds and calls per wrapped kernel, by name (``--kernels``).
_KERNEL_CALLS = {}


def time_kernels():
    """Wrap the compiled calls of SGD's minibatch path and of MCE-F's label margins."""
    import sklearn_crfloss.losses._mce_f_fast as fused_mce
    import sklearn_crfloss.losses._chunks as chunks
    import sklearn_crfloss.solvers._sgd as sgd

    def timed(f, name):
        def call(*args, **kwargs):
            t0 = time.process_time()
            try:
                return f(*args, **kwargs)
            finally:
                dt = time.process_time() - t0
                _KERNEL_SECONDS[0] += dt
                totals = _KERNEL_CALLS.setdefault(name, [0.0, 0])
                totals[0] += dt
                totals[1] += 1
        return call

    for module, names in ((sgd, ("batch_potentials", "sgd_step")), (chunks, ("chunk_segments",)),
                          (fused_mce, ("max_marginals_batch", "max_incorrect_from_tables",
                                       "segment_margins_batch", "span_gradients_batch",
                                       "mce_f_labels_batch"))):
        for name in names:
            if hasattr(module, name):  # (the kernels of older and newer code)
                setattr(module, name, timed(getattr(module, name), name))


def timed_fit(crf, F, y):
    """Fit ``crf``; return the CPU seconds between consecutive callbacks (and
    those in the wrapped kernels) and in all."""
    stamps = []
    crf.set_params(callback=lambda k, value: stamps.append(
        (time.process_time(), _KERNEL_SECONDS[0])))
    t0 = time.process_time()
    crf.fit(F, y)
    total = time.process_time() - t0
    steps = np.diff(np.array(stamps).reshape(-1, 2), axis=0)
    return steps[:, 0], total, steps[:, 1]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch-sizes", default="4", help="comma-separated minibatch sizes")
    p.add_argument("--epochs", type=int, default=4, help="SGD epochs per fit (the first untimed)")
    p.add_argument("--cll-iter", type=int, default=12, help="CLL L-BFGS iterations")
    p.add_argument("--eta0", type=float, default=0.1)
    p.add_argument("--cll-sgd", action="store_true",
                   help="also time an SGD epoch of CLL (the compiled per-sequence loop)")
    p.add_argument("--kernels", action="store_true",
                   help="also time the compiled kernels of the minibatch path")
    p.add_argument("--default-fit", action="store_true",
                   help="also time the default fit of loss='mce_f' from zero")
    p.add_argument("--train-sentences", type=int, default=None)
    args = p.parse_args(argv)
    print(command_line(["SKLEARN_CRFLOSS_DATA"]))
    print(machine_info())
    print("sklearn_crfloss imported from", os.path.dirname(sklearn_crfloss.__file__))
    print("load average at start:", load())
    warnings.simplefilter("ignore", ConvergenceWarning)
    X, y = load_conll2000("train", download_if_missing=False)
    if args.train_sentences:
        X, y = X[:args.train_sentences], y[:args.train_sentences]
    template = TemplateFeatures(CONLL2000_TEMPLATE).fit(X)
    F = template.transform(X)

    if args.kernels:
        time_kernels()
    cll_steps, _, _ = timed_fit(CRFTagger(loss="cll", solver="lbfgs", max_iter=args.cll_iter,
                                       n_jobs=1), F, y)
    cll = float(np.median(cll_steps))
    print(f"\nCLL L-BFGS: median {cll:.3f} CPU s per iteration over {cll_steps.shape[0]} "
          f"iterations (load {load()})\n")
    print("| batch size | steps per epoch | CPU s per epoch (median) | x CLL iteration "
          "| in kernels | epochs timed | digest |")
    print("|---|---|---|---|---|---|---|")
    runs = [(str(b), int(b), "mce_f") for b in args.batch_sizes.split(",")]
    if args.cll_sgd:
        runs.append(("CLL, compiled loop", 1, "cll"))
    per_call = []
    for name, batch, loss in runs:
        _KERNEL_CALLS.clear()
        crf = CRFTagger(loss=loss, init=None, max_iter=args.epochs, n_jobs=1,
                        solver=SGD(eta0=args.eta0, random_state=0,
                                   batch_size=batch if loss == "mce_f" else "auto"))
        steps, _, kernels = timed_fit(crf, F, y)
        sec = float(np.median(steps))
        in_kernels = f"{float(np.median(kernels)):.3f}" if args.kernels and loss == "mce_f" else ""
        print(f"| {name} | {-(-len(F) // batch)} | {sec:.3f} | {sec / cll:.1f} | {in_kernels} "
              f"| {steps.shape[0]} | {digest(crf)} |", flush=True)
        if args.kernels and loss == "mce_f":
            per_call.append((name, *(1e6 * _KERNEL_CALLS[k][0] / max(_KERNEL_CALLS[k][1], 1)
                                     for k in ("batch_potentials", "sgd_step"))))
        if loss == "cll":
            cll_sgd = crf
    if per_call:
        print("\n| batch size | batch_potentials, CPU us per call | sgd_step, CPU us per call |")
        print("|---|---|---|")
        for name, potentials, step in per_call:
            print(f"| {name} | {potentials:.1f} | {step:.1f} |")
    print("\nload average after the epochs:", load())
    if args.cll_sgd:
        X_test, y_test = load_conll2000("test", download_if_missing=False)
        f1 = segment_f1_score(y_test, cll_sgd.predict(template.transform(X_test)))
        print(f"CLL SGD fit ({args.epochs} epochs): test F1 {100 * f1:.4f}, "
              f"digest {digest(cll_sgd)}")
    if args.default_fit:
        crf = CRFTagger(loss="mce_f", init=None, n_jobs=1, random_state=0)
        _, total, _ = timed_fit(crf, F, y)
        X_test, y_test = load_conll2000("test", download_if_missing=False)
        f1 = segment_f1_score(y_test, crf.predict(template.transform(X_test)))
        print(f"\ndefault fit CRFTagger(loss='mce_f', init=None, n_jobs=1, random_state=0): "
              f"{total:.1f} CPU s, {len(crf.loss_curve_)} iterations, test F1 {100 * f1:.4f}, "
              f"digest {digest(crf)} (load {load()})")


if __name__ == "__main__":
    main()
