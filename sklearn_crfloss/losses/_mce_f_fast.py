"""The segment margins of MCE-F (``segment_match='labels'``) with one pass of each kernel.

:meth:`SegmentFScoreMCE._label_margins
<sklearn_crfloss.losses.SegmentFScoreMCE>` calls :func:`label_margins`,
which returns what the general code returns, computed with less work:

* the maximum incorrect output (Suzuki et al. 2006, Eq. 5) is read off the
  max-marginal tables (Eq. 14) that the segment margins need anyway: a
  sequence that differs from the gold labels differs at some token ``t``
  with some label ``j``, and the best one through ``(t, j)`` is the
  max-marginal's, so the best incorrect output is the best max-marginal
  over the tokens and the labels other than the gold one, completed through
  the tables' backpointers (no separate Viterbi pass over (label,
  deviated) states; the same path up to ties);
* each segment's best competitor (Eq. 15: the best sequence that does not
  carry its labels on its span) is read off the same tables: the best
  max-marginal over the span's tokens and the labels other than the
  segment's, by the same argument (no Viterbi pass over the span); its
  (token, label) is kept, and the gradient, whose coefficients need every
  margin of the batch (the F-score ratio), adds the counts of the best
  paths through the kept nodes, all the prefixes and suffixes of a
  sequence in one sweep of the backpointers;
* the false positives measured against the gold labels of their span
  (``false_positives='gold'``) need only the carrying paths' scores, not a
  competitor.

Position-dependent transitions (:class:`~sklearn_crfloss.inference.PositionTransitions`)
are taken as by the general code; the plain matrix is the fast case.

With a plain matrix, :meth:`SegmentFScoreMCE.value_and_grad
<sklearn_crfloss.losses.SegmentFScoreMCE>` runs as one compiled call,
:func:`fused_value_and_grad` (``_ext/_max_marginals.pyx``,
``mce_f_labels_batch``): the same margins, the segments decoded by the same
decoder, then the smoothing, the F-score ratio and the gradient with the
Python path's arithmetic in its order, so that both give the same bits. An
SGD epoch makes thousands of evaluations on minibatches of a few sentences,
where the Python path's many small numpy calls cost more than its kernels.
"""

import weakref

import numpy as np

from .._chain import (accumulator_blocks, max_incorrect_from_tables, max_marginals_batch,
                      mce_f_labels_batch, segment_margins_batch, span_gradients_batch,
                      transition_table)
from ..exceptions import UndefinedLossError
from ..inference import MaxMarginalsResult, PositionTransitions

#: The max-marginal tables of the last evaluation on a unary array, kept while
#: the array lives: a training objective passes the same buffer at every
#: evaluation, and four fresh (n_tokens, n_labels) arrays a call cost as much
#: as the pass that fills them (page faults). Never returned to a caller.
_TABLES = {}
#: Unary arrays of fewer entries (an SGD minibatch, new every step) get fresh
#: tables, not kept: small arrays come from the allocator's free lists, and
#: registering a new array per call would cost more than its tables.
_KEEP_TABLES_FROM = 1 << 14

__all__ = ["TP_UNDERFLOW", "fused_value_and_grad", "label_margins", "path_gradient",
           "stack_segments"]

#: The message of the UndefinedLossError of MCE-F when TP_l underflows.
TP_UNDERFLOW = ("loss='mce_f': TP_l underflowed to 0 (every gold segment is misclassified "
                "by a wide margin); the F-score ratio is undefined.")
#: ``false_positives`` as the compiled kernel's code.
_FALSE_POSITIVES = {"gold": 0, "max_incorrect": 1, "viterbi": 2}
_NO_WEIGHTS = np.zeros(0)


