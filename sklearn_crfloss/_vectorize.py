"""From checked sequences to the one CSR matrix the objective and the decoders read.

:class:`SequenceVectorizer` is fitted once in ``fit`` and reused by every
``predict``: feature dicts go through scikit-learn's
:class:`~sklearn.feature_extraction.DictVectorizer` (or
:class:`~sklearn.feature_extraction.FeatureHasher`), arrays pass through;
``min_freq`` drops rare attributes and :meth:`SequenceVectorizer.select`
keeps a subset of the columns (the experts of
:class:`~sklearn_crfloss.LOPTagger`).
"""

import copy

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction import DictVectorizer, FeatureHasher

from ._validation import check_finite_tokens

__all__ = ["SequenceVectorizer"]


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
        The fitted scikit-learn vectoriser (None for array input).
    columns : ndarray of intp or None
        The columns of the vectoriser's (or the array's) output kept, in
        order; None: all.
    attributes : ndarray of object of shape (n_features,)
        Column names: ``'key=value'``/``'key'`` (DictVectorizer),
        ``'hash_<k>'`` (hashing), ``'x<k>'`` (arrays).
    n_features : int
        Columns of the output.
    n_input : int
        Array input: the width of the arrays (before ``columns``).
    """

    def __init__(self, min_freq=1, feature_hashing=None):
        self.min_freq = min_freq
        self.feature_hashing = feature_hashing

    def fit_transform(self, kind, tokens, offsets):
        """Fit on the training batch and return its feature matrix.

        Parameters
        ----------
        kind : {'dict', 'array'}
            From :func:`sklearn_crfloss._validation.check_sequences`.
        tokens : list of dict or scipy.sparse.csr_matrix
            The batch's tokens (feature dicts, or one CSR of float64).
        offsets : ndarray of intp of shape (n_sequences + 1,)

        Returns
        -------
        scipy.sparse.csr_matrix of float64 of shape (n_tokens, n_features)

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
            self.vectorizer = FeatureHasher(n_features=self.feature_hashing, input_type="dict",
                                            alternate_sign=False, dtype=np.float64)
            Xc = self.vectorizer.transform(tokens).tocsr()
            attributes = np.array([f"hash_{k}" for k in range(self.feature_hashing)],
                                  dtype=object)
        else:
            # The default (sparse) output whatever sklearn.set_config(transform_output=...) says.
            self.vectorizer = DictVectorizer(dtype=np.float64).set_output(transform="default")
            try:
                Xc = self.vectorizer.fit_transform(tokens).tocsr()
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"Could not vectorise the feature dicts: {exc}") from exc
            attributes = np.asarray(self.vectorizer.get_feature_names_out(), dtype=object)
        Xc.eliminate_zeros()
        check_finite_tokens(Xc, offsets)
        if self.min_freq > 1:
            keep = np.bincount(Xc.indices, minlength=Xc.shape[1]) >= self.min_freq
            Xc = Xc[:, keep].tocsr()
            attributes = attributes[keep]
            if isinstance(self.vectorizer, DictVectorizer):
                self.vectorizer.restrict(keep)
            else:
                self.columns = np.flatnonzero(keep)
        self.attributes = attributes
        self.n_features = Xc.shape[1]
        return Xc

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
            Xc = self.vectorizer.transform(tokens).tocsr()
            check_finite_tokens(Xc, offsets)
        else:
            Xc = tokens
        if self.columns is not None:
            Xc = Xc[:, self.columns].tocsr()
        return Xc

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
        new.columns = columns if self.columns is None else self.columns[columns]
        new.attributes = self.attributes[columns]
        new.n_features = columns.shape[0]
        return new
