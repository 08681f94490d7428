"""Chunks (segments) of label sequences: tagging schemes, label parser, decoder.

A *chunk* (segment) is a maximal run of tokens that a tagging scheme reads as
one entity, given as ``(start, end, type)`` with ``end`` exclusive. This
module holds the package's only label parser, :func:`split_label`, and its
only chunk decoder, behind three entry points: :func:`get_segments` (one
sequence), :func:`get_segments_batch` (a list of sequences) and
:func:`segments_from_codes` (integer-coded sequences, for the training losses
that decode segments at every objective evaluation, ``loss='mce_f'``). The
segment metrics of :mod:`sklearn_crfloss.metrics` count the chunks it finds.

Schemes
-------
``scheme="conlleval"`` (default)
    Exactly the chunk logic of ``conlleval.pl`` [1]_ (CoNLL-2000, version
    2004-01-26). A label is split at its **first** hyphen into a prefix and a
    type (``B-ARGM-LOC`` -> ``B``, ``ARGM-LOC``); a label with no hyphen has an
    empty type and the whole label as prefix; only the literal ``"O"`` is
    outside (lowercase ``o`` is an ordinary tag with an empty type). A chunk
    starts at ``B`` after ``B``/``I``/``O``, at ``I`` after ``O`` or ``E``, at
    ``E`` after ``E`` or ``O``, at ``[`` and ``]``, and at any tag other than
    ``O`` and ``.`` whose type differs from the previous tag's type. A chunk
    ends before ``B`` or ``O`` after ``B``/``I``, before ``E``/``I``/``O``
    after ``E``, after ``[`` and ``]``, and before any type change unless the
    previous tag is ``O`` or ``.``. Consequences: ``PER PER O LOC`` has no
    chunk, ``I-X`` after ``O`` starts a chunk (IOB1 leniency, so IOB2 output is
    not penalised for ill-formed ``I-X``), ``S-PER S-PER`` and ``E-X B-X`` do
    **not** split. As in Perl, a type spelled ``"0"`` is read as the empty type.
    No label is ever rejected. There is no strict mode.
``scheme="iob1"``, ``"iob2"`` (prefixes ``B``, ``I``)
    ``mode="lenient"``: the conlleval rules (identical for IOB1 and IOB2).
    ``mode="strict"``: IOB2 chunks must start with ``B-X`` and continue with
    ``I-X``; a chunk starting with ``I-X`` is not counted. IOB1 chunks start
    with ``I-X`` after ``O`` or another type, or with ``B-X`` directly after a
    token of type ``X``; a chunk starting with any other ``B-X`` is not counted.
``scheme="ioe1"``, ``"ioe2"`` (prefixes ``I``, ``E``)
    ``mode="lenient"``: the conlleval rules (``E`` closes a chunk).
    ``mode="strict"``: IOE2 chunks must end with ``E-X``; IOE1 chunks ending
    with ``E-X`` are counted only if the next token has type ``X``.
``scheme="iobes"`` (``B``, ``I``, ``E``, ``S``) and ``"bilou"`` (``B``, ``I``, ``L``, ``U``)
    BILOU is IOBES with ``L`` for ``E`` and ``U`` for ``S``. ``mode="lenient"``:
    ``S`` is a one-token chunk, ``E`` closes a chunk and ``B``/``S`` always
    start one (so ``S-PER S-PER`` is two chunks and ``B E B E`` two), but
    ``I``/``E`` without a preceding ``B`` still start a chunk, and a ``B``/``I``
    run without ``E`` is still a chunk. ``mode="strict"``: only ``S-X`` and
    ``B-X I-X* E-X`` are chunks; anything else is ignored.
``scheme="raw"``
    ``conlleval.pl -r``: every token other than ``"O"`` is a one-token chunk
    whose type is the label itself (labels may be any hashable; unlike Perl, a
    label ``"0"`` keeps its name). ``mode`` has no effect; conlleval's ``-o``
    (another outside tag) is not offered.

Strict IOB2 and strict IOBES differ from conlleval in exactly three of its
rules: where chunks start, where they end, and whether ill-formed chunks
count. Every scheme other than ``"conlleval"`` and ``"raw"`` raises a
``ValueError`` naming the label (and the sequence, in batch functions) for a
label that is not ``"O"`` or ``<prefix>-<non-empty type>`` with a prefix of
the scheme; nothing is silently re-interpreted.

Sequences are decoded as ``conlleval.pl`` reads a file: one token stream in
which every sequence is followed by a blank line, read as an ``O`` token. So
no chunk crosses a sequence boundary whenever labels have a prefix and a
non-empty type; a chunk opened by a degenerate conlleval label (``o``,
``PER``) that is still open at a sequence end is clipped there.

References
----------
.. [1] E. F. Tjong Kim Sang and S. Buchholz, "Introduction to the CoNLL-2000
   Shared Task: Chunking", CoNLL 2000; evaluation script ``conlleval.pl``
   (version 2004-01-26), https://www.clips.uantwerpen.be/conll2000/chunking/
"""

