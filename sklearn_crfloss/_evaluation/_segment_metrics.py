"""The sequence-labelling metrics of :mod:`sklearn_crfloss.metrics` (their implementation).

The public module re-exports them, with the scorers, the flat metrics and the
significance tests (``_significance.py``, which reads the counts here).
"""

# How the counts are computed
# ---------------------------
# y_true and y_pred are coded with one label table (encode_labels; code 0 is
# "O"), and each is decoded as conlleval reads a file: one stream in which
# every sequence is followed by an "O" token (the blank line), decoded as a
# single sequence by segments_from_codes, so positions are stream positions.
#
# conlleval counts *correct* chunks with a streaming flag (``inCorrect``). For
# labels with a B/I/E/S prefix and a non-empty type this equals the set
# intersection of (start, end, type). For degenerate labels (a typeless tag
# such as ``o`` or ``PER`` followed by ``O``; ``.``, ``[``, ``]`` prefixes)
# conlleval chunks can nest, stay open across ``O`` and across sentence
# boundaries, and change type without ending. A gold and a predicted chunk
# then match (inCorrect survives to their common end) when they share start
# and end and their tokens have the same types all along; among matching
# chunks sharing an end only the one with the latest start counts (a later
# joint start resets inCorrect); and the chunk is credited to the type of
# its last token. tests/test_metrics.py checks this against a transcription
# of the Perl loop.

from numbers import Integral, Real
import warnings

import numpy as np
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import accuracy_score
from sklearn.metrics import hamming_loss as _sklearn_hamming_loss

from .._utils import Interval, StrOptions, validate_call
from ..segments import MODES, SCHEMES, segments_from_codes, split_label
from ._label_pairs import encode_pair as _encode_pair

__all__ = ["chunk_table", "hamming_loss", "segment_counts", "segment_f1_score",
           "segment_precision_score", "segment_recall_score", "segment_report",
           "sequence_accuracy", "token_accuracy"]

_AVERAGES = ("micro", "macro", "weighted")

_PAIR = {"y_true": ["array-like"], "y_pred": ["array-like"]}
_SCHEME = {"scheme": [StrOptions(set(SCHEMES))], "mode": [StrOptions(set(MODES))]}
_SCORE = {
    **_PAIR, **_SCHEME,
    "average": [StrOptions(set(_AVERAGES))],
    "zero_division": [Real],
}
_TOKEN = {**_PAIR, "sample_weight": ["array-like", None]}

# Parameter descriptions shared by the docstrings (``%(name)s`` in them).
_DOC_FRAGMENTS = {
    "y_true_y_pred": (
        "y_true : list of (list or ndarray of shape (n_tokens_i,))\n"
        "        Gold label sequences.\n"
        "    y_pred : list of (list or ndarray of shape (n_tokens_i,))\n"
        "        Predicted label sequences, with the same lengths as ``y_true``."
    ),
    "scheme_mode": (
        'scheme : {"conlleval", "iob1", "iob2", "ioe1", "ioe2", "iobes", '
        '"bilou", "raw"}, default="conlleval"\n'
        "        Tagging scheme, see :mod:`sklearn_crfloss.segments`.\n"
        '    mode : {"lenient", "strict"}, default="lenient"\n'
        "        Whether ill-formed chunks count, see\n"
        "        :func:`~sklearn_crfloss.segments.get_segments`."
    ),
}


def _fill_doc(func):
    """Fill the ``%(name)s`` fragments of ``func``'s docstring."""
    func.__doc__ %= _DOC_FRAGMENTS
    return func


# ---------------------------------------------------------------------------
# Coding and counting
# ---------------------------------------------------------------------------


