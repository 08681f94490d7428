"""The pickle-free model file of :func:`sklearn_crfloss.io.save_model`: writing, checked reading.

A zip archive of one JSON document (``model.json``) and ``.npy`` arrays of
numbers; see :doc:`/user_guide/persistence` for the layout. Reading runs no
code from the file: arrays are read with ``allow_pickle=False`` and only
the classes named in ``_COMPONENTS`` and ``_ESTIMATORS`` are instantiated.
"""

import hashlib
import json
import os
import zipfile
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction import DictVectorizer
from sklearn.pipeline import Pipeline

from .._data import classes_array, SequenceVectorizer
from .._lop import normalised_weights
from .._model import saved_layout, SecondOrderLayout
from .._tagger import CRFTagger
from .._training import resolve_components
from .._utils import validate_params
from ._bounded_reading import check_dense_size, read_array_member, read_json_member, ZIP_ERRORS
from ..decoding import CONSTRAINTS, get_allowed
from ..features import TemplateFeatures
from ..lop import LOPTagger
from ..losses import LOSSES, get_loss, HammingCost, LabelCost
from ..priors import PRIORS, get_prior
from ..segments import TAG_SCHEMES
from ..solvers import SOLVERS, FitInfo

__all__ = ["FORMAT", "FORMAT_VERSION", "dict_features", "read_estimator", "write_estimator"]

#: The format name and version written in ``model.json``.
FORMAT = "sklearn-crfloss-model"
FORMAT_VERSION = 1
_JSON = "model.json"
#: The objects a parameter may hold, by kind: only these classes are rebuilt on load.
_COMPONENTS = {"loss": LOSSES, "prior": PRIORS, "solver": SOLVERS,
               "cost": {"hamming": HammingCost, "label": LabelCost}}
_ESTIMATORS = {"CRFTagger": CRFTagger, "LOPTagger": LOPTagger}
#: The values of ``stop_reason_`` (see ``ConvergenceMonitor``); None before any stage ran.
_STOP_REASONS = (None, "converged", "max_iter", "stalled", "early_stopping")


# ------------------------------------------------------------- parameters

class _Writer:
    """The JSON document and the arrays of a file being written."""

    def __init__(self):
        self.arrays = {}

    def array(self, name, value, dtype):
        value = np.ascontiguousarray(value, dtype=dtype)
        self.arrays[name] = value
        return name

    def encode(self, value, where):
        """A JSON value for a parameter value; ValueError for what the format cannot name.

        JSON scalars and lists stay as they are, a dict with string keys is
        a JSON object; everything else is an object with one ``'__tag__'``
        key: ``__float__`` (inf, nan), ``__tuple__``, ``__dict__`` (other
        keys, as pairs), ``__scalar__`` (a numpy number, with its dtype),
        ``__array__`` (the name of an array of the file),
        ``__component__`` (a registered loss, prior, solver or cost by name,
        with ``params``), ``__estimator__`` (a CRFTagger or LOPTagger, with
        ``params``).
        """
        if isinstance(value, np.generic) and value.dtype.kind in "biuf":  # kept as its type
            return {"__scalar__": value.dtype.str, "value": self.encode(value.item(), where)}
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, Integral):
            return int(value)
        if isinstance(value, Real):
            value = float(value)
            return value if np.isfinite(value) else {"__float__": repr(value)}
        if isinstance(value, list):
            return [self.encode(v, f"{where}[{k}]") for k, v in enumerate(value)]
        if isinstance(value, tuple):
            return {"__tuple__": [self.encode(v, f"{where}[{k}]") for k, v in enumerate(value)]}
        if isinstance(value, dict):
            if all(isinstance(k, str) and not k.startswith("__") for k in value):
                return {k: self.encode(v, f"{where}[{k!r}]") for k, v in value.items()}
            return {"__dict__": [[self.encode(k, where), self.encode(v, f"{where}[{k!r}]")]
                                 for k, v in value.items()]}
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            name = self.array(f"params/{len(self.arrays)}", value, value.dtype.newbyteorder("<"))
            return {"__array__": name}
        for kind, registry in _COMPONENTS.items():
            for name, cls in registry.items():
                if type(value) is cls:
                    return {"__component__": kind, "name": name,
                            "params": self.encode(value.get_params(deep=False), where)}
        if type(value) in _ESTIMATORS.values():
            return {"__estimator__": type(value).__name__,
                    "params": self.encode(value.get_params(deep=False), where)}
        raise ValueError(
            f"{where} is {value!r} ({type(value).__name__}), which a model file cannot hold: "
            "it stores numbers, strings, lists, registered losses, priors, solvers and costs "
            "by name, never code. Use a registered name (or set this parameter to its default) "
            "before saving, or store the model with skops.io, whose loader takes the types you "
            "trust.")