# Design notes
# ------------
# Every scheme is a "pair rule": whether a chunk ends before / starts at token
# k depends only on the prefixes of tokens k-1 and k and on whether their
# types differ. The prefixes fall in nine categories (O, B, I, E, S, '.', '[',
# ']', any other), so each rule is a constant table _EVENTS[rule][prev, cur,
# types_differ] built once at import from the readable rule functions below.
# Decoding is then numpy only: a chunk starts at every start event and ends at
# the first end event after its start, which is also what conlleval.pl does
# when chunks nest (degenerate labels: every open chunk is closed at the next
# end event). Strict modes keep the lenient chunks that are well formed.
# There is no cache: the labels of a call are coded once (a dict), parsed once
# per distinct label, and the stream is decoded with a few array operations.

from itertools import chain

import numpy as np

from ._utils import StrOptions, validate_call

__all__ = [
    "SCHEMES",
    "MODES",
    "split_label",
    "encode_labels",
    "get_segments",
    "get_segments_batch",
    "segments_from_codes",
    "TAG_SCHEMES",
    "detect_scheme",
    "convert_scheme",
]

#: Tagging schemes understood by the decoder (see the module docstring).
SCHEMES = ("conlleval", "iob1", "iob2", "ioe1", "ioe2", "iobes", "bilou", "raw")
#: Decoding modes: ``"strict"`` drops the chunks that are ill formed in the scheme.
MODES = ("lenient", "strict")

_PREFIXES = {
    "iob1": ("B", "I"),
    "iob2": ("B", "I"),
    "ioe1": ("I", "E"),
    "ioe2": ("I", "E"),
    "iobes": ("B", "I", "E", "S"),
    "bilou": ("B", "I", "L", "U"),
}
_BILOU_AS_IOBES = {"L": "E", "U": "S"}

_SCHEME_CONSTRAINTS = {
    "scheme": [StrOptions(set(SCHEMES))],
    "mode": [StrOptions(set(MODES))],
}


class _LabelError(ValueError):
    """A label that is invalid in the scheme; ``label`` is the label."""

    def __init__(self, message, label):
        super().__init__(message)
        self.label = label


# ---------------------------------------------------------------------------
# The label parser
# ---------------------------------------------------------------------------


def _is_outside(label):
    return isinstance(label, str) and label == "O"


def _split(label, scheme):
    """:func:`split_label` without parameter validation."""
    if scheme == "raw":
        return ("O", "") if _is_outside(label) else ("B", label)
    if scheme == "conlleval":
        text = label if isinstance(label, str) else str(label)
        prefix, _, typ = text.partition("-")
        return (prefix, "" if typ == "0" else typ)  # Perl: "0" is false
    if _is_outside(label):
        return ("O", "")
    allowed = _PREFIXES[scheme]
    if isinstance(label, str):
        prefix, sep, typ = label.partition("-")
        if sep and typ and prefix in allowed:
            return (prefix, typ)
    raise _LabelError(
        f"Label {label!r} is not valid in scheme={scheme!r}: expected 'O' "
        f"or '<prefix>-<type>' with prefix in {list(allowed)} and a "
        "non-empty type. Use scheme='conlleval' to score any labels as "
        "conlleval.pl does, or scheme='raw' to make every non-'O' label "
        "a one-token chunk.",
        label,
    )


@validate_call(
    {"label": "no_validation", "scheme": [StrOptions(set(SCHEMES))]},
    prefer_skip_nested_validation=True,
)
def split_label(label, scheme="conlleval"):
    """Split a label into its prefix and its chunk type, as the decoder reads it.

    This is the package's only label parser: the chunk decoder, the segment
    metrics, the IOB2 decoding constraints and the label experts of
    :class:`~sklearn_crfloss.LOPTagger` all read labels with it.

    Parameters
    ----------
    label : hashable
        One label, usually a ``str``. For ``scheme="conlleval"`` any other
        object is read as ``str(label)``.
    scheme : {"conlleval", "iob1", "iob2", "ioe1", "ioe2", "iobes", "bilou", \
"raw"}, default="conlleval"
        Tagging scheme (see :mod:`sklearn_crfloss.segments`).

    Returns
    -------
    prefix : str
        For ``"conlleval"``: the text before the first hyphen, or the whole
        label when it has no hyphen. For the prefix schemes: ``"O"`` for the
        outside label, else the prefix as written (``"L"``/``"U"`` stay
        ``"L"``/``"U"`` in BILOU). For ``"raw"``: ``"O"`` for ``"O"``, else
        ``"B"`` (``conlleval.pl -r`` prefixes every other label with ``B-``).
    type : str or object
        The text after the first hyphen (``""`` when there is none); for
        ``"conlleval"`` a type spelled ``"0"`` is read as ``""`` (Perl's
        truthiness). For ``"raw"``: ``""`` for ``"O"``, else the label itself.

    Raises
    ------
    ValueError
        If ``scheme`` is unknown, or, for a scheme other than ``"conlleval"``
        and ``"raw"``, if the label is neither the string ``"O"`` nor
        ``<prefix>-<non-empty type>`` with a prefix of the scheme; the
        message names the label.

    Notes
    -----
    Only the literal string ``"O"`` is outside; a chunk type is never
    ``None``. Whether a label starts or ends a chunk depends on its
    neighbours and is the decoder's business (:func:`get_segments`).

    Examples
    --------
    >>> from sklearn_crfloss.segments import split_label
    >>> split_label("B-ARGM-LOC")
    ('B', 'ARGM-LOC')
    >>> split_label("O"), split_label("PER"), split_label("o")
    (('O', ''), ('PER', ''), ('o', ''))
    >>> split_label("B-0"), split_label("B-0", scheme="iob2")
    (('B', ''), ('B', '0'))
    >>> split_label("U-PER", scheme="bilou")
    ('U', 'PER')
    >>> split_label("PER", scheme="iob2")
    Traceback (most recent call last):
    ...
    ValueError: Label 'PER' is not valid in scheme='iob2': ...
    """
    try:
        return _split(label, scheme)
    except _LabelError as exc:
        raise ValueError(str(exc)) from None


