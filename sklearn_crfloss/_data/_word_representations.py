"""Word representations as token features, and the union of feature-dict transformers.

:class:`WordClusterFeatures` (Brown clusters from a file) and
:class:`EmbeddingFeatures` (a scaled vector table) take sentences of token
tuples as the sets of ``_feature_sets`` do; :class:`FeatureDictUnion`
merges the per-token dicts of several such transformers.
"""

import os
from collections.abc import Mapping
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.pipeline import FeatureUnion

from .._utils import Interval
from ._attribute_names import BIGRAM_PREFIX
from ._feature_sets import SequenceTransformerMixin, offset_name

__all__ = ["EmbeddingFeatures", "FeatureDictUnion", "WordClusterFeatures", "read_word_clusters"]


def read_word_clusters(path):
    """Read a word-cluster file in the format of Liang's Brown clustering.

    One word a line: ``bitstring<TAB>word<TAB>count`` (the ``paths`` file of
    Liang's ``wcluster``; the count may be absent). Blank lines are skipped.

    Parameters
    ----------
    path : str or os.PathLike
        The file (UTF-8).

    Returns
    -------
    dict of {str: str}
        The word -> bit string map.

    Raises
    ------
    ValueError
        A line without a tab, a bit string of other characters than 0 and
        1, a count that is not a non-negative integer, a word listed twice
        (the message names the line), or a file without any word.
    OSError
        If the file cannot be read.
    """
    clusters = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) not in (2, 3):
                raise ValueError(f"{os.fspath(path)!r}, line {lineno}: expected "
                                 f"'bitstring<TAB>word<TAB>count', got {line!r:.80}.")
            bits, word = fields[0], fields[1]
            if not bits or bits.strip("01"):
                raise ValueError(f"{os.fspath(path)!r}, line {lineno}: the cluster {bits!r} "
                                 "is not a bit string (only 0 and 1).")
            if len(fields) == 3 and not fields[2].strip().isdigit():
                raise ValueError(f"{os.fspath(path)!r}, line {lineno}: the count "
                                 f"{fields[2]!r} is not a non-negative integer.")
            if word in clusters:
                raise ValueError(f"{os.fspath(path)!r}, line {lineno}: the word {word!r} is "
                                 "listed twice.")
            clusters[word] = bits
    if not clusters:
        raise ValueError(f"{os.fspath(path)!r}: no word clusters in the file.")
    return clusters


def _window_words(columns, word_column, window, lowercase):
    """The sentence's words (lower-cased if asked) and the window offsets."""
    words = [str(w) for w in columns[word_column]]
    if lowercase:
        words = [w.lower() for w in words]
    return words, [o for o in range(-window, window + 1)]


