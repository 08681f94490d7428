"""``init='auto'`` (the default): a CLL start for the losses trained from a fit."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.exceptions import ConvergenceWarning

from sklearn_crfloss import CRFTagger

from conftest import make_toy_chunks


def _fit(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return CRFTagger(max_iter=8, random_state=0, **params).fit(X, y)


@pytest.mark.parametrize("loss", ["mce_f", "mce", "labelwise"])
def test_auto_starts_the_nonconvex_losses_from_a_cll_fit(loss):
    X, y = make_toy_chunks(30, seed=2)
    auto = _fit(X, y, loss=loss)
    cll = _fit(X, y, loss=loss, init="cll")
    zero = _fit(X, y, loss=loss, init=None)
    assert auto.init == "auto" and auto.init_n_iter_ > 0 and zero.init_n_iter_ == 0
    assert_array_equal(auto.coef_, cll.coef_)
    assert auto.n_iter_ == cll.n_iter_


def test_auto_is_no_cll_stage_for_cll_and_for_a_warm_start():
    X, y = make_toy_chunks(30, seed=2)
    assert _fit(X, y).init_n_iter_ == 0
    crf = _fit(X, y, loss="cll")
    crf.set_params(loss="mce_f", warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf.fit(X, y)
    assert crf.init_n_iter_ == 0  # continued the previous fit, no new CLL stage


def test_init_refuses_an_unknown_start():
    X, y = make_toy_chunks(5, seed=2)
    with pytest.raises(ValueError, match="init"):
        CRFTagger(init="zeros").fit(X, y)


def test_mce_f_default_solver_runs_the_sgd_epochs_from_a_fit_too():
    X, y = make_toy_chunks(30, seed=5)
    # From zero: the same schedule as Suzuki et al.'s 'suzuki2006'.
    zero = _fit(X, y, loss="mce_f", init=None)
    paper = _fit(X, y, loss="mce_f", init=None, solver="suzuki2006")
    assert_array_equal(zero.coef_, paper.coef_)
    # From a CLL fit: ten SGD epochs, then QuickProp (suzuki2006: QuickProp alone).
    auto = _fit(X, y, loss="mce_f")
    quickprop = _fit(X, y, loss="mce_f", solver="suzuki2006")
    assert auto.n_iter_ >= 10 and quickprop.n_iter_ <= 8
    # One fit with the CLL start is the CLL fit continued by warm_start.
    warm = _fit(X, y, loss="cll")
    warm.set_params(loss="mce_f", warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warm.fit(X, y)
    assert_array_equal(auto.coef_, warm.coef_)


def test_mce_f_beta_auto_is_minus_one_from_zero_and_zero_from_a_fit():
    from sklearn_crfloss.losses import SegmentFScoreMCE

    X, y = make_toy_chunks(30, seed=2)
    assert SegmentFScoreMCE().beta == "auto"
    zero = _fit(X, y, loss="mce_f", init=None)
    assert_array_equal(zero.coef_, _fit(X, y, loss=SegmentFScoreMCE(beta=-1.0), init=None).coef_)
    assert not np.array_equal(
        zero.coef_, _fit(X, y, loss=SegmentFScoreMCE(beta=0.0), init=None).coef_)
    auto = _fit(X, y, loss="mce_f")  # from a CLL fit: the paper's beta = 0
    assert_array_equal(auto.coef_, _fit(X, y, loss=SegmentFScoreMCE(beta=0.0)).coef_)
    assert not np.array_equal(auto.coef_, _fit(X, y, loss=SegmentFScoreMCE(beta=-1.0)).coef_)
    crf = _fit(X, y, loss="cll")  # continued with warm_start=True: from a fit too
    crf.set_params(loss="mce_f", warm_start=True)
    ref = _fit(X, y, loss="cll").set_params(loss=SegmentFScoreMCE(beta=0.0), warm_start=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert_array_equal(crf.fit(X, y).coef_, ref.fit(X, y).coef_)
    loss = SegmentFScoreMCE()
    CRFTagger(loss=loss, init=None, max_iter=2, random_state=0).fit(X, y)
    assert loss.beta == "auto"  # the user's object is not changed


def test_mce_f_beta_auto_outside_a_fit_is_the_papers_zero():
    from sklearn_crfloss.losses import SegmentFScoreMCE

    from _oracle import random_problem

    U, T, s, e, y, off = random_problem(np.random.default_rng(0), 3, lengths=(2, 5, 4), scale=1.5)
    classes = np.array(["B-NP", "I-NP", "O"])
    auto = SegmentFScoreMCE().set_classes(classes).value_and_grad(U, T, s, e, y, off)
    zero = SegmentFScoreMCE(beta=0.0).set_classes(classes).value_and_grad(U, T, s, e, y, off)
    minus = SegmentFScoreMCE(beta=-1.0).set_classes(classes).value_and_grad(U, T, s, e, y, off)
    for a, b in zip(auto, zero):
        assert_array_equal(a, b)
    assert auto[0] != minus[0]
