"""Input validation for sequence data: one entry point for fit and predict.

Public X is a list of sequences; each sequence is either a list of per-token
feature dicts (sklearn-crfsuite style) or a 2-D array / sparse matrix of
shape (n_tokens_i, n_features). Internally a batch is one CSR matrix of
shape (n_tokens, n_features) plus ``offsets`` of shape (n_sequences + 1,).
"""

from collections.abc import Mapping
from itertools import chain

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array

from ._vocabulary import exact_dicts

__all__ = ["check_finite_tokens", "check_sample_weight", "check_sequences",
           "check_token_weight", "encode_known_labels", "encode_labels"]


def _sequence_kind(i, x):
    """'dict', 'array' or 'empty' for sequence ``i``; TypeError otherwise."""
    if sp.issparse(x):
        if x.ndim != 2:
            raise ValueError(f"Sequence {i}: expected a 2-D sparse matrix, got shape {x.shape}.")
        return "array" if x.shape[0] else "empty"
    if isinstance(x, np.ndarray):
        if x.ndim != 2:
            raise ValueError(
                f"Sequence {i}: expected a 2-D array of shape (n_tokens, n_features), "
                f"got an array of shape {x.shape}."
            )
        return "array" if x.shape[0] else "empty"
    if isinstance(x, (str, bytes, Mapping)) or not hasattr(x, "__len__"):
        raise TypeError(
            f"Sequence {i}: expected a list of per-token feature dicts or a 2-D array, "
            f"got {type(x).__name__}. X must be a list of sequences."
        )
    if len(x) == 0:
        return "empty"
    kinds = {isinstance(tok, Mapping) for tok in x}
    if kinds == {True}:
        return "dict"
    if kinds == {False}:
        bad = next(tok for tok in x)
        if isinstance(bad, (str, bytes)) or not hasattr(bad, "__len__"):
            raise TypeError(
                f"Sequence {i}: tokens must be feature dicts or rows of numbers, got "
                f"{type(bad).__name__} ({bad!r:.40})."
            )
        return "rows"
    raise TypeError(f"Sequence {i}: mixes feature dicts with other token types.")


def _dict_tokens(X):
    """The tokens of X laid end to end if it is the common case, else None.

    The common case: every sequence a non-empty list of tokens of type
    ``dict`` exactly, which :func:`_sequence_kind` would find token by
    token. Here the lists are checked one by one and the tokens in one
    compiled pass; anything else (an empty sequence, an array, a mapping
    of another type, a bad token) returns None for the per-sequence checks
    and their messages.
    """
    for x in X:
        if type(x) is not list or not x:
            return None
    tokens = list(chain.from_iterable(X))
    return tokens if exact_dicts(tokens) else None


def _as_sequence_list(X, name="X"):
    if isinstance(X, (str, bytes, Mapping)) or sp.issparse(X) or not hasattr(X, "__len__"):
        raise TypeError(
            f"{name} must be a list of sequences, got {type(X).__name__}."
        )
    if isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype != object:
        if name == "y":
            raise TypeError(
                f"y must be a list of label sequences (one list or 1-D array of labels per "
                f"sequence of X), got a single 2-D array of shape {X.shape}; if each of its "
                f"{X.shape[0]} rows holds the labels of one sequence, pass list(y).")
        raise TypeError(
            f"{name} must be a list of sequences (one 2-D array per sequence), got a single "
            f"2-D array of shape {X.shape}."
        )
    return list(X)