# ---------------------------------------------------------------------------
# Pair rules, as tables over prefix categories
# ---------------------------------------------------------------------------

_END, _START = 1, 2
# Prefix categories; _OTHER is any prefix the rules do not name.
_CATEGORIES = ("O", "B", "I", "E", "S", ".", "[", "]", None)
_CATEGORY = {p: k for k, p in enumerate(_CATEGORIES) if p is not None}
_O, _B, _I, _E, _S = (_CATEGORY[p] for p in "OBIES")
_OTHER = len(_CATEGORIES) - 1


def _conlleval_rule(prev, cur, new_type):
    """endOfChunk and startOfChunk of conlleval.pl (prefixes, type change)."""
    end = (
        (prev in ("B", "I") and cur in ("B", "O"))
        or (prev == "E" and cur in ("E", "I", "O"))
        or (prev not in ("O", ".") and new_type)
        or prev in ("[", "]")
    )
    start = (
        (cur == "B" and prev in ("B", "I", "O"))
        or (cur == "I" and prev in ("O", "E"))
        or (cur == "E" and prev in ("E", "O"))
        or (cur not in ("O", ".") and new_type)
        or cur in ("[", "]")
    )
    return end, start


def _iobes_rule(prev, cur, new_type):
    """Lenient IOBES (BILOU prefixes are read as IOBES ones)."""
    end = prev != "O" and (prev in ("E", "S") or cur in ("O", "B", "S") or new_type)
    start = cur != "O" and (cur in ("B", "S") or prev in ("O", "E", "S") or new_type)
    return end, start


def _event_table(rule):
    """uint8 table [prev category, cur category, types differ] of end/start bits."""
    n = len(_CATEGORIES)
    table = np.zeros((n, n, 2), dtype=np.uint8)
    for p, prev in enumerate(_CATEGORIES):
        for c, cur in enumerate(_CATEGORIES):
            for d in (0, 1):
                end, start = rule(prev, cur, bool(d))
                table[p, c, d] = (_END if end else 0) | (_START if start else 0)
    return table


_EVENTS = {"conlleval": _event_table(_conlleval_rule), "iobes": _event_table(_iobes_rule)}


# ---------------------------------------------------------------------------
# The decoder
# ---------------------------------------------------------------------------


def _label_table(classes, scheme):
    """Prefix category and type code of the blank line (index 0) and of every class.

    Returns ``(category, type_code, type_names)``: ``category`` and
    ``type_code`` are intp arrays of shape (n_classes + 1,), entry ``k + 1``
    for ``classes[k]``; the blank line is ``O`` with the empty type, code 0.
    Raises :class:`_LabelError` for an invalid label.
    """
    types = {"": 0}
    category = [_O]
    type_code = [0]
    rename = _BILOU_AS_IOBES if scheme == "bilou" else {}
    for label in classes:
        prefix, typ = _split(label, scheme)
        category.append(_CATEGORY.get(rename.get(prefix, prefix), _OTHER))
        type_code.append(types.setdefault(typ, len(types)))
    return (np.array(category, dtype=np.intp), np.array(type_code, dtype=np.intp),
            list(types))


def event_tables(classes, scheme):
    """``(start, end, category, type_code, type_names)`` of the compiled decoder.

    ``start[p, c]`` (``end``), bool (n_classes + 1, n_classes): a chunk starts (ends)
    between labels ``p`` (row ``n_classes``: the sequence start) and ``c``.
    """
    category, type_code, type_names = _label_table(list(classes), scheme)
    rule = "iobes" if scheme in ("iobes", "bilou") else "conlleval"
    prev_cat, prev_typ = np.roll(category, -1), np.roll(type_code, -1)
    cur_cat, cur_typ = category[1:], type_code[1:]
    events = _EVENTS[rule][prev_cat[:, None], cur_cat[None, :],
                           (prev_typ[:, None] != cur_typ[None, :]).view(np.uint8)]
    return ((events & _START) > 0, (events & _END) > 0, np.ascontiguousarray(cur_cat),
            np.ascontiguousarray(cur_typ), type_names)


