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
"""

from numbers import Number

__all__ = ["SEPARATOR", "attribute_key", "crfsuite_attributes", "join_nested_keys"]

#: Between a key and its string value, and between the keys of nested dicts.
SEPARATOR = ":"


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
