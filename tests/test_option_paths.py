"""Every CRFTagger option through every path: the same effect, or refused by name.

The table ``TABLE`` says, for each parameter of :class:`CRFTagger` (one
non-default value, with the companions it needs) and each path a model
goes through, what must happen:

- ``'same'``: the option has the effect it has in ``fit``: a model trained
  on a stream equals the one trained on lists, the monolithic expert of a
  :class:`LOPTagger` equals ``CRFTagger.fit``, ``DaskCRFTagger`` predicts
  as ``CRFTagger``, a saved, exported or pickled model predicts the same and
  keeps the parameter (``get_params``), ``partial_fit`` applies it;
- ``('refused', pattern)``: a ``ValueError`` whose message matches
  ``pattern`` (the option and the path);
- ``('n/a', reason)``: the option does not apply on that path (documented);
  the path still runs with it and keeps it in ``get_params``.

One parametrised test per cell; small synthetic data.
"""

import io
import os
import pickle
import re
from contextlib import redirect_stdout

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.io import export_crfsuite, import_crfsuite, load_model, save_model
from sklearn_crfloss.lop import LOPTagger

from conftest import make_toy_chunks

X, Y = make_toy_chunks(30, seed=3)
CLASSES = sorted({label for seq in Y for label in seq})
CALLS = []


def record_call(iteration, objective):
    """A module-level callback (it pickles) that records its calls."""
    CALLS.append((iteration, objective))


#: parameter -> (value, companions: other parameters the value needs).
VALUES = {
    "loss": ("softmax_margin", {}),
    "prior": ("l1", {}),
    "C": (0.1, {}),
    "max_iter": (3, {}),
    "tol": (1e-2, {}),
    "min_freq": (2, {}),
    "all_possible_states": (True, {}),
    "boundary_potentials": (False, {}),
    "feature_hashing": (64, {}),
    "init": ("cll", {"loss": "softmax_margin"}),
    "init_C": (0.5, {"loss": "softmax_margin", "init": "cll"}),
    "solver": ("owlqn", {}),
    "average": (False, {"solver": "sgd", "random_state": 0}),
    "eta0": (0.05, {"solver": "sgd", "random_state": 0}),
    "decoder": ("mea", {}),
    "constraints": ("iob2", {}),
    "tag_scheme": ("iobes", {}),
    "n_jobs": (2, {}),
    "warm_start": (True, {}),
    "verbose": (1, {}),
    "random_state": (0, {"solver": "sgd"}),
    "callback": (record_call, {}),
    "early_stopping": (True, {"random_state": 0}),
    "validation_fraction": (0.3, {"early_stopping": True, "random_state": 0}),
    "n_iter_no_change": (2, {"early_stopping": True, "random_state": 0}),
    "scoring": ("accuracy", {"early_stopping": True, "random_state": 0}),
    "order": (2, {}),
}

PATHS = ("fit", "partial_fit", "stream", "dask", "lop", "save_model", "export_crfsuite",
         "pickle")

_ONE_EPOCH = "partial_fit runs one epoch per call, from where the last one ended (documented)"
_EARLY = "partial_fit does not hold out data: early stopping does not apply (documented)"
_DASK_EARLY = "applies with early_stopping only, which DaskCRFTagger refuses"
#: The cells that are not 'same'.
EXCEPTIONS = {
    "prior": {"partial_fit": ("refused", r"prior='l2'.*not LaplacianPrior")},
    "max_iter": {"partial_fit": ("n/a", _ONE_EPOCH)},
    "tol": {"partial_fit": ("n/a", _ONE_EPOCH)},
    "min_freq": {"partial_fit": ("refused", r"partial_fit cannot apply min_freq=2")},
    "boundary_potentials": {"partial_fit": ("refused",
                                            r"boundary_potentials=False is supported by fit")},
    "feature_hashing": {"export_crfsuite": ("refused", r"hashed features \(feature_hashing\)")},
    "init": {"partial_fit": ("n/a", _ONE_EPOCH)},
    "init_C": {"partial_fit": ("n/a", _ONE_EPOCH)},
    "solver": {"partial_fit": ("refused", r"partial_fit trains with an online solver.*'owlqn'")},
    "decoder": {"export_crfsuite": ("refused", r"decoder='mea'.*CRFsuite's tagger")},
    "constraints": {"export_crfsuite": ("refused", r"constraints='iob2'.*CRFsuite's tagger")},
    "tag_scheme": {
        "partial_fit": ("refused", r"partial_fit does not apply tag_scheme='iobes'"),
        "dask": ("refused", r"DaskCRFTagger does not apply tag_scheme='iobes'"),
        "export_crfsuite": ("refused", r"tag_scheme='iobes'.*CRFsuite"),
    },
    "warm_start": {"partial_fit": ("n/a", _ONE_EPOCH),
                   "dask": ("refused", r"DaskCRFTagger supports neither warm_start")},
    "callback": {"save_model": ("refused", r"params\['callback'\].*model file cannot hold")},
    "early_stopping": {"partial_fit": ("n/a", _EARLY),
                       "dask": ("refused", r"DaskCRFTagger supports neither warm_start nor "
                                           r"early_stopping")},
    "validation_fraction": {"partial_fit": ("n/a", _EARLY), "dask": ("n/a", _DASK_EARLY)},
    "n_iter_no_change": {"partial_fit": ("n/a", _EARLY), "dask": ("n/a", _DASK_EARLY)},
    "scoring": {"partial_fit": ("n/a", _EARLY), "dask": ("n/a", _DASK_EARLY)},
    "order": {"partial_fit": ("refused", r"order=2 does not support partial_fit"),
              "dask": ("refused", r"order=2 is not supported by DaskCRFTagger"),
              "lop": ("refused", r"order=2 is not supported by LOPTagger"),
              "export_crfsuite": ("refused", r"second-order chain \(order=2\)")},
}

