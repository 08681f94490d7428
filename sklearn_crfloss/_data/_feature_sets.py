"""The field's token feature sets as scikit-learn transformers.

Each transformer takes sentences as lists of token tuples (column 0 the
word unless a parameter says otherwise) and returns, per sentence, one
feature dict per token, the input :class:`~sklearn_crfloss.CRFTagger`
takes: a str value gives the indicator attribute ``'key:value'``, a number
the real-valued attribute ``'key'``. Positions outside the sentence use
CRF++'s boundary symbols ``_B-1``, ``_B+1``, ... as
:class:`~sklearn_crfloss.features.TemplateFeatures` does.
The word-representation sets (clusters, embeddings) and the union of
several sets are in ``_word_representations``.
"""

import re
from collections.abc import Mapping
from numbers import Integral

from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._utils import Interval, validate_params

__all__ = ["ChunkFeatures", "NERFeatures", "POSFeatures", "SequenceTransformerMixin",
           "offset_name", "short_word_shape", "word_shape"]

_SHAPE_TABLE = {}
_SHORT_SHAPE_RE = re.compile(r"(.)\1+")


def word_shape(word):
    """The word's shape: upper-case letters ``X``, lower-case ``x``, digits ``d``.

    Other characters are kept (``"Jan-2001"`` -> ``"Xxx-dddd"``).

    Parameters
    ----------
    word : str

    Returns
    -------
    str
        Of the length of ``word``.
    """
    out = _SHAPE_TABLE.get(word)
    if out is None:
        out = "".join("X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c
                      for c in word)
        if len(_SHAPE_TABLE) < 1 << 20:
            _SHAPE_TABLE[word] = out
    return out


def short_word_shape(word):
    """The word's shape with runs of one symbol collapsed (``"Jan-2001"`` -> ``"Xx-d"``).

    Parameters
    ----------
    word : str

    Returns
    -------
    str
    """
    return _SHORT_SHAPE_RE.sub(r"\1", word_shape(word))


def _pad(values, left, right):
    """``values`` as str between CRF++'s boundary symbols (``_B-left`` ... ``_B+right``)."""
    return ([f"_B-{k}" for k in range(left, 0, -1)] + list(map(str, values))
            + [f"_B+{k}" for k in range(1, right + 1)])


def offset_name(o):
    """An offset as the feature keys write it: ``"0"``, ``"+1"``, ``"-2"``."""
    return f"{o:+d}" if o else "0"


