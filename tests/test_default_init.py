"""``init='auto'`` (the default): a CLL start for the losses trained from a fit."""

import warnings

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