#: parameter -> path -> 'same' | ('refused', pattern) | ('n/a', reason): the table.
TABLE = {param: {path: EXCEPTIONS.get(param, {}).get(path, "same") for path in PATHS}
         for param in VALUES}

#: Options read at prediction time only.
_PREDICT_TIME = {"decoder", "constraints"}
#: Options that change nothing in the trained weights (or are not used by partial_fit's SGD).
_NO_WEIGHT_CHANGE = {"n_jobs", "verbose", "callback", "random_state"}


def _params(param, path):
    value, companions = VALUES[param]
    params = dict(companions)
    if path == "dask" and param in ("validation_fraction", "n_iter_no_change", "scoring"):
        params.pop("early_stopping")
    if path == "export_crfsuite":
        params["boundary_potentials"] = False  # CRFsuite models have no start/end potentials
    if path == "partial_fit":
        params.setdefault("random_state", 0)  # SGD's shuffling, the same in both runs
    params[param] = value
    return params


def _default_params(param, path):
    """The parameters of the cell without the option itself (its companions kept)."""
    params = _params(param, path)
    params.pop(param)
    return params


def _quiet(fn, *args, **kwargs):
    out = io.StringIO()
    with redirect_stdout(out):
        result = fn(*args, **kwargs)
    return result, out.getvalue()


def _same_model(a, b, exact=True):
    assert_array_equal(a.classes_, b.classes_)
    check = assert_array_equal if exact else (lambda u, v: assert_allclose(u, v, rtol=1e-5,
                                                                          atol=1e-8))
    if a.coef_.shape == b.coef_.shape:
        check(a.coef_, b.coef_)
    else:  # (DaskCRFTagger keeps every hashing column, CRFTagger those seen): by name
        weights_a, weights_b = a.state_features_, b.state_features_
        assert weights_a.keys() == weights_b.keys()
        check(np.array(list(weights_a.values())), np.array([weights_b[k] for k in weights_a]))
    check(a.transition_, b.transition_)
    assert a.predict(X) == b.predict(X)
    assert getattr(a, "tag_schemes_", None) == getattr(b, "tag_schemes_", None)


def _fit(params):
    CALLS.clear()
    return _quiet(CRFTagger(**params).fit, X, Y)[0]


class _Stream:
    """A re-iterable source without len."""

    def __init__(self, items):
        self.items = items

    def __iter__(self):
        return iter(self.items)


def _partial(params):
    est = CRFTagger(**params)
    for k in range(2):
        _quiet(est.partial_fit, X[k::2], Y[k::2], classes=CLASSES)
    return est


@pytest.fixture(scope="module")
def dask_client():
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