def _decode(value, arrays, where):
    """The parameter value of a JSON value (only registered classes are instantiated)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_decode(v, arrays, where) for v in value]
    if isinstance(value, dict) and not any(k.startswith("__") for k in value):
        return {k: _decode(v, arrays, where) for k, v in value.items()}
    if isinstance(value, dict) and len(value) == 1:
        (tag, body), = value.items()
        if tag == "__float__" and body in ("inf", "-inf", "nan"):
            return float(body)
        if tag == "__tuple__" and isinstance(body, list):
            return tuple(_decode(v, arrays, where) for v in body)
        if tag == "__dict__" and isinstance(body, list) and all(
                isinstance(p, list) and len(p) == 2 for p in body):
            return {_decode(k, arrays, where): _decode(v, arrays, where) for k, v in body}
        if tag == "__array__" and isinstance(body, str) and body in arrays:
            return arrays[body]
    elif isinstance(value, dict) and set(value) == {"__scalar__", "value"}:
        try:
            dtype = np.dtype(value["__scalar__"])
        except TypeError:
            dtype = None
        if dtype is not None and dtype.kind in "biuf":
            return dtype.type(_decode(value["value"], arrays, where))
    elif isinstance(value, dict) and set(value) == {"__component__", "name", "params"}:
        cls = _COMPONENTS.get(value["__component__"], {}).get(value["name"])
        if cls is not None and isinstance(value["params"], dict):
            return cls(**_decode(value["params"], arrays, where))
    elif isinstance(value, dict) and set(value) == {"__estimator__", "params"}:
        cls = _ESTIMATORS.get(value["__estimator__"])
        if cls is not None and isinstance(value["params"], dict):
            return cls(**_decode(value["params"], arrays, where))
    raise ValueError(f"{where}: {json.dumps(value)[:200]} is not a valid parameter value")


# ---------------------------------------------------------------- writing

def _features_record(features, w, prefix):
    """JSON record of a fitted SequenceVectorizer (arrays into ``w``)."""
    vec = features.vectorizer
    record = {"kind": features.kind, "n_features": int(features.n_features),
              "columns": None if features.columns is None else w.array(
                  f"{prefix}columns", features.columns, "<i8")}
    if features.kind == "array":
        record["n_input"] = int(features.n_input)
    elif isinstance(vec, DictVectorizer):
        record.update(vectorizer="dict", separator=vec.separator,
                      feature_names=[str(n) for n in vec.feature_names_])
    else:
        record.update(vectorizer="hashing", hash_features=int(vec.n_features))
    return record


def _tagger_record(est, w, prefix, with_features=True):
    """JSON record of a fitted CRFTagger; its weights go into ``w`` under ``prefix``."""
    L = est.classes_.shape[0]
    coef = est.coef_.T.ravel()  # (n_features, n_classes), flat index attribute * L + label
    index = np.flatnonzero(coef)
    w.array(prefix + "state_index", index, "<i8")
    w.array(prefix + "state_weight", coef[index], "<f8")
    for name in ("transition_", "start_", "end_"):
        w.array(prefix + name.rstrip("_"), getattr(est, name), "<f8")
    if getattr(est, "bigram_coef_", None) is not None:  # observation-dependent label bigrams
        w.array(prefix + "bigram_coef", est.bigram_coef_, "<f8")
    if getattr(est, "transition2_", None) is not None:  # a second-order chain
        w.array(prefix + "transition2", est.transition2_, "<f8")
        w.array(prefix + "allowed_pairs", est.allowed_pairs_, "|u1")
    classes = est.classes_
    return {
        "class": "CRFTagger",
        "params": w.encode(est.get_params(deep=False), "params"),
        "classes": {"dtype": classes.dtype.str, "values": w.encode(classes.tolist(), "classes_"),
                    "n": L},
        "features": _features_record(est._features, w, prefix) if with_features else None,
        "n_features_in": int(est.n_features_in_), "n_parameters": int(est.n_parameters_),
        "n_iter": int(est.n_iter_), "init_n_iter": int(est.init_n_iter_),
        "loss_curve": w.encode([float(v) for v in est.loss_curve_], "loss_curve_"),
        "converged": bool(est.converged_), "sparsity": float(est.sparsity_),
        "objective": w.encode(est.objective_, "objective_"),
        "stop_reason": w.encode(est.stop_reason_, "stop_reason_"),
        "validation_scores": w.encode(est.validation_scores_, "validation_scores_"),
        "best_validation_score": w.encode(est.best_validation_score_, "best_validation_score_"),
        "tag_schemes": w.encode(getattr(est, "tag_schemes_", None), "tag_schemes_"),
    }


def _checksum(document, arrays):
    """SHA-256 of the JSON document (without its checksum) and of every array, in name order."""
    h = hashlib.sha256(json.dumps({k: v for k, v in document.items() if k != "checksum"},
                                  sort_keys=True).encode())
    for name in sorted(arrays):
        a = arrays[name]
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return "sha256:" + h.hexdigest()


def _estimator_record(estimator, w, prefix):
    """JSON record of a fitted CRFTagger or LOPTagger; its arrays go into ``w`` under ``prefix``."""
    if isinstance(estimator, LOPTagger):
        return {
            "class": "LOPTagger",
            "params": w.encode(estimator.get_params(deep=False), "params"),
            "features": _features_record(estimator.pool_._features, w, f"{prefix}features/"),
            "pool": _tagger_record(estimator.pool_, w, f"{prefix}pool/", with_features=False),
            "experts": [_tagger_record(e, w, f"{prefix}experts/{k}/", with_features=False)
                        for k, e in enumerate(estimator.experts_)],
            "expert_columns": [w.array(f"{prefix}expert_columns/{k}", c, "<i8")
                               for k, c in enumerate(estimator.expert_columns_)],
            "weights": w.array(f"{prefix}weights", estimator.weights_, "<f8"),
            "weights_n_iter": int(estimator.weights_n_iter_),
        }
    return _tagger_record(estimator, w, prefix)


def _template_text(template):
    """A template parameter as data: the text of a template file, else the value itself."""
    if isinstance(template, os.PathLike):
        with open(template, encoding="utf-8") as f:
            return f.read()
    return template


def _step_record(name, step, w, prefix):
    """JSON record of one pipeline step; ValueError naming a step the format cannot hold."""
    if step is None or (isinstance(step, str) and step == "passthrough"):
        return {"class": "passthrough", "value": step}
    if type(step) is TemplateFeatures:
        params = step.get_params(deep=False)
        params["template"] = _template_text(params["template"])
        return {"class": "TemplateFeatures",
                "params": w.encode(params, f"step {name!r} parameters")}
    if type(step) in _ESTIMATORS.values():
        return _estimator_record(step, w, prefix)
    raise ValueError(
        f"Pipeline step {name!r} is {type(step).__module__}.{type(step).__qualname__}, which a "
        "model file cannot hold: it stores sklearn_crfloss's TemplateFeatures, CRFTagger and "
        "LOPTagger steps (and 'passthrough') as data, never code. Store such a pipeline with "
        "skops.io, whose loader takes the types you trust.")


def write_estimator(estimator, path):
    """Write a fitted CRFTagger, LOPTagger or Pipeline of them (checked by the caller)."""
    from .._version import __version__

    w = _Writer()
    if isinstance(estimator, Pipeline):
        body = {"class": "Pipeline", "verbose": bool(estimator.verbose),
                "steps": [[name, _step_record(name, step, w, f"steps/{k}/")]
                          for k, (name, step) in enumerate(estimator.steps)]}
    else:
        body = _estimator_record(estimator, w, "")
    document = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "sklearn_crfloss_version": __version__, "estimator": body,
                "arrays": {n: {"dtype": a.dtype.str, "shape": list(a.shape)}
                           for n, a in w.arrays.items()}}
    document["checksum"] = _checksum(document, w.arrays)
    text = json.dumps(document, allow_nan=False)  # before the file is opened
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr(_JSON, text)
        for name, a in w.arrays.items():
            with z.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, a, allow_pickle=False)


# ---------------------------------------------------------------- reading

def _read(path):
    """The JSON document and arrays of a model file, checked against each other.

    Every size is checked before it is allocated (``_bounded_reading``); the
    third value is the number of bytes of content the file really holds.
    """
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            if _JSON not in names:
                raise ValueError(f"{path} is not a sklearn-crfloss model file (no {_JSON})")
            document = read_json_member(z, _JSON, path)
            if not isinstance(document, dict) or document.get("format") != FORMAT:
                raise ValueError(f"{path} is not a sklearn-crfloss model file")
            if document.get("format_version") != FORMAT_VERSION:
                raise ValueError(
                    f"{path} has model format version {document.get('format_version')!r}; "
                    f"this sklearn-crfloss reads version {FORMAT_VERSION}.")
            stated = document.get("arrays")
            if not isinstance(stated, dict) or names != {_JSON} | {n + ".npy" for n in stated}:
                raise ValueError(f"{path}: the arrays in the file are not those model.json "
                                 "lists")
            arrays = {}
            content = z.getinfo(_JSON).file_size
            for name, spec in stated.items():
                a = read_array_member(z, name + ".npy", path)
                if not isinstance(spec, dict) or a.dtype.str != spec.get("dtype") or \
                        list(a.shape) != spec.get("shape"):
                    raise ValueError(f"{path}: array {name!r} has dtype {a.dtype.str} and "
                                     f"shape {list(a.shape)}, model.json states "
                                     f"{spec.get('dtype') if isinstance(spec, dict) else spec} "
                                     f"and {spec.get('shape') if isinstance(spec, dict) else ''}")
                arrays[name] = a
                content += a.nbytes
    except ZIP_ERRORS + (AttributeError, TypeError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(f"{path} is not a valid sklearn-crfloss model file (truncated or "
                         f"corrupt, or an unsupported zip feature): {type(exc).__name__}: "
                         f"{exc}") from None
    if document.get("checksum") != _checksum(document, arrays):
        raise ValueError(f"{path}: the checksum does not match the content; the file was "
                         "changed or damaged after it was written.")
    return document, arrays, content


def _check(condition, message):
    if not condition:
        raise ValueError(f"Inconsistent model file: {message}")


def _build_features(record, arrays, content, where):
    """A fitted SequenceVectorizer from its record (its own code names the columns)."""
    _check(isinstance(record, dict), f"{where} is missing")
    kind = record.get("kind")
    if kind == "array":
        n = record.get("n_input")
        _check(isinstance(n, int) and n >= 1, f"{where}: bad n_input")
        check_dense_size(n, 8, content, f"{where} (one name per input column)")
        features = SequenceVectorizer()
        features.fit_transform("array", sp.csr_matrix((0, n)), np.zeros(1, dtype=np.intp))
    elif kind == "dict" and record.get("vectorizer") == "hashing":
        n = record.get("hash_features")
        _check(isinstance(n, int) and n >= 1, f"{where}: bad hash_features")
        features = SequenceVectorizer(feature_hashing=n)
        features.fit_transform("dict", [{}], np.array([0, 1]))
        # The kept columns of the hasher's output, named as fit names them.
        columns = arrays.get(record.get("columns")) if isinstance(record.get("columns"), str) \
            else None
        _check(columns is not None and columns.ndim == 1 and (columns.size == 0 or (
            columns.min() >= 0 and columns.max() < n)), f"{where}: hashed columns")
        features.columns = columns.astype(np.intp)
        features.attributes = np.array([f"hash_{k}" for k in columns.tolist()], dtype=object)
        features.n_features = columns.shape[0]
        _check(features.n_features == record.get("n_features"), f"{where}: n_features")
        return features
    elif kind == "dict" and record.get("vectorizer") == "dict":
        names = record.get("feature_names")
        sep = record.get("separator")
        _check(isinstance(names, list) and all(isinstance(n, str) for n in names)
               and isinstance(sep, str) and sep, f"{where}: bad feature names or separator")
        _check(names == sorted(set(names)), f"{where}: feature names not sorted and distinct")
        features = dict_features(names, sep)
    else:
        raise ValueError(f"Inconsistent model file: {where} has an unknown kind of features")
    name = record.get("columns")
    _check(name is None or (isinstance(name, str) and name in arrays), f"{where}: columns")
    features = _select(features, None if name is None else arrays[name], where)
    _check(features.n_features == record.get("n_features"), f"{where}: n_features")
    return features


def dict_features(names, sep):
    """A fitted feature-dict vectoriser whose columns are ``names`` (sorted, distinct)."""
    features = SequenceVectorizer()
    features.fit_transform("dict", [dict.fromkeys(names, 1.0)], np.array([0, 1]))
    features.vectorizer.set_params(separator=sep)
    return features


def _select(features, columns, where):
    if columns is None:
        return features
    _check(columns.ndim == 1 and (columns.size == 0 or (
        columns.min() >= 0 and columns.max() < features.n_features)),
        f"{where}: column indices out of range")
    return features.select(columns)


def _make(cls, params, arrays, where):
    """An unfitted ``cls`` with the parameters of a record, validated as ``fit`` validates them."""
    _check(isinstance(params, dict), f"{where}: no parameters")
    try:
        est = cls(**_decode(params, arrays, f"{where} parameters"))
    except TypeError as exc:
        raise ValueError(f"Inconsistent model file: {where} parameters: {exc}") from None
    _validate(est, f"{where} parameters")
    return est


def _validate(est, where):
    """Check an estimator's parameters as its ``fit`` does, before anything is built.

    The declared constraints (``_parameter_constraints``) of the estimator
    and of a LOPTagger's ``estimator``, and a CRFTagger's loss, prior and
    solver resolved together (their hyperparameters and combination).

    Raises
    ------
    ValueError
        Naming the parameter, the value and where in the file it is.
    """
    try:
        validate_params(est)
        if isinstance(est, LOPTagger):
            if est.estimator is not None:
                _validate(est.estimator, f"{where} estimator")
            return
        resolve_components(est.loss, est.prior, est.solver, average=est.average, eta0=est.eta0,
                           random_state=est.random_state, init=est.init, warm=False)
    except (TypeError, ValueError) as exc:
        if str(exc).startswith("Inconsistent model file"):
            raise
        raise ValueError(f"Inconsistent model file: {where}: {exc}") from None


def _build_tagger(record, arrays, prefix, features, content, where):
    """A fitted CRFTagger from its record, every array checked against the stated sizes."""
    _check(isinstance(record, dict) and record.get("class") == "CRFTagger",
           f"{where} is not a CRFTagger record")
    est = _make(CRFTagger, record.get("params"), arrays, where)
    classes = record.get("classes")
    _check(isinstance(classes, dict) and isinstance(classes.get("values"), list),
           f"{where}: labels")
    try:  # the labels as fit stores them (their own dtype, or objects)
        values = classes_array(_decode(classes["values"], {}, f"{where} labels"))
        L = classes.get("n")
        ok = (isinstance(L, int) and values.ndim == 1 and values.shape[0] == L >= 2
              and len(set(values.tolist())) == L and values.dtype.str == classes.get("dtype"))
    except TypeError:  # unhashable labels
        ok = False
    _check(ok, f"{where}: the labels are not {classes.get('n')} distinct labels of dtype "
           f"{classes.get('dtype')}")
    n_feat = features.n_features
    if features.kind == "array":  # the width is a bare count: no names back it
        check_dense_size(n_feat, L, content, where)
    _check(record.get("n_features_in") == (
        features.n_input if features.kind == "array" else n_feat), f"{where}: n_features_in")
    index = arrays.get(prefix + "state_index")
    weight = arrays.get(prefix + "state_weight")
    shapes = {"transition": (L, L), "start": (L,), "end": (L,)}
    for name, shape in shapes.items():
        a = arrays.get(prefix + name)
        _check(a is not None and a.shape == shape and a.dtype == np.float64,
               f"{where}: {name} must be float64 of shape {shape} for {L} labels")
        _check(np.isfinite(a).all(), f"{where}: {name} has NaN or infinite values")
    _check(index is not None and weight is not None and index.ndim == 1
           and index.dtype.kind == "i" and weight.dtype == np.float64
           and weight.shape == index.shape, f"{where}: state weights")
    _check(index.size == 0 or (index[0] >= 0 and index[-1] < n_feat * L
                               and np.all(np.diff(index) > 0)),
           f"{where}: state weight indices outside {n_feat} attributes x {L} labels")
    _check(np.isfinite(weight).all(), f"{where}: state weights have NaN or infinite values")
    layout = saved_layout(arrays.get(prefix + "bigram_coef"), features.attributes, L,
                          index.astype(np.intp), where)
    theta = layout.pack(np.zeros((n_feat, L)), arrays[prefix + "transition"],
                        arrays[prefix + "start"], arrays[prefix + "end"])
    theta[:index.shape[0]] = weight
    if layout.n_bigram:
        theta[layout.n_base:] = arrays[prefix + "bigram_coef"].ravel()
    layout, theta = _second_order(layout, theta, arrays, prefix, L, where)
    info = FitInfo(n_iter=record.get("n_iter"), init_n_iter=record.get("init_n_iter"),
                   loss_curve=_decode(record.get("loss_curve"), {}, where),
                   converged=record.get("converged"), stop_reason=record.get("stop_reason"),
                   objective=_decode(record.get("objective"), {}, where),
                   validation_scores=_decode(record.get("validation_scores"), {}, where),
                   best_validation_score=_decode(record.get("best_validation_score"), {}, where))
    _check(isinstance(info.n_iter, int) and isinstance(info.init_n_iter, int)
           and min(info.n_iter, info.init_n_iter) >= 0
           and isinstance(info.loss_curve, list) and isinstance(info.converged, bool)
           and isinstance(info.objective, float) and info.stop_reason in _STOP_REASONS,
           f"{where}: fit statistics (n_iter, init_n_iter, loss_curve, converged, objective, "
           f"stop_reason in {_STOP_REASONS})")
    est._set_fitted(features, values, layout, theta, info, get_loss(est.loss),
                    get_prior(est.prior))
    est.tag_schemes_ = _tag_schemes(record.get("tag_schemes"), values, where)
    est.n_parameters_ = record.get("n_parameters")
    est.sparsity_ = record.get("sparsity")
    _check(isinstance(est.n_parameters_, int) and est.n_parameters_ >= 0
           and isinstance(est.sparsity_, float) and 0.0 <= est.sparsity_ <= 1.0,
           f"{where}: n_parameters or sparsity")
    return est


def _tag_schemes(value, classes, where):
    """The ``tag_schemes_`` of a record, checked against the labels (None if not stated).

    Files of versions that did not write it hold no tag schemes.
    """
    schemes = _decode(value, {}, f"{where} tag_schemes")
    if schemes is None:
        return None
    _check(isinstance(schemes, tuple) and len(schemes) == 2 and schemes[0] in TAG_SCHEMES
           and schemes[1] in CONSTRAINTS,
           f"{where}: tag_schemes {schemes!r} is not a pair (scheme of the labels given to "
           f"fit in {TAG_SCHEMES}, training scheme in {sorted(CONSTRAINTS)})")
    try:
        get_allowed(schemes[1], classes)  # the labels are those of the training scheme
    except ValueError as exc:
        raise ValueError(f"Inconsistent model file: {where}: tag_schemes {schemes!r}: "
                         f"{exc}") from None
    return schemes


def _second_order(layout, theta, arrays, prefix, n_labels, where):
    """The layout and ``theta`` with a second-order record's trigram weights (if it has them)."""
    trigram, allowed = arrays.get(prefix + "transition2"), arrays.get(prefix + "allowed_pairs")
    if trigram is None and allowed is None:
        return layout, theta
    L = n_labels
    _check(trigram is not None and allowed is not None and trigram.shape == (L, L, L)
           and trigram.dtype == np.float64 and np.isfinite(trigram).all()
           and allowed.shape == (L, L) and allowed.dtype == np.uint8 and allowed.max() <= 1,
           f"{where}: transition2 must be finite float64 of shape {(L, L, L)} with "
           f"allowed_pairs of shape {(L, L)} (0 or 1)")
    layout = SecondOrderLayout(layout, allowed.astype(bool))
    outside = np.ones(L ** 3, dtype=bool)
    outside[layout.states.triple_index] = False
    _check(not np.any(trigram.ravel()[outside]),
           f"{where}: transition2 has weights on label triples that allowed_pairs forbids")
    return layout, np.concatenate([theta, trigram.ravel()[layout.states.triple_index]])