class _Spans:
    """Segments of one reference labelling, evaluated by ``segment_margins_batch`` (mode 3).

    Parameters
    ----------
    chain : Chain
        The checked potentials.
    mm : MaxMarginalsResult
    ref : ndarray of intp of shape (n_tokens,)
        The labels the segments carry.
    segments : tuple (seq, begin, stop) of ndarray of intp
        Sorted by sequence; positions inside the sequence, ``stop`` exclusive.
    need_other : ndarray of bool of shape (n_segments,)
        The segments whose best competitor is computed.

    Attributes
    ----------
    carry, other : ndarray of shape (n_segments,)
        Best scores with and without the labels on the span (``other`` is
        ``-inf`` where not computed or where every labelling carries them).
    """

    def __init__(self, chain, mm, ref, segments, need_other, off=(None, None)):
        # off: max_marginals_batch's best max-marginals off ref, if known
        c = chain
        seq, begin, stop = segments
        self.chain, self.mm, self.ref = c, mm, ref
        self.n = seq.shape[0]
        seg_offsets = np.searchsorted(seq, np.arange(c.n_seq + 1))
        self.seg_offsets = seg_offsets.astype(np.intp, copy=False)
        self.begin = np.ascontiguousarray(begin + c.offsets[seq], dtype=np.intp)
        self.stop = np.ascontiguousarray(stop + c.offsets[seq], dtype=np.intp)
        self.need_other = np.ascontiguousarray(need_other, dtype=np.uint8)
        self.nodes = np.empty((max(1, self.n), 2), dtype=np.intp)  # competitors' (t, j)
        self.carry, self.other = np.empty(self.n), np.empty(self.n)
        L = c.n_labels
        table, index = transition_table(c.transition)
        zeros = np.zeros(self.n)
        segment_margins_batch(
            c.unary, table, index, mm.alpha, mm.beta, mm.bp_fwd, mm.bp_bwd, c.offsets,
            self.ref, self.seg_offsets, self.begin, self.stop, self.carry, self.other, zeros,
            zeros, 3, self.need_other, self.nodes, np.empty((0, L)), np.zeros((1, 1)),
            np.zeros((1, 2 * L)), np.empty((1, 1)), np.empty((1, 1), dtype=np.int32),
            np.empty((1, 1), dtype=np.intp), np.empty((1, 1)), c.n_threads, *off)

    def add_gradient(self, coef, coef_other, d_unary, acc):
        """Add the counts of the best paths: ``coef`` carrying, ``-coef_other`` the others."""
        add_span_gradients([self], [coef], [coef_other], d_unary, acc)


def add_span_gradients(spans, coef, coef_other, d_unary, acc):
    """Add the gradients of several :class:`_Spans` on one chain in one kernel pass.

    ``coef`` and ``coef_other``: one array per set of spans; adds ``coef``
    times the counts of each segment's best carrying path minus
    ``coef_other`` times those of its best competitor into ``d_unary`` and
    the kernels' accumulators ``acc`` (see :func:`path_gradient`).
    """
    c, mm = spans[0].chain, spans[0].mm
    L = c.n_labels
    _, index = transition_table(c.transition)
    max_length = int((c.offsets[1:] - c.offsets[:-1]).max()) if c.n_seq else 0
    base, refs, seg_offsets = 0, [], []
    for sp in spans:  # (lists, not np.stack: a minibatch step calls this thousands of times)
        refs.append(sp.ref)
        seg_offsets.append(sp.seg_offsets + base)
        base += sp.n
    span_gradients_batch(
        mm.bp_fwd, mm.bp_bwd, index, c.offsets,
        np.ascontiguousarray(refs, dtype=np.intp), np.ascontiguousarray(seg_offsets),
        np.concatenate([sp.begin for sp in spans]), np.concatenate([sp.stop for sp in spans]),
        np.ascontiguousarray(np.concatenate(coef), dtype=np.float64),
        np.ascontiguousarray(np.concatenate(coef_other), dtype=np.float64),
        np.concatenate([sp.nodes[:sp.n] for sp in spans] + [np.zeros((1, 2), dtype=np.intp)]),
        d_unary, acc[0], acc[1], np.empty((c.n_threads, max(1, 2 * max_length * L))),
        c.n_threads)


