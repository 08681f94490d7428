"""From checked sequences to the one CSR matrix the objective and the decoders read.

:class:`SequenceVectorizer` is fitted once in ``fit`` and reused by every
``predict``: feature dicts go through scikit-learn's
:class:`~sklearn.feature_extraction.DictVectorizer` (or
:class:`~sklearn.feature_extraction.FeatureHasher`), arrays pass through;
``min_freq`` drops rare attributes and :meth:`SequenceVectorizer.select`
keeps a subset of the columns (the experts of
:class:`~sklearn_crfloss.LOPTagger`).

For the common value types (str, int, float, bool) one compiled pass
(``sklearn_crfloss._data._vocabulary.vocabulary_fit``) learns the
DictVectorizer's vocabulary (the same ``feature_names_`` and
``vocabulary_`` as its ``fit``) and writes the CSR rows of the training
dicts, the same matrix as ``DictVectorizer.transform`` without its Python
list of one float object per stored value: it is faster and peaks at the
size of the matrix (anything else goes through the DictVectorizer's own
``fit`` and ``transform``). The string values are looked up in a compiled
hash table keyed by (key, value), so that no column name is built per
value: at fit time one that grows as the pairs are first seen (the
columns renumbered by sorted name at the end), at predict time one built
from the vocabulary on first use and kept (entries in decreasing training
frequency, so that the frequent ones share the cache). When every value is 1 (indicator
features, e.g. every string value) the matrix stores its values as int8: 4
MB instead of 32 for CoNLL-2000's 4 million features; the kernels do not
read them then, and every product with a float64 array is float64.
"""

import copy
import threading
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction import DictVectorizer, FeatureHasher

from ._attribute_names import SEPARATOR, join_nested_keys
from ._hashing import hashed_pairs, raise_for_bad_value, take_columns
from ._validation import check_finite_tokens
from ._vocabulary import (VocabularyTable, column_index, pack_names, prefixed_names,
                          unpack_names, vocabulary_fit, vocabulary_rows)

__all__ = ["SequenceVectorizer", "attribute_counts", "column_counts", "columns_with_prefix"]


def _check_finite(Xc, tokens, offsets):
    """:func:`check_finite_tokens`, naming a value of a type no feature takes.

    DictVectorizer turns a value ``None`` into NaN: the error then names its
    type (:func:`hashed_pairs`'s ``TypeError``), not a NaN the user never
    wrote.
    """
    try:
        check_finite_tokens(Xc, offsets)
    except ValueError:
        hashed_pairs(tokens, offsets)  # raises on a value of another type than a number's
        raise


def column_counts(X):
    """Stored entries per column of a sparse matrix.

    ``np.bincount(X.indices)`` a block at a time: bincount converts its
    input to intp, which for the int32 indices of a large matrix is a
    temporary twice their size.

    Parameters
    ----------
    X : scipy.sparse matrix of shape (n_rows, n_columns)

    Returns
    -------
    ndarray of intp of shape (n_columns,)
    """
    X = sp.csr_matrix(X)
    counts = np.zeros(X.shape[1], dtype=np.intp)
    step = 1 << 18
    for start in range(0, X.indices.shape[0], step):
        counts += np.bincount(X.indices[start:start + step], minlength=X.shape[1])
    return counts


def attribute_counts(tokens):
    """The attributes of a batch of feature dicts and the tokens each is non-zero in.

    The vocabulary pass of a chunked (streaming or distributed) fit: the
    counts of several chunks add up to those of their concatenation.

    Parameters
    ----------
    tokens : list of dict
        Feature dicts of the tokens of a chunk, its sequences laid end to
        end (nested dicts allowed, as :func:`join_nested_keys` takes them).

    Returns
    -------
    dict of {str: int}
        The column names (python-crfsuite's: ``'key:value'`` or ``'key'``) and
        the number of tokens where the column is non-zero.

    Raises
    ------
    TypeError, ValueError
        If the dicts cannot be vectorised.
    """
    if len(tokens) == 0:
        return {}
    dv = _dict_vectorizer()
    try:
        Xc = dv.fit_transform(join_nested_keys(tokens)[0]).tocsr()
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"Could not vectorise the feature dicts: {exc}") from exc
    Xc.eliminate_zeros()
    return dict(zip(dv.feature_names_, column_counts(Xc).tolist()))


