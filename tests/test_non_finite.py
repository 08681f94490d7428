"""No model that is not finite: every training path refuses, and leaves the estimator as it was.

A cost of inf or NaN, sample weights near the float64 limit, a feature value
of 1e308 or a step size of 1e100 make the objective (or the parameters)
overflow. Every training path (each batch solver through the training
stages, ``init='cll'``, ``partial_fit`` with each online solver, the dask
estimator, the experts and the pool of ``LOPTagger``) raises a
``ValueError`` naming the stage and the likely causes; the estimator keeps
what it had (no fitted attribute after a first fit, the previous model
after a refit, the online state of the previous calls after a
``partial_fit``).
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from sklearn_crfloss import CRFTagger, LOPTagger
from sklearn_crfloss.losses import SoftmaxMargin
from sklearn_crfloss.solvers import ConvergenceMonitor, Rprop, SGDState
from sklearn_crfloss._training._stages import run_stage

from conftest import make_toy_chunks

BATCH_SOLVERS = [("lbfgs", "l2"), ("owlqn", "l1"), ("rprop", "l2"), ("quickprop", "l2"),
                 ("sgd", "l2")]


@pytest.fixture(scope="module")
def toy():
    return make_toy_chunks(40, seed=4, max_len=8)


def _classes(y):
    return sorted({label for s in y for label in s})


def _huge_feature(X):
    """X with a numeric feature of 1e308 on the first token of the first sequence."""
    first = [dict(X[0][0], big=1e308)] + list(X[0][1:])
    return [first] + list(X[1:])


def _fitted_state(est):
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def _assert_unchanged(est, before):
    after = _fitted_state(est)
    assert after.keys() == before.keys()
    for key, value in before.items():
        if isinstance(value, np.ndarray):
            assert_array_equal(after[key], value)


# --------------------------------------------------------------- cost values


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0])
def test_a_cost_that_is_not_finite_or_negative_is_refused_naming_its_key(toy, value):
    X, y = toy
    crf = CRFTagger(loss=SoftmaxMargin(cost={("B-NP", "I-NP"): value}))
    with pytest.raises(ValueError, match=r"cost of \('B-NP', 'I-NP'\) must be finite and "
                                         r"non-negative"):
        crf.fit(X, y)
    assert not _fitted_state(crf)


@pytest.mark.parametrize("key", [("A",), ("B-NP",), ("B-NP", "I-NP", "O")])
def test_a_cost_key_that_is_not_a_pair_is_named(toy, key):
    X, y = toy
    with pytest.raises(ValueError, match=r"the key .* is not a pair of two labels"):
        CRFTagger(loss=SoftmaxMargin(cost={key: 1.0})).fit(X, y)


def test_a_cost_object_whose_matrix_is_not_finite_is_refused(toy):
    class Infinite:
        def matrix(self, classes):
            M = 1.0 - np.eye(len(classes))
            M[0, 1] = np.inf
            return M

    X, y = toy
    with pytest.raises(ValueError, match=r"entry \(0, 1\).*is inf"):
        CRFTagger(loss=SoftmaxMargin(cost=Infinite())).fit(X, y)


# ------------------------------------------------------- the batch solvers


@pytest.mark.parametrize("solver, prior", BATCH_SOLVERS)
def test_huge_sample_weights_raise_and_keep_the_previous_fit(toy, solver, prior):
    X, y = toy
    crf = CRFTagger(solver=solver, prior=prior, max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf.fit(X, y)
    before = _fitted_state(crf)
    with pytest.raises(ValueError, match=r"diverged \(stage loss='cll'\): the objective is "
                                         r"(nan|inf) at the starting.*sample weights"):
        crf.fit(X, y, sample_weight=[1e308] * len(X))
    _assert_unchanged(crf, before)


@pytest.mark.parametrize("solver, prior", BATCH_SOLVERS)
def test_a_feature_of_1e308_raises_and_leaves_the_estimator_unfitted(toy, solver, prior):
    X, y = toy
    crf = CRFTagger(solver=solver, prior=prior, max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the unscaled-feature warning)
        with pytest.raises(ValueError, match="diverged.*feature values of a very large"):
            crf.fit(_huge_feature(X), y)
    assert not _fitted_state(crf)


def test_the_init_cll_stage_is_named(toy):
    X, y = toy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"diverged \(stage init='cll'\)"):
            CRFTagger(loss="mce", init="cll", max_iter=5).fit(_huge_feature(X), y)


def test_a_solver_that_stalls_on_non_finite_trials_is_a_divergence():
    # Finite at the start only: Rprop finds no finite trial step and stalls,
    # which the stage reports as a divergence rather than a model.
    class Cliff:
        n_params = 2

        def value_and_grad(self, x, loss, prior, C):
            value = 1.0 + float(x @ x) if not np.any(x) else np.inf
            return value, np.array([1.0, -1.0])

    class Loss:
        def __loss_tags__(self):
            from sklearn_crfloss.losses import LossTags
            return LossTags(name="cll")

    monitor = ConvergenceMonitor(1e-5, 20, stage="loss='cll'")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="not finite at .* trial point"):
            run_stage(Rprop(), Cliff(), Loss(), None, 1.0, np.zeros(2), monitor,
                      stage="loss='cll'")


def test_the_monitor_refuses_parameters_that_are_not_finite():
    monitor = ConvergenceMonitor(1e-5, 10, stage="s")
    with pytest.raises(ValueError, match=r"diverged \(stage s\): the parameters are not "
                                         r"finite at iter 1"):
        monitor.report(1.0, theta=np.array([0.0, np.nan]))


@pytest.mark.parametrize("seed", range(4))
def test_sgd_fit_with_a_huge_step_is_a_divergence_whatever_the_order(toy, seed):
    # Depending on the order, the objective overflows, or a step's
    # potentials outgrow double precision (forward_backward refuses them):
    # both are reported as the stage's divergence, with the remedy.
    X, y = toy
    crf = CRFTagger(solver="sgd", eta0=1e100, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"diverged \(stage loss='cll'\).*lower eta0"):
            crf.fit(X, y)
    assert not _fitted_state(crf)


# ---------------------------------------------------------------- partial_fit


def test_partial_fit_with_a_huge_step_raises_and_stays_unfitted(toy):
    X, y = toy
    crf = CRFTagger(solver="sgd", eta0=1e100, random_state=0)
    for _ in range(2):  # the refusal is not a state: the next call refuses again
        with pytest.raises(ValueError, match="eta0=1e[+]100 is too large"):
            crf.partial_fit(X, y, classes=_classes(y))
        assert not _fitted_state(crf)


@pytest.mark.parametrize("solver, loss", [("sgd", "cll"), ("perceptron", "perceptron"),
                                          ("mira", "mira")])
def test_partial_fit_rolls_back_a_batch_that_overflows(toy, solver, loss):
    X, y = toy
    # Every token with the same huge value: the sums of the update overflow.
    bad = [[{"big": 1e308} for _ in s] for s in X[:3]]
    crf = CRFTagger(solver=solver, loss=loss, random_state=0)
    crf.partial_fit(X, y, classes=_classes(y))
    before = _fitted_state(crf)
    with pytest.raises(ValueError, match=r"diverged \(stage partial_fit\)"):
        crf.partial_fit(bad, y[:3])
    _assert_unchanged(crf, before)
    crf.partial_fit(X, y)  # goes on as if the bad batch had never come
    twin = CRFTagger(solver=solver, loss=loss, random_state=0)
    twin.partial_fit(X, y, classes=_classes(y)).partial_fit(X, y)
    assert_array_equal(crf.coef_, twin.coef_)
    assert_array_equal(crf.transition_, twin.transition_)
    assert crf.loss_curve_ == twin.loss_curve_


def test_sgd_state_rollback_restores_rows_and_whole_arrays():
    rng = np.random.default_rng(0)
    for whole in (False, True):
        state = SGDState(6, 3, all_states=False, average=True)
        state.rng = np.random.default_rng(1)  # (a state some call has trained)
        state.W[:] = rng.normal(size=state.W.shape)
        state.BW[:] = rng.normal(size=state.BW.shape)
        state.mask[:] = rng.integers(0, 2, size=state.mask.shape)
        copies = {k: np.array(getattr(state, k)) for k in ("W", "BW", "mask", "tail", "state")}
        draw = state.rng.random()
        state.rng = np.random.default_rng(1)
        saved = state.checkpoint(np.array([1, 4, 7]), whole=whole)
        state.grow(8)  # a new attribute, row 7
        state.W[[1, 4, 7]] = np.nan
        if whole:  # a fold changes every row
            state.W *= 0.5
        state.BW[4] = 1.0
        state.mask[7] = 1
        state.tail[:] = 3.0
        state.state[0] = 1e-12
        state.rng.random()
        assert not state.finite(saved)
        state.rollback(saved)
        for name, value in copies.items():
            assert_array_equal(getattr(state, name), value)
        assert state.rng.random() == draw


# ----------------------------------------------------------- LOP and dask


def test_lop_refuses_an_expert_that_diverges_and_keeps_its_pool(toy):
    X, y = toy
    lop = LOPTagger(experts="simple", estimator=CRFTagger(max_iter=5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lop.fit(X, y)
        before = _fitted_state(lop)
        with pytest.raises(ValueError, match="diverged"):
            lop.fit(_huge_feature(X), y)
    _assert_unchanged(lop, before)
    assert lop.pool_ is before["pool_"]


def test_dask_estimator_refuses_a_feature_of_1e308(toy):
    import dask.bag as db
    from dask.distributed import Client, LocalCluster
    from sklearn_crfloss.dask import DaskCRFTagger

    X, y = toy
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        for solver in ("lbfgs", "sgd"):
            crf = DaskCRFTagger(client=client, solver=solver, max_iter=5)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with pytest.raises(ValueError, match="diverged.*feature values"):
                    crf.fit(db.from_sequence(_huge_feature(X), npartitions=2),
                            db.from_sequence(y, npartitions=2))
            assert not _fitted_state(crf)
