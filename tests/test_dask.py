"""A grid search over losses x C x folds runs unchanged on a dask.distributed cluster.

scikit-learn's search tools dispatch their fits through joblib; inside
``joblib.parallel_backend("dask")`` joblib sends them to the workers of the
active ``dask.distributed.Client``. This test starts a ``LocalCluster`` of
two worker processes and checks that the search's results equal those of a
local run (the ``dask`` extra installs ``dask[distributed]``; the ``tests``
extra includes it, so the test never skips).
"""

import os

import joblib
import numpy as np
from dask.distributed import Client, LocalCluster, get_task_stream
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.metrics import segment_f1_scorer


def test_grid_search_on_a_local_dask_cluster_matches_the_local_run(toy_chunks):
    X, y = toy_chunks
    # n_jobs=1 in the tagger: one kernel thread per fit wherever it runs, so
    # both runs add up the same numbers in the same order. The search's
    # n_jobs=-1 means all cores locally, all dask workers on the cluster.
    search = GridSearchCV(
        CRFTagger(n_jobs=1, max_iter=300),
        {"loss": ["cll", "softmax_margin"], "C": [0.1, 10.0]},
        cv=KFold(2), scoring=segment_f1_scorer, n_jobs=-1,
    )
    local = clone(search).set_params(n_jobs=1).fit(X, y)

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        with get_task_stream(client) as tasks, joblib.parallel_backend("dask"):
            remote = clone(search).fit(X, y)
        cluster_workers = set(client.scheduler_info()["workers"])
        worker_pids = set(client.run(os.getpid).values())

    # The fits ran in tasks on the cluster's worker processes, not here.
    assert len(worker_pids) == 2 and os.getpid() not in worker_pids
    ran_on = {t["worker"] for t in tasks.data}
    assert ran_on and ran_on <= cluster_workers

    # And gave the same search results.
    assert [p for p in remote.cv_results_["params"]] == local.cv_results_["params"]
    for key in ("split0_test_score", "split1_test_score", "mean_test_score"):
        assert_allclose(remote.cv_results_[key], local.cv_results_[key], rtol=1e-12)
    assert_array_equal(remote.cv_results_["rank_test_score"], local.cv_results_["rank_test_score"])
    assert remote.best_params_ == local.best_params_
    assert_allclose(remote.best_estimator_.coef_, local.best_estimator_.coef_, rtol=1e-12)
    # The grid separates its candidates (the comparison is not of equal numbers).
    assert np.ptp(local.cv_results_["mean_test_score"]) > 0.01
