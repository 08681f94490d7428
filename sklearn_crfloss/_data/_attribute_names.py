"""Attribute names of feature dicts, as python-crfsuite (and sklearn-crfsuite) forms them.

python-crfsuite turns a token's feature dict into CRFsuite attributes
(``to_item`` of its ``_pycrfsuite.pyx``): a string value gives the attribute
``'key:value'`` of value 1; a number or a bool gives ``'key'`` with that
value; a nested dict gives its own attributes prefixed by ``'key:'``; a list
(or set) of strings gives ``'key:item'`` of value 1 for every item. The
vectoriser of :class:`~sklearn_crfloss.CRFTagger` follows the same rules
(scikit-learn's :class:`~sklearn.feature_extraction.DictVectorizer` with the
separator ``':'``, after :func:`join_nested_keys`), so ``attributes_`` and the
keys of ``state_features_`` are the names sklearn-crfsuite gives.

A vectoriser with another :class:`~sklearn.feature_extraction.DictVectorizer`
separator names a string feature ``'key=value'`` (``'='`` by default). :func:`crfsuite_name` maps one
name to the other; :mod:`sklearn_crfloss.io` writes and reads CRFsuite
files through it, and ``warm_start`` matches the attributes of an imported
CRFsuite model with it.
"""

from numbers import Number

import numpy as np
from sklearn.feature_extraction import DictVectorizer

__all__ = ["BIGRAM_PREFIX", "CRFSUITE_SEPARATOR", "SEPARATOR", "attribute_key", "crfsuite_attributes",
           "crfsuite_name", "join_nested_keys", "names_like", "separator"]

#: Between a key and its string value, and between the keys of nested dicts.
SEPARATOR = ":"

BIGRAM_PREFIX = "~"
"""The key prefix of a bigram attribute in a token's feature dict (str).

A feature dict entry whose key starts with ``"~"`` (``{"~B01": "NN"}``, as
:class:`~sklearn_crfloss.features.TemplateFeatures` writes a CRF++ line
``B01:%x[0,1]``) is an observation on the label bigram: the attribute
``"~B01:NN"`` gets an ``(n_labels, n_labels)`` block of transition weights
instead of state weights, active on the edge into the token.
"""


def _nested_items(features, prefix):
    """``(name, value)`` of the leaves of nested dicts, keys joined with ':'."""
    for key, value in features.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _nested_items(value, name + SEPARATOR)
        else:
            yield name, value


def join_nested_keys(tokens):
    """The tokens with nested dicts replaced by ':'-joined keys (others as given).

    ``{"shape": {"upper": True}}`` becomes ``{"shape:upper": True}``; the
    values of the leaves are kept (a string stays a string, so
    ``DictVectorizer(separator=':')`` names it ``'shape:kind:value'``).

    Parameters
    ----------
    tokens : list of dict
        The feature dicts of a batch of tokens.

    Returns
    -------
    tokens : list of dict
        The same list if no value is a dict, else a new list in which the
        dicts with nested values are flattened copies.
    changed : bool
        Whether a nested dict was found.

    Raises
    ------
    ValueError
        If two keys of one token join to the same name (e.g. ``'a:b'`` and
        ``{'a': {'b': ...}}``).
    """
    out = None
    for i, token in enumerate(tokens):
        if not any(isinstance(v, dict) for v in token.values()):
            if out is not None:
                out.append(token)
            continue
        if out is None:
            out = list(tokens[:i])
        flat = {}
        for name, value in _nested_items(token, ""):
            if name in flat:
                raise ValueError(f"the feature dict {token!r:.80} gives the attribute "
                                 f"{name!r} twice (a key and a nested key join to it)")
            flat[name] = value
        out.append(flat)
    return (tokens, False) if out is None else (out, True)


