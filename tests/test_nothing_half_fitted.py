"""A fit that fails leaves the estimator exactly as it was.

``vars(est)`` (every attribute, the private ones included, compared in
depth: arrays by value, objects by their own ``vars``) is the same before
and after a fit that raises, for a fresh estimator and for one fitted
before, whatever fails: a non-finite objective in the middle of training
(weights of 1e308), labels that the constraints refuse, a callback that
raises, a label scheme that cannot be read, with and without a
``tag_scheme`` and a loss that receives the labels (``set_classes``); on
lists, on a stream, in a :class:`LOPTagger` and a ``DaskCRFTagger``; and a
``partial_fit`` refused (a label outside ``classes``, a ``tag_scheme``)
leaves the model and its online state as they were.
"""

import copy
import warnings

import numpy as np
import pytest

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.losses import SoftmaxMargin
from sklearn_crfloss.lop import LOPTagger

from conftest import make_toy_chunks

X, Y = make_toy_chunks(25, seed=7)


class _Stream:
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        return iter(self.items)


def _same(a, b, where="vars"):
    """Deep equality of two attribute values (arrays by value, objects by their vars)."""
    assert type(a) is type(b), where
    if isinstance(a, np.random.RandomState):
        _same(a.get_state(), b.get_state(), f"{where}.get_state()")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{where}: keys {sorted(set(a) ^ set(b))}"
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for k, (u, v) in enumerate(zip(a, b)):
            _same(u, v, f"{where}[{k}]")
    elif hasattr(a, "__dict__") and not callable(a):
        _same(vars(a), vars(b), f"{where}.__dict__")
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    else:
        assert a == b, where


def _raise_at_second_iteration(iteration, objective):
    if iteration >= 2:
        raise ValueError("stop here")


_HUGE = np.full(len(X), 1e308)
_NOT_IOB2 = [["OUT" if label == "O" else label for label in seq] for seq in Y]
#: name -> (estimator parameters, fit keyword arguments, expected message).
FAILURES = {
    "non-finite objective": ({}, {"sample_weight": _HUGE}, "diverged"),
    "non-finite, tag_scheme": ({"tag_scheme": "iobes"}, {"sample_weight": _HUGE},
                               "diverged"),
    "non-finite, set_classes": ({"loss": SoftmaxMargin(cost={("B-NP", "I-NP"): 2.0})},
                                {"sample_weight": _HUGE}, "diverged"),
    "callback": ({"callback": _raise_at_second_iteration, "tag_scheme": "bilou"}, {},
                 "stop here"),
    "constraints": ({"constraints": "iob2"}, {"y": _NOT_IOB2}, "OUT"),
}


def _fail(est, fit_kwargs, match, stream=False):
    before = copy.deepcopy(vars(est))
    fit_kwargs = dict(fit_kwargs)
    y = fit_kwargs.pop("y", Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=match):
            if stream:
                est.fit(_Stream(X), _Stream(y), **fit_kwargs)
            else:
                est.fit(X, y, **fit_kwargs)
    _same(before, vars(est))


@pytest.mark.parametrize("stream", [False, True], ids=["lists", "stream"])
@pytest.mark.parametrize("failure", list(FAILURES))
@pytest.mark.parametrize("fitted", [False, True], ids=["fresh", "fitted"])
def test_a_failing_fit_changes_nothing(failure, fitted, stream):
    params, fit_kwargs, match = FAILURES[failure]
    est = CRFTagger(max_iter=20)
    if fitted:  # fitted before, in another tag scheme (its private state in place)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.set_params(tag_scheme="iobes").fit(X, Y)
        assert est.tag_schemes_ == ("iob2", "iobes")
    est.set_params(**dict({"tag_scheme": None}, **params))
    loss = copy.deepcopy(est.loss)
    _fail(est, fit_kwargs, match, stream=stream)
    _same(loss, est.loss, "loss")  # the loss given is never changed (set_classes on a copy)


def test_an_unreadable_label_scheme_changes_nothing():
    est = CRFTagger(max_iter=5).fit(X, Y)
    est.set_params(tag_scheme="iobes")
    before = copy.deepcopy(vars(est))
    with pytest.raises(ValueError):
        est.fit(X, [["x"] * len(s) for s in Y])
    _same(before, vars(est))


def test_a_successful_fit_leaves_no_private_scheme_behind():
    # A fit in a tag scheme, then a stream fit without: the second model
    # decodes and answers in its own labels (no scheme carried over).
    est = CRFTagger(max_iter=5, tag_scheme="iobes").fit(X, Y)
    est.set_params(tag_scheme=None).fit(_Stream(X), _Stream(Y))
    assert est.tag_schemes_ is None
    assert not [k for k in vars(est) if "scheme" in k and k != "tag_scheme"
                and k != "tag_schemes_"]


@pytest.mark.parametrize("fitted", [False, True], ids=["fresh", "fitted"])
def test_a_failing_lop_fit_changes_nothing(fitted):
    lop = LOPTagger(estimator=CRFTagger(max_iter=5))
    if fitted:
        lop.fit(X, Y)
    lop.set_params(estimator=CRFTagger(max_iter=20, callback=_raise_at_second_iteration))
    before = copy.deepcopy(vars(lop))
    with pytest.raises(ValueError, match="stop here"):
        lop.fit(X, Y)
    _same(before, vars(lop))


@pytest.mark.parametrize("fitted", [False, True], ids=["fresh", "fitted"])
def test_a_failing_dask_fit_changes_nothing(fitted):
    from dask.distributed import Client, LocalCluster

    from sklearn_crfloss.dask import DaskCRFTagger

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        est = DaskCRFTagger(client=client, max_iter=20)
        if fitted:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X, Y)
        est.set_params(callback=_raise_at_second_iteration)
        before = {k: v for k, v in vars(est).items() if k != "client"}
        before = copy.deepcopy(before)
        with pytest.raises(ValueError, match="stop here"):
            est.fit(X, Y)
        _same(before, {k: v for k, v in vars(est).items() if k != "client"})


def test_a_refused_partial_fit_changes_nothing():
    est = CRFTagger(random_state=0)
    est.partial_fit(X[:10], Y[:10], classes=sorted({t for s in Y for t in s}))
    before = copy.deepcopy(vars(est))
    with pytest.raises(ValueError, match="not one of"):
        est.partial_fit(X[10:], [["Z"] * len(s) for s in Y[10:]])
    _same(before, vars(est))
    fresh = CRFTagger(tag_scheme="iobes")
    before = copy.deepcopy(vars(fresh))
    with pytest.raises(ValueError, match="partial_fit does not apply tag_scheme"):
        fresh.partial_fit(X, Y, classes=["O", "B-NP", "I-NP", "B-VP", "I-VP"])
    _same(before, vars(fresh))
