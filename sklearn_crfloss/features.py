"""Token features: CRF++-style feature templates and the field's feature sets.

This module turns sentences given as lists of token tuples, e.g.
``[("He", "PRP"), ("reckons", "VBZ"), ...]``, into one feature dictionary per
token, following the template language of CRF++ [1]_.  The dictionaries map a
template identifier to the expanded template text, e.g.
``{"U05": "He/reckons", ...}``, so that a
:class:`~sklearn.feature_extraction.DictVectorizer` (or any estimator that
one-hot encodes string values) turns them into the indicator attributes
that CRF++ would generate (``"U05:He/reckons"`` in
:class:`~sklearn_crfloss.CRFTagger`, python-crfsuite's name).

The field's feature sets are transformers of the same input and output:
:class:`ChunkFeatures` (Sha & Pereira 2003), :class:`NERFeatures`,
:class:`POSFeatures` (Ratnaparkhi 1996), :class:`WordClusterFeatures` (Brown
clusters from a file) and :class:`EmbeddingFeatures` (a scaled vector
table, Turian et al. 2010); :class:`FeatureDictUnion` merges the dicts of
several of them (and of :class:`TemplateFeatures`).

References
----------
.. [1] T. Kudo, "CRF++: Yet Another CRF toolkit", section "Preparing feature
   templates", https://taku910.github.io/crfpp/#templ
"""

import os
import re
from collections.abc import Mapping
from itertools import combinations, repeat

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._data import (BIGRAM_PREFIX, ChunkFeatures, EmbeddingFeatures, FeatureDictUnion,
                    NERFeatures, POSFeatures, SequenceTransformerMixin, WordClusterFeatures,
                    crfsuite_attributes, read_word_clusters, short_word_shape, word_shape)

__all__ = ["CONLL2000_TEMPLATE", "ChunkFeatures", "EmbeddingFeatures", "FeatureDictUnion",
           "NERFeatures", "POSFeatures", "SUZUKI2006_TEMPLATE", "TemplateFeatures",
           "WordClusterFeatures", "crfsuite_attributes", "read_word_clusters",
           "short_word_shape", "word_shape"]

CONLL2000_TEMPLATE = """\
# Unigram
U00:%x[-2,0]
U01:%x[-1,0]
U02:%x[0,0]
U03:%x[1,0]
U04:%x[2,0]
U05:%x[-1,0]/%x[0,0]
U06:%x[0,0]/%x[1,0]

U10:%x[-2,1]
U11:%x[-1,1]
U12:%x[0,1]
U13:%x[1,1]
U14:%x[2,1]
U15:%x[-2,1]/%x[-1,1]
U16:%x[-1,1]/%x[0,1]
U17:%x[0,1]/%x[1,1]
U18:%x[1,1]/%x[2,1]

U20:%x[-2,1]/%x[-1,1]/%x[0,1]
U21:%x[-1,1]/%x[0,1]/%x[1,1]
U22:%x[0,1]/%x[1,1]/%x[2,1]

# Bigram
B
"""
"""CRF++'s feature template for the CoNLL-2000 chunking task (str).

The template shipped as ``examples/chunking/template`` with CRF++ [1]_: words
at relative positions -2..2 (``U00``-``U04``, column 0), the word bigrams
-1/0 and 0/1 (``U05``, ``U06``), POS tags at -2..2 (``U10``-``U14``, column 1),
POS bigrams (``U15``-``U18``) and POS trigrams (``U20``-``U22``): 19 unigram
features per token.  Its last line is the plain bigram template ``B``, which
:class:`TemplateFeatures` ignores (the CRF always has a dense label transition
matrix).  Expects tokens ``(word, POS, ...)``.

References
----------
.. [1] T. Kudo, "CRF++: Yet Another CRF toolkit", examples/chunking/template,
   https://taku910.github.io/crfpp/#templ

Examples
--------
>>> from sklearn_crfloss.features import CONLL2000_TEMPLATE
>>> print(CONLL2000_TEMPLATE.splitlines()[6])
U05:%x[-1,0]/%x[0,0]
"""