def _well_formed(scheme, cur, typ, offsets, seq, begin, stop):
    """Which lenient chunks are well formed (``cur``, ``typ``: of every token;
    a blank line, ``O`` of the empty type, before and after every sequence)."""
    first_at, last_at = offsets[seq] + begin, offsets[seq] + stop - 1
    first, last = cur[first_at], cur[last_at]
    if scheme == "iob2":
        return first == _B
    if scheme == "ioe2":
        return last == _E
    if scheme in ("iobes", "bilou"):
        return ((first == _S) & (stop - begin == 1)) | ((first == _B) & (last == _E))
    same_type = typ[first_at]
    if scheme == "iob1":  # B-X only right after a token of type X
        inside = begin > 0
        prev, prev_typ = cur[first_at - inside], typ[first_at - inside]
        return (first == _I) | (inside & (prev != _O) & (prev_typ == same_type))
    # ioe1: E-X only right before a token of type X
    inside = offsets[seq] + stop < offsets[seq + 1]
    after, after_typ = cur[last_at + inside], typ[last_at + inside]
    return (last == _I) | (inside & (after != _O) & (after_typ == same_type))


def _check_scheme_mode(scheme, mode):
    if scheme == "conlleval" and mode == "strict":
        raise ValueError(
            "scheme='conlleval' reproduces conlleval.pl, which has no strict "
            "mode; use e.g. scheme='iob2' or scheme='iobes' with mode='strict'."
        )


def _check_codes(codes, offsets, n_classes):
    codes = np.asarray(codes)
    offsets = np.asarray(offsets)
    if codes.ndim != 1 or offsets.ndim != 1 or offsets.shape[0] == 0:
        raise ValueError(
            f"codes and offsets must be 1-D and offsets non-empty, got shapes "
            f"{codes.shape} and {offsets.shape}."
        )
    if codes.size and (
        codes.dtype.kind not in "iu" or codes.min() < 0 or codes.max() >= n_classes
    ):
        raise ValueError(f"codes must be integers in [0, {n_classes}) (indices into classes).")
    if offsets[0] != 0 or offsets[-1] != codes.shape[0] or np.any(np.diff(offsets) < 0):
        raise ValueError(
            "offsets must be non-decreasing, start at 0 and end at len(codes) "
            f"= {codes.shape[0]}."
        )
    return codes.astype(np.intp, copy=False), offsets.astype(np.intp, copy=False)


def _segments_of_codes(codes, offsets, classes, scheme, mode):
    """:func:`segments_from_codes` on checked arrays; raises :class:`_LabelError`.

    One compiled pass (``chunk_segments``); a chunk still open where its
    sequence ends (degenerate labels) is closed there.
    """
    from ._chain import chunk_segments

    start, end, category, type_code, type_names = event_tables(classes, scheme)
    codes, offsets = np.ascontiguousarray(codes, np.intp), np.ascontiguousarray(offsets, np.intp)
    out = np.empty((4, codes.shape[0]), dtype=np.intp)
    n = chunk_segments(start.view(np.uint8), end.view(np.uint8), type_code, codes, offsets, out)
    seq, begin, stop, types = out[:, :n]
    if mode == "strict" and scheme != "raw":
        keep = _well_formed(scheme, category[codes], type_code[codes], offsets, seq, begin,
                            stop)
        seq, begin, stop, types = seq[keep], begin[keep], stop[keep], types[keep]
    return seq, begin, stop, types, type_names


@validate_call(
    {"codes": ["array-like"], "offsets": ["array-like"], "classes": ["array-like"],
     **_SCHEME_CONSTRAINTS},
    prefer_skip_nested_validation=True,
)
def segments_from_codes(codes, offsets, classes, *, scheme="conlleval", mode="lenient"):
    """Chunks of integer-coded label sequences, as flat arrays.

    The decoder of :func:`get_segments_batch` run on label indices: the
    losses that decode segments at every objective evaluation
    (``loss='mce_f'``) use it. The chunks are those of
    ``get_segments_batch`` on ``classes[codes]`` split at ``offsets``.

    Parameters
    ----------
    codes : array-like of int of shape (n_tokens,)
        Label index of every token, into ``classes``.
    offsets : array-like of int of shape (n_sequences + 1,)
        Sequence ``i`` is ``codes[offsets[i]:offsets[i + 1]]``; non-decreasing,
        from 0 to ``n_tokens``.
    classes : array-like of shape (n_classes,)
        Label names.
    scheme : {"conlleval", "iob1", "iob2", "ioe1", "ioe2", "iobes", "bilou", \
"raw"}, default="conlleval"
        Tagging scheme of the label names (see the module docstring).
    mode : {"lenient", "strict"}, default="lenient"
        Whether ill-formed chunks are kept, as in :func:`get_segments`.

    Returns
    -------
    seq : ndarray of intp of shape (n_segments,)
        Sequence of every chunk, non-decreasing.
    begin, stop : ndarray of intp of shape (n_segments,)
        Positions inside the sequence, ``stop`` exclusive.
    type_code : ndarray of intp of shape (n_segments,)
        Index of the chunk type into ``type_names``.
    type_names : list of length n_types
        The distinct types of ``classes`` (as :func:`split_label` gives
        them), the empty type ``""`` first; it depends on ``classes`` and
        ``scheme`` only.

    Raises
    ------
    ValueError
        If ``scheme`` or ``mode`` is unknown or they do not go together, if a
        code is not an index into ``classes``, if ``offsets`` does not split
        ``codes``, or if a label of ``classes`` is invalid for ``scheme`` (the
        message names the label).

    Examples
    --------
    >>> from sklearn_crfloss.segments import segments_from_codes
    >>> classes = ["B-NP", "I-NP", "O"]
    >>> seq, begin, stop, type_code, type_names = segments_from_codes(
    ...     [0, 1, 2, 1, 0], [0, 3, 5], classes)
    >>> seq.tolist(), begin.tolist(), stop.tolist()
    ([0, 1, 1], [0, 0, 1], [2, 1, 2])
    >>> [type_names[t] for t in type_code]
    ['NP', 'NP', 'NP']
    """
    _check_scheme_mode(scheme, mode)
    classes = classes.tolist() if isinstance(classes, np.ndarray) else list(classes)
    codes, offsets = _check_codes(codes, offsets, len(classes))
    try:
        return _segments_of_codes(codes, offsets, classes, scheme, mode)
    except _LabelError as exc:
        raise ValueError(str(exc)) from None


