"""Attribute names in python-crfsuite's convention, for CRFsuite model files.

python-crfsuite names the attribute of a string feature ``{'key': 'value'}``
``'key:value'`` (nested keys joined by ``':'`` too) and a numeric one
``'key'``. The feature-dict vectoriser names them with its
:class:`~sklearn.feature_extraction.DictVectorizer` separator
(``'key=value'`` by default, ``'key'``). :func:`crfsuite_name` maps one
name to the other; :mod:`sklearn_crfloss.io` writes and reads CRFsuite
files through it, and ``warm_start`` matches the attributes of an imported
CRFsuite model with it.
"""

import numpy as np
from sklearn.feature_extraction import DictVectorizer

__all__ = ["CRFSUITE_SEPARATOR", "crfsuite_name", "names_like", "separator"]

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
    >>> from sklearn_crfloss._naming import crfsuite_name
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