SUZUKI2006_TEMPLATE = "\n".join(
    ["# Kudo & Matsumoto's basic set: words (column 0), POS tags (column 1) at -2..2"]
    + [f"U{c}{k}:%x[{o},{c}]" for c in (0, 1) for k, o in enumerate(range(-2, 3))]
    + ["# Bigram combinations of two positions of the window: words (U2x), POS (U3x)"]
    + [f"U{2 + c}{k}:%x[{i},{c}]/%x[{j},{c}]" for c in (0, 1)
       for k, (i, j) in enumerate(combinations(range(-2, 3), 2))]
    + ["# Label bigram (the dense transition matrix)", "B", ""])
"""The chunking features of Suzuki, McDermott & Isozaki (2006), section 5.2 (str).

The paper: "As regards the basic feature set for Chunking, we followed (Kudo
and Matsumoto, 2001) ... We expanded the basic features by using bigram
combinations of the same types of features, such as words and part-of-speech
tags, within window size 5." This template is our reading of that sentence
(the paper lists no template); it contains exactly 30 unigram templates:

- ``U00``-``U04``: the word (column 0) at relative positions -2, -1, 0, 1, 2;
- ``U10``-``U14``: the POS tag (column 1) at -2..2 -- Kudo & Matsumoto's
  static features (their dynamic features, the chunk tags of the two
  previous tokens, are the CRF's label transitions here; a first-order CRF
  has only the previous one);
- ``U20``-``U29``: every pair of two different positions ``i < j`` of the
  window -2..2 (10 pairs: (-2,-1), (-2,0), (-2,1), (-2,2), (-1,0), (-1,1),
  (-1,2), (0,1), (0,2), (1,2)) of words, ``word_i/word_j``;
- ``U30``-``U39``: the same 10 pairs of POS tags, ``pos_i/pos_j``;

and the plain bigram line ``B`` (the dense label transition matrix). "Bigram
combinations" is read as all pairs of positions, not only adjacent ones (the
adjacent pairs are ``U20``, ``U24``, ``U27``, ``U29`` and ``U30``, ``U34``,
``U37``, ``U39``); there are no trigrams, unlike :data:`CONLL2000_TEMPLATE`.
Expects tokens ``(word, POS, ...)``; the words are not lower-cased. On the
CoNLL-2000 training set it yields far more attributes than
:data:`CONLL2000_TEMPLATE` (the word pairs at distance 2 to 4 are mostly
unique).

References
----------
J. Suzuki, E. McDermott, H. Isozaki (2006). Training conditional random
fields with multivariate evaluation measures. ACL, section 5.2.
T. Kudo, Y. Matsumoto (2001). Chunking with support vector machines. NAACL.

Examples
--------
>>> from sklearn_crfloss.features import SUZUKI2006_TEMPLATE, TemplateFeatures
>>> print(SUZUKI2006_TEMPLATE.splitlines()[22])
U27:%x[0,0]/%x[1,0]
>>> feats = TemplateFeatures(SUZUKI2006_TEMPLATE).fit([])
>>> len(feats.keys_)
30
>>> feats.transform([[("He", "PRP"), ("reckons", "VBZ")]])[0][0]["U28"]
'He/_B+2'
"""

_MACRO_RE = re.compile(r"%x\[([-+]?\d+),(\d+)\]")
_UNIGRAM_RE = re.compile(r"([^:%\s]*)(?::(.*))?", re.DOTALL)


_PAD_LIMIT = 64


def _shifted(column, offset):
    """``column`` read at ``offset`` from each token, CRF++'s boundary symbols outside.

    Token ``j`` of a sentence of ``n`` gets ``column[j + offset]``, or
    ``_B-k`` for the position ``j + offset = -k`` before the sentence and
    ``_B+k`` for ``j + offset = n - 1 + k`` after it; in O(n) for any offset.
    """
    n = len(column)
    if offset <= 0:
        k = min(-offset, n)  # tokens whose position falls before the sentence
        return [f"_B{j + offset}" for j in range(k)] + column[: n - k]
    k = min(offset, n)
    return column[k:] + [f"_B+{j + offset - n + 1}" for j in range(n - k, n)]


