"""Model files: a pickle-free native format, and CRFsuite model files.

- :func:`save_model` / :func:`load_model`: a fitted
  :class:`~sklearn_crfloss.CRFTagger` or :class:`~sklearn_crfloss.LOPTagger`,
  or a :class:`~sklearn.pipeline.Pipeline` of them with
  :class:`~sklearn_crfloss.features.TemplateFeatures`, in one file that holds only data: a zip archive of ``.npy`` arrays
  (numbers, no object arrays) and one JSON document (``model.json``: the
  parameters, labels, attribute names, loss, prior and solver by registered
  name with their parameters, the package and format versions, a SHA-256
  checksum of the content). Loading runs no code from the file, unlike
  pickle and joblib, and validates everything before it builds the
  estimator.
- :func:`export_crfsuite` / :func:`import_crfsuite`: CRFsuite 0.12 model
  files, read by CRFsuite's tagger and its bindings (python-crfsuite,
  sklearn-crfsuite, ...), with attribute names in python-crfsuite's
  convention.

See :doc:`/user_guide/persistence`.
"""

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from ._data import CRFSUITE_SEPARATOR, crfsuite_name, separator
from ._io import dict_features, read_estimator, read_model, write_estimator, write_model
from ._model import ParameterLayout
from ._tagger import CRFTagger
from .features import TemplateFeatures
from .lop import LOPTagger
from .losses import get_loss
from .priors import get_prior
from .solvers import FitInfo

__all__ = ["export_crfsuite", "import_crfsuite", "load_model", "save_model"]


def save_model(estimator, path):
    """Save a fitted CRFTagger, LOPTagger or Pipeline to a pickle-free model file.

    The file is a zip archive (deflated) of one JSON document,
    ``model.json`` (format name and version, package version, parameters,
    labels, attribute names or hashing size, fit statistics, the stated
    dtype and shape of every array, a SHA-256 checksum of the content), and
    ``.npy`` arrays of numbers: the non-zero state weights (flat index
    ``attribute * n_classes + label`` and value), transitions, start and
    end potentials, per CRF. :func:`load_model` reads it back.

    A :class:`~sklearn.pipeline.Pipeline` (from ``Pipeline`` or
    ``make_pipeline``) is saved step by step, in order, with the step
    names: :class:`~sklearn_crfloss.features.TemplateFeatures` by its
    template (the text of a template file, not its path),
    :class:`~sklearn_crfloss.CRFTagger` and
    :class:`~sklearn_crfloss.LOPTagger` as above, ``'passthrough'`` and
    ``None`` as they are. The pipeline's ``memory`` is not saved.

    Parameters
    ----------
    estimator : CRFTagger, LOPTagger or Pipeline
        Fitted. A Pipeline may hold only the steps named above. Parameters
        may hold numbers, strings, lists, tuples, dicts,
        numeric arrays and the registered losses, priors, solvers and costs
        (by name, with their parameters); not callables (``callback``,
        LOPTagger's callable ``experts``, ``reduced``, ``positions``), a
        ``RandomState`` or a user-defined loss or prior class.
    path : str or path-like
        The file to write (overwritten); ``.crfl`` or ``.zip`` are usual
        suffixes, none is required.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    TypeError
        If it is not a CRFTagger, LOPTagger or Pipeline.
    ValueError
        If a parameter, a label or a pipeline step cannot be stored (the
        message names it); nothing is written then.

    See Also
    --------
    load_model : Read the file back.
    export_crfsuite : Write a CRFsuite model file instead.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_crfloss import CRFTagger
    >>> from sklearn_crfloss.io import load_model, save_model
    >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}, {"w": "runs"}]]
    >>> y = [["B-NP", "I-NP"], ["B-NP", "I-NP", "B-VP"]]
    >>> crf = CRFTagger(C=10.0).fit(X, y)
    >>> path = os.path.join(tempfile.mkdtemp(), "tagger.crfl")
    >>> save_model(crf, path)
    >>> load_model(path).predict(X) == crf.predict(X)
    True

    A pipeline that turns token tuples into features with a CRF++ template:

    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_crfloss.features import TemplateFeatures
    >>> tokens = [[("the", "DT"), ("dog", "NN")], [("a", "DT"), ("cat", "NN"), ("runs", "VBZ")]]
    >>> model = make_pipeline(TemplateFeatures(["U00:%x[0,0]", "U01:%x[0,1]"]), CRFTagger())
    >>> model = model.fit(tokens, y)
    >>> save_model(model, path)
    >>> load_model(path).predict(tokens) == model.predict(tokens)
    True
    """
    if isinstance(estimator, Pipeline):
        for name, step in estimator.steps:  # other steps are refused by the writer, by name
            if type(step) in (TemplateFeatures, CRFTagger, LOPTagger):
                check_is_fitted(step, msg=f"Pipeline step {name!r} (%(name)s) is not fitted: "
                                          "fit the pipeline before saving it.")
    elif type(estimator) not in (CRFTagger, LOPTagger):
        raise TypeError(f"save_model saves a CRFTagger, a LOPTagger or a Pipeline of "
                        f"sklearn_crfloss steps, not {type(estimator).__name__}.")
    else:
        check_is_fitted(estimator)
    write_estimator(estimator, path)