def check_sequences(X, *, kind=None, n_features=None, allow_empty=False):
    """Check a list of sequences and stack it into one batch.

    Parameters
    ----------
    X : list of sequences
        Each a list of feature dicts, or a 2-D array / sparse matrix of shape
        (n_tokens_i, n_features), or a list of rows.
    kind : {'dict', 'array'} or None, default=None
        The kind every non-empty sequence must have (the fitted kind at
        predict time); None accepts either but not a mix.
    n_features : int or None, default=None
        Required width of array sequences (the fitted ``n_features_in_``).
    allow_empty : bool, default=False
        Whether empty sequences are allowed (predict) or an error (fit).

    Returns
    -------
    kind : {'dict', 'array'}
        The kind of the data ('array' when every sequence is empty).
    tokens : list of dict or scipy.sparse.csr_matrix of shape (n_tokens, n_features)
        The feature dicts of all tokens in order, or one CSR matrix (float64).
    offsets : ndarray of intp of shape (n_sequences + 1,)

    Raises
    ------
    TypeError
        If X is not a list of sequences or a token is neither a dict nor a row.
    ValueError
        On mixed kinds, an empty sequence when not allowed, a width
        different from ``n_features``, or NaN / infinite feature values; the
        message names the sequence index.
    """
    X = _as_sequence_list(X)
    tokens = _dict_tokens(X)
    if tokens is not None:
        kinds = ["dict"]
    else:
        kinds = []
        for i, x in enumerate(X):
            k = _sequence_kind(i, x)
            if k == "empty" and not allow_empty:
                raise ValueError(
                    f"Sequence {i} is empty; remove empty sequences before fit "
                    "(predict accepts them and returns an empty array)."
                )
            kinds.append("array" if k == "rows" else k)
    present = {k for k in kinds if k != "empty"}
    if len(present) > 1:
        first = {k: kinds.index(k) for k in present}
        raise ValueError(
            "X mixes sequences of feature dicts (e.g. sequence "
            f"{first['dict']}) with arrays (e.g. sequence {first['array']})."
        )
    data_kind = next(iter(present)) if present else (kind or "array")
    if kind is not None and data_kind != kind:
        raise ValueError(
            f"The estimator was fitted on {kind} sequences but X holds {data_kind} sequences."
        )
    if tokens is not None:  # lists
        lengths = np.fromiter(map(len, X), dtype=np.intp, count=len(X))
    else:
        lengths = np.array([len(x) if not (sp.issparse(x) or isinstance(x, np.ndarray))
                            else x.shape[0] for x in X], dtype=np.intp)
    offsets = np.zeros(len(X) + 1, dtype=np.intp)
    np.cumsum(lengths, out=offsets[1:])
    if data_kind == "dict":
        if tokens is None:
            tokens = list(chain.from_iterable(X))
        return data_kind, tokens, offsets
    blocks = []
    width = n_features
    for i, x in enumerate(X):
        if lengths[i] == 0:
            continue
        try:
            block = check_array(x, accept_sparse="csr", dtype=np.float64,
                                ensure_all_finite=True, ensure_min_samples=1)
        except ValueError as exc:
            raise ValueError(f"Sequence {i}: {exc}") from exc
        if width is None:
            width = block.shape[1]
        elif block.shape[1] != width:
            raise ValueError(
                f"Sequence {i} has {block.shape[1]} features, expected {width} "
                + ("as in the first sequence." if n_features is None else "as seen in fit.")
            )
        blocks.append(sp.csr_matrix(block))
    if not blocks:
        return data_kind, sp.csr_matrix((0, width or 0)), offsets
    return data_kind, sp.vstack(blocks, format="csr", dtype=np.float64), offsets


def check_finite_tokens(Xcsr, offsets):
    """Raise ValueError naming the first sequence with a NaN or infinite value."""
    bad = ~np.isfinite(Xcsr.data)
    if bad.any():
        row = np.searchsorted(Xcsr.indptr, np.flatnonzero(bad)[0], side="right") - 1
        seq = int(np.searchsorted(offsets, row, side="right") - 1)
        raise ValueError(f"Sequence {seq} has a NaN or infinite feature value (token {row - offsets[seq]}).")


def check_sample_weight(sample_weight, n_sequences):
    """One non-negative finite weight per sequence, as float64 (None if None).

    Raises
    ------
    ValueError
        If the weights are not numbers (naming the first that is not), not
        one per sequence, not finite or negative.
    """
    if sample_weight is None:
        return None
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(_not_weights(sample_weight, n_sequences)) from None
    if w.ndim == 0:
        w = np.full(n_sequences, float(w))
    if w.shape != (n_sequences,):
        raise ValueError(
            f"sample_weight must have one weight per sequence, shape ({n_sequences},), "
            f"got {w.shape}."
        )
    bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
    if bad.shape[0]:
        i = int(bad[0])
        value = sample_weight[i] if isinstance(sample_weight, list) else float(w[i])
        raise ValueError(f"sample_weight must be finite and non-negative, got {value!r} for "
                         f"sequence {i}.")
    return np.ascontiguousarray(w)


def _not_weights(sample_weight, n_sequences):
    """The message for a ``sample_weight`` that is not numbers, naming the first non-number."""
    what = f"{sample_weight!r:.60} ({type(sample_weight).__name__})"
    if (not isinstance(sample_weight, (str, bytes, Mapping))
            and hasattr(sample_weight, "__iter__")):
        for i, value in enumerate(sample_weight):
            try:
                float(value)
            except (TypeError, ValueError):
                what = f"{value!r:.60} ({type(value).__name__}) at index {i}"
                break
    return (f"sample_weight must be one non-negative number per sequence ({n_sequences} "
            f"of them) or a single number, got {what}.")