def _chunk_types(classes, scheme, codes_true, codes_pred, offsets):
    """Chunk type of every class; an invalid label's error names its first sequence."""
    types = []
    for k, label in enumerate(classes):
        try:
            types.append(split_label(label, scheme=scheme)[1])
        except ValueError as exc:
            for name, codes in (("y_true", codes_true), ("y_pred", codes_pred)):
                where = np.flatnonzero(codes == k)
                if where.size:
                    i = int(np.searchsorted(offsets, where[0], side="right")) - 1
                    raise ValueError(f"Sequence {i} of {name}: {exc}") from None
    return types


def _type_order(names):
    """Indices that sort chunk types (by name; mixed raw labels by type and repr)."""
    try:
        return sorted(range(len(names)), key=names.__getitem__)
    except TypeError:
        return sorted(range(len(names)),
                      key=lambda j: (type(names[j]).__name__, repr(names[j])))


def chunk_table(codes_true, codes_pred, offsets, classes, scheme, mode):
    """The chunks of conlleval's stream of coded sequences.

    Returns ``(type_names, gold_start, gold_type, pred_start, pred_type,
    correct_end, correct_type)``: stream positions and type indices of the
    gold and predicted chunks, and of the correct chunks (position of their
    last token, type credited as conlleval). The stream has an "O" after
    every sequence, so sequence ``i`` starts at ``offsets[i] + i``.
    """
    class_types = _chunk_types(classes, scheme, codes_true, codes_pred, offsets)
    # conlleval's file: an "O" (code 0) after every sequence, decoded as one sequence
    stream_true = np.insert(codes_true, offsets[1:], 0)
    stream_pred = np.insert(codes_pred, offsets[1:], 0)
    whole = [0, stream_true.shape[0]]
    _, gold_start, gold_end, gold_type, type_names = segments_from_codes(
        stream_true, whole, classes, scheme=scheme, mode=mode)
    _, pred_start, pred_end, pred_type, _ = segments_from_codes(
        stream_pred, whole, classes, scheme=scheme, mode=mode)
    type_index = {t: k for k, t in enumerate(type_names)}
    class_type = np.array([type_index[t] for t in class_types], dtype=np.intp)
    token_type_true = class_type[stream_true]
    # matching chunks: same start, same end, same token types all along
    _, ig, ip = np.intersect1d(gold_start, pred_start, assume_unique=True,
                               return_indices=True)
    start, end = gold_start[ig], gold_end[ig]
    n_differ = np.concatenate(
        ([0], np.cumsum(token_type_true != class_type[stream_pred])))
    match = (end == pred_end[ip]) & (n_differ[end] == n_differ[start])
    end = end[match]
    # of matching chunks sharing an end (nested chunks) the latest start counts;
    # conlleval credits a correct chunk to the type of its last token
    latest = np.ones(end.shape, dtype=bool)
    latest[:-1] = end[1:] != end[:-1]
    correct_end = end[latest] - 1
    return (type_names, gold_start, gold_type, pred_start, pred_type, correct_end,
            token_type_true[correct_end])


def _counts(codes_true, codes_pred, offsets, classes, scheme, mode):
    """(types, n_pred, n_true, n_correct) of coded sequences; see segment_counts."""
    type_names, _, gold_type, _, pred_type, _, credited = chunk_table(
        codes_true, codes_pred, offsets, classes, scheme, mode)
    n_types = len(type_names)
    n_true = np.bincount(gold_type, minlength=n_types)
    n_pred = np.bincount(pred_type, minlength=n_types)
    n_correct = np.bincount(credited, minlength=n_types)
    present = np.flatnonzero(n_true + n_pred + n_correct)
    names = [type_names[k] for k in present.tolist()]
    order = _type_order(names)
    idx = present[order]
    return ([names[j] for j in order], n_pred[idx].astype(np.int64),
            n_true[idx].astype(np.int64), n_correct[idx].astype(np.int64))


def _as_dict(types, n_pred, n_true, n_correct):
    return {"types": types, "n_pred": n_pred, "n_true": n_true, "n_correct": n_correct}