def _run(param, path, request):
    """Take the option through the path; return what the 'same' check needs."""
    params = _params(param, path)
    value = params[param]
    if path == "fit":
        est = _fit(params)
        assert est.get_params()[param] is value or est.get_params()[param] == value
        return est, None
    if path == "partial_fit":
        CALLS.clear()
        est, reference = _partial(params), _partial(_default_params(param, path))
        return est, reference
    if path == "stream":
        reference = _fit(params)
        n_calls = len(CALLS)
        CALLS.clear()
        est = _quiet(CRFTagger(**params).fit, _Stream(X), _Stream(Y))[0]
        assert len(CALLS) == n_calls
        _same_model(est, reference)
        return est, reference
    if path == "dask":
        from sklearn_crfloss.dask import DaskCRFTagger

        client = request.getfixturevalue("dask_client")
        est = _quiet(DaskCRFTagger(client=client, **params).fit, X, Y)[0]
        return est, _fit(params)
    if path == "lop":
        lop = _quiet(LOPTagger(estimator=CRFTagger(**params)).fit, X, Y)[0]
        reference = _fit(params)
        _same_model(lop.experts_[0], reference)  # the monolithic expert is CRFTagger.fit
        assert lop.pool_.get_params()[param] == value
        return lop, reference
    est = _fit(params)
    if path == "pickle":
        loaded = pickle.loads(pickle.dumps(est))
    else:
        file = os.path.join(request.getfixturevalue("tmp_path"), "model")
        if path == "save_model":
            save_model(est, file)
            loaded = load_model(file)
        else:
            export_crfsuite(est, file)
            loaded = import_crfsuite(file)
            assert loaded.predict(X) == est.predict(X)
            return loaded, est
    assert loaded.get_params()[param] == value
    _same_model(loaded, est)
    return loaded, est


def _check_same(param, path, est, reference):
    """The option had its effect (beyond what _run checked)."""
    value = VALUES[param][0]
    if path == "dask" and VALUES[param][1].get("solver") == "sgd":
        # Iterative parameter mixing is not CRFTagger's SGD: the option is applied
        # (another value, another model; the same value, the same model).
        again = type(est)(**est.get_params()).fit(X, Y)
        _same_model(est, again)
        default = type(est)(**dict(est.get_params(), **{param: None if param == "random_state"
                                                         else "auto" if param == "eta0"
                                                         else True})).fit(X, Y)
        if param != "random_state":
            assert not np.array_equal(est.coef_, default.coef_)
    elif path == "dask":
        assert est.get_params()[param] == value
        _same_model(est.to_local(), reference, exact=False)
    if path != "partial_fit":
        return
    assert est.get_params()[param] == value
    if param in _PREDICT_TIME:  # the same weights, decoded with the option
        assert_array_equal(est.coef_, reference.coef_)
        assert est.predict(X) == reference.set_params(**{param: value}).predict(X)
    elif param == "random_state":  # the same value, the same shuffles
        assert_array_equal(est.coef_, _partial(_params(param, path)).coef_)
    elif param in _NO_WEIGHT_CHANGE:
        assert_array_equal(est.coef_, reference.coef_)
        if param == "callback":  # called once per call, as after every epoch of fit
            assert [k for k, _ in CALLS] == [1, 2]
    else:  # the weights changed
        assert est.coef_.shape != reference.coef_.shape or not np.array_equal(
            est.coef_, reference.coef_)


CELLS = [(param, path) for param in VALUES for path in PATHS]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("param, path", CELLS, ids=[f"{p}-{q}" for p, q in CELLS])
def test_option_path(param, path, request):
    cell = TABLE[param][path]
    if cell == "same" or cell[0] == "n/a":
        est, reference = _run(param, path, request)
        if cell == "same":
            _check_same(param, path, est, reference)
        return
    with pytest.raises(ValueError, match=cell[1]):
        _run(param, path, request)


def test_table_covers_every_parameter():
    assert set(TABLE) == set(CRFTagger().get_params())
    for param, row in TABLE.items():
        for path, cell in row.items():
            assert cell == "same" or (cell[0] in ("refused", "n/a") and cell[1]), (param, path)
            if cell != "same" and cell[0] == "refused":
                re.compile(cell[1])


def test_lop_pool_predicts_in_the_scheme_of_the_labels_given(tmp_path):
    lop = LOPTagger(estimator=CRFTagger(tag_scheme="iobes")).fit(X, Y)
    assert lop.pool_.tag_schemes_ == ("iob2", "iobes")
    assert {"E-NP", "S-NP"} <= set(lop.classes_.tolist())  # trained in IOBES
    predicted = lop.predict(X)
    assert {label for seq in predicted for label in seq} <= set(CLASSES)  # answered in IOB2
    assert lop.with_weights([0.7, 0.3]).predict(X) == lop.with_weights([0.7, 0.3]).pool_.predict(X)
    save_model(lop, tmp_path / "lop")
    assert load_model(tmp_path / "lop").predict(X) == predicted