def crfsuite_attributes(features):
    """The CRFsuite attributes of one token's feature dict, named as python-crfsuite names them.

    Parameters
    ----------
    features : dict
        One token's features: str keys; values str, number, bool, a nested
        dict of the same form, or a list (or set) of str.

    Returns
    -------
    dict of {str: float}
        ``{attribute: value}``: ``'key:value'`` -> 1.0 for a string value,
        ``'key'`` -> the value for a number or bool, ``'key:'`` before the
        names of a nested dict, ``'key:item'`` -> 1.0 for each item of a
        list. These are the names of :attr:`CRFTagger.attributes_
        <sklearn_crfloss.CRFTagger.attributes_>` and of the keys of
        ``state_features_`` for feature-dict input, and those a CRFsuite
        model trained by sklearn-crfsuite on the same dicts holds. Zero
        values are kept here (the vectoriser drops them).

    Raises
    ------
    TypeError
        If a value has another type.

    Examples
    --------
    >>> from sklearn_crfloss.features import crfsuite_attributes
    >>> crfsuite_attributes({"word": "Madrid", "bias": 1.0, "upper": False,
    ...                      "shape": {"title": True, "kind": "Xx"}, "tags": ["a", "b"]})
    {'word:Madrid': 1.0, 'bias': 1.0, 'upper': 0.0, 'shape:title': 1.0, 'shape:kind:Xx': 1.0, 'tags:a': 1.0, 'tags:b': 1.0}
    """
    out = {}
    for name, value in _nested_items(features, ""):
        if isinstance(value, str):
            items = [(f"{name}{SEPARATOR}{value}", 1.0)]
        elif isinstance(value, Number):
            items = [(name, float(value))]
        elif isinstance(value, (list, tuple, set, frozenset)):
            items = [(f"{name}{SEPARATOR}{item}", 1.0) for item in value]
        else:
            raise TypeError(f"feature {name!r}: unsupported value type {type(value).__name__}")
        for attribute, x in items:  # a repeated attribute adds up, as in CRFsuite
            out[attribute] = out.get(attribute, 0.0) + x
    return out


def attribute_key(name, keys=None):
    """The feature-dict key an attribute name was formed from.

    Parameters
    ----------
    name : str
        An attribute name (``'key:value'`` or ``'key'``).
    keys : set of str or None, default=None
        The keys of the training dicts (nested keys joined with ``':'``).
        A key may itself hold ``':'`` (``'-1:word.lower()'``), so with the
        keys the answer is the longest of them that ``name`` is or starts
        with before a ``':'``; without them (or if none fits), the text
        before the first ``':'``.

    Returns
    -------
    str
    """
    name = str(name)
    if keys is not None:
        if name in keys:
            return name
        best = None
        i = name.find(SEPARATOR)
        while i >= 0:
            if name[:i] in keys:
                best = name[:i]
            i = name.find(SEPARATOR, i + 1)
        if best is not None:
            return best
    return name.split(SEPARATOR, 1)[0]


#: python-crfsuite's separator between a key and a string value.
CRFSUITE_SEPARATOR = ":"


def crfsuite_name(name, separator="="):
    """python-crfsuite's name of an attribute named with ``separator``.

    The key is the text before the first ``separator`` (feature keys
    such as sklearn-crfsuite's ``'-1:word.lower()'`` may hold ``':'``, a
    value may hold the separator); a name without it (a numeric feature)
    is already a python-crfsuite name, as is every name when ``separator``
    is ``':'``.

    Parameters
    ----------
    name : str
        An attribute name, e.g. ``'w[-1]=the'``.
    separator : str, default='='
        The vectoriser's separator between key and string value.

    Returns
    -------
    str
        E.g. ``'w[-1]:the'``.

    Examples
    --------
    >>> from sklearn_crfloss._data._attribute_names import crfsuite_name
    >>> crfsuite_name("-1:word.lower()=the"), crfsuite_name("bias"), crfsuite_name("w==")
    ('-1:word.lower():the', 'bias', 'w:=')
    """
    if separator == CRFSUITE_SEPARATOR:
        return name
    key, sep, value = name.partition(separator)
    return f"{key}{CRFSUITE_SEPARATOR}{value}" if sep else name


def separator(features):
    """The key/value separator of a fitted ``SequenceVectorizer``'s names (None: no keys).

    Parameters
    ----------
    features : SequenceVectorizer
        Fitted.

    Returns
    -------
    str or None
        The DictVectorizer's separator; None for hashed features and arrays,
        whose columns have no key/value names.
    """
    vectorizer = getattr(features, "vectorizer", None)
    return vectorizer.separator if isinstance(vectorizer, DictVectorizer) else None


def names_like(features, previous):
    """The attribute names of ``features`` in the naming convention of a previous model.

    ``warm_start`` matches a new fit's attributes with the previous
    model's by name; a model imported from CRFsuite has python-crfsuite
    names (:func:`crfsuite_name`), a new fit may name them otherwise.

    Parameters
    ----------
    features : SequenceVectorizer
        Fitted, of the new fit.
    previous : CRFTagger
        The fitted estimator being continued; its vectoriser (if it has
        one) tells its naming.

    Returns
    -------
    ndarray of object of shape (n_features,)
        ``features.attributes``, converted when ``previous`` uses
        python-crfsuite's separator and ``features`` another one.
    """
    old = separator(getattr(previous, "_features", None))
    new = separator(features)
    if old == CRFSUITE_SEPARATOR and new not in (None, CRFSUITE_SEPARATOR):
        return np.array([crfsuite_name(name, new) for name in features.attributes], dtype=object)
    return features.attributes