class SequenceTransformerMixin:
    """What the sentence-in, feature-dicts-out transformers share.

    ``fit`` (the parameters checked by ``_check_parameters``, which returns
    ``n_columns_``), ``transform`` (``_sentence`` on each sentence), the
    check of ``X`` and of each sentence's tokens (:meth:`_sentence_columns`),
    ``set_output`` (only the default container: the output is not a table)
    and the tags that say ``X`` is a list of sequences.
    """

    def fit(self, X, y=None):
        """Check the parameters and prepare what ``transform`` needs.

        Parameters
        ----------
        X : list of list of tuple
            Ignored: the features do not depend on the data (accepted for
            API consistency).
        y : list of list of str, default=None
            Ignored.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            A parameter out of range or inconsistent (the message names
            it); for the word representations, a malformed cluster file or
            vector table.
        """
        validate_params(self)
        self.n_columns_ = self._check_parameters()
        return self

    def transform(self, X):
        """The feature dicts of every token.

        Parameters
        ----------
        X : list of list of tuple
            Sentences of shape (n_sentences,), each a list of token tuples.

        Returns
        -------
        list of list of dict
            Per sentence, one feature dict per token (str values for
            indicator features, True for flags, float for real values).

        Raises
        ------
        ValueError, TypeError
            ``X`` not a list of sentences, a token that is not a tuple, or
            one that lacks the word column (the message names the sentence
            and token).
        sklearn.exceptions.NotFittedError
            If not fitted.
        """
        check_is_fitted(self, "n_columns_")
        self._check_X(X)
        return [self._sentence(i, sent) if len(sent) else [] for i, sent in enumerate(X)]

    def set_output(self, *, transform=None):
        """Set the output container of ``transform``: only the default is offered.

        ``transform`` returns sequences of feature dicts, which a DataFrame
        cannot hold; this method exists so that ``Pipeline.set_output``
        reaches this step and says so.

        Parameters
        ----------
        transform : {'default', None}, default=None
            ``'default'`` or None (no change): the list of lists of dicts.

        Returns
        -------
        self
            This transformer, unchanged.

        Raises
        ------
        ValueError
            For ``'pandas'``, ``'polars'`` or any other container.
        """
        if transform not in (None, "default"):
            raise ValueError(
                f"{type(self).__name__} cannot output {transform!r}: its output is a list "
                "of sentences, each a list of per-token feature dicts, not a 2-D table. "
                "Use set_output(transform='default'), or set the output of the steps "
                "that produce tables only."
            )
        return self

    @staticmethod
    def _check_X(X):
        if isinstance(X, (str, bytes, Mapping)) or not hasattr(X, "__iter__"):
            raise ValueError("X must be a list of sentences, each a list of token tuples; "
                             f"got {type(X).__name__}.")

    @staticmethod
    def _sentence_columns(i, sent, needed, optional=()):
        """The token columns of sentence ``i`` (a list of tuples), checked.

        ``needed`` columns every token must have; of ``optional`` (column
        index or None each) the ones all tokens have are returned, the others
        as None.
        """
        for j, tok in enumerate(sent):
            if isinstance(tok, Mapping):
                raise TypeError(
                    f"Sentence {i}, token {j}: expected a token tuple such as (word, POS), "
                    f"got a dict ({tok!r:.60}). Feature dicts go to CRFTagger directly."
                )
            if isinstance(tok, (str, bytes)) or not hasattr(tok, "__len__"):
                raise ValueError(
                    f"Sentence {i}, token {j}: expected a token tuple such as (word, POS), "
                    f"got {tok!r:.60}. X must be a list of sentences, each a list of token "
                    "tuples (a word-only token is the 1-tuple (word,))."
                )
            if len(tok) <= needed:
                raise ValueError(
                    f"Sentence {i}, token {j}: the word is column {needed}, but the token "
                    f"{tuple(tok)!r} has only {len(tok)} column(s)."
                )
        columns = list(zip(*sent))
        width = min(map(len, sent))
        return columns, [columns[c] if c is not None and c < width else None for c in optional]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.transformer_tags.preserves_dtype = []
        tags.requires_fit = True
        return tags


def _rows(named):
    """Per-token dicts from ``[(key, values over the tokens), ...]``; None values omitted."""
    keys = [k for k, _ in named]
    rows = [dict(zip(keys, row)) for row in zip(*(v for _, v in named))]
    return rows


def _drop_none(rows):
    for row in rows:
        for key in [k for k, v in row.items() if v is None]:
            del row[key]
    return rows


def _ngrams(name, padded, left, n, lo, hi, size):
    """``name[o]|name[o+1]|...`` (``size`` positions) for every start ``o`` in ``lo..hi``."""
    out = []
    for o in range(lo, hi - size + 2):
        cols = [padded[left + o + d: left + o + d + n] for d in range(size)]
        key = "|".join(f"{name}[{offset_name(o + d)}]" for d in range(size))
        out.append((key, list(map("|".join, zip(*cols)))))
    return out


_COLUMN = [None, Interval(Integral, 0, None, closed="left")]