def _fresh_tables(shape):
    """New max-marginal tables of a chain of ``shape`` (n_tokens, n_labels), and
    the arrays of each token's best max-marginal off a reference and its label."""
    n = shape[0]
    mm = MaxMarginalsResult(np.empty(shape), np.empty(shape), np.empty(shape, dtype=np.int32),
                            np.empty(shape, dtype=np.int32))
    return mm, (np.empty(n), np.empty(n, dtype=np.intp))


def _kept_tables(unary):
    """``_fresh_tables`` kept for ``unary`` while it lives (see ``_TABLES``), or
    None for an array of fewer than ``_KEEP_TABLES_FROM`` entries."""
    if unary.size < _KEEP_TABLES_FROM:
        return None
    key = id(unary)
    owner, mm, off = _TABLES.get(key, (None, None, None))
    if owner is None or owner() is not unary or mm.alpha.shape != unary.shape:
        mm, off = _fresh_tables(unary.shape)
        if owner is None:
            weakref.finalize(unary, _TABLES.pop, key, None)
        _TABLES[key] = (weakref.ref(unary), mm, off)
    return mm, off


def max_marginal_tables(c, ref=None):
    """The max-marginal tables of the checked chain ``c``, in the kept arrays
    (fresh ones for a unary array of fewer than ``_KEEP_TABLES_FROM`` entries).

    As :func:`~sklearn_crfloss.inference.max_marginals`. One training objective evaluates
    on its unary buffer from one thread at a time; two threads evaluating on
    the same unary array at once would share these tables.

    Returns ``(mm, (off_best, off_arg))``: with ``ref`` (n_tokens,) labels,
    each token's best max-marginal off ``ref``'s label and that label
    (``max_marginals_batch``'s, for ``max_incorrect_from_tables`` and mode 3
    of ``segment_margins_batch`` on ``ref``), else ``(None, None)``.
    """
    mm, off = _kept_tables(c.unary) or _fresh_tables(c.unary.shape)
    table, index = transition_table(c.transition)
    with_ref = {} if ref is None else {"ref": ref, "off_best": off[0], "off_arg": off[1]}
    max_marginals_batch(c.unary, table, np.ascontiguousarray(table.transpose(0, 2, 1)), index,
                        c.start, c.end, c.offsets, mm.alpha, mm.beta, mm.bp_fwd, mm.bp_bwd,
                        c.n_threads, **with_ref)
    return mm, (off if ref is not None else (None, None))


def path_gradient(c, add):
    """The gradient of weighted path counts, as the max-product kernels add them.

    Parameters
    ----------
    c : Chain
        The checked potentials.
    add : callable
        ``add(d_unary, acc)`` adds the weighted counts into ``d_unary``
        (n_tokens, n_labels), zeroed, and the kernels' accumulators ``acc =
        (transitions, start and end)`` of shapes (n_acc, table.size) and
        (n_acc, 2 * n_labels).

    Returns
    -------
    d_unary, d_transition, d_start, d_end
        ``d_transition`` of the shape of ``c.transition``'s table when it is
        position-dependent, else (n_labels, n_labels).
    """
    table, _ = transition_table(c.transition)
    L = c.n_labels
    n_acc = accumulator_blocks(c.n_threads, table.size + 2 * L)
    acc = (np.zeros((n_acc, table.size)), np.zeros((n_acc, 2 * L)))
    d_unary = np.zeros((c.n_tokens, L))
    add(d_unary, acc)
    boundary = acc[1].sum(axis=0)
    d_trans = acc[0].sum(axis=0).reshape(table.shape)
    if not isinstance(c.transition, PositionTransitions):
        d_trans = d_trans[0]
    return d_unary, d_trans, boundary[:L], boundary[L:]