def load_model(path):
    """Load a CRFTagger, LOPTagger or Pipeline saved by :func:`save_model`.

    Everything is checked before the estimator is built: the format and
    its version, the checksum over the JSON document and the arrays, every
    array's dtype and shape against ``model.json`` and against the numbers
    of labels and attributes it states, finite weights, index ranges, and
    the parameters (only registered losses, priors, solvers and costs are
    instantiated, by name). Arrays are read with ``allow_pickle=False``; no
    code from the file is run. The checksum detects damage, not a
    deliberate forgery: a forged file can at worst hold a wrong model.

    Every size the file states is checked before memory is allocated for
    it: a member may decompress to at most 1,100 times its compressed size
    (deflate's limit is 1,032), ``model.json`` to at most 1 GiB and nesting
    at most 64 levels, an array to at most 64 GiB, and each ``.npy``
    header's shape and dtype must give exactly the bytes of its member,
    which are read as they arrive. The width of array input, a bare count,
    may imply dense weights of at most 64 times the bytes the file really
    holds. Only stored and deflated members are read.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    CRFTagger, LOPTagger or Pipeline
        Fitted; it predicts exactly as the saved estimator did.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If the file is not a model file, was written by another format
        version, is truncated or damaged (zip CRC or checksum mismatch),
        uses a compression method other than stored or deflated, states a
        size above the limits above or other than the data it holds, or
        is inconsistent (the message says what is wrong).

    See Also
    --------
    save_model : Write the file.
    """
    return read_estimator(path)


# --------------------------------------------------------------- CRFsuite