def _template_lines(template):
    """Return the template as a list of ``(line_number, line)``."""
    if isinstance(template, os.PathLike):
        with open(template, encoding="utf-8") as f:
            template = f.read()
    if isinstance(template, str):
        lines = template.split("\n")
    elif isinstance(template, (list, tuple)):
        lines = list(template)
        for line in lines:
            if not isinstance(line, str):
                raise TypeError(
                    "template lines must be str, got "
                    f"{type(line).__name__}: {line!r}"
                )
        for lineno, line in enumerate(lines, start=1):
            if "\n" in line or "\r" in line:
                raise ValueError(
                    f"Template line {lineno} {line!r} holds a line break: give one "
                    "template per item of the list (or the whole template as one str)."
                )
    else:
        raise TypeError(
            "template must be a str (the template text), a list or tuple of "
            "lines, or an os.PathLike pointing to a template file; got "
            f"{type(template).__name__}"
        )
    return list(enumerate(lines, start=1))


def _compile_body(lineno, raw, body):
    """``(macros, literals)`` of a template's text; ValueError on a bad macro."""
    macros, literals, pos = [], [], 0
    for mm in _MACRO_RE.finditer(body):
        literals.append(body[pos : mm.start()])
        macros.append((int(mm.group(1)), int(mm.group(2))))
        pos = mm.end()
    literals.append(body[pos:])
    if any("%" in lit for lit in literals):
        raise ValueError(
            f"Template line {lineno} {raw!r}: invalid macro; the only "
            "macro is %x[row,col] with integer row (relative position) "
            "and non-negative integer col (column index), without spaces "
            "(Wapiti's %X, %t and %m commands and its [@row,col] and "
            "[*row,col] positions are not supported)."
        )
    return tuple(macros), tuple(literals)


def _template_entries(lineno, raw, line):
    """``[(key, body), ...]`` of one non-comment template line (none for a plain ``B``).

    Bigram entries get the key prefix ``BIGRAM_PREFIX``.
    """
    kind = line[0]
    if kind in "ub*" and line[1:2] in ("", ":"):  # Wapiti: the text before the first macro names the observation
        cut = line.find("%")
        key, body = (line, "") if cut < 0 else (line[:cut], line[cut:])
        if kind == "b" and "%" not in line:
            return []  # a plain label bigram: the dense transition matrix
        return ([(key, body)] if kind in "u*" else []) + (
            [(BIGRAM_PREFIX + key, body)] if kind in "b*" and "%" in line else [])
    if kind not in "UB":
        hint = ("" if ":" in raw or "%" in raw else
                f" A str is the template's text: if {raw!r} names a template file, "
                f"pass pathlib.Path({raw!r}).")
        raise ValueError(
            f"Template line {lineno} {raw!r}: unknown template type "
            f"{kind!r}; lines must start with 'U' (unigram), 'B' "
            "(bigram), '#' (comment), or Wapiti's 'u:', 'b:' or '*:'." + hint
        )
    if kind == "B" and "%" not in line:
        return []  # plain 'B' / 'Bxx': the dense transition matrix
    m = _UNIGRAM_RE.fullmatch(line[1:])
    if m is None:
        raise ValueError(
            f"Template line {lineno} {raw!r}: expected '{kind}id:text' where "
            "'id' contains no ':', '%' or whitespace and 'text' may "
            "contain %x[row,col] macros, e.g. 'U05:%x[-1,0]/%x[0,0]'."
        )
    key = kind + m.group(1)
    return [(key if kind == "U" else BIGRAM_PREFIX + key, m.group(2) or "")]


def _parse_template(template):
    """Compile a CRF++ template into ``[(key, macros, literals), ...]``.

    ``macros`` is a tuple of ``(offset, column)`` pairs and ``literals`` a
    tuple of ``len(macros) + 1`` literal strings surrounding them; the keys
    of bigram templates start with ``BIGRAM_PREFIX``.
    """
    compiled = []
    seen = {}
    for lineno, raw in _template_lines(template):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        for key, body in _template_entries(lineno, raw, line):
            if key in seen:
                raise ValueError(
                    f"Template line {lineno} {raw!r}: duplicate identifier {key!r} "
                    f"(already used on line {seen[key]})."
                )
            seen[key] = lineno
            compiled.append((key, *_compile_body(lineno, raw, body)))
    if not any(not key.startswith(BIGRAM_PREFIX) for key, _, _ in compiled):
        raise ValueError(
            "The template has no unigram ('U') lines, so it would generate no "
            "features."
        )
    return compiled


