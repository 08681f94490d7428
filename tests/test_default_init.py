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