def _build_estimator(body, arrays, prefix, content, where):
    """A fitted CRFTagger or LOPTagger from its record."""
    _check(isinstance(body, dict), f"{where}: no estimator")
    if body.get("class") == "LOPTagger":
        features = _build_features(body.get("features"), arrays, content, f"{where} features")
        est = _make(LOPTagger, body.get("params"), arrays, where)
        pool = _build_tagger(body.get("pool"), arrays, f"{prefix}pool/", features, content,
                             f"{where} pool")
        columns = [arrays.get(n) if isinstance(n, str) and n.startswith(prefix) else None
                   for n in body.get("expert_columns", [])]
        experts = body.get("experts")
        _check(isinstance(experts, list) and len(columns) == len(experts) >= 1
               and all(c is not None and c.dtype.kind == "i" for c in columns),
               f"{where}: experts and their columns")
        est.experts_ = [
            _build_tagger(r, arrays, f"{prefix}experts/{k}/",
                          _select(features, c, f"{where} expert {k}"), content,
                          f"{where} expert {k}") for k, (r, c) in enumerate(zip(experts, columns))]
        est.expert_columns_ = [c.astype(np.intp) for c in columns]
        weights = arrays.get(body.get("weights")) if isinstance(body.get("weights"), str) \
            else None
        _check(weights is not None and weights.dtype == np.float64, f"{where}: LOP weights")
        try:  # as with_weights checks them
            normalised = normalised_weights(weights, len(experts), f"{where}'s pool")
        except ValueError as exc:
            raise ValueError(f"Inconsistent model file: {where}: LOP weights: {exc}") from None
        _check(np.allclose(normalised, weights, rtol=1e-12, atol=0),
               f"{where}: LOP weights {weights.tolist()} do not sum to 1")
        _check(all(np.array_equal(e.classes_, pool.classes_) for e in est.experts_),
               f"{where}: the experts' labels are not the pool's")
        est.weights_ = weights
        est.weights_n_iter_ = body.get("weights_n_iter")
        est.pool_ = pool
        est.classes_ = pool.classes_
        est.attributes_ = features.attributes
        est.n_features_in_ = pool.n_features_in_
        return est
    features = _build_features(body.get("features"), arrays, content, f"{where} features")
    return _build_tagger(body, arrays, prefix, features, content, where)