class ChunkFeatures(SequenceTransformerMixin, TransformerMixin, BaseEstimator,
                    auto_wrap_output_keys=None):
    """Text-chunking features: words and POS tags in a window, and their n-grams.

    The feature set of Sha & Pereira (2003), section 3, after Kudo &
    Matsumoto (2001), which CRF++'s chunking template writes: for the token
    at position 0, the words ``w[-2]`` ... ``w[+2]``, the word bigrams
    ``w[-1]|w[0]`` and ``w[0]|w[+1]``, the POS tags ``pos[-2]`` ...
    ``pos[+2]``, every POS bigram and trigram inside the window; plus, by
    default, suffixes of the current word and its word shape (the
    unknown-word features of Ratnaparkhi 1996, which carry over to
    chunking). Positions outside the sentence are CRF++'s boundary symbols
    (``_B-1``, ``_B+1``, ...).

    Parameters
    ----------
    word_column : int, default=0
        The token column of the word.
    pos_column : int or None, default=1
        The token column of the POS tag; None, or a sentence whose tokens
        lack that column: no POS features.
    window : int, default=2
        Words and POS tags at positions ``-window .. +window``; POS n-grams
        inside it.
    word_ngram_window : int, default=1
        Word bigrams over the positions ``-word_ngram_window ..
        +word_ngram_window`` (1: ``w[-1]|w[0]`` and ``w[0]|w[+1]``; 0:
        none).
    pos_ngram_order : int, default=3
        The longest POS n-gram (2: bigrams, 3: bigrams and trigrams, 1:
        none).
    suffix_length : int, default=0
        Suffixes of 1 .. ``suffix_length`` characters of the current word
        (``suf1`` ...); 0: none.
    shape : bool, default=False
        Add the current word's shape (:func:`word_shape`, key ``shape``).

    Attributes
    ----------
    n_columns_ : int
        The number of token columns the set reads at most.

    References
    ----------
    F. Sha, F. Pereira (2003). Shallow parsing with conditional random fields.
    HLT-NAACL, section 3 ("features").
    T. Kudo, Y. Matsumoto (2001). Chunking with support vector machines. NAACL.

    Examples
    --------
    >>> from sklearn_crfloss.features import ChunkFeatures
    >>> X = [[("He", "PRP"), ("reckons", "VBZ")]]
    >>> f = ChunkFeatures(window=1, pos_ngram_order=2).fit_transform(X)[0][0]
    >>> f["w[-1]"], f["w[0]|w[+1]"], f["pos[-1]|pos[0]"]
    ('_B-1', 'He|reckons', '_B-1|PRP')
    """

    _parameter_constraints = {
        "word_column": [Interval(Integral, 0, None, closed="left")],
        "pos_column": _COLUMN,
        "window": [Interval(Integral, 0, None, closed="left")],
        "word_ngram_window": [Interval(Integral, 0, None, closed="left")],
        "pos_ngram_order": [Interval(Integral, 1, None, closed="left")],
        "suffix_length": [Interval(Integral, 0, None, closed="left")],
        "shape": ["boolean"],
    }

    def __init__(self, *, word_column=0, pos_column=1, window=2, word_ngram_window=1,
                 pos_ngram_order=3, suffix_length=0, shape=False):
        self.word_column = word_column
        self.pos_column = pos_column
        self.window = window
        self.word_ngram_window = word_ngram_window
        self.pos_ngram_order = pos_ngram_order
        self.suffix_length = suffix_length
        self.shape = shape

    def _check_parameters(self):
        return max(self.word_column, -1 if self.pos_column is None else self.pos_column) + 1

    def _sentence(self, i, sent):
        columns, (pos,) = self._sentence_columns(i, sent, self.word_column, (self.pos_column,))
        n, k = len(sent), self.window
        words = _pad(columns[self.word_column], k, k)
        named = [(f"w[{offset_name(o)}]", words[k + o: k + o + n]) for o in range(-k, k + 1)]
        b = min(self.word_ngram_window, k)
        if b:
            named += _ngrams("w", words, k, n, -b, b, 2)
        if pos is not None:
            tags = _pad(pos, k, k)
            named += [(f"pos[{offset_name(o)}]", tags[k + o: k + o + n])
                      for o in range(-k, k + 1)]
            for size in range(2, self.pos_ngram_order + 1):
                named += _ngrams("pos", tags, k, n, -k, k, size)
        word0 = words[k: k + n]
        named += [(f"suf{m}", [w[-m:] if len(w) > m else None for w in word0])
                  for m in range(1, self.suffix_length + 1)]
        if self.shape:
            named.append(("shape", list(map(word_shape, word0))))
        rows = _rows(named)
        return _drop_none(rows) if self.suffix_length else rows