def label_margins(loss, c, y, gold, segments):
    """Margins of the gold and false positive segments, and their gradient.

    The fast path of ``SegmentFScoreMCE._label_margins`` (the segments
    compared as the label strings on their spans).

    Parameters
    ----------
    loss : SegmentFScoreMCE
        Its ``false_positives``.
    c : Chain
        The checked potentials (``Chain.checked``) and thread count.
    y : ndarray of intp of shape (n_tokens,)
        The gold labels, checked (``c.labels``).
    gold : tuple
        ``loss._gold_segments(y, c.offsets)``.
    segments : callable
        ``segments(labels, offsets)``: the (seq, begin, stop, key, type)
        arrays of the segments of label paths, as the loss decodes them.

    Returns
    -------
    m_gold : ndarray of shape (n_gold,)
        Margin of every gold segment.
    fp_seq : ndarray of intp of shape (n_fp,)
        Sequence of every false positive segment.
    m_fp : ndarray of shape (n_fp,)
        The misclassification measure of every false positive.
    gradient : callable
        ``gradient(coef_gold, coef_fp)``: ``(d_unary, d_transition, d_start,
        d_end)`` of ``sum coef_gold * m_gold + coef_fp * m_fp``.
    """
    mm, off = max_marginal_tables(c, y)  # off: each token's best max-marginal off y's label
    wrong_path = np.empty(c.n_tokens, dtype=np.intp)
    max_incorrect_from_tables(mm.alpha, mm.beta, mm.bp_fwd, mm.bp_bwd, c.offsets, y,
                              loss.false_positives != "viterbi", wrong_path, np.zeros(c.n_seq),
                              c.n_threads, *off)
    gseq, gbeg, gend, gkey, _ = gold
    wseq, wbeg, wend, wkey, _ = segments(wrong_path, c.offsets)
    if gkey.shape[0] and np.all(gkey[1:] > gkey[:-1]):  # sorted (the decoder's order)
        keep = gkey[np.minimum(np.searchsorted(gkey, wkey), gkey.shape[0] - 1)] != wkey
    else:
        keep = ~np.isin(wkey, gkey)
    fp_segs = (wseq[keep], wbeg[keep], wend[keep])
    n_gold, n_fp = gseq.shape[0], fp_segs[0].shape[0]
    gold_competitor = loss.false_positives == "gold"
    # The gold labels' spans: the gold segments, then (for 'gold') those of
    # the false positives, whose competitor is not needed; sorted by sequence.
    ref_segs, order = stack_segments((gseq, gbeg, gend),
                                      fp_segs if gold_competitor else None)
    perm = np.argsort(order, kind="stable")  # sorted position -> stacked position
    on_gold = _Spans(c, mm, y, ref_segs, perm < n_gold, off)
    on_wrong = _Spans(c, mm, wrong_path, fp_segs, np.full(n_fp, not gold_competitor))
    c_y, o_y = on_gold.carry[order], on_gold.other[order]
    m_g = c_y[:n_gold] - o_y[:n_gold]
    m_f = on_wrong.carry - (c_y[n_gold:] if gold_competitor else on_wrong.other)

    def gradient(coef_g, coef_f):
        def add(d_unary, acc):
            if gold_competitor:
                # d(s') = g(s') - g(gold labels on the span): the carrying paths only.
                gold_coef = (np.concatenate([coef_g, -coef_f])[perm],
                             np.concatenate([coef_g, np.zeros(n_fp)])[perm])
            else:
                gold_coef = (coef_g, coef_g)
            add_span_gradients([on_gold, on_wrong], [gold_coef[0], coef_f],
                               [gold_coef[1], coef_f], d_unary, acc)

        return path_gradient(c, add)

    return m_g, fp_segs[0], m_f, gradient


def stack_segments(first, second=None):
    """Two (seq, begin, stop) sets as one sorted by sequence, and the inverse order.

    Returns ``(segments, order)`` such that ``values[order]`` lists the
    values computed on ``segments`` in the order ``first`` then ``second``.
    """
    if second is None:
        return first, np.arange(first[0].shape[0])
    stacked = tuple(np.concatenate([a, b]) for a, b in zip(first, second))
    perm = np.argsort(stacked[0], kind="stable")
    order = np.empty_like(perm)
    order[perm] = np.arange(perm.shape[0])
    return tuple(a[perm] for a in stacked), order


