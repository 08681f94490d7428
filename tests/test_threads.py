"""``n_jobs``: resolved as scikit-learn's, bounded by the cores, and without effect on the model.

The kernels allocate scratch rows per thread, so ``n_jobs`` is bounded by
the cores before it becomes a thread count; and the sums of the batch
kernels are taken in fixed blocks, so that 1, 2, 3 and 4 threads give
bitwise the same fit for every batch solver.
"""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from joblib import cpu_count
from numpy.testing import assert_array_equal

from sklearn_crfloss import CRFTagger
from sklearn_crfloss._chain import _threads, kernel_threads, N_BLOCKS, usable_threads

from conftest import make_toy_chunks


def test_n_jobs_is_resolved_as_scikit_learns_and_bounded_by_the_cores(monkeypatch):
    assert kernel_threads(None) == 1
    assert kernel_threads(-1) == usable_threads(cpu_count())
    assert kernel_threads(10**6) == usable_threads(cpu_count()) <= cpu_count()
    monkeypatch.setattr(_threads, "cpu_count", lambda: 16)
    assert [kernel_threads(n) for n in (1, 2, 3, 4, 5, 10**6)] == [1, 2, 2, 4, 5, 16]
    assert all(N_BLOCKS % usable_threads(n) == 0 for n in range(1, N_BLOCKS + 1))


def test_a_million_jobs_allocate_per_core_only(tmp_path):
    # In a process limited to 3 GB of address space: before, the CLL kernel's
    # scratch rows alone asked for 65 GiB.
    script = textwrap.dedent("""
        import resource, warnings
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
        warnings.simplefilter("ignore")
        from sklearn_crfloss import CRFTagger
        X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "ran"}]]
        y = [["B-NP", "I-NP"], ["B-NP", "I-NP", "O"]]
        crf = CRFTagger(n_jobs=10**6).fit(X, y)
        assert crf.predict(X) == y
        crf.predict_marginals(X), crf.predict_nbest(X, 3), crf.score(X, y)
        crf.set_params(loss="softmax_margin").fit(X, y)
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


@pytest.mark.parametrize("solver, prior", [("lbfgs", "l2"), ("owlqn", "l1"), ("rprop", "l2"),
                                           ("quickprop", "l2")])
def test_batch_solvers_give_the_same_coef_for_1_to_4_threads(monkeypatch, solver, prior):
    # More cores than this machine may have, so that 3 and 4 threads run.
    monkeypatch.setattr(_threads, "cpu_count", lambda: 8)
    X, y = make_toy_chunks(64, seed=3)
    fits = {}
    for n_jobs in (1, 2, 3, 4):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits[n_jobs] = CRFTagger(solver=solver, prior=prior, n_jobs=n_jobs, random_state=0,
                                     max_iter=20).fit(X, y)
    for n_jobs in (2, 3, 4):
        assert_array_equal(fits[n_jobs].coef_, fits[1].coef_)
        assert_array_equal(fits[n_jobs].transition_, fits[1].transition_)
        assert fits[n_jobs].objective_ == fits[1].objective_
        assert fits[n_jobs].n_iter_ == fits[1].n_iter_