@validate_call({**_PAIR, **_SCHEME}, prefer_skip_nested_validation=True)
@_fill_doc
def segment_counts(y_true, y_pred, *, scheme="conlleval", mode="lenient"):
    """Per-type numbers of predicted, gold and correct chunks.

    All segment scores and :func:`segment_report` derive from these counts.

    Parameters
    ----------
    %(y_true_y_pred)s
    %(scheme_mode)s

    Returns
    -------
    counts : dict
        ``"types"``: list of the chunk types found in ``y_true`` or
        ``y_pred``, sorted; ``"n_pred"``, ``"n_true"``, ``"n_correct"``:
        ndarrays of dtype int64 and shape (n_types,) aligned with
        ``"types"`` (conlleval's *found*, *phrases* and *correct*). Totals are
        their sums.

    Raises
    ------
    ValueError
        If the inputs are not lists of sequences, if their numbers of
        sequences differ, if a pair of sequences differs in length (the
        message names the index), or for an invalid scheme, mode or label
        (the message names the first sequence holding it).

    Notes
    -----
    Sequences are scored as conlleval.pl scores a file in which each
    sequence is followed by a blank line. The counts equal conlleval's in
    every case, including degenerate labels: a chunk opened by a typeless
    tag (``o``, ``PER``, ``.``) that is still open at a sentence end can, in
    conlleval, be credited or not depending on the next sentence, and a
    correct chunk is credited to the type of its last token. For labels with a
    prefix and a non-empty type none of this can happen and a chunk is
    correct iff a gold chunk has the same (start, end, type).

    References
    ----------
    .. [1] E. F. Tjong Kim Sang and S. Buchholz (2000). Introduction to the
       CoNLL-2000 shared task: chunking. CoNLL; its evaluation script
       ``conlleval.pl`` (version 2004-01-26) defines the counts,
       https://www.clips.uantwerpen.be/conll2000/chunking/

    Examples
    --------
    >>> from sklearn_crfloss.metrics import segment_counts
    >>> c = segment_counts([["B-PER", "I-PER", "O", "B-LOC"]],
    ...                    [["I-PER", "I-PER", "O", "B-ORG"]])
    >>> c["types"]
    ['LOC', 'ORG', 'PER']
    >>> c["n_pred"].tolist(), c["n_true"].tolist(), c["n_correct"].tolist()
    ([0, 1, 1], [1, 0, 1], [0, 0, 1])
    """
    types, n_pred, n_true, n_correct = _counts(*_encode_pair(y_true, y_pred), scheme, mode)
    return _as_dict(types, n_pred, n_true, n_correct)


def _ratio(num, den, zero_division):
    return num / den if den > 0 else zero_division


def _fbeta(tp, n_pred, n_true, beta2, zero_division):
    # (1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp)
    den = beta2 * n_true + n_pred
    return (1.0 + beta2) * tp / den if den > 0 else zero_division


def _prf(counts, beta, average, zero_division):
    """(precision, recall, fbeta) with the given average."""
    beta2 = beta * beta
    n_pred, n_true, n_corr = counts["n_pred"], counts["n_true"], counts["n_correct"]
    if average == "micro":
        tp, npred, ntrue = int(n_corr.sum()), int(n_pred.sum()), int(n_true.sum())
        return (
            _ratio(tp, npred, zero_division),
            _ratio(tp, ntrue, zero_division),
            _fbeta(tp, npred, ntrue, beta2, zero_division),
        )
    if not counts["types"]:
        return zero_division, zero_division, zero_division
    p = np.array([_ratio(c, d, zero_division) for c, d in zip(n_corr, n_pred)])
    r = np.array([_ratio(c, d, zero_division) for c, d in zip(n_corr, n_true)])
    f = np.array(
        [
            _fbeta(c, a, b, beta2, zero_division)
            for c, a, b in zip(n_corr, n_pred, n_true)
        ]
    )
    if average == "macro":
        return float(p.mean()), float(r.mean()), float(f.mean())
    # weighted by gold support
    w = n_true.astype(np.float64)
    if w.sum() == 0:
        return zero_division, zero_division, zero_division
    return (
        float(np.average(p, weights=w)),
        float(np.average(r, weights=w)),
        float(np.average(f, weights=w)),
    )