def _build_step(record, arrays, prefix, content, where):
    """One fitted pipeline step from its record."""
    _check(isinstance(record, dict), f"{where} is not a record")
    kind = record.get("class")
    if kind == "passthrough":
        _check(record.get("value") in (None, "passthrough"), f"{where}: passthrough value")
        return record["value"]
    if kind == "TemplateFeatures":
        _check(isinstance(record.get("params"), dict), f"{where}: no parameters")
        step = TemplateFeatures(**_decode(record["params"], {}, f"{where} parameters"))
        try:
            return step.fit([])  # the template is all its fitted state
        except (TypeError, ValueError) as exc:
            raise ValueError(f"Inconsistent model file: {where}: {exc}") from None
    _check(kind in _ESTIMATORS, f"{where} has an unknown class {kind!r}")
    return _build_estimator(record, arrays, prefix, content, where)


def read_estimator(path):
    """The fitted estimator or Pipeline of a model file, all checked first (``load_model``)."""
    document, arrays, content = _read(path)
    body = document.get("estimator")
    _check(isinstance(body, dict), "no estimator")
    if body.get("class") != "Pipeline":
        return _build_estimator(body, arrays, "", content, "estimator")
    steps = body.get("steps")
    _check(isinstance(steps, list) and len(steps) >= 1 and all(
        isinstance(s, list) and len(s) == 2 and isinstance(s[0], str) for s in steps)
        and len({s[0] for s in steps}) == len(steps), "pipeline steps")
    _check(isinstance(body.get("verbose"), bool), "pipeline verbose")
    return Pipeline([(name, _build_step(record, arrays, f"steps/{k}/", content,
                                        f"pipeline step {name!r}"))
                     for k, (name, record) in enumerate(steps)], verbose=body["verbose"])