class WordClusterFeatures(SequenceTransformerMixin, TransformerMixin, BaseEstimator,
                          auto_wrap_output_keys=None):
    """Brown word-cluster features: bit-string prefixes of the words in a window.

    For each word at ``-window .. +window`` that the cluster file lists,
    the prefixes of its cluster's bit string of the lengths in
    ``prefix_lengths`` (``c4[0]``, ``c6[0]``, ..., ``c4[-1]``, ...; a bit
    string shorter than a length gives the whole string), as Turian,
    Ratinov & Bengio (2010), section 7.3, following Miller et al. (2004).
    Words not in the file get no cluster features. The clusters come from
    a file (learned beforehand, e.g. by Liang's ``wcluster`` on unlabelled
    text; the package does not learn them).

    Parameters
    ----------
    clusters : str, os.PathLike or dict of {str: str}
        A cluster file (:func:`read_word_clusters`: lines
        ``bitstring<TAB>word<TAB>count``) or the map word -> bit string.
    prefix_lengths : tuple of int, default=(4, 6, 10, 20)
        The prefix lengths.
    window : int, default=2
        The positions ``-window .. +window``.
    word_column : int, default=0
        The token column of the word.
    lowercase : bool, default=False
        Look the words up lower-cased (for a file of lower-cased words).

    Attributes
    ----------
    clusters_ : dict of {str: str}
        The word -> bit string map read at ``fit``.

    References
    ----------
    J. Turian, L. Ratinov, Y. Bengio (2010). Word representations: a simple
    and general method for semi-supervised learning. ACL, sections 4.1 and
    7.3.
    P. F. Brown, V. J. Della Pietra, P. V. deSouza, J. C. Lai, R. L. Mercer
    (1992). Class-based n-gram models of natural language. Computational
    Linguistics 18(4).
    P. Liang (2005). Semi-supervised learning for natural language. MIT
    master's thesis (the ``wcluster`` program and its file format).

    Examples
    --------
    >>> from sklearn_crfloss.features import WordClusterFeatures
    >>> wc = WordClusterFeatures({"the": "0010", "cat": "110110"}, prefix_lengths=(2, 4),
    ...                          window=0)
    >>> wc.fit_transform([[("the",), ("cat",), ("sat",)]])
    [[{'c2[0]': '00', 'c4[0]': '0010'}, {'c2[0]': '11', 'c4[0]': '1101'}, {}]]
    """

    _parameter_constraints = {
        "clusters": [str, os.PathLike, Mapping],
        "prefix_lengths": [tuple, list],
        "window": [Interval(Integral, 0, None, closed="left")],
        "word_column": [Interval(Integral, 0, None, closed="left")],
        "lowercase": ["boolean"],
    }

    def __init__(self, clusters, *, prefix_lengths=(4, 6, 10, 20), window=2, word_column=0,
                 lowercase=False):
        self.clusters = clusters
        self.prefix_lengths = prefix_lengths
        self.window = window
        self.word_column = word_column
        self.lowercase = lowercase

    def _check_parameters(self):
        if not self.prefix_lengths or any(not isinstance(m, Integral) or m < 1
                                          for m in self.prefix_lengths):
            raise ValueError("prefix_lengths must be positive integers, got "
                             f"{self.prefix_lengths!r}.")
        if isinstance(self.clusters, Mapping):
            bad = [w for w, b in self.clusters.items()
                   if not isinstance(b, str) or not b or b.strip("01")]
            if bad:
                raise ValueError(f"clusters: the value of {bad[0]!r} is "
                                 f"{self.clusters[bad[0]]!r}, not a bit string.")
            self.clusters_ = dict(self.clusters)
        else:
            self.clusters_ = read_word_clusters(self.clusters)
        self.lengths_ = sorted(set(self.prefix_lengths))
        return self.word_column + 1

    def _sentence(self, i, sent):
        columns, _ = self._sentence_columns(i, sent, self.word_column)
        words, offsets = _window_words(columns, self.word_column, self.window,
                                       self.lowercase)
        local = [[(m, bits[:m]) for m in self.lengths_] if bits else []
                 for bits in map(self.clusters_.get, words)]
        n = len(words)
        return [{f"c{m}[{offset_name(o)}]": p for o in offsets if 0 <= j + o < n
                 for m, p in local[j + o]} for j in range(n)]