# ---------------------------------------------------------------------------
# Label sequences -> codes
# ---------------------------------------------------------------------------


def _check_sequence(seq, where, name):
    """Sequence ``where`` (e.g. ``y[3]``) of the input ``name``, checked."""
    if isinstance(seq, (str, bytes)):
        raise ValueError(
            f"{where} is a string ({seq!r:.60}); expected a sequence of labels. "
            f"{name} must be a list of label sequences, e.g. "
            "[['B-PER', 'I-PER', 'O'], ['O']]."
        )
    if isinstance(seq, np.ndarray):
        if seq.ndim != 1:
            raise ValueError(
                f"{where} must be a 1-D sequence of labels, got an array of "
                f"shape {seq.shape}."
            )
        return seq
    if not hasattr(seq, "__len__"):
        if hasattr(seq, "__iter__"):
            return list(seq)
        raise ValueError(
            f"{where} must be a sequence of labels, got {type(seq).__name__} "
            f"{seq!r:.60}. {name} must be a list of label sequences (one list "
            "or 1-D array of labels per sequence), not a flat list of labels."
        )
    return seq


def _check_y(y, name):
    ndarray = np.ndarray
    return [
        seq
        if type(seq) is list or (type(seq) is ndarray and seq.ndim == 1)
        else _check_sequence(seq, f"{name}[{i}]", name)
        for i, seq in enumerate(y)
    ]


class _Codes(dict):
    """label -> code, new labels appended to ``labels`` in order of first sight."""

    __slots__ = ("labels",)

    def __init__(self, labels):
        super().__init__((label, k) for k, label in enumerate(labels))
        if len(self) != len(labels):
            raise ValueError("classes must not repeat a label.")
        self.labels = list(labels)

    def __missing__(self, label):
        value = self[label] = len(self.labels)
        self.labels.append(label)
        return value


def _encode(y, classes):
    """:func:`encode_labels` of checked sequences."""
    table = _Codes(classes)
    lengths = list(map(len, y))
    offsets = np.zeros(len(y) + 1, dtype=np.intp)
    np.cumsum(lengths, out=offsets[1:])
    if y and all(isinstance(s, np.ndarray) and s.dtype.kind == "U" for s in y):
        tokens = np.concatenate(y).tolist()  # one C-level conversion
    else:
        tokens = chain.from_iterable(y)
    codes = np.fromiter(map(table.__getitem__, tokens), dtype=np.intp, count=offsets[-1])
    return codes, offsets, table.labels


@validate_call(
    {"y": ["array-like"], "classes": ["array-like", None], "input_name": [str]},
    prefer_skip_nested_validation=True,
)
def encode_labels(y, *, classes=None, input_name="y"):
    """Check label sequences and code them as integers.

    Parameters
    ----------
    y : list of (list or ndarray of shape (n_tokens_i,))
        Label sequences (hashable labels); the first axis is the sequence.
    classes : array-like of shape (n_known,), default=None
        Distinct labels that keep codes ``0 .. n_known - 1``, e.g. the
        ``classes`` returned for another list of sequences, so that two lists
        share one coding.
    input_name : str, default="y"
        Name of ``y`` in error messages.

    Returns
    -------
    codes : ndarray of intp of shape (n_tokens,)
        Index into ``classes`` of every token, sequences concatenated.
    offsets : ndarray of intp of shape (n_sequences + 1,)
        Sequence ``i`` is ``codes[offsets[i]:offsets[i + 1]]``.
    classes : list of length n_classes
        The given ``classes`` followed by the new labels in order of first
        occurrence.

    Raises
    ------
    ValueError
        If ``y`` or one of its sequences is a string, not a sequence or not
        1-D (the message names the sequence index), or if ``classes``
        repeats a label.
    TypeError
        If a label is not hashable.

    Examples
    --------
    >>> from sklearn_crfloss.segments import encode_labels
    >>> codes, offsets, classes = encode_labels([["B-NP", "O"], ["O", "B-VP"]])
    >>> codes.tolist(), offsets.tolist(), classes
    ([0, 1, 1, 2], [0, 2, 4], ['B-NP', 'O', 'B-VP'])
    """
    known = [] if classes is None else list(classes)
    return _encode(_check_y(y, input_name), known)