def columns_with_prefix(names, prefix):
    """The columns whose name starts with ``prefix``, found by a compiled loop over the names.

    Parameters
    ----------
    names : sequence of str of shape (n_features,)
        Column names: :attr:`SequenceVectorizer.column_names` (read in their
        packed form, no str built per name), ``attributes``, a list...; an
        item that is not a str is compared as ``str(item)``.
    prefix : str

    Returns
    -------
    ndarray of intp
        The indices of those names, increasing.
    """
    if isinstance(names, _PackedNames):
        mask = prefixed_names(names.packed, prefix)
    else:
        mask = prefixed_names(names.tolist() if isinstance(names, np.ndarray) else list(names),
                              prefix)
    return np.flatnonzero(mask).astype(np.intp)


def _indicator_int8(X):
    """``X`` with its values stored as int8 when every stored value is 1 (else ``X``).

    Boolean features (``True`` values, the ``False`` ones dropped as zeros)
    give a float64 matrix of ones: a byte per value instead of 8 (37 MB
    less for CoNLL-2002's 5 million), the same products.
    """
    if X.dtype == np.int8 or X.nnz == 0 or X.data.min() != 1 or X.data.max() != 1:
        return X
    return sp.csr_matrix((np.ones(X.nnz, dtype=np.int8), X.indices, X.indptr), shape=X.shape)


def _csr_of_rows(rows, n_columns):
    """The CSR matrix of the compiled passes' ``(indptr, indices, data)``, indices sorted per row.

    int32 index arrays (scipy's, as DictVectorizer's output) when they
    fit; ``data`` None: indicator features, the values 1 in a byte each.
    """
    indptr, indices, data = rows
    if indices.shape[0] < 2**31:
        indptr = indptr.astype(np.int32)
    if data is None:
        data = np.ones(indices.shape[0], dtype=np.int8)
    Xc = sp.csr_matrix((data, indices, indptr), shape=(indptr.shape[0] - 1, n_columns))
    Xc.sort_indices()  # DictVectorizer's order within a row
    return Xc


def _vocabulary(dv):
    """``dv.vocabulary_`` if it is there, else a new one from ``feature_names_``, not kept."""
    vocabulary = vars(dv).get("vocabulary_")
    if vocabulary is None:
        names = dv.feature_names_
        vocabulary = column_index(names if isinstance(names, list) else list(names))
    return vocabulary


class _PackedNames(Sequence):
    """A read-only sequence of packed column names, one str made per read.

    ``packed``: ``(joined, ends)`` of
    :func:`~sklearn_crfloss._data._vocabulary.pack_names`.
    """

    def __init__(self, packed):
        self.packed = packed
        self._joined, self._ends = packed

    def __len__(self):
        return self._ends.shape[0]

    def __getitem__(self, k):
        k = range(len(self))[k]  # an int (IndexError beyond the end)
        return self._joined[int(self._ends[k - 1]) if k else 0:int(self._ends[k])]

    def __iter__(self):
        start = 0
        for end in self._ends.tolist():
            yield self._joined[start:end]
            start = end


def _dict_vectorizer(names=None):
    """Our DictVectorizer: unfitted, or fitted to the sorted column ``names`` as ``fit`` leaves it.

    The default (sparse) output whatever ``sklearn.set_config(transform_output=...)``
    says; python-crfsuite's attribute names
    (:mod:`sklearn_crfloss._data._attribute_names`). Fitted to ``names``,
    its ``vocabulary_`` is left to :attr:`SequenceVectorizer.vectorizer`,
    which builds it when read.
    """
    dv = DictVectorizer(dtype=np.float64, separator=SEPARATOR).set_output(transform="default")
    if names is not None:
        dv.feature_names_ = names
    return dv