_SCORE_DOC = """%(summary)s

    Parameters
    ----------
    %(y_true_y_pred)s
    %(scheme_mode)s%(beta_doc)s
    average : {"micro", "macro", "weighted"}, default="micro"
        ``"micro"`` pools all chunks (conlleval's overall line);
        ``"macro"`` is the unweighted mean over chunk types found in
        ``y_true`` or ``y_pred``; ``"weighted"`` weights types by their number
        of gold chunks.
    zero_division : float, default=0.0
        Value returned when the denominator is 0 (conlleval uses 0).

    Returns
    -------
    score : float
        A fraction in [0, 1] (not a percentage).

    Raises
    ------
    ValueError
        For ragged or mismatched inputs (the message names the sequence),
        an invalid scheme, mode, label, ``average``, ``beta`` or
        ``zero_division``.

    See Also
    --------
    segment_counts, segment_report

    Examples
    --------
    >>> from sklearn_crfloss.metrics import %(name)s
    >>> y_true = [["B-PER", "I-PER", "O"], ["B-LOC", "O"]]
    >>> y_pred = [["B-PER", "I-PER", "O"], ["B-ORG", "O"]]
    >>> round(%(name)s(y_true, y_pred), 4)
    %(example)s
    """


def _score(y_true, y_pred, scheme, mode, beta, average, zero_division):
    """(precision, recall, F_beta) of the segments, with the given average."""
    codes_true, codes_pred, offsets, classes = _encode_pair(y_true, y_pred)
    counts = _as_dict(*_counts(codes_true, codes_pred, offsets, classes, scheme, mode))
    _warn_if_no_chunk_prefix(classes)
    return tuple(map(float, _prf(counts, float(beta), average, float(zero_division))))


def _warn_if_no_chunk_prefix(classes):
    """Warn when labels other than ``'O'`` exist but none has a chunk prefix (``B-``, ...).

    Such labels (``'PER'``, ``'NN'``) form no chunk in conlleval's reading,
    so the segment scores say nothing about the predictions.
    """
    others = [label for label in classes if label != "O"]
    if others and not any(isinstance(label, str) and "-" in label for label in others):
        warnings.warn(
            f"no label has a chunk prefix ('B-', 'I-', ...; labels such as {others[0]!r}), "
            "so conlleval's reading finds no chunks of a type and the segment scores say "
            "nothing about the predictions. For per-token labels use the token metrics "
            "(flat_f1_score, token_accuracy); for entity labels without prefixes (IO "
            "tags), write them with prefixes first ('B-PER', 'I-PER').",
            UndefinedMetricWarning, stacklevel=3)


@validate_call(_SCORE, prefer_skip_nested_validation=True)
def segment_precision_score(y_true, y_pred, *, scheme="conlleval", mode="lenient",
                            average="micro", zero_division=0.0):
    return _score(y_true, y_pred, scheme, mode, 1.0, average, zero_division)[0]


@validate_call(_SCORE, prefer_skip_nested_validation=True)
def segment_recall_score(y_true, y_pred, *, scheme="conlleval", mode="lenient",
                         average="micro", zero_division=0.0):
    return _score(y_true, y_pred, scheme, mode, 1.0, average, zero_division)[1]


@validate_call(
    {**_SCORE, "beta": [Interval(Real, 0, None, closed="neither")]},
    prefer_skip_nested_validation=True,
)
def segment_f1_score(y_true, y_pred, *, scheme="conlleval", mode="lenient", beta=1.0,
                     average="micro", zero_division=0.0):
    return _score(y_true, y_pred, scheme, mode, beta, average, zero_division)[2]