def _flat_labels(y, lengths):
    """The labels of all tokens in one list, after checking y's shape against X's lengths."""
    y = _as_sequence_list(y, name="y")
    if len(y) != len(lengths):
        raise ValueError(
            f"X and y have different numbers of sequences: {len(lengths)} and {len(y)}."
        )
    flat_y = []
    for i, (yi, n) in enumerate(zip(y, lengths)):
        if isinstance(yi, (str, bytes)) or not hasattr(yi, "__len__"):
            raise TypeError(
                f"y[{i}] must be a sequence of labels (a list or 1-D array), got "
                f"{type(yi).__name__}; y must be a list of label sequences."
            )
        if len(yi) != n:
            raise ValueError(
                f"Sequence {i} has {n} tokens but {len(yi)} labels."
            )
        flat_y.extend(yi)
    return flat_y


def _is_nan(label):
    """Whether ``label`` is a float NaN (which equals no label, itself included)."""
    return isinstance(label, (float, np.floating)) and label != label


def _totally_ordered(labels):
    """``labels`` sorted if ``<`` orders them totally (str, numbers, tuples of them), else None."""
    try:
        ordered = sorted(labels)
        if all(bool(a < b) for a, b in zip(ordered[:-1], ordered[1:])):
            return ordered
    except (TypeError, ValueError):  # ValueError: a numpy scalar against a tuple
        pass
    return None


def _order_classes(distinct):
    """The distinct labels in a deterministic order: sorted where they can be.

    Labels that ``<`` orders totally are sorted (as ``np.unique`` sorts
    them); a mix of types is sorted by type name, then by value within each
    type that can be sorted; a type whose values ``<`` does not order
    totally (frozensets, None, ...) keeps the order of first occurrence.
    """
    ordered = _totally_ordered(distinct)
    if ordered is not None:
        return ordered
    groups = {}
    for label in distinct:
        t = type(label)
        groups.setdefault((t.__module__, t.__qualname__), []).append(label)
    result = []
    for key in sorted(groups):
        result.extend(_totally_ordered(groups[key]) or groups[key])
    return result


def classes_array(labels):
    """A 1-D array of the labels that gives each of them back unchanged.

    ``np.asarray`` would flatten tuple labels, convert a mix of ints and
    strings to strings and compare frozensets element-wise; the array is
    of the labels' own dtype when they are all strings (or all Python
    ``int``, ``float``, ``bool``), so ``tolist()`` gives equal values,
    else of dtype object holding the labels themselves.

    Parameters
    ----------
    labels : list of hashable

    Returns
    -------
    ndarray of shape (len(labels),)
    """
    if labels and all(isinstance(label, str) for label in labels):  # numpy's str_ too
        return np.array(labels, dtype=str)
    for types, dtype in ((int, np.int64), (float, np.float64), (bool, np.bool_)):
        if labels and all(type(label) is types for label in labels):
            try:
                out = np.array(labels, dtype=dtype)
            except OverflowError:  # ints beyond int64
                break
            if out.ndim == 1:
                return out
    out = np.empty(len(labels), dtype=object)
    out[:] = labels  # element by element: no flattening of tuples
    return out


def encode_labels(y, lengths):
    """Check label sequences and encode them as indices into the sorted labels.

    Labels are any hashable values (str, int, tuples, frozensets, None,
    numpy scalars, ...), compared as dictionary keys; the classes give back
    the values seen in fit unchanged.

    Parameters
    ----------
    y : list of sequences of hashable labels
    lengths : ndarray of int of shape (n_sequences,)

    Returns
    -------
    classes : ndarray of shape (n_classes,)
        The distinct labels, sorted where ``<`` orders them (see
        :func:`classes_array` for the dtype).
    y_enc : ndarray of intp of shape (n_tokens,)
        ``classes[y_enc[t]]`` is token ``t``'s label.

    Raises
    ------
    ValueError
        If the number of label sequences or any sequence's length differs
        from X's (naming the sequence index), a label is NaN, or there are
        fewer than two distinct labels.
    TypeError
        If y is not a list of label sequences, or a label is not hashable
        (naming the sequence and token).
    """
    flat_y = _flat_labels(y, lengths)
    try:  # the distinct labels in order of first occurrence, in one C-level pass
        distinct = list(dict.fromkeys(flat_y))
    except TypeError:  # an unhashable label
        distinct = None
    # A NaN label is among the distinct ones (it equals nothing but itself).
    if distinct is None or any(_is_nan(label) for label in distinct):
        _raise_for_bad_label(flat_y, lengths)
    if len(distinct) < 2:
        raise ValueError(
            f"y has a single label {distinct[0]!r}; a CRF needs at least two distinct labels."
            if distinct else "y has no labels; a CRF needs at least two distinct labels."
        )
    ordered = _order_classes(distinct)
    codes = dict(zip(ordered, range(len(ordered))))
    return classes_array(ordered), np.fromiter(map(codes.__getitem__, flat_y), dtype=np.intp,
                                               count=len(flat_y))