class SequenceVectorizer:
    """The fitted map from a batch of checked sequences to a CSR feature matrix.

    Parameters
    ----------
    min_freq : int, default=1
        Feature-dict input: keep the attributes non-zero in at least
        ``min_freq`` training tokens.
    feature_hashing : int or None, default=None
        Feature-dict input: hash into that many columns instead of a
        vocabulary.

    Attributes
    ----------
    kind : {'dict', 'array'}
        The input kind seen in :meth:`fit_transform`.
    vectorizer : DictVectorizer, FeatureHasher or None
        The fitted scikit-learn vectoriser (None for array input). A
        property: a DictVectorizer fitted by the compiled vocabulary pass
        gets its ``vocabulary_`` (16 MB for CoNLL-2000's 338,500 columns) on
        the first read, so that a fit holds it only once it is trained.
    columns : ndarray of intp or None
        The columns of the vectoriser's (or the array's) output kept, in
        order; None: all.
    attributes : ndarray of object of shape (n_features,)
        Column names: ``'key:value'``/``'key'`` (python-crfsuite's names),
        ``'hash_<k>'`` (hashing: only the hashed columns that occur in the
        training data are kept, ``k`` their index in the hasher's output),
        ``'x<k>'`` (arrays). A property: the names of the compiled
        vocabulary pass are kept as one string until it is first read (22
        MB of str objects for CoNLL-2000's 338,500 columns, 4 MB joined).
    column_names : sequence of str of length n_features
        The same names without building ``attributes`` (a property: one str
        per name read while they are kept joined).
    n_features : int
        Columns of the output.
    n_input : int
        Array input: the width of the arrays (before ``columns``).
    """

    def __init__(self, min_freq=1, feature_hashing=None):
        self.min_freq = min_freq
        self.feature_hashing = feature_hashing

    @property
    def vectorizer(self):
        """The fitted scikit-learn vectoriser (a DictVectorizer's vocabulary built when read)."""
        dv = self._vectorizer
        if isinstance(dv, DictVectorizer) and "vocabulary_" not in vars(dv):
            # as DictVectorizer.fit leaves it (the names shared with attributes)
            if "feature_names_" not in vars(dv):
                dv.feature_names_ = self.attributes.tolist()
            dv.vocabulary_ = _vocabulary(dv)
        return dv

    @vectorizer.setter
    def vectorizer(self, value):
        self._vectorizer = value

    @property
    def attributes(self):
        """The column names, ndarray of object (built from the joined names on first read)."""
        attributes = vars(self).get("_attributes")
        if attributes is None:
            attributes = np.array(unpack_names(*self._names), dtype=object)
            self._attributes = attributes
            vars(self).pop("_names", None)
        return attributes

    @attributes.setter
    def attributes(self, value):
        self._attributes = value
        vars(self).pop("_names", None)

    @property
    def column_names(self):
        """The column names as a sequence of str, without building :attr:`attributes`."""
        packed = vars(self).get("_names")
        return self.attributes if packed is None else _PackedNames(packed)

    def fit_transform(self, kind, tokens, offsets):
        """Fit on the training batch and return its feature matrix.

        Parameters
        ----------
        kind : {'dict', 'array'}
            From :func:`sklearn_crfloss._data._validation.check_sequences`.
        tokens : list of dict or scipy.sparse.csr_matrix
            The batch's tokens (feature dicts, or one CSR of float64).
        offsets : ndarray of intp of shape (n_sequences + 1,)

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_tokens, n_features)
            float64, or int8 for feature dicts whose values are all 1.

        Raises
        ------
        ValueError, TypeError
            If the dicts cannot be vectorised, or a value is NaN or infinite
            (naming the sequence).
        """
        self.kind = kind
        self.columns = None
        if kind == "array":
            self.vectorizer = None
            self.attributes = np.array([f"x{k}" for k in range(tokens.shape[1])], dtype=object)
            self.n_features = self.n_input = tokens.shape[1]
            return tokens
        if self.feature_hashing is not None:
            # Pairs named as DictVectorizer names them (lists of str too); only the
            # columns that occur are kept (columns), named 'hash_<column>'.
            self.vectorizer = FeatureHasher(n_features=self.feature_hashing, input_type="pair",
                                            alternate_sign=False, dtype=np.float64)
            Xc = self.vectorizer.transform(hashed_pairs(tokens, offsets)).tocsr()
            Xc.eliminate_zeros()
            used = np.unique(Xc.indices).astype(np.intp)
            Xc = take_columns(Xc, used)
            attributes = np.array([f"hash_{k}" for k in used.tolist()], dtype=object)
        else:
            # The common value types: the vocabulary and the rows in one compiled
            # pass (the same feature_names_ as DictVectorizer.fit); else
            # DictVectorizer.fit itself.
            try:
                fitted = vocabulary_fit(tokens, SEPARATOR)
                names = None if fitted is None else fitted[0]
                self.vectorizer = _dict_vectorizer(names)
                if names is not None:
                    Xc = _csr_of_rows(fitted[1:], len(names))
                    del fitted
                else:
                    try:
                        self._vectorizer.fit(tokens)
                    except TypeError:  # nested dicts: joined keys (a pass over the data then)
                        tokens, nested = join_nested_keys(tokens)
                        if not nested:
                            raise
                        self._vectorizer.fit(tokens)
                    Xc = self._dict_rows(tokens, VocabularyTable(self._vectorizer.feature_names_,
                                                                 self._vectorizer.separator),
                                         vocabulary=False)
            except (TypeError, ValueError, OverflowError) as exc:
                raise_for_bad_value(tokens, offsets, exc)
            if names is not None and self.min_freq <= 1:  # kept joined (see attributes)
                attributes = _PackedNames(pack_names(names))
                del names, self._vectorizer.feature_names_
            else:
                attributes = np.asarray(  # names of type str already: no per-name check
                    self._vectorizer.get_feature_names_out() if names is None else names,
                    dtype=object)
        Xc.eliminate_zeros()
        _check_finite(Xc, tokens, offsets)
        Xc = _indicator_int8(Xc)
        keep = self._set_columns(attributes, column_counts(Xc),
                                 used if self.feature_hashing is not None else None)
        if keep is not None:
            Xc = Xc[:, keep].tocsr()
        return Xc

    def _set_columns(self, attributes, counts, columns=None):
        """Keep the columns of at least ``min_freq`` tokens; the kept mask (None: all).

        ``columns``: the vectoriser's output columns behind ``attributes``
        (with hashing, the used ones); None: all of them.
        """
        keep = None
        self.columns = columns
        if self.min_freq > 1:
            keep = counts >= self.min_freq
            attributes = attributes[keep]
            counts = counts[keep]
            if isinstance(self.vectorizer, DictVectorizer):
                self.vectorizer.restrict(keep)
            else:
                self.columns = np.flatnonzero(keep) if columns is None else columns[keep]
        if isinstance(attributes, _PackedNames):
            vars(self).pop("_attributes", None)
            self._names = attributes.packed
        else:
            self.attributes = attributes
        self.n_features = len(attributes)
        # The order of the predict-time table's entries: most frequent first.
        self._frequency_order = np.argsort(-counts, kind="stable").astype(np.int32)
        self._cache = {}
        return keep

    def fit_counts(self, counts):
        """Fit on feature-dict input from the counts of a vocabulary pass.

        The same fitted state as :meth:`fit_transform` on the data the
        counts come from, without seeing them at once.

        Parameters
        ----------
        counts : dict of {str: int}
            Column name -> tokens where it is non-zero, summed over the
            chunks (:func:`attribute_counts`); ignored with
            ``feature_hashing`` unless ``min_freq > 1``, where the names are
            ``'hash_<k>'`` column names.

        Returns
        -------
        self
        """
        self.kind = "dict"
        columns = None
        if self.feature_hashing is not None:
            # Pairs named as fit_transform names them (see hashed_pairs).
            self.vectorizer = FeatureHasher(n_features=self.feature_hashing, input_type="pair",
                                            alternate_sign=False, dtype=np.float64)
            if counts:  # the columns that occur, as fit_transform keeps them
                freq = np.zeros(self.feature_hashing, dtype=np.intp)
                for name, count in counts.items():
                    freq[int(name[5:])] += count
                columns = np.flatnonzero(freq).astype(np.intp)
                freq = freq[columns]
            else:  # a fixed size (partial_fit, a stream read once): every column
                columns = np.arange(self.feature_hashing, dtype=np.intp)
                freq = np.zeros(self.feature_hashing, dtype=np.intp)
            attributes = np.array([f"hash_{k}" for k in columns.tolist()], dtype=object)
            if not counts:
                columns = None
        else:
            names = sorted(counts)  # DictVectorizer's order
            self.vectorizer = _dict_vectorizer(names)
            attributes = np.array(names, dtype=object)
            freq = np.array([counts[name] for name in names], dtype=np.intp)
        self._set_columns(attributes, freq, columns)
        return self

    def keep_used(self, Xc):
        """Keep only the hashed columns that occur in ``Xc`` (a stream hashed in one pass).

        The state :meth:`fit_transform` would have fitted on the same data.

        Parameters
        ----------
        Xc : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
            The stream's matrix over every hashing column.

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_tokens, n_used)
        """
        used = np.unique(Xc.indices).astype(np.intp)
        Xc = take_columns(Xc, used)
        self._set_columns(self.attributes[used], column_counts(Xc), used)
        return Xc

    def extend_transform(self, tokens, offsets):
        """The feature matrix of a new batch, adding its unseen attributes as new columns.

        For ``partial_fit`` without hashing: the vocabulary grows with the
        stream (new columns at the end; the old ones keep their index). The
        fitted scikit-learn vectoriser is replaced, not changed: a shallow
        copy of this object made before the call keeps the old vocabulary.
        Hashing and array input have fixed columns: the same as
        :meth:`transform`, whose arguments and result it has (``n_features``
        counted after the extension).
        """
        if self.kind != "dict" or not isinstance(self.vectorizer, DictVectorizer):
            return self.transform(tokens, offsets)
        dv = self.vectorizer
        new = [name for name in attribute_counts(tokens) if name not in dv.vocabulary_]
        if new:
            # A new DictVectorizer: copies of this vectoriser (a fitted
            # estimator's) keep their vocabulary.
            first = len(dv.feature_names_)
            dv = self.vectorizer = copy.copy(dv)
            dv.feature_names_ = list(dv.feature_names_) + new
            dv.vocabulary_ = dict(dv.vocabulary_)
            dv.vocabulary_.update((name, first + k) for k, name in enumerate(new))
            self.attributes = np.concatenate([self.attributes, np.array(new, dtype=object)])
            self.n_features = len(dv.feature_names_)
            self._frequency_order = np.concatenate([
                self._frequency_order, np.arange(first, self.n_features, dtype=np.int32)])
            self._cache = {}  # the predict-time table is rebuilt on next use
        if len(tokens) == 0:
            return sp.csr_matrix((0, self.n_features))
        Xc = self._dict_rows(tokens)
        Xc.eliminate_zeros()
        _check_finite(Xc, tokens, offsets)
        return Xc

    def _dict_rows(self, tokens, table=None, vocabulary=True):
        """The DictVectorizer's matrix of ``tokens`` by the compiled lookup.

        Through the compiled ``table`` of the vocabulary if given (a
        :class:`~sklearn_crfloss._data._vocabulary.VocabularyTable`), else
        the vocabulary dict (a column name built per value: cheaper than a
        table when the tokens are few, as in a ``partial_fit`` chunk);
        ``DictVectorizer.transform`` for values of other types.
        ``vocabulary=False``: a vocabulary dict not yet built is built for
        this call only (the fit's pass), not kept in the vectoriser.
        """
        dv = self._vectorizer
        # At fit time (vocabulary=False) a dict of its own, freed after the pass.
        vocabulary = self.vectorizer.vocabulary_ if vocabulary else _vocabulary(dv)
        rows = vocabulary_rows(tokens, vocabulary, dv.separator, table)
        if rows is None:  # nested dicts, lists, other value types
            tokens, nested = join_nested_keys(tokens)
            rows = vocabulary_rows(tokens, vocabulary, dv.separator, table) if nested else None
        del vocabulary
        if rows is None:
            return self.vectorizer.transform(tokens).tocsr()
        return _csr_of_rows(rows, len(dv.feature_names_))

    def _lookup_table(self):
        """The compiled table of the vocabulary's string-valued columns (built once).

        A :class:`~sklearn_crfloss._data._vocabulary.VocabularyTable` whose
        entries run from the most to the least frequent column. Kept in
        ``_cache``, which the copies of :meth:`select` share and pickling
        leaves out, with the lock that makes concurrent first calls (predict
        from several threads) build it once rather than once per thread.
        """
        cache = self.__dict__.setdefault("_cache", {})
        if "table" in cache:
            return cache["table"]
        with cache.setdefault("lock", threading.Lock()):  # setdefault: atomic
            if "table" in cache:  # built by another thread meanwhile
                return cache["table"]
            order = getattr(self, "_frequency_order", None)
            cache["table"] = VocabularyTable(self.vectorizer.feature_names_,
                                             self.vectorizer.separator,
                                             None if order is None else order.tolist())
        return cache["table"]

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_cache"] = {}
        return state

    def __setstate__(self, state):
        for name in ("vectorizer", "attributes"):  # pickled before they became properties
            if name in state:
                state["_" + name] = state.pop(name)
        self.__dict__.update(state)

    def transform(self, tokens, offsets):
        """The feature matrix of a batch of the fitted kind (predict time).

        Parameters
        ----------
        tokens : list of dict or scipy.sparse.csr_matrix
        offsets : ndarray of intp of shape (n_sequences + 1,)

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_tokens, n_features)
        """
        if self.kind == "dict":
            if len(tokens) == 0:
                return sp.csr_matrix((0, self.n_features))
            if isinstance(self.vectorizer, DictVectorizer):
                try:
                    Xc = self._dict_rows(tokens, self._lookup_table())
                except (TypeError, ValueError, OverflowError) as exc:
                    raise_for_bad_value(tokens, offsets, exc)
            else:
                Xc = self.vectorizer.transform(hashed_pairs(tokens, offsets)).tocsr()
            _check_finite(Xc, tokens, offsets)
        else:
            Xc = tokens
        if self.columns is None:
            return Xc
        if isinstance(self.vectorizer, FeatureHasher) and np.all(np.diff(self.columns) > 0):
            return take_columns(Xc, self.columns)  # work per stored entry, not per column
        return Xc[:, self.columns].tocsr()

    def select(self, columns):
        """A copy that keeps only ``columns`` of this vectoriser's output.

        Parameters
        ----------
        columns : array-like of int
            Indices into ``attributes``.

        Returns
        -------
        SequenceVectorizer
            Sharing the fitted scikit-learn vectoriser (not copied).
        """
        columns = np.asarray(columns, dtype=np.intp)
        new = copy.copy(self)
        new._cache = self.__dict__.setdefault("_cache", {})  # one lookup table for all copies
        new.columns = columns if self.columns is None else self.columns[columns]
        new.attributes = self.attributes[columns]
        new.n_features = columns.shape[0]
        return new