# ---------------------------------------------------------------------------
# Segments of label sequences
# ---------------------------------------------------------------------------


def _segments_per_sequence(y, scheme, mode):
    """``(start, end, type)`` lists of checked sequences; raises :class:`_LabelError`."""
    codes, offsets, classes = _encode(y, [])
    seq, begin, stop, types, type_names = _segments_of_codes(
        codes, offsets, classes, scheme, mode)
    chunks = list(zip(begin.tolist(), stop.tolist(), map(type_names.__getitem__, types.tolist())))
    bounds = np.searchsorted(seq, np.arange(len(y) + 1)).tolist()
    return [chunks[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


@validate_call(
    {"labels": ["array-like"], **_SCHEME_CONSTRAINTS}, prefer_skip_nested_validation=True
)
def get_segments(labels, *, scheme="conlleval", mode="lenient"):
    """Decode the chunks (segments) of one label sequence.

    This is the package's chunk decoder: the segment metrics and the
    segment-based training losses all use it (through
    :func:`get_segments_batch` and :func:`segments_from_codes`, which give the
    same chunks). Its signature is stable.

    Parameters
    ----------
    labels : list or ndarray of shape (n_tokens,)
        Labels of one sequence (hashable; strings except for
        ``scheme="raw"``). An empty sequence gives no segment.
    scheme : {"conlleval", "iob1", "iob2", "ioe1", "ioe2", "iobes", "bilou", \
"raw"}, default="conlleval"
        Tagging scheme, see :mod:`sklearn_crfloss.segments`. ``"conlleval"``
        follows ``conlleval.pl`` exactly and accepts any label.
    mode : {"lenient", "strict"}, default="lenient"
        ``"strict"`` drops ill-formed chunks; not available for
        ``scheme="conlleval"``; no effect for ``scheme="raw"``.

    Returns
    -------
    segments : list of tuple (int, int, object)
        One ``(start, end, type)`` tuple per chunk, ``end`` exclusive, so the
        chunk is ``labels[start:end]``, sorted by ``start``. ``type`` is the
        label's text after the first hyphen (a ``str``; ``""`` for typeless
        tags such as ``o`` in the conlleval scheme), or the label itself for
        ``scheme="raw"``. Chunks do not overlap, except with degenerate labels
        in the conlleval scheme: a chunk opened by a typeless tag (``o``,
        ``PER``) stays open across ``O`` tokens until conlleval's endOfChunk
        fires, so a chunk starting inside it shares its end.

    Raises
    ------
    ValueError
        If ``scheme`` or ``mode`` is unknown, if ``mode="strict"`` is combined
        with ``scheme="conlleval"``, if ``labels`` is a string or not 1-D, or
        if a label has no valid prefix for ``scheme`` (not for ``"conlleval"``
        and ``"raw"``); the message names the label.

    See Also
    --------
    get_segments_batch : The same for a list of sequences.
    sklearn_crfloss.metrics.segment_counts : Found / gold / correct counts, as
        conlleval.pl.

    Notes
    -----
    For labels that have a prefix and a non-empty type (all well-formed
    data), ``len(set(get_segments(t)) & set(get_segments(p)))`` is exactly
    conlleval's number of correct chunks of a sentence pair. For
    degenerate conlleval labels use
    :func:`~sklearn_crfloss.metrics.segment_counts`, which reproduces
    conlleval exactly.

    References
    ----------
    .. [1] conlleval.pl, CoNLL-2000 shared task evaluation script (version
       2004-01-26), https://www.clips.uantwerpen.be/conll2000/chunking/

    Examples
    --------
    >>> from sklearn_crfloss.segments import get_segments
    >>> get_segments(["B-PER", "I-PER", "O", "I-LOC", "B-ARGM-TMP"])
    [(0, 2, 'PER'), (3, 4, 'LOC'), (4, 5, 'ARGM-TMP')]
    >>> get_segments(["S-PER", "S-PER"])  # conlleval merges them
    [(0, 2, 'PER')]
    >>> get_segments(["S-PER", "S-PER"], scheme="iobes")
    [(0, 1, 'PER'), (1, 2, 'PER')]
    >>> get_segments(["O", "I-PER", "I-PER"], scheme="iob2", mode="strict")
    []
    """
    _check_scheme_mode(scheme, mode)
    seq = _check_sequence(labels, "labels", "labels")
    try:
        return _segments_per_sequence([seq], scheme, mode)[0]
    except _LabelError as exc:
        raise ValueError(str(exc)) from None


@validate_call({"y": ["array-like"], **_SCHEME_CONSTRAINTS}, prefer_skip_nested_validation=True)
def get_segments_batch(y, *, scheme="conlleval", mode="lenient"):
    """Decode the chunks of every sequence of ``y``.

    Parameters
    ----------
    y : list of (list or ndarray of shape (n_tokens_i,))
        Label sequences; the first axis is the sequence.
    scheme : {"conlleval", "iob1", "iob2", "ioe1", "ioe2", "iobes", "bilou", \
"raw"}, default="conlleval"
        Tagging scheme, see :func:`get_segments`.
    mode : {"lenient", "strict"}, default="lenient"
        See :func:`get_segments`.

    Returns
    -------
    segments : list of list of tuple (int, int, object)
        ``segments[i]`` is ``get_segments(y[i], scheme=scheme, mode=mode)``:
        ``(start, end, type)`` tuples with positions inside sequence ``i``.

    Raises
    ------
    ValueError
        As :func:`get_segments`; the message names the sequence index.

    Examples
    --------
    >>> from sklearn_crfloss.segments import get_segments_batch
    >>> get_segments_batch([["I-PER"], ["I-PER", "O", "B-LOC"]])
    [[(0, 1, 'PER')], [(0, 1, 'PER'), (2, 3, 'LOC')]]
    """
    _check_scheme_mode(scheme, mode)
    y = _check_y(y, "y")
    try:
        return _segments_per_sequence(y, scheme, mode)
    except _LabelError as exc:
        i = next(i for i, seq in enumerate(y) if any(lab == exc.label for lab in seq))
        raise ValueError(f"Sequence {i}: {exc}") from None


# ---------------------------------------------------------------------------
# Converting between tagging schemes
# ---------------------------------------------------------------------------

#: Schemes that :func:`convert_scheme` reads and writes.
TAG_SCHEMES = ("iob1", "iob2", "iobes", "bilou")
# The prefixes written for (outside, first, inside, last, single-token) tokens.
_WRITE = {"iob1": ("O", "B", "I", "I", "I"), "iob2": ("O", "B", "I", "I", "B"),
          "iobes": ("O", "B", "I", "E", "S"), "bilou": ("O", "B", "I", "L", "U")}


def _chunk_labels(y, scheme):
    """Codes, offsets, classes of checked sequences, and the chunks under ``scheme``.

    Raises a ValueError naming the sequence of a label invalid in ``scheme``.
    """
    codes, offsets, classes = _encode(y, [])
    try:
        return (codes, offsets, classes) + _segments_of_codes(
            codes, offsets, classes, scheme, "lenient")
    except _LabelError as exc:
        raise ValueError(f"Sequence {_sequence_of(exc.label, codes, offsets, classes)}: "
                         f"{exc}") from None


def _sequence_of(label, codes, offsets, classes):
    """The index of the first sequence holding ``label``."""
    first = np.flatnonzero(codes == classes.index(label))[0]
    return int(np.searchsorted(offsets, first, side="right") - 1)


def _write(offsets, seq, begin, stop, types, type_names, scheme):
    """Label sequences holding the chunks ``(seq, begin, stop, types)`` in ``scheme``."""
    n = int(offsets[-1])
    role = np.zeros(n, dtype=np.intp)  # index into _WRITE[scheme]
    first = offsets[seq] + begin
    length = stop - begin
    inside = np.repeat(first, length) + np.arange(int(length.sum())) - np.repeat(
        np.cumsum(length) - length, length)
    role[inside] = 2
    role[first + length - 1] = 3
    role[first] = np.where(length == 1, 4, 1)
    type_of = np.zeros(n, dtype=np.intp)
    type_of[inside] = np.repeat(types, length)
    if scheme == "iob1":  # B-X only right after a chunk of type X
        after_same = np.zeros(seq.shape[0], dtype=bool)
        after_same[1:] = ((seq[1:] == seq[:-1]) & (begin[1:] == stop[:-1])
                          & (types[1:] == types[:-1]))
        role[first] = np.where(after_same, 1, 2)
    prefixes = _WRITE[scheme]
    table = [[p if p == "O" else f"{p}-{t}" for t in type_names] for p in prefixes]
    flat = [table[r][t] for r, t in zip(role.tolist(), type_of.tolist())]
    return [flat[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


@validate_call({"y": ["array-like"]}, prefer_skip_nested_validation=True)
def detect_scheme(y):
    """The tagging scheme that label sequences are written in.

    Parameters
    ----------
    y : list of (list or ndarray of shape (n_tokens_i,))
        Label sequences: ``"O"`` or ``<prefix>-<type>`` with a prefix of
        IOB1, IOB2, IOBES or BILOU (see :mod:`sklearn_crfloss.segments`).

    Returns
    -------
    scheme : {"iob1", "iob2", "iobes", "bilou"}
        ``"iobes"`` if an ``E`` or ``S`` prefix occurs, ``"bilou"`` if an
        ``L`` or ``U`` prefix does; otherwise (prefixes ``B`` and ``I``)
        ``"iob1"`` if more chunks start with ``I`` than with a ``B`` that
        does not follow a chunk of the same type (IOB1 writes ``B`` only
        there, IOB2 always), else ``"iob2"`` (also when there is no chunk
        at all, every label ``"O"``). Counting keeps the few ill-formed
        chunks of real corpora from deciding.

    Raises
    ------
    ValueError
        If a label is not ``"O"`` or ``<prefix>-<non-empty type>`` with one
        of the prefixes B, I, E, S, L, U, or if the labels mix IOBES and
        BILOU prefixes; the message names the sequence and the label.

    Examples
    --------
    >>> from sklearn_crfloss.segments import detect_scheme
    >>> detect_scheme([["B-PER", "I-PER", "O"]]), detect_scheme([["I-PER", "O"]])
    ('iob2', 'iob1')
    >>> detect_scheme([["S-PER", "O"]]), detect_scheme([["U-PER"]])
    ('iobes', 'bilou')
    """
    y = _check_y(y, "y")
    codes, offsets, classes = _encode(y, [])
    found = {}
    for label in classes:
        prefix, sep, typ = label.partition("-") if isinstance(label, str) else ("", "", "")
        if not _is_outside(label):
            if not (sep and typ and prefix in "BIESLU" and len(prefix) == 1):
                raise ValueError(
                    f"Sequence {_sequence_of(label, codes, offsets, classes)}: label {label!r} is not in a chunk tagging scheme: "
                    "expected 'O' or '<prefix>-<type>' with a prefix B, I, E, S, L or U "
                    "(IOB1, IOB2, IOBES, BILOU). Use tag_scheme=None for other labels.")
            found.setdefault(prefix, label)
    iobes = [found[p] for p in "ES" if p in found]
    bilou = [found[p] for p in "LU" if p in found]
    if iobes and bilou:
        raise ValueError(f"The labels mix IOBES ({iobes[0]!r}) and BILOU ({bilou[0]!r}) "
                         "prefixes: they are in no single tagging scheme.")
    if iobes or bilou:
        return "iobes" if iobes else "bilou"
    seq, begin, stop, types, _ = _segments_of_codes(codes, offsets, classes, "iob2", "lenient")
    starts_with_i = np.array([_split(c, "iob2")[0] == "I" for c in classes], dtype=bool)
    with_i = starts_with_i[codes[offsets[seq] + begin]]
    after_same = np.zeros(seq.shape[0], dtype=bool)
    after_same[1:] = (seq[1:] == seq[:-1]) & (begin[1:] == stop[:-1]) & (types[1:] == types[:-1])
    # IOB1 evidence: a chunk starting with I; IOB2 evidence: one starting with B after
    # anything but a chunk of its type. Corpora have a few ill-formed chunks: the majority wins.
    return "iob1" if with_i.sum() > (~with_i & ~after_same).sum() else "iob2"


@validate_call(
    {"y": ["array-like"], "to": [StrOptions(set(TAG_SCHEMES))],
     "source": [StrOptions(set(TAG_SCHEMES)), None]},
    prefer_skip_nested_validation=True,
)
def convert_scheme(y, to, *, source=None):
    """Write the chunks of label sequences in another tagging scheme.

    The chunks are decoded with :func:`get_segments` (``mode="lenient"``) in
    the ``source`` scheme and written in ``to``: IOB1 (``B`` only for a
    chunk right after one of the same type, ``I`` otherwise), IOB2 (``B``
    first, ``I`` inside), IOBES (``B``, ``I``, ``E`` last, ``S`` for a
    one-token chunk) or BILOU (``L`` for ``E``, ``U`` for ``S``). For
    label sequences that are well formed in ``source`` (every chunk as the
    scheme writes it, as in an annotated corpus) the conversion is exactly
    invertible: ``convert_scheme(convert_scheme(y, to), source)`` is ``y``.
    An ill-formed sequence (e.g. IOB2 ``O I-PER``) is read as conlleval
    reads it and comes out well formed.

    Parameters
    ----------
    y : list of (list or ndarray of shape (n_tokens_i,))
        Label sequences of ``"O"`` and ``<prefix>-<type>`` labels.
    to : {"iob1", "iob2", "iobes", "bilou"}
        The scheme to write.
    source : {"iob1", "iob2", "iobes", "bilou"} or None, default=None
        The scheme of ``y``; None: :func:`detect_scheme`.

    Returns
    -------
    y_converted : list of list of str
        The label sequences in ``to``, of the lengths of ``y``'s.

    Raises
    ------
    ValueError
        If a label is invalid in ``source`` (or in every scheme, when it is
        detected); the message names the sequence and the label.

    Examples
    --------
    >>> from sklearn_crfloss.segments import convert_scheme
    >>> convert_scheme([["B-PER", "I-PER", "O", "B-LOC"]], "iobes")
    [['B-PER', 'E-PER', 'O', 'S-LOC']]
    >>> convert_scheme([["B-PER", "B-PER", "O", "B-LOC"]], "iob1")
    [['I-PER', 'B-PER', 'O', 'I-LOC']]
    """
    y = _check_y(y, "y")
    source = detect_scheme(y) if source is None else source
    codes, offsets, classes, seq, begin, stop, types, names = _chunk_labels(y, source)
    return _write(offsets, seq, begin, stop, types, names, to)
