"""Feature-dict values checked one by one: hashing input and clear messages.

:func:`hashed_pairs` turns feature dicts into the ``(name, value)`` pairs
of :class:`~sklearn.feature_extraction.FeatureHasher` with the naming of
the vocabulary (python-crfsuite's: ``'key:value'`` for a string, ``'key'``
for a number, one ``'key:s'`` per string of a list, nested keys joined by
``':'``), so
that ``feature_hashing`` accepts the values the vocabulary path accepts.
:func:`raise_for_bad_value` finds the token behind a failed vectorisation
and names it. :func:`take_columns` keeps the used columns of a (hashed)
matrix without scipy's column indexing, whose work arrays are as long as
the number of columns (2**31 with ``feature_hashing=2**31 - 1``).
"""

import numbers
from collections.abc import Iterable, Mapping

import numpy as np
import scipy.sparse as sp

from ._attribute_names import BIGRAM_PREFIX, SEPARATOR, join_nested_keys

__all__ = ["hashed_pairs", "raise_for_bad_value", "take_columns"]

_SEP = SEPARATOR


def _token_position(index, offsets):
    """(sequence, token in it) of the flat token ``index``."""
    seq = int(np.searchsorted(offsets, index, side="right") - 1)
    return seq, index - int(offsets[seq])


def _pairs(token, where):
    """The ``(name, value)`` pairs of one feature dict; ``where()`` names it in errors."""
    pairs = []
    for key, value in token.items():
        if not isinstance(key, str):
            raise TypeError(
                f"{where()}: feature name {key!r} is of type {type(key).__name__}; feature "
                f"names must be strings (e.g. str({key!r})).")
        if isinstance(value, str):
            pairs.append((f"{key}{_SEP}{value}", 1.0))
        elif isinstance(value, (bool, np.bool_)):
            pairs.append((key, float(value)))
        elif isinstance(value, numbers.Real):
            try:
                pairs.append((key, float(value)))
            except OverflowError:
                raise ValueError(
                    f"{where()}: the value of feature {key!r} (an integer of "
                    f"{len(str(abs(int(value))))} digits) is too large for a float64; scale "
                    "it (e.g. its logarithm) or pass it as a string.") from None
        elif isinstance(value, Iterable) and not isinstance(value, (bytes, bytearray, Mapping)):
            for item in value:
                if not isinstance(item, str):
                    raise TypeError(
                        f"{where()}: feature {key!r} holds a list with the "
                        f"{type(item).__name__} {item!r:.40}; a list value must hold "
                        "strings (one 'key=string' attribute each).")
                pairs.append((f"{key}{_SEP}{item}", 1.0))
        else:
            hint = (" (decode bytes to str)" if isinstance(value, (bytes, bytearray))
                    else " (leave the key out of the dict when there is no value)"
                    if value is None else "")
            raise TypeError(
                f"{where()}: the value of feature {key!r} is of type {type(value).__name__} "
                f"({value!r:.40}); feature values must be str, a number, bool or a list of "
                f"str{hint}.")
    return pairs


def hashed_pairs(tokens, offsets):
    """The FeatureHasher input (``input_type='pair'``) of a batch of feature dicts.

    Parameters
    ----------
    tokens : list of dict
        The feature dicts of all tokens, sequences laid end to end.
    offsets : ndarray of intp of shape (n_sequences + 1,)
        Sequence boundaries, for the messages.

    Returns
    -------
    list of list of (str, float)
        One list of pairs per token.

    Raises
    ------
    TypeError
        On a key that is not a string, or a value that is not a str, a
        number, a bool or a list of str (the message names the sequence,
        the token and the feature).
    ValueError
        On an integer too large for a float64 (naming them as well).
    """
    tokens = join_nested_keys(tokens)[0]  # nested dicts: ':'-joined keys, as the vocabulary
    for index, token in enumerate(tokens):
        if any(str(key).startswith(BIGRAM_PREFIX) for key in token):
            raise ValueError(
                "Sequence {}, token {}: ".format(*_token_position(index, offsets))
                + f"a key starting with {BIGRAM_PREFIX!r} (an observation-dependent label "
                "bigram, from a template's 'B' line with macros) cannot be hashed: "
                "feature_hashing keeps no attribute names; use feature_hashing=None.")
    out = []
    for index, token in enumerate(tokens):
        def where(index=index):
            return "Sequence {}, token {}".format(*_token_position(index, offsets))
        out.append(_pairs(token, where))
    return out


def raise_for_bad_value(tokens, offsets, exc):
    """Re-raise a vectoriser's error ``exc`` naming the token that caused it.

    Called only after a failure, so the checks cost nothing on valid input.

    Parameters
    ----------
    tokens : list of dict
    offsets : ndarray of intp of shape (n_sequences + 1,)
    exc : Exception
        The error of the vectoriser.

    Raises
    ------
    TypeError, ValueError
        The error of :func:`hashed_pairs` for the first bad token, or
        ``exc`` itself (as a TypeError or ValueError) if every value is of
        a supported type.
    """
    hashed_pairs(tokens, offsets)  # raises on the first bad token
    kind = ValueError if isinstance(exc, (ValueError, OverflowError)) else TypeError
    raise kind(f"Could not vectorise the feature dicts: {exc}") from exc


def take_columns(X, columns):
    """The columns ``columns`` (sorted, distinct) of a CSR matrix, in that order.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_rows, n_columns)
    columns : ndarray of int of shape (n_kept,)
        Sorted column indices.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n_rows, n_kept)
        Work and memory proportional to the stored entries, not to
        ``n_columns``.
    """
    X = sp.csr_matrix(X)
    if columns.shape[0] == 0:
        return sp.csr_matrix((X.shape[0], 0), dtype=X.dtype)
    pos = np.minimum(np.searchsorted(columns, X.indices), columns.shape[0] - 1)
    keep = columns[pos] == X.indices
    row = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))[keep]
    indptr = np.zeros(X.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=X.shape[0]), out=indptr[1:])
    return sp.csr_matrix((X.data[keep], pos[keep], indptr), shape=(X.shape[0], columns.shape[0]))