_NER_GROUPS = ("word", "affixes", "shape", "flags", "pos", "chunk")


def _word_items(word, groups, affix_length):
    """``[(name, value), ...]`` of one word for the NER groups in ``groups`` (columns aside)."""
    items = []
    if "word" in groups:
        items.append(("lower", word.lower()))
    if "affixes" in groups:
        m_max = min(affix_length, len(word) - 1)
        items += [(f"pre{m}", word[:m]) for m in range(1, m_max + 1)]
        items += [(f"suf{m}", word[-m:]) for m in range(1, m_max + 1)]
    if "shape" in groups:
        items += [("shape", word_shape(word)), ("sshape", short_word_shape(word))]
    if "flags" in groups:
        items += [(flag, True) for flag, on in (
            ("title", word.istitle()), ("upper", word.isupper()),
            ("digit", any(c.isdigit() for c in word)), ("hyphen", "-" in word)) if on]
    return items


class NERFeatures(SequenceTransformerMixin, TransformerMixin, BaseEstimator,
                  auto_wrap_output_keys=None):
    """Named-entity features: word, affixes, shape, flags and columns in a window.

    The lexical feature set of feature-based NER (Ratinov & Roth 2009;
    the baseline of Turian, Ratinov & Bengio 2010, section 6.2): for the
    current token the lower-cased word (``lower[0]``), its prefixes and
    suffixes of 1 .. ``affix_length`` characters (``pre1[0]`` ...,
    ``suf1[0]`` ..., shorter than the word), its shape and short shape
    (``shape[0]``, ``sshape[0]``; :func:`word_shape`,
    :func:`short_word_shape`), the flags ``title[0]``, ``upper[0]``,
    ``digit[0]`` (has a digit) and ``hyphen[0]`` (value True, present only
    when they hold), the POS and chunk columns where the tokens have them
    (``pos[0]``, ``chunk[0]``), and ``BOS``/``EOS`` (True) at the first and
    last token of a sentence. The groups named in ``context_features`` are
    added for the tokens at ``-window .. +window`` too, keyed by their
    offset (``lower[-1]``, ``shape[+2]``, ...); a position outside the
    sentence has only ``lower[o]``, a boundary symbol (``_B-1``, ``_B+1``).

    Tokens ``(word,)``, ``(word, POS)`` (CoNLL-2002) and ``(word, POS,
    chunk)`` (CoNLL-2003) all work with the defaults: a column a sentence's
    tokens do not have is left out.

    Parameters
    ----------
    word_column : int, default=0
        The token column of the word.
    pos_column : int or None, default=1
        The token column of the POS tag (None: not used).
    chunk_column : int or None, default=2
        The token column of the chunk tag (None: not used).
    window : int, default=2
        The context positions ``-window .. +window``.
    affix_length : int, default=4
        The longest prefix and suffix.
    context_features : tuple of str, default=('word', 'shape', 'pos', 'chunk')
        The groups also used at the context positions, of ``'word'``,
        ``'affixes'``, ``'shape'``, ``'flags'``, ``'pos'``, ``'chunk'``.
    conjunctions : bool, default=True
        Also add the word as written (``word[0]``) and the conjunctions of
        neighbours: the lower-cased word bigrams ``lower[-1]|lower[0]`` and
        ``lower[0]|lower[+1]``, the POS bigrams ``pos[-1]|pos[0]`` and
        ``pos[0]|pos[+1]`` (where the tokens have a POS column) and the
        short-shape trigram ``sshape[-1..+1]`` (``_``
        outside the sentence; CRF++'s boundary symbols for the words), the
        n-gram features of Sha & Pereira (2003) carried over to NER. Chosen
        on CoNLL-2002 Spanish's development split (esp.testa), where they
        added about one point of segment F1 to the first-order CRF.

    Attributes
    ----------
    n_columns_ : int
        The number of token columns read at most.

    References
    ----------
    L. Ratinov, D. Roth (2009). Design challenges and misconceptions in
    named entity recognition. CoNLL.
    J. Turian, L. Ratinov, Y. Bengio (2010). Word representations: a simple
    and general method for semi-supervised learning. ACL, section 6.2.

    Examples
    --------
    >>> from sklearn_crfloss.features import NERFeatures
    >>> f = NERFeatures(window=1).fit_transform([[("El",), ("Real-Madrid",)]])[0]
    >>> f[1]["lower[0]"], f[1]["shape[0]"], f[1]["sshape[0]"], f[1]["lower[-1]"]
    ('real-madrid', 'Xxxx-Xxxxxx', 'Xx-Xx', 'el')
    >>> f[1]["hyphen[0]"], f[1]["EOS"], f[1]["lower[+1]"]
    (True, True, '_B+1')
    """

    _parameter_constraints = {
        "word_column": [Interval(Integral, 0, None, closed="left")],
        "pos_column": _COLUMN, "chunk_column": _COLUMN,
        "window": [Interval(Integral, 0, None, closed="left")],
        "affix_length": [Interval(Integral, 0, None, closed="left")],
        "context_features": [tuple, list],
        "conjunctions": ["boolean"],
    }

    def __init__(self, *, word_column=0, pos_column=1, chunk_column=2, window=2, affix_length=4,
                 context_features=("word", "shape", "pos", "chunk"), conjunctions=True):
        self.word_column = word_column
        self.pos_column = pos_column
        self.chunk_column = chunk_column
        self.window = window
        self.affix_length = affix_length
        self.context_features = context_features
        self.conjunctions = conjunctions

    def _check_parameters(self):
        bad = [g for g in self.context_features if g not in _NER_GROUPS]
        if bad:
            raise ValueError(f"context_features: unknown group(s) {bad}; the groups are "
                             f"{list(_NER_GROUPS)}.")
        cols = [c for c in (self.word_column, self.pos_column, self.chunk_column) if c is not None]
        return max(cols) + 1

    def _sentence(self, i, sent):
        columns, extra = self._sentence_columns(i, sent, self.word_column,
                                                (self.pos_column, self.chunk_column))
        words = [str(w) for w in columns[self.word_column]]
        n, k = len(words), self.window
        ctx = set(self.context_features)
        local, around = [], []
        for j, word in enumerate(words):
            items = _word_items(word, _NER_GROUPS, self.affix_length)
            items += [(name, str(col[j])) for name, col in zip(("pos", "chunk"), extra)
                      if col is not None]
            local.append(items)
            around.append([(name, v) for name, v in _word_items(word, ctx, self.affix_length)]
                          + [(name, str(col[j])) for name, col in zip(("pos", "chunk"), extra)
                             if col is not None and name in ctx])
        keys = {}
        rows = []
        for j in range(n):
            row = {f"{name}[0]": v for name, v in local[j]}
            for o in range(-k, k + 1):
                if not o:
                    continue
                if 0 <= j + o < n:
                    for name, v in around[j + o]:
                        key = keys.get((name, o))
                        if key is None:
                            key = keys[(name, o)] = f"{name}[{o:+d}]"
                        row[key] = v
                elif "word" in ctx:  # CRF++'s boundary symbol of that position
                    row[f"lower[{o:+d}]"] = f"_B{j + o}" if j + o < 0 else f"_B+{j + o - n + 1}"
            rows.append(row)
        if self.conjunctions:
            _add_conjunctions(rows, words, extra[0])
        rows[0]["BOS"] = True
        rows[-1]["EOS"] = True
        return rows