def export_crfsuite(estimator, path):
    """Write a fitted CRFTagger as a CRFsuite 0.12 model file.

    The file holds the labels, the attributes with at least one non-zero
    weight (named as python-crfsuite names them: ``'key:value'`` for a
    string feature, ``'key'`` for a numeric one), the non-zero state
    weights (attribute, label) and transitions, as CRFsuite writes its
    own. ``pycrfsuite.Tagger().open(path)`` (or CRFsuite's ``crfsuite
    tag -m``, or another binding) then tags the feature dicts exactly as
    :meth:`~sklearn_crfloss.CRFTagger.predict` does.

    Parameters
    ----------
    estimator : CRFTagger or LOPTagger
        Fitted on feature dicts with string labels, trained with
        ``boundary_potentials=False`` and ``tag_scheme=None`` (a
        LOPTagger: its pool of such experts), predicting with
        ``decoder='viterbi'`` and ``constraints=None``.
    path : str or path-like
        The file to write (overwritten).

    Raises
    ------
    ValueError
        If the model cannot be represented exactly in CRFsuite's format,
        saying why: non-zero start or end potentials (CRFsuite has none:
        train with ``boundary_potentials=False``), array input (CRFsuite
        attributes are named), hashed features (the names are unknown),
        observation-dependent label bigrams (``bigram_coef_``: CRFsuite's
        transitions are one matrix),
        non-string labels, MEA decoding, decode-time constraints or a
        ``tag_scheme`` (the CRFsuite tagger runs plain Viterbi and returns
        the training labels), two attributes with the
        same python-crfsuite name, or a label or attribute name that UTF-8
        cannot encode (a lone surrogate). Nothing is written then.
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.

    See Also
    --------
    import_crfsuite : The other direction.

    Notes
    -----
    The layout follows CRFsuite's ``crf1d_model.c`` and ``cqdb.c``
    (N. Okazaki, CRFsuite: a fast implementation of conditional random
    fields, 2007). An attribute name is converted by
    :func:`sklearn_crfloss._data._attribute_names.crfsuite_name`: the key is the text
    before the first ``'='``, so feature keys must not contain ``'='``.
    """
    if isinstance(estimator, LOPTagger):
        check_is_fitted(estimator)
        estimator = estimator.pool_
    if not isinstance(estimator, CRFTagger):
        raise TypeError(f"export_crfsuite exports a CRFTagger or LOPTagger, not "
                        f"{type(estimator).__name__}.")
    check_is_fitted(estimator)
    reasons = []  # every reason at once, so that one refit fixes them all
    if np.any(estimator.start_ != 0) or np.any(estimator.end_ != 0):
        reasons.append("it has non-zero start/end potentials, which CRFsuite models do not "
                       "have; train it with boundary_potentials=False")
    if estimator.input_kind_ != "dict":
        reasons.append("it was trained on numeric arrays; CRFsuite attributes are named "
                       "feature-dict entries (train on feature dicts)")
    elif separator(estimator._features) is None:
        reasons.append("it uses hashed features (feature_hashing), whose attribute names are "
                       "unknown; train without feature_hashing")
    if (estimator.transition_.shape != 2 * estimator.classes_.shape
            or getattr(estimator, "bigram_coef_", None) is not None):
        reasons.append("its transitions depend on the observations; CRFsuite's are one matrix")
    if getattr(estimator, "transition2_", None) is not None:
        reasons.append("it is a second-order chain (order=2); CRFsuite's chains are first "
                       "order")
    if not all(isinstance(c, str) and "\0" not in c for c in estimator.classes_.tolist()):
        reasons.append("CRFsuite labels are strings (without NUL characters); its labels are "
                       "not")
    schemes = getattr(estimator, "tag_schemes_", None)
    if schemes is not None:
        reasons.append(
            "it was trained with tag_scheme={!r} (labels of {!r} converted, decoded under its "
            "constraints and converted back); CRFsuite's tagger returns the training labels "
            "with plain Viterbi (convert the labels with segments.convert_scheme and train "
            "with tag_scheme=None to export it)".format(schemes[1], schemes[0]))
    if estimator.decoder != "viterbi" or estimator.constraints is not None:
        reasons.append(
            "it decodes with decoder={!r}, constraints={!r}; CRFsuite's tagger runs plain "
            "Viterbi (set_params(decoder='viterbi', constraints=None) to export it)".format(
                estimator.decoder, estimator.constraints))
    if reasons:
        raise ValueError("Cannot export this model to CRFsuite: " + "; and ".join(reasons) + ".")
    W = np.asarray(estimator.coef_.T)  # (n_features, n_classes)
    attr, lab = np.nonzero(W)  # row-major: sorted by attribute
    used, new_attr = np.unique(attr, return_inverse=True)
    sep = separator(estimator._features)
    names = [crfsuite_name(str(n), sep) for n in estimator.attributes_[used]]
    if len(set(names)) < len(names) or any("\0" in n for n in names):
        raise ValueError("Cannot export this model to CRFsuite: two attributes have the same "
                         "python-crfsuite name (e.g. 'k=v' and a numeric 'k:v'), or a name "
                         "holds a NUL character.")
    _check_utf8(estimator.classes_.tolist(), "label")
    _check_utf8(names, "attribute")
    write_model(path, estimator.classes_.tolist(), names,
                (new_attr.ravel(), lab, W[attr, lab]), np.asarray(estimator.transition_))