def fused_value_and_grad(loss, unary, transition, start, end, y, offsets, sample_weight=None,
                         n_threads=1, *, beta, saturated_z, decoder):
    """MCE-F's value and gradient in one compiled call, where it applies.

    :meth:`SegmentFScoreMCE.value_and_grad
    <sklearn_crfloss.losses.SegmentFScoreMCE>` for ``segment_match='labels'``
    (the fast path on) and one transition matrix (Suzuki et al. 2006,
    section 4, Eqs. 13-16): the gold segments of ``y``, the max-marginal
    tables, the maximum incorrect output (Eq. 5) read off them, its
    segments and the false positives among them, the segment margins (Eqs.
    14-15), the sigmoid smoothing (Eq. 8), ``TP_l``, ``FN_l``, ``FP_l`` and
    the ratio (Eq. 16, times ``S``), ``saturation_`` and the gradient, all
    in ``mce_f_labels_batch``. The result is bitwise that of the Python path
    (:func:`label_margins` and the loss's own arithmetic).

    Parameters
    ----------
    loss : SegmentFScoreMCE
        Its parameters and ``classes_``; ``saturation_`` is set.
    unary : ndarray of float64 of shape (n_tokens, n_labels)
    transition : ndarray of float64 of shape (n_labels, n_labels)
    start, end : ndarray of float64 of shape (n_labels,)
    y : ndarray of intp of shape (n_tokens,)
        Gold labels, in ``[0, n_labels)``.
    offsets : ndarray of intp of shape (n_sequences + 1,)
        The potentials, labels and offsets are not checked (C-contiguous,
        of these dtypes: as :func:`~sklearn_crfloss.inference.check_potentials`
        and ``Chain.labels`` return them, or as a solver builds them).
    sample_weight : array-like of shape (n_sequences,), default=None
        Sequence weights; None: 1 for every sequence.
    n_threads : int, default=1
        OpenMP threads over sequences.
    beta : float
        The smoothing's offset (``beta='auto'`` resolved).
    saturated_z : float
        The smoothing's saturation threshold (``_SATURATED_Z`` of the loss
        module).
    decoder : callable
        ``decoder()``: the loss's :class:`~sklearn_crfloss.losses._chunks.ChunkDecoder`
        of ``classes_`` (called only where the case applies).

    Returns
    -------
    tuple (value, d_unary, d_transition, d_start, d_end) or None
        None where the case does not apply (another ``segment_match``,
        position-dependent transitions, no or mismatched ``classes_``); the
        caller then takes the Python path.

    Raises
    ------
    ValueError
        If ``sample_weight`` does not have one weight per sequence.
    UndefinedLossError
        If the gold segments have positive weight but ``TP_l`` underflows
        to 0 (``saturation_`` is set first).
    """
    classes = getattr(loss, "classes_", None)
    if (loss.segment_match != "labels"
            or type(transition) is not np.ndarray or classes is None
            or len(classes) != unary.shape[1]):
        return None
    n_tokens, L = unary.shape
    w = _NO_WEIGHTS
    if sample_weight is not None:
        w = np.ascontiguousarray(sample_weight, dtype=np.float64)
        if w.shape != (offsets.shape[0] - 1,):
            raise ValueError(f"sample_weight must have shape ({offsets.shape[0] - 1},) (one "
                             f"weight per sequence), got {w.shape}")
    decoder = decoder()
    kept = _kept_tables(unary)  # (None: the kernel allocates them)
    grad = (np.empty((n_tokens, L)), np.empty((L, L)), np.empty(L), np.empty(L))
    value, loss.saturation_, defined = mce_f_labels_batch(
        unary, transition, start, end, offsets, y, w, float(loss.alpha), beta,
        float(loss.gamma) ** 2, _FALSE_POSITIVES[loss.false_positives], saturated_z,
        decoder.start_events, decoder.end_events, decoder.label_type, *grad,
        accumulator_blocks(n_threads, L * L + 2 * L), n_threads,
        None if kept is None else (kept[0].alpha, kept[0].beta, kept[0].bp_fwd,
                                   kept[0].bp_bwd, *kept[1]))
    if not defined:
        raise UndefinedLossError(TP_UNDERFLOW)
    return (value,) + grad