_F_SUMMARY = (
    "Segment (chunk) F-score, conlleval's FB1 as a fraction.\n\n    "
    "F_beta = (1 + beta^2) * correct / (beta^2 * n_true + n_pred), the harmonic\n"
    "    mean of precision and recall for beta=1."
)
_BETA_DOC = (
    "\n    beta : float, default=1.0\n"
    "        Weight of recall relative to precision (F_beta)."
)
for _func, _summary, _beta_doc in [
    (segment_precision_score,
     "Segment (chunk) precision: correct chunks / predicted chunks.", ""),
    (segment_recall_score, "Segment (chunk) recall: correct chunks / gold chunks.", ""),
    (segment_f1_score, _F_SUMMARY, _BETA_DOC),
]:
    _func.__doc__ = _SCORE_DOC % dict(
        _DOC_FRAGMENTS, summary=_summary, beta_doc=_beta_doc, name=_func.__name__,
        example="0.5")
del _func, _summary, _beta_doc


def _type_name(t):
    return "''" if t == "" else str(t)


@validate_call(
    {**_PAIR, **_SCHEME, "digits": [Interval(Integral, 0, None, closed="left")],
     "output_dict": ["boolean"], "zero_division": [Real]},
    prefer_skip_nested_validation=True,
)
@_fill_doc
def segment_report(
    y_true, y_pred, *, scheme="conlleval", mode="lenient", digits=2,
    output_dict=False, zero_division=0.0,
):
    """Per-type segment precision, recall, F1 and counts, as conlleval.

    Parameters
    ----------
    %(y_true_y_pred)s
    %(scheme_mode)s
    digits : int, default=2
        Number of digits of the scores in the text report (fractions, not
        percentages).
    output_dict : bool, default=False
        Return a dict instead of text.
    zero_division : float, default=0.0
        Value of a score whose denominator is 0 (conlleval uses 0). Gold
        labels that are all ``"O"`` are fine.

    Returns
    -------
    report : str or dict
        Text in the layout of :func:`sklearn.metrics.classification_report`
        (first line: conlleval's "processed ... tokens with ... phrases;
        found: ...; correct: ..." and the token accuracy), or a dict
        ``{type: row, "micro avg": row, "macro avg": row, "weighted avg": row}``
        where each row is a dict with float ``"precision"``, ``"recall"``,
        ``"f1-score"`` and int ``"tp"`` (correct), ``"fp"`` (predicted minus
        correct), ``"fn"`` (gold minus correct), ``"n_pred"`` (conlleval's
        per-type number: found phrases) and ``"support"`` (gold phrases).
        Average rows carry the total counts.

    Raises
    ------
    ValueError
        As :func:`segment_counts`, or for an invalid ``zero_division``.

    See Also
    --------
    segment_counts, segment_f1_score

    Examples
    --------
    >>> from sklearn_crfloss.metrics import segment_report
    >>> y_true = [["B-PER", "I-PER", "O"], ["B-LOC", "O"]]
    >>> y_pred = [["B-PER", "I-PER", "O"], ["B-ORG", "O"]]
    >>> print(segment_report(y_true, y_pred))  # doctest: +NORMALIZE_WHITESPACE
    processed 5 tokens with 2 phrases; found: 2 phrases; correct: 1; token accuracy: 0.80
    <BLANKLINE>
                  precision    recall  f1-score        tp        fp        fn    n_pred   support
    <BLANKLINE>
             LOC       0.00      0.00      0.00         0         0         1         0         1
             ORG       0.00      0.00      0.00         0         1         0         1         0
             PER       1.00      1.00      1.00         1         0         0         1         1
    <BLANKLINE>
       micro avg       0.50      0.50      0.50         1         1         1         2         2
       macro avg       0.33      0.33      0.33         1         1         1         2         2
    weighted avg       0.50      0.50      0.50         1         1         1         2         2
    <BLANKLINE>
    >>> segment_report(y_true, y_pred, output_dict=True)["PER"]["f1-score"]
    1.0
    """
    zero_division = float(zero_division)
    codes_true, codes_pred, offsets, classes = _encode_pair(y_true, y_pred)
    counts = _as_dict(*_counts(codes_true, codes_pred, offsets, classes, scheme, mode))
    types = counts["types"]
    rows = {}
    for j, t in enumerate(types):
        c = int(counts["n_correct"][j])
        npred = int(counts["n_pred"][j])
        ntrue = int(counts["n_true"][j])
        rows[t] = {
            "precision": float(_ratio(c, npred, zero_division)),
            "recall": float(_ratio(c, ntrue, zero_division)),
            "f1-score": float(_fbeta(c, npred, ntrue, 1.0, zero_division)),
            "tp": c,
            "fp": npred - c,
            "fn": ntrue - c,
            "n_pred": npred,
            "support": ntrue,
        }
    tot_c = int(counts["n_correct"].sum())
    tot_p = int(counts["n_pred"].sum())
    tot_t = int(counts["n_true"].sum())
    totals = {"tp": tot_c, "fp": tot_p - tot_c, "fn": tot_t - tot_c,
              "n_pred": tot_p, "support": tot_t}
    for avg in _AVERAGES:
        p, r, f = _prf(counts, 1.0, avg, zero_division)
        rows[f"{avg} avg"] = {
            "precision": float(p), "recall": float(r), "f1-score": float(f), **totals
        }
    if output_dict:
        return rows

    n_tokens = codes_true.shape[0]
    acc = np.count_nonzero(codes_true == codes_pred) / n_tokens if n_tokens else 1.0
    names = [_type_name(t) for t in types] + [f"{a} avg" for a in _AVERAGES]
    width = max([len(n) for n in names] + [len("weighted avg"), digits])
    heads = ["precision", "recall", "f1-score", "tp", "fp", "fn", "n_pred", "support"]
    head_fmt = "{:>{width}s} " + " {:>9}" * len(heads)
    row_fmt = "{:>{width}s} " + " {:>9.{digits}f}" * 3 + " {:>9}" * 5
    lines = [
        f"processed {n_tokens} tokens with {tot_t} phrases; found: {tot_p} "
        f"phrases; correct: {tot_c}; token accuracy: {acc:.{digits}f}",
        "",
        head_fmt.format("", *heads, width=width),
        "",
    ]

    def fmt(name, row):
        return row_fmt.format(
            name, row["precision"], row["recall"], row["f1-score"], row["tp"],
            row["fp"], row["fn"], row["n_pred"], row["support"],
            width=width, digits=digits,
        )

    lines += [fmt(_type_name(t), rows[t]) for t in types]
    lines.append("")
    lines += [fmt(f"{a} avg", rows[f"{a} avg"]) for a in _AVERAGES]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Token and sequence metrics