def _raise_for_bad_label(flat_y, lengths):
    """The error of the first token whose label is unhashable or NaN (naming its sequence)."""
    codes = {}
    for t, label in enumerate(flat_y):
        try:
            codes.setdefault(label, None)
        except TypeError:
            i, token = _locate(t, lengths)
            raise TypeError(
                f"Sequence {i}, token {token}: label {label!r:.60} of type "
                f"{type(label).__name__} is not hashable; labels must be hashable values "
                "(str, int, tuple, frozenset, ...), e.g. a tuple instead of a list."
            ) from None
        if _is_nan(label):
            i, token = _locate(t, lengths)
            raise ValueError(f"Sequence {i}, token {token}: the label is NaN, which equals no "
                             "label (itself included); use another value such as None.")


def _locate(t, lengths):
    """(sequence index, token index) of flat token ``t``."""
    ends = np.cumsum(lengths)
    i = int(np.searchsorted(ends, t, side="right"))
    return i, int(t - (ends[i - 1] if i else 0))


def check_token_weight(token_weight, lengths):
    """Flatten per-token weights (a list of per-sequence arrays); None stays None.

    Parameters
    ----------
    token_weight : list of array-like or None
        One array of ``lengths[i]`` non-negative weights per sequence.
    lengths : ndarray of int of shape (n_sequences,)

    Returns
    -------
    ndarray of float64 of shape (n_tokens,) or None

    Raises
    ------
    TypeError
        If it is not a list of arrays.
    ValueError
        On a wrong number of sequences or weights (naming the sequence), or
        a negative or non-finite weight.
    """
    if token_weight is None:
        return None
    if isinstance(token_weight, (str, bytes)) or not hasattr(token_weight, "__len__"):
        raise TypeError("token_weight must be a list of per-token weight arrays")
    if len(token_weight) != lengths.shape[0]:
        raise ValueError(
            f"token_weight has {len(token_weight)} sequences, X has {lengths.shape[0]}"
        )
    parts = []
    for i, (tw, n) in enumerate(zip(token_weight, lengths)):
        tw = np.asarray(tw, dtype=np.float64).ravel()
        if tw.shape[0] != n:
            raise ValueError(f"token_weight[{i}] has {tw.shape[0]} weights, sequence has {n} tokens")
        parts.append(tw)
    flat = np.concatenate(parts) if parts else np.zeros(0)
    bad = ~np.isfinite(flat) | (flat < 0)
    if np.any(bad):
        at = int(np.argmax(bad))
        seq = int(np.searchsorted(np.cumsum(lengths), at, side="right"))
        token = at - int(np.sum(lengths[:seq]))
        raise ValueError(f"token_weight must be finite and non-negative, got "
                         f"{float(flat[at])!r} for sequence {seq}, token {token}")
    return flat


def encode_known_labels(y, lengths, classes):
    """Encode label sequences as indices into the fitted ``classes`` (predict time).

    Parameters
    ----------
    y : list of sequences of hashable labels
    lengths : ndarray of int of shape (n_sequences,)
        The lengths of X's sequences (empty ones allowed).
    classes : ndarray of shape (n_classes,)
        The labels seen in fit.

    Returns
    -------
    ndarray of intp of shape (n_tokens,)

    Raises
    ------
    ValueError
        On a different number of sequences, a sequence of a different length
        (naming its index) or a label not in ``classes``.
    TypeError
        If y is not a list of label sequences, or a label is not hashable
        (naming the sequence and token).
    """
    flat_y = _flat_labels(y, lengths)
    index = {label: j for j, label in enumerate(classes.tolist())}
    try:
        codes = np.array([index.get(label, -1) for label in flat_y], dtype=np.intp)
    except TypeError:  # an unhashable label: encode_labels names it
        encode_labels(y, lengths)
        raise
    bad = np.flatnonzero(codes < 0)
    if bad.shape[0]:
        i = int(np.searchsorted(np.cumsum(lengths), bad[0], side="right"))
        raise ValueError(f"Sequence {i}: label {flat_y[bad[0]]!r} is not one of the classes "
                         f"seen in fit {list(index)}.")
    return codes