class TemplateFeatures(SequenceTransformerMixin, TransformerMixin, BaseEstimator,
                       auto_wrap_output_keys=None):
    """Token features from a CRF++ feature template.

    Turns each sentence, a list of token tuples such as ``(word, POS)``, into
    a list of per-token feature dictionaries ``{identifier: expanded text}``
    following the template language of CRF++ [1]_.  Meant as the first step
    of a pipeline whose next step one-hot encodes the dictionaries (each
    entry ``key: value`` becomes the indicator attribute ``"key:value"``
    in :class:`~sklearn_crfloss.CRFTagger`, as in CRFsuite).

    Template syntax (one template per line):

    - ``Uid:text`` -- a unigram template.  ``id`` is any identifier without
      ``:``, ``%`` or whitespace (conventionally two digits, e.g. ``U05``);
      ``text`` is literal text with macros ``%x[row,col]``, which expand to
      column ``col`` of the token at relative position ``row`` from the
      current one.  The feature dictionary gets the entry
      ``{"Uid": expanded text}``.  ``Uid`` alone (no colon) is a constant
      (bias) feature with value ``""``.
    - Positions before the start of the sentence expand to CRF++'s boundary
      symbols ``_B-1``, ``_B-2``, ... and positions after the end to ``_B+1``,
      ``_B+2``, ... (CRF++ limits ``|row|`` to 8; here any row is allowed).
    - ``B`` or ``Bid`` without macros -- the plain label bigram.  It is
      accepted and ignored: the CRF always has a dense label transition
      matrix.
    - ``Bid:text`` with macros, e.g. ``B01:%x[0,1]`` -- an
      observation-dependent label bigram: the entry
      ``{"~Bid": expanded text}`` (key prefix ``"~"``), written for
      every token but the first of a sentence (it scores the edge from the
      previous token). :class:`~sklearn_crfloss.CRFTagger` gives such an
      attribute an ``(n_labels, n_labels)`` block of transition weights
      (``bigram_coef_``) instead of state weights, as CRF++ does.
    - Wapiti's pattern lines ``u:text``, ``b:text`` and ``*:text`` (``*``:
      both a unigram and a bigram entry): the key is the line up to its
      first macro (``"u:wrd="`` for ``u:wrd=%x[0,0]``; a bigram key gets the
      ``"~"`` prefix), and a ``b`` line without macros is the plain label
      bigram. Only the ``%x`` command is supported (not ``%X``, ``%t``,
      ``%m``), and the boundary symbols are CRF++'s.
    - Blank lines and lines starting with ``#`` are ignored; leading and
      trailing whitespace of a line is ignored.

    Parameters
    ----------
    template : str, list of str or os.PathLike, default=CONLL2000_TEMPLATE
        The template: the template text (a ``str``, possibly multi-line), a
        list or tuple of lines, or the path of a template file (an
        :class:`os.PathLike` such as :class:`pathlib.Path`; a plain ``str``
        is always template text).  The default is CRF++'s CoNLL-2000
        chunking template, which expects tokens ``(word, POS, ...)``.

    Attributes
    ----------
    templates_ : list of tuple
        The compiled unigram templates, in template order, each
        ``(key, macros, literals)``: ``key`` the identifier (str),
        ``macros`` a tuple of ``(offset, column)`` pairs, and ``literals`` a
        tuple of ``len(macros) + 1`` literal strings that surround the
        macros.
    keys_ : list of str
        The template identifiers, i.e. the keys of the feature dictionaries
        (bigram keys, starting with ``"~"``, are absent at the first token
        of a sentence).
    n_columns_ : int
        The number of token columns the template needs (largest column index
        used plus one).

    See Also
    --------
    sklearn.feature_extraction.DictVectorizer : One-hot encodes feature
        dictionaries.

    Notes
    -----
    ``fit`` only parses the template (``X`` is not used), so it is cheap;
    ``transform`` builds, for every sentence, the template's columns padded
    with the boundary symbols once (at most 64 on each side; a farther
    offset writes its symbols directly, so any offset costs the same) and
    then expands each template for all positions of the sentence at once.  Token entries are converted with
    :class:`str`.

    The output is a list of sequences of dicts, not a table:
    :meth:`get_feature_names_out` gives the dict keys (``keys_``), and
    :meth:`set_output` accepts only the default container (the global
    ``sklearn.set_config(transform_output=...)`` does not apply).

    References
    ----------
    .. [1] T. Kudo, "CRF++: Yet Another CRF toolkit", section "Preparing
       feature templates", https://taku910.github.io/crfpp/#templ

    Examples
    --------
    >>> from sklearn_crfloss.features import TemplateFeatures
    >>> X = [[("He", "PRP"), ("reckons", "VBZ")]]
    >>> feats = TemplateFeatures(["U00:%x[0,0]", "U01:%x[-1,0]/%x[0,1]", "B"])
    >>> feats.fit_transform(X)
    [[{'U00': 'He', 'U01': '_B-1/PRP'}, {'U00': 'reckons', 'U01': 'He/VBZ'}]]
    >>> len(TemplateFeatures().fit_transform(X)[0][0])  # CONLL2000_TEMPLATE
    19
    >>> feats.get_feature_names_out()
    array(['U00', 'U01'], dtype=object)
    >>> bigram = TemplateFeatures(["U00:%x[0,0]", "B01:%x[0,1]"]).fit([])
    >>> bigram.transform(X)[0]  # the bigram key from the second token on
    [{'U00': 'He'}, {'U00': 'reckons', '~B01': 'VBZ'}]
    """

    def __init__(self, template=CONLL2000_TEMPLATE):
        self.template = template

    def fit(self, X, y=None):
        """Parse the template.

        Parameters
        ----------
        X : list of list of tuple
            Ignored (the template does not depend on the data); accepted for
            API consistency.
        y : list of list of str, default=None
            Ignored.

        Returns
        -------
        self : TemplateFeatures
            The fitted transformer.

        Raises
        ------
        ValueError
            If a template line is invalid (the message quotes the line), an
            identifier is used twice, there is no unigram line, or an item
            of a list of lines holds a line break.
        TypeError
            If ``template`` has an unsupported type.
        """
        compiled = _parse_template(self.template)
        self.templates_ = compiled
        self.keys_ = [key for key, _, _ in compiled]
        cols = [c for _, macros, _ in compiled for _, c in macros]
        self.n_columns_ = max(cols) + 1 if cols else 0
        return self

    def transform(self, X):
        """Expand the template at every token of every sentence.

        Parameters
        ----------
        X : list of list of tuple
            Sentences of shape (n_sentences,), each a list of n_tokens token
            tuples ``(word, POS, ...)`` with at least ``n_columns_`` entries.

        Returns
        -------
        features : list of list of dict
            Of shape (n_sentences,), each a list of n_tokens feature
            dictionaries mapping every template identifier (``keys_``) to its
            expanded text (str).

        Raises
        ------
        ValueError
            If a token has fewer columns than the template uses, or is a
            ``str`` rather than a tuple (the message names the sentence and
            token index).
        TypeError
            If a token is a dict (templates address columns of tuples), or
            it or a column the template uses is bytes (decode the text
            first).
        sklearn.exceptions.NotFittedError
            If the transformer is not fitted.
        """
        check_is_fitted(self, "templates_")
        if isinstance(X, str):
            raise ValueError(
                "X must be a list of sentences, each a list of token tuples; "
                "got a str."
            )
        compiled = self.templates_
        keys = self.keys_
        n_cols = self.n_columns_
        offsets = [o for _, macros, _ in compiled for o, _ in macros]
        # Boundary symbols are padded up to _PAD_LIMIT positions; a farther
        # offset gets its symbols from _shifted, in O(sentence length).
        left = min(max(0, -min(offsets, default=0)), _PAD_LIMIT)
        right = min(max(0, max(offsets, default=0)), _PAD_LIMIT)
        bos = [f"_B-{k}" for k in range(left, 0, -1)]
        eos = [f"_B+{k}" for k in range(1, right + 1)]
        used_cols = sorted({c for _, macros, _ in compiled for _, c in macros})
        bigram_keys = [key for key in keys if key.startswith(BIGRAM_PREFIX)]

        # Per template: (1, ((offset, col),)) for a bare macro, (0, text)
        # without macros, (3, sep.join, ((offset, col), ...)) for macros
        # joined by one separator, else (2, str.format, (...)).
        plan = []
        for _, macros, literals in compiled:
            if not macros:
                plan.append((0, literals[0], None))
            elif len(macros) == 1 and literals == ("", ""):
                plan.append((1, None, macros))
            else:
                inner = set(literals[1:-1])
                if literals[0] == literals[-1] == "" and len(inner) == 1:
                    # e.g. "%x[-1,0]/%x[0,0]": str.join is the fastest.
                    plan.append((3, inner.pop().join, macros))
                else:
                    fmt = "{}".join(
                        lit.replace("{", "{{").replace("}", "}}")
                        for lit in literals
                    )
                    plan.append((2, fmt.format, macros))

        out = []
        for i, sent in enumerate(X):
            n = len(sent)
            if n == 0:
                out.append([])
                continue
            if n_cols:
                if min(map(len, sent)) < n_cols or any(
                    isinstance(tok, (str, bytes, Mapping)) for tok in sent
                ):
                    self._raise_bad_sentence(i, sent, n_cols)
                columns = list(zip(*sent))
                if any(bytes in set(map(type, columns[c])) for c in used_cols):
                    self._raise_bytes_cell(i, sent, used_cols)
            padded = {
                c: bos + list(map(str, columns[c])) + eos for c in used_cols
            }

            def take(o, c, padded=padded, n=n):
                if -left <= o <= right:
                    return padded[c][o + left : o + left + n]
                return _shifted(padded[c][left : left + n], o)

            values = []
            for kind, a, b in plan:
                if kind == 1:
                    values.append(take(*b[0]))
                elif kind == 3:
                    values.append(list(map(a, zip(*[take(o, c) for o, c in b]))))
                elif kind == 2:
                    values.append(list(map(a, *[take(o, c) for o, c in b])))
                else:
                    values.append(repeat(a, n))
            rows = [dict(zip(keys, row)) for row in zip(*values)]
            for key in bigram_keys:  # no edge into the first token
                del rows[0][key]
            out.append(rows)
        return out

    def get_feature_names_out(self, input_features=None):
        """Get the names of the output features: the template identifiers.

        Every token's feature dict has exactly these keys, in this order; a
        one-hot encoder after it (``DictVectorizer``, ``CRFTagger``) names
        its columns ``'<key>=<value>'``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Ignored (the names do not depend on the token columns); accepted
            for API consistency.

        Returns
        -------
        ndarray of object of shape (n_templates,)
            ``keys_``.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the transformer is not fitted.
        """
        check_is_fitted(self, "templates_")
        return np.asarray(self.keys_, dtype=object)

    @staticmethod
    def _raise_bytes_cell(i, sent, used_cols):
        for j, tok in enumerate(sent):
            for c in used_cols:
                if isinstance(tok[c], bytes):
                    raise TypeError(
                        f"Sentence {i}, token {j}: column {c} holds the bytes "
                        f"{tok[c]!r:.60}: decode the text to str first."
                    )

    @staticmethod
    def _raise_bad_sentence(i, sent, n_cols):
        for j, tok in enumerate(sent):
            if isinstance(tok, Mapping):
                raise TypeError(
                    f"Sentence {i}, token {j}: expected a token tuple such as "
                    f"(word, POS), got a dict ({tok!r:.60}). Template macros "
                    "%x[row,col] address the columns of token tuples; feature "
                    "dicts go to CRFTagger directly (or build the tuples first)."
                )
            if isinstance(tok, bytes):
                raise TypeError(
                    f"Sentence {i}, token {j}: expected a token tuple such as "
                    f"(word, POS), got the bytes {tok!r:.60}: decode the text "
                    "to str first."
                )
            if isinstance(tok, str):
                raise ValueError(
                    f"Sentence {i}, token {j}: expected a token tuple such as "
                    f"(word, POS), got the str {tok!r}. X must be a list of "
                    "sentences, each a list of token tuples."
                )
            if len(tok) < n_cols:
                raise ValueError(
                    f"Sentence {i}, token {j}: the template uses column "
                    f"{n_cols - 1}, but the token {tuple(tok)!r} has only "
                    f"{len(tok)} column(s)."
                )