def _check_utf8(strings, kind):
    """Refuse a label or attribute name that UTF-8 cannot encode (CRFsuite's strings are UTF-8).

    Raises
    ------
    ValueError
        Naming the string, the character and its position: a lone
        surrogate (``'\\ud800'``), as text decoded with
        ``errors='surrogateescape'`` holds.
    """
    for text in strings:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"Cannot export this model to CRFsuite: the {kind} {text!r:.80} holds "
                f"{text[exc.start]!r} at position {exc.start}, which UTF-8 cannot encode (a "
                "lone surrogate, e.g. from bytes decoded with errors='surrogateescape'); "
                "CRFsuite stores its strings in UTF-8. Fix the text (decode the input "
                "correctly) and refit. Nothing was written.") from None


def import_crfsuite(path):
    """A fitted CRFTagger from a CRFsuite model file (e.g. trained by sklearn-crfsuite).

    The labels, attributes and weights are read from the file (CRFsuite
    0.12, first-order, as CRFsuite, python-crfsuite and sklearn-crfsuite
    write it) with the file's full float64 precision. The estimator has
    ``boundary_potentials=False`` (start and end potentials 0, as in
    CRFsuite), the default loss and prior, and reads feature dicts as
    python-crfsuite does (``{'key': 'value'}`` is the attribute
    ``'key:value'``, ``{'key': number}`` the attribute ``'key'`` with that
    value; unknown attributes are ignored), so it predicts what
    sklearn-crfsuite predicts. Set ``warm_start=True`` (and a loss) to
    continue training it: the attributes of the new fit are matched with
    the imported ones by their python-crfsuite names.

    Parameters
    ----------
    path : str or path-like
        A CRFsuite model file (``CRF.model_filename`` of sklearn-crfsuite,
        ``pycrfsuite.Trainer.train(path)``).

    Returns
    -------
    CRFTagger
        Fitted: ``classes_`` sorted, ``coef_``, ``transition_``,
        ``start_ = end_ = 0``, ``attributes_`` the python-crfsuite names
        (sorted); ``n_iter_`` is 0, ``loss_curve_`` empty and
        ``objective_`` NaN (the training happened elsewhere).

    Raises
    ------
    ValueError
        If the file is not a CRFsuite first-order model of version 100, is
        truncated, inconsistent, has non-finite weights, or repeats a label
        or attribute name (the message says which).
    FileNotFoundError
        If the file does not exist.

    See Also
    --------
    export_crfsuite : The other direction.
    """
    model = read_model(path)
    labels, attributes = model.labels, model.attributes
    if len(set(labels)) < len(labels) or len(set(attributes)) < len(attributes):
        raise ValueError(f"{path}: the CRFsuite model repeats a label or attribute name.")
    if len(labels) < 2:
        raise ValueError(f"{path}: the CRFsuite model has {len(labels)} label(s); a CRF "
                         "needs at least two.")
    classes = np.array(sorted(labels))
    label_rank = np.searchsorted(classes, np.array(labels))
    attr_order = np.argsort(np.array(attributes, dtype=object), kind="stable")
    attr_rank = np.empty_like(attr_order)
    attr_rank[attr_order] = np.arange(attr_order.shape[0])
    L, A = len(labels), len(attributes)
    attr, lab, weight = model.state
    W = np.zeros((A, L))
    np.add.at(W, (attr_rank[attr], label_rank[lab]), weight)
    T = np.zeros((L, L))
    T[np.ix_(label_rank, label_rank)] = model.transition
    features = dict_features([attributes[i] for i in attr_order.tolist()], CRFSUITE_SEPARATOR)
    est = CRFTagger(boundary_potentials=False)
    index = np.unique(attr_rank[attr] * L + label_rank[lab]).astype(np.intp)
    layout = ParameterLayout(A, L, index, boundary=False)
    est._set_fitted(features, classes, layout, layout.pack(W, T, np.zeros(L), np.zeros(L)),
                    FitInfo(), get_loss(est.loss), get_prior(est.prior))
    return est

