"""``CRFTagger.fit`` on a stream of sequences: vectorised chunk by chunk.

A source that is not a list (an object whose ``__iter__`` yields the
sequences, e.g. a dataset reading them from files) is read a chunk of
``CHUNK_SIZE`` sequences at a time, and only that chunk's feature dicts
exist at once: the training data held in memory are the compact CSR
matrix the kernels read (int8 for indicator features), the labels and the
offsets. Without hashing the source is read twice (the attribute counts,
then the rows with the vocabulary they give, ``min_freq`` applied); with
``feature_hashing`` (and ``min_freq=1``) once, so a one-shot iterator such
as a generator is accepted there only.
"""

import re
from collections.abc import Iterator
from itertools import islice

import numpy as np
import scipy.sparse as sp

from ._validation import check_sample_weight, check_sequences, encode_labels
from ._vectorize import attribute_counts, SequenceVectorizer

__all__ = ["CHUNK_SIZE", "hashed_counts", "is_stream", "renumber_sequences", "vectorize_stream"]

#: Sequences vectorised at a time.
CHUNK_SIZE = 1000


def is_stream(X):
    """Whether X is a stream of sequences rather than a list (or array) of them.

    Parameters
    ----------
    X : object

    Returns
    -------
    bool
        True for an iterable without ``__len__`` that is not a string,
        mapping or array.
    """
    return (hasattr(X, "__iter__") and not hasattr(X, "__len__")
            and not isinstance(X, (str, bytes, dict)) and not sp.issparse(X))


def renumber_sequences(exc, start):
    """``exc`` again, of the same type, its ``Sequence k`` counted from ``start``.

    Parameters
    ----------
    exc : Exception
        Raised on a chunk (or partition) that starts at sequence ``start``.
    start : int

    Returns
    -------
    Exception
    """
    message = re.sub(r"Sequence (\d+)", lambda m: f"Sequence {start + int(m.group(1))}",
                     str(exc))
    return type(exc)(message)


def _chunks(X, y, chunk_size):
    """``(start, X chunk, y chunk)`` of the paired sources."""
    xs, ys = iter(X), iter(y)
    start = 0
    while True:
        x_chunk = list(islice(xs, chunk_size))
        y_chunk = list(islice(ys, chunk_size))
        if len(x_chunk) != len(y_chunk):
            raise ValueError(f"X and y have different numbers of sequences: y ends at "
                             f"sequence {start + min(len(x_chunk), len(y_chunk))}.")
        if not x_chunk:
            return
        yield start, x_chunk, y_chunk
        start += len(x_chunk)


def _check_chunk(x_chunk, start, kind=None, n_features=None):
    """``check_sequences`` on a chunk, its errors naming the sequence in the stream."""
    try:
        return check_sequences(x_chunk, kind=kind, n_features=n_features)
    except (TypeError, ValueError) as exc:
        raise renumber_sequences(exc, start) from exc


def vectorize_stream(X, y, sample_weight, token_weight, *, min_freq, feature_hashing,
                     chunk_size=None):
    """The training data of a stream, as ``CRFTagger`` trains on them.

    Parameters
    ----------
    X : iterable of sequences
        Re-iterable (each ``iter(X)`` starts again) unless hashing with
        ``min_freq=1``. Sequences as in ``CRFTagger.fit``.
    y : iterable or list of sequences of labels
        Paired with X in order; re-iterable as X.
    sample_weight : array-like of shape (n_sequences,) or None
    token_weight : None
        Not supported with a stream (a ValueError otherwise).
    min_freq, feature_hashing
        The estimator's (validated) parameters of those names.
    chunk_size : int or None, default=None
        Sequences per chunk; None: :data:`CHUNK_SIZE`.

    Returns
    -------
    tuple
        ``(features, Xc, offsets, classes, y_enc, sample_weight)``:
        the fitted :class:`~sklearn_crfloss._data._vectorize.SequenceVectorizer`,
        the CSR matrix (n_tokens, n_features), offsets (n_sequences + 1,),
        the sorted labels, the label index of every token, the checked
        weights.

    Raises
    ------
    ValueError
        On a one-shot iterator where two passes are needed, an empty
        stream, X and y of different lengths, ``token_weight``, or bad data
        (naming the sequence's index in the stream).
    TypeError
        On a sequence or label sequence of the wrong type.
    """
    chunk_size = CHUNK_SIZE if chunk_size is None else chunk_size
    if token_weight is not None:
        raise ValueError("token_weight is not supported when X is a stream; pass lists.")
    one_pass = feature_hashing is not None and min_freq == 1
    for name, source in (("X", X), ("y", y)):
        if not one_pass and isinstance(source, Iterator):
            raise ValueError(
                f"{name} is an iterator, which can be read once, but fitting a stream without "
                "feature_hashing (or with min_freq > 1) reads it twice: pass a re-iterable "
                "(an object whose __iter__ starts again) or lists.")
    features = SequenceVectorizer(min_freq, feature_hashing)
    kind = width = None
    if not one_pass:  # the vocabulary pass
        counts = {}
        for start, x_chunk, y_chunk in _chunks(X, y, chunk_size):
            kind, tokens, offsets = _check_chunk(x_chunk, start, kind, width)
            if kind == "array":
                width = tokens.shape[1]
                continue
            for name, c in attribute_counts(tokens).items():
                counts[name] = counts.get(name, 0) + c
        if kind == "dict":
            if feature_hashing is not None:
                counts = hashed_counts(feature_hashing, counts)
            features.fit_counts(counts)
    elif feature_hashing is not None:
        features.fit_counts({})
    blocks, all_offsets, labels = [], [np.zeros(1, dtype=np.intp)], []
    n_tokens = 0
    for start, x_chunk, y_chunk in _chunks(X, y, chunk_size):
        kind_k, tokens, offsets = _check_chunk(x_chunk, start, kind, width)
        if kind is None:
            kind = kind_k
        if kind == "array":
            width = tokens.shape[1]
        else:
            try:
                tokens = features.transform(tokens, offsets)
            except ValueError as exc:
                raise renumber_sequences(exc, start) from exc
        blocks.append(tokens)
        all_offsets.append(offsets[1:] + n_tokens)
        n_tokens += int(offsets[-1])
        labels.extend(y_chunk)
    if not blocks:
        raise ValueError("X holds no sequence.")
    offsets = np.concatenate(all_offsets)
    Xc = sp.vstack(blocks, format="csr")
    del blocks
    if kind == "array":
        Xc = features.fit_transform("array", Xc, offsets)
    elif one_pass:  # hashed over every column: keep those that occur, as fit does
        Xc = features.keep_used(Xc)
    classes, y_enc = encode_labels(labels, np.diff(offsets))
    sample_weight = check_sample_weight(sample_weight, offsets.shape[0] - 1)
    return features, Xc, offsets, classes, y_enc, sample_weight


def hashed_counts(n_features, counts):
    """Attribute counts -> the counts of their hashing columns.

    Parameters
    ----------
    n_features : int
        Columns of the :class:`~sklearn.feature_extraction.FeatureHasher`.
    counts : dict of {str: int}
        ``DictVectorizer`` column names and their counts.

    Returns
    -------
    dict of {str: int}
        ``'hash_<k>'`` -> the summed counts of the names hashed to column k.
    """
    hashed = SequenceVectorizer(1, n_features).fit_counts({})
    names = list(counts)
    columns = hashed.vectorizer.transform([[(name, 1.0)] for name in names]).tocsr().indices
    out = {}
    for column, name in zip(columns.tolist(), names):
        key = f"hash_{column}"
        out[key] = out.get(key, 0) + counts[name]
    return out