# ---------------------------------------------------------------------------


def _coded_pair(y_true, y_pred, sample_weight):
    """Coded labels, offsets and the checked per-sequence weights (or None)."""
    codes_true, codes_pred, offsets, _ = _encode_pair(y_true, y_pred)
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        n_sequences = offsets.shape[0] - 1
        if sample_weight.shape != (n_sequences,):
            raise ValueError(
                f"sample_weight must have shape ({n_sequences},) (one weight per "
                f"sequence), got {sample_weight.shape}."
            )
    return codes_true, codes_pred, offsets, sample_weight


def _token_score(metric, y_true, y_pred, sample_weight, no_token):
    """``metric`` of sklearn.metrics on the concatenated labels, weights per token."""
    codes_true, codes_pred, offsets, sample_weight = _coded_pair(
        y_true, y_pred, sample_weight)
    weight = None
    if sample_weight is not None:
        weight = np.repeat(sample_weight, np.diff(offsets))
    if codes_true.shape[0] == 0 or (weight is not None and weight.sum() == 0):
        return no_token
    return float(metric(codes_true, codes_pred, sample_weight=weight))


_TOKEN_DOC = """%(summary)s

    Parameters
    ----------
    %(y_true_y_pred)s
    sample_weight : array-like of shape (n_sequences,), default=None
        Weight of each sequence%(weight_doc)s.

    Returns
    -------
    %(returns)s

    Raises
    ------
    ValueError
        For ragged or mismatched inputs (the message names the sequence) or a
        ``sample_weight`` of the wrong shape.

    Notes
    -----
    %(notes)s
    Labels are compared as dictionary keys (equal, with equal hashes);
    conlleval compares them after its own parsing, which differs only for
    the types it reads as empty (``B-0``).

    Examples
    --------
    >>> from sklearn_crfloss.metrics import %(name)s
    >>> y_true = [["B-PER", "I-PER", "O"], ["O"]]
    >>> y_pred = [["B-PER", "O", "O"], ["O"]]
    >>> %(name)s(y_true, y_pred)
    %(example)s
    """