def _add_conjunctions(rows, words, pos):
    """Add ``NERFeatures``' cased word and neighbour conjunctions to ``rows`` in place."""
    n = len(words)
    lower = [w.lower() for w in words]
    sshape = [short_word_shape(w) for w in words]
    pos = [str(p) for p in pos] if pos is not None else None

    def at(values, j, outside="_"):
        return values[j] if 0 <= j < n else outside

    for j, row in enumerate(rows):
        lw = [at(lower, j + o, f"_B{j + o}" if j + o < 0 else f"_B+{j + o - n + 1}")
              for o in (-1, 0, 1)]
        row["word[0]"] = words[j]
        row["lower[-1]|lower[0]"] = f"{lw[0]}|{lw[1]}"
        row["lower[0]|lower[+1]"] = f"{lw[1]}|{lw[2]}"
        row["sshape[-1..+1]"] = "|".join(at(sshape, j + o) for o in (-1, 0, 1))
        if pos is not None:
            row["pos[-1]|pos[0]"] = f"{at(pos, j - 1)}|{pos[j]}"
            row["pos[0]|pos[+1]"] = f"{pos[j]}|{at(pos, j + 1)}"


class POSFeatures(SequenceTransformerMixin, TransformerMixin, BaseEstimator,
                  auto_wrap_output_keys=None):
    """Part-of-speech tagging features: the word, its affixes and shape, its neighbours.

    The feature set of Ratnaparkhi (1996), Table 1, as Toutanova et al.
    (2003) use it for every word (not only rare ones): the current word
    (``w[0]``), its prefixes and suffixes of 1 .. ``affix_length``
    characters shorter than the word (``pre1`` ..., ``suf1`` ...), the
    flags ``digit``, ``upper`` (has an upper-case letter) and ``hyphen``
    (True, present only when they hold), its shape (``shape``,
    :func:`word_shape`) and the words at ``-window .. +window``
    (``w[-2]``, ``w[-1]``, ``w[+1]``, ``w[+2]``; CRF++'s boundary symbols
    outside the sentence). Ratnaparkhi's previous tags are the CRF's label
    transitions. Reads the word column only.

    Parameters
    ----------
    word_column : int, default=0
        The token column of the word.
    window : int, default=2
        Neighbouring words at ``-window .. +window``.
    affix_length : int, default=4
        The longest prefix and suffix.

    Attributes
    ----------
    n_columns_ : int
        ``word_column + 1``.

    References
    ----------
    A. Ratnaparkhi (1996). A maximum entropy model for part-of-speech
    tagging. EMNLP, Table 1.
    K. Toutanova, D. Klein, C. Manning, Y. Singer (2003). Feature-rich
    part-of-speech tagging with a cyclic dependency network. HLT-NAACL.

    Examples
    --------
    >>> from sklearn_crfloss.features import POSFeatures
    >>> f = POSFeatures(window=1, affix_length=2).fit_transform([[("Pre-war",), ("cars",)]])
    >>> sorted(f[0][1].items())
    [('pre1', 'c'), ('pre2', 'ca'), ('shape', 'xxxx'), ('suf1', 's'), ('suf2', 'rs'), ('w[+1]', '_B+1'), ('w[-1]', 'Pre-war'), ('w[0]', 'cars')]
    """

    _parameter_constraints = {
        "word_column": [Interval(Integral, 0, None, closed="left")],
        "window": [Interval(Integral, 0, None, closed="left")],
        "affix_length": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, *, word_column=0, window=2, affix_length=4):
        self.word_column = word_column
        self.window = window
        self.affix_length = affix_length

    def _check_parameters(self):
        return self.word_column + 1

    def _sentence(self, i, sent):
        columns, _ = self._sentence_columns(i, sent, self.word_column)
        n, k = len(sent), self.window
        words = _pad(columns[self.word_column], k, k)
        rows = _rows([(f"w[{offset_name(o)}]", words[k + o: k + o + n])
                      for o in range(-k, k + 1)])
        for row, word in zip(rows, words[k: k + n]):
            m_max = min(self.affix_length, len(word) - 1)
            for m in range(1, m_max + 1):
                row[f"pre{m}"] = word[:m]
                row[f"suf{m}"] = word[-m:]
            for flag, on in (("digit", any(c.isdigit() for c in word)),
                             ("upper", any(c.isupper() for c in word)), ("hyphen", "-" in word)):
                if on:
                    row[flag] = True
            row["shape"] = word_shape(word)
        return rows