class EmbeddingFeatures(SequenceTransformerMixin, TransformerMixin, BaseEstimator,
                        auto_wrap_output_keys=None):
    """Word-embedding features: the scaled vectors of the words in a window, as real values.

    For each word at ``-window .. +window`` found in the table, its vector
    as real-valued features ``emb0[o]``, ``emb1[o]``, ... (``o`` the
    offset, e.g. ``emb3[-1]``); words not in the table get none (or the
    vector of ``unknown_word``). The table is scaled once, as Turian,
    Ratinov & Bengio (2010), eq. 1: ``E <- scale * E / stddev(E)``, the
    standard deviation over all entries of the table, so that the
    real-valued features are on the scale of the indicator features'
    weights (their best ``scale`` was 0.1; None: no scaling).

    Parameters
    ----------
    embeddings : dict of {str: array-like of shape (n_dims,)} or array-like of shape (n_words, n_dims)
        The vector table: a word -> vector map, or a 2-D array whose rows
        go with ``vocabulary``.
    vocabulary : list of str or None, default=None
        The words of the rows of an array ``embeddings`` (required then;
        ignored for a dict).
    window : int, default=2
        The positions ``-window .. +window``.
    scale : float or None, default=0.1
        The standard deviation of the scaled table (None: keep the vectors).
    word_column : int, default=0
        The token column of the word.
    lowercase : bool, default=False
        Look the words up lower-cased.
    unknown_word : str or None, default=None
        A table entry for the words not in the table (e.g. ``"*UNKNOWN*"``);
        None: such words get no features.

    Attributes
    ----------
    vectors_ : ndarray of float64 of shape (n_words, n_dims)
        The scaled table.
    vocabulary_ : dict of {str: int}
        Word -> row of ``vectors_``.
    scale_ : float
        The factor applied to the given table (1.0 when ``scale`` is None).

    References
    ----------
    J. Turian, L. Ratinov, Y. Bengio (2010). Word representations: a simple
    and general method for semi-supervised learning. ACL, section 7.4, eq.
    1 (scaling), and section 4.1 (the window).

    Examples
    --------
    >>> from sklearn_crfloss.features import EmbeddingFeatures
    >>> emb = EmbeddingFeatures({"a": [1.0, -1.0], "b": [3.0, -3.0]}, window=0, scale=None)
    >>> emb.fit_transform([[("a",), ("b",), ("c",)]])
    [[{'emb0[0]': 1.0, 'emb1[0]': -1.0}, {'emb0[0]': 3.0, 'emb1[0]': -3.0}, {}]]
    >>> round(float(EmbeddingFeatures({"a": [1.0, -1.0], "b": [3.0, -3.0]}).fit([]).vectors_.std()), 6)
    0.1
    """

    _parameter_constraints = {
        "embeddings": [Mapping, "array-like"],
        "vocabulary": [None, "array-like"],
        "window": [Interval(Integral, 0, None, closed="left")],
        "scale": [None, Interval(Real, 0, None, closed="neither")],
        "word_column": [Interval(Integral, 0, None, closed="left")],
        "lowercase": ["boolean"],
        "unknown_word": [None, str],
    }

    def __init__(self, embeddings, *, vocabulary=None, window=2, scale=0.1, word_column=0,
                 lowercase=False, unknown_word=None):
        self.embeddings = embeddings
        self.vocabulary = vocabulary
        self.window = window
        self.scale = scale
        self.word_column = word_column
        self.lowercase = lowercase
        self.unknown_word = unknown_word

    def _check_parameters(self):
        if isinstance(self.embeddings, Mapping):
            words = list(self.embeddings)
            rows = [np.asarray(v, dtype=np.float64) for v in self.embeddings.values()]
            if any(r.ndim != 1 or r.shape != rows[0].shape for r in rows):
                raise ValueError("embeddings: every vector must be 1-D of the same length.")
            table = np.array(rows, dtype=np.float64).reshape(len(rows), -1)
        else:
            table = np.array(self.embeddings, dtype=np.float64)
            if table.ndim != 2:
                raise ValueError(f"embeddings: expected a 2-D array, got {table.ndim}-D.")
            if self.vocabulary is None or len(self.vocabulary) != table.shape[0]:
                raise ValueError("vocabulary: an array of embeddings needs one word per row "
                                 f"({table.shape[0]} rows, vocabulary "
                                 f"{'None' if self.vocabulary is None else len(self.vocabulary)}).")
            words = [str(w) for w in self.vocabulary]
        if table.size == 0:
            raise ValueError("embeddings: the table is empty.")
        if not np.isfinite(table).all():
            row = int(np.flatnonzero(~np.isfinite(table).all(axis=1))[0])
            raise ValueError(f"embeddings: the vector of {words[row]!r} has a NaN or infinite "
                             "entry.")
        vocabulary = {w: r for r, w in enumerate(words)}
        if len(vocabulary) != len(words):
            raise ValueError("vocabulary: a word is listed twice.")
        if self.unknown_word is not None and self.unknown_word not in vocabulary:
            raise ValueError(f"unknown_word {self.unknown_word!r} is not in the table.")
        factor = 1.0
        if self.scale is not None:
            std = float(table.std())
            if not std > 0:
                raise ValueError("embeddings: every entry is the same, so the table has no "
                                 "standard deviation to scale; pass scale=None.")
            factor = self.scale / std
        self.vectors_ = table * factor
        self.vocabulary_ = vocabulary
        self.scale_ = factor
        self._rows = self.vectors_.tolist()
        self._keys = {o: [f"emb{d}[{offset_name(o)}]" for d in range(table.shape[1])]
                      for o in range(-self.window, self.window + 1)}
        self._default = vocabulary.get(self.unknown_word)
        return self.word_column + 1

    def _sentence(self, i, sent):
        columns, _ = self._sentence_columns(i, sent, self.word_column)
        words, offsets = _window_words(columns, self.word_column, self.window,
                                       self.lowercase)
        local = [self.vocabulary_.get(w, self._default) for w in words]
        n = len(words)
        rows = []
        for j in range(n):
            row = {}
            for o in offsets:
                if 0 <= j + o < n and local[j + o] is not None:
                    row.update(zip(self._keys[o], self._rows[local[j + o]]))
            rows.append(row)
        return rows