@validate_call(_TOKEN, prefer_skip_nested_validation=True)
def token_accuracy(y_true, y_pred, *, sample_weight=None):
    return _token_score(accuracy_score, y_true, y_pred, sample_weight, 1.0)


@validate_call(_TOKEN, prefer_skip_nested_validation=True)
def hamming_loss(y_true, y_pred, *, sample_weight=None):
    return _token_score(_sklearn_hamming_loss, y_true, y_pred, sample_weight, 0.0)


@validate_call(_TOKEN, prefer_skip_nested_validation=True)
def sequence_accuracy(y_true, y_pred, *, sample_weight=None):
    codes_true, codes_pred, offsets, sample_weight = _coded_pair(
        y_true, y_pred, sample_weight)
    n_wrong = np.concatenate(([0], np.cumsum(codes_true != codes_pred)))
    correct = n_wrong[offsets[1:]] == n_wrong[offsets[:-1]]
    if correct.shape[0] == 0 or (sample_weight is not None and sample_weight.sum() == 0):
        return 1.0
    return float(np.average(correct, weights=sample_weight))


_TOKEN_DOCS = {
    token_accuracy: dict(
        summary=(
            "Fraction of tokens whose predicted label equals the gold label.\n\n    "
            "Flat accuracy over all tokens, ``O`` included, like conlleval's\n    "
            '"accuracy" (which its authors say should be ignored for chunking).'
        ),
        weight_doc=", applied to each of its tokens",
        returns=("accuracy : float\n        In [0, 1]; 1.0 if there is no token or "
                 "the weights sum to 0\n        (nothing is mislabelled)."),
        notes=(":func:`sklearn.metrics.accuracy_score` of the concatenated labels,"
               "\n    each token weighted by the weight of its sequence."),
        example="0.75",
    ),
    hamming_loss: dict(
        summary="Fraction of tokens that are mislabelled, ``1 - token_accuracy``.",
        weight_doc=", applied to each of its tokens",
        returns=("loss : float\n        In [0, 1]; 0.0 if there is no token or the "
                 "weights sum to 0. Lower\n        is better (use "
                 ":data:`hamming_scorer` in a search, which negates it)."),
        notes=(":func:`sklearn.metrics.hamming_loss` of the concatenated labels,"
               "\n    each token weighted by the weight of its sequence."),
        example="0.25",
    ),
    sequence_accuracy: dict(
        summary="Fraction of sequences whose labels are all correct.",
        weight_doc="",
        returns=("accuracy : float\n        In [0, 1]; 1.0 if there is no sequence "
                 "or the weights sum to 0.\n        An empty sequence counts as "
                 "correct."),
        notes="The weighted mean over sequences of 1 (no token wrong) or 0.",
        example="0.5",
    ),
}
for _func, _parts in _TOKEN_DOCS.items():
    _func.__doc__ = _TOKEN_DOC % dict(_DOC_FRAGMENTS, name=_func.__name__, **_parts)
del _TOKEN_DOCS, _func, _parts
