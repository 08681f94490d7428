"""Max-margin, perceptron and MIRA: subgradients and the online trainers (SGD: test_sgd.py)."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.losses import MIRA, MaxMargin, StructuredPerceptron, get_loss_tags

from _oracle import enumerate_paths, random_problem
from conftest import make_toy_chunks


def test_max_margin_subgradient_is_the_argmax_difference():
    rng = np.random.default_rng(8)
    U, T, s, e, y, off = random_problem(rng, 3, lengths=(2, 4))
    loss = MaxMargin(cost_scale=2.0)
    _, dU, dT, ds, de = loss.value_and_grad(U, T, s, e, y, off)
    expected_dU = np.zeros_like(U)
    expected_dT = np.zeros_like(T)
    for a, b in zip(off[:-1], off[1:]):
        paths, scores = enumerate_paths(U[a:b], T, s, e)
        costs = 2.0 * (paths != y[a:b]).sum(axis=1)
        best = paths[np.argmax(scores + costs)]
        expected_dU[a + np.arange(b - a), best] += 1
        expected_dU[a + np.arange(b - a), y[a:b]] -= 1
        for p, q in zip(best[:-1], best[1:]):
            expected_dT[p, q] += 1
        for p, q in zip(y[a:b][:-1], y[a:b][1:]):
            expected_dT[p, q] -= 1
    assert_allclose(dU, expected_dU)
    assert_allclose(dT, expected_dT)


def _separable(seed=0, n=40):
    # The word identifies the label: a separable problem.
    rng = np.random.default_rng(seed)
    labels = ["O", "B-X", "I-X"]
    X, y = [], []
    for _ in range(n):
        lab = [labels[int(k)] for k in rng.integers(3, size=int(rng.integers(1, 7)))]
        X.append([{"w": f"w_{lab_t}", "bias": 1.0} for lab_t in lab])
        y.append(lab)
    return X, y


@pytest.mark.parametrize("loss", ["perceptron", "mira", "max_margin"])
def test_online_trainers_fit_a_separable_problem(loss):
    X, y = _separable()
    if loss == "max_margin":
        # SGD has no stopping rule but early stopping: max_iter epochs are
        # not convergence (issue 15), whatever the training score.
        with pytest.warns(ConvergenceWarning, match="SGD .* max_iter=15 epochs"):
            crf = CRFTagger(loss=loss, max_iter=15, random_state=0, C=10.0).fit(X, y)
        assert crf.score(X, y) == 1.0 and not crf.converged_
        assert crf.n_iter_ == 15 and len(crf.loss_curve_) == 15
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        crf = CRFTagger(loss=loss, max_iter=15, random_state=0, C=10.0).fit(X, y)
    assert crf.score(X, y) == 1.0 and crf.converged_
    # The perceptron and MIRA stop after the first epoch without a mistake.
    assert crf.n_iter_ < 15 and len(crf.loss_curve_) == crf.n_iter_
    assert crf.loss_curve_[-1] == 0 and min(crf.loss_curve_[:-1]) > 0


@pytest.mark.parametrize("loss", ["perceptron", "mira"])
def test_online_trainers_do_not_converge_by_max_iter(loss):
    # max_iter epochs that all make mistakes: not converged, and a warning
    # that says which stage ran out and why (as the batch solvers do).
    X, y = make_toy_chunks(40, seed=1)
    with pytest.warns(ConvergenceWarning) as record:
        crf = CRFTagger(loss=loss, max_iter=3, random_state=0).fit(X, y)
    assert not crf.converged_ and crf.n_iter_ == 3 and crf.loss_curve_[-1] > 0
    message = str(record[0].message)
    assert (f"{loss} (stage loss='{loss}') did not converge in 3 epochs: reached "
            f"max_iter=3, the last epoch with {crf.loss_curve_[-1]:g} mistakes") in message


@pytest.mark.parametrize("loss", ["perceptron", "mira", "max_margin"])
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_same_random_state_same_model(loss):
    X, y = make_toy_chunks(40, seed=1)
    a = CRFTagger(loss=loss, max_iter=3, random_state=7).fit(X, y)
    b = CRFTagger(loss=loss, max_iter=3, random_state=7).fit(X, y)
    c = CRFTagger(loss=loss, max_iter=3, random_state=8).fit(X, y)
    assert_array_equal(a.coef_, b.coef_)
    assert_array_equal(a.transition_, b.transition_)
    assert not np.array_equal(a.coef_, c.coef_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_averaging_changes_the_perceptron():
    X, y = make_toy_chunks(40, seed=2)
    avg = CRFTagger(loss="perceptron", max_iter=3, random_state=0).fit(X, y)
    last = CRFTagger(loss="perceptron", max_iter=3, random_state=0, average=False).fit(X, y)
    assert not np.allclose(avg.coef_, last.coef_)
    assert avg.score(X, y) > 0.7


def test_solver_combinations_are_checked():
    X, y = make_toy_chunks(10)
    with pytest.raises(ValueError, match="not differentiable"):
        CRFTagger(loss="max_margin", solver="lbfgs").fit(X, y)
    with pytest.raises(ValueError, match="own online rule"):
        CRFTagger(loss="perceptron", solver="sgd").fit(X, y)
    with pytest.raises(ValueError, match="supports prior"):
        from sklearn_crfloss.priors import GaussianPrior

        CRFTagger(loss="max_margin", prior=GaussianPrior(mean=1.0)).fit(X, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_mira_step_is_clipped_by_C():
    X, y = _separable(seed=3, n=20)
    small = CRFTagger(loss=MIRA(cost_scale=1.0), C=1e-3, max_iter=1, random_state=0,
                      average=False).fit(X, y)
    large = CRFTagger(loss=MIRA(cost_scale=1.0), C=1e3, max_iter=1, random_state=0,
                      average=False).fit(X, y)
    # 20 steps of tau <= C on feature differences of at most 6 (sequence length)
    assert np.abs(small.coef_).max() <= 20 * 6 * 1e-3 + 1e-12
    assert np.abs(large.coef_).max() > np.abs(small.coef_).max()


def test_loss_flags():
    tags = get_loss_tags(MaxMargin())
    assert not tags.smooth and tags.default_solver == "sgd"
    assert get_loss_tags(StructuredPerceptron()).default_solver == "perceptron"
    assert get_loss_tags(MIRA()).default_solver == "mira"