class FeatureDictUnion(FeatureUnion, auto_wrap_output_keys=None):
    """Merge the per-token feature dicts of several transformers.

    scikit-learn's :class:`~sklearn.pipeline.FeatureUnion` for transformers
    that return sentences of feature dicts (:class:`TemplateFeatures`,
    :class:`ChunkFeatures`, :class:`WordClusterFeatures`, ...): each token's
    dicts are merged into one. Parameters, nested ``name__param`` access
    (``GridSearchCV``), ``n_jobs`` and ``'drop'`` are FeatureUnion's;
    there is no ``transformer_weights`` (a dict feature has no weight to
    multiply).

    Parameters
    ----------
    transformer_list : list of (str, transformer)
        The named transformers.
    n_jobs : int or None, default=None
        Transformers run in parallel (joblib).
    verbose : bool, default=False
        Print the time of each transformer.
    verbose_feature_names_out : bool, default=True
        Prefix each key with its transformer's name and ``"__"``
        (``"chunk__w[0]"``; a label-bigram key ``"~B01"`` becomes
        ``"~name__B01"``). False: keys are kept, and a key two transformers
        give the same token raises ValueError.

    Raises
    ------
    ValueError
        In ``fit_transform``/``transform``: sentence counts or lengths that
        differ between the transformers, or a duplicate key without
        prefixes.

    Examples
    --------
    >>> from sklearn_crfloss.features import (ChunkFeatures, FeatureDictUnion,
    ...                                       TemplateFeatures)
    >>> union = FeatureDictUnion([("t", TemplateFeatures(["U00:%x[0,0]"])),
    ...                           ("c", ChunkFeatures(window=0, pos_ngram_order=1))])
    >>> union.fit_transform([[("He", "PRP")]])
    [[{'t__U00': 'He', 'c__w[0]': 'He', 'c__pos[0]': 'PRP'}]]
    """

    def __init__(self, transformer_list, *, n_jobs=None, verbose=False,
                 verbose_feature_names_out=True):
        super().__init__(transformer_list, n_jobs=n_jobs, verbose=verbose,
                         verbose_feature_names_out=verbose_feature_names_out)

    def _hstack(self, Xs):
        names = [name for name, t in self.transformer_list if t != "drop"]
        n = {len(x) for x in Xs}
        if len(n) > 1:
            raise ValueError(f"The transformers {names} returned different numbers of "
                             f"sentences: {[len(x) for x in Xs]}.")
        prefixes = [(f"{name}__", f"{BIGRAM_PREFIX}{name}__") for name in names]
        out = []
        for i, sentences in enumerate(zip(*Xs)):
            if len({len(s) for s in sentences}) > 1:
                raise ValueError(f"Sentence {i}: the transformers {names} returned different "
                                 f"numbers of tokens: {[len(s) for s in sentences]}.")
            out.append([self._merge(i, j, dicts, prefixes) for j, dicts in
                        enumerate(zip(*sentences))])
        return out

    def _merge(self, i, j, dicts, prefixes):
        if not self.verbose_feature_names_out:
            merged = {}
            for d in dicts:
                merged.update(d)
            if len(merged) != sum(map(len, dicts)):
                seen = set()
                dup = next(k for d in dicts for k in d if k in seen or seen.add(k))
                raise ValueError(f"Sentence {i}, token {j}: two transformers give the key "
                                 f"{dup!r}; set verbose_feature_names_out=True to prefix "
                                 "the keys with the transformer names.")
            return merged
        return {(bp + k[len(BIGRAM_PREFIX):] if k.startswith(BIGRAM_PREFIX) else p + k): v
                for d, (p, bp) in zip(dicts, prefixes) for k, v in d.items()}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.transformer_tags.preserves_dtype = []
        return tags
