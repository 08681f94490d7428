"""Segments compared as chunks for ``loss='mce_f'`` (``segment_match='chunks'``).

A label sequence's chunks are read by the decoder of
:mod:`sklearn_crfloss.segments` from two events at every token boundary,
conlleval's endOfChunk and startOfChunk of the (previous, current) labels,
and the type of the label that starts a chunk. The chunk ``(a, b, type)``
is in a sequence exactly when a chunk of that type starts at ``a``, no
chunk ends at ``a+1 .. b-1`` and one ends at ``b`` (or ``b`` is the
sequence's end). Every quantity here is a constraint on these events, so
two encodings of the same chunks (``O I-PER`` and ``O B-PER``; IOB1, IOB2
and IOBES) satisfy the same constraints, and the best scores under them are
Viterbi passes restricted to a span, entered through the forward and left
through the backward max-marginal tables (Suzuki et al. 2006, section 4.2).
The passes of a batch run in one compiled kernel
(``_ext/_chunk_queries.pyx``), which also takes position-dependent
transitions (:class:`~sklearn_crfloss.inference.PositionTransitions`).
"""

import numpy as np

from .._chain import (Chain, chunk_queries_batch, chunk_segments, max_incorrect_from_tables,
                      transition_table)
from ..inference import PositionTransitions
from ..segments import event_tables
from ._mce_f_fast import max_marginal_tables as _tables, path_gradient

__all__ = ["ChunkDecoder", "ChunkEvents", "Gradient", "SpanQueries"]

_NEG = -np.inf


class ChunkDecoder:
    """The chunk events of a label set, and the chunks of label-index sequences.

    The decoder of :func:`~sklearn_crfloss.segments.segments_from_codes`
    (``mode='lenient'``) for one label set, built once: the events of every
    (previous, current) label pair are tabulated, and label sequences are
    decoded in one compiled pass without parameter validation
    (``_ext/_chunk_queries.pyx``, ``chunk_segments``; MCE-F decodes at
    every evaluation).

    Parameters
    ----------
    classes : sequence of str of length n_labels
        Label names.
    scheme : str
        Tagging scheme of :func:`sklearn_crfloss.segments.segments_from_codes`.

    Raises
    ------
    ValueError
        If a label of ``classes`` is invalid for ``scheme`` (the message
        names the label).

    Attributes
    ----------
    end, start : ndarray of bool of shape (n_labels + 1, n_labels)
        ``end[p, c]`` (``start[p, c]``): a chunk ends (starts) between a
        token labelled ``p`` and the next labelled ``c``; row ``n_labels`` is
        the sequence start (conlleval's blank line).
    label_type : ndarray of intp of shape (n_labels,)
        Type code of every label (0: the empty type, e.g. ``O``).
    n_types : int
        Number of types, the empty one included (``len(type_names)`` of
        ``segments_from_codes``).
    start_events, end_events : ndarray of uint8 of shape (n_labels + 1, n_labels)
        ``start`` and ``end`` as the compiled kernels read them (views).
    """

    def __init__(self, classes, scheme):
        self.start, self.end, _, self.label_type, type_names = event_tables(classes, scheme)
        self.n_labels, self.n_types = len(classes), len(type_names)
        self.start_events = self.start.view(np.uint8)
        self.end_events = self.end.view(np.uint8)

    def segments(self, path, offsets):
        """The chunks of ``path``: ``segments_from_codes(path, offsets, classes, scheme=scheme)``.

        Parameters
        ----------
        path : ndarray of intp of shape (n_tokens,)
            Label indices, in ``[0, n_labels)`` (not checked).
        offsets : ndarray of intp of shape (n_sequences + 1,)
            Valid sequence boundaries (not checked).

        Returns
        -------
        seq, begin, stop, type_code : ndarray of intp of shape (n_segments,)
            As :func:`~sklearn_crfloss.segments.segments_from_codes` returns
            them: sorted by sequence and start, positions inside the
            sequence, ``stop`` exclusive.
        """
        # A chunk ends at the first end event after its start, at the latest
        # where its sequence ends (conlleval's blank line after it).
        out = np.empty((4, path.shape[0]), dtype=np.intp)
        n = chunk_segments(self.start_events, self.end_events, self.label_type, path,
                           offsets, out)
        return out[0, :n], out[1, :n], out[2, :n], out[3, :n]


class ChunkEvents(ChunkDecoder):
    """Chunk events of a label set and the span queries of MCE-F on them.

    Parameters
    ----------
    classes, scheme
        As :class:`ChunkDecoder`.

    Attributes
    ----------
    end, start, label_type, n_types
        As :class:`ChunkDecoder`.
    code : ndarray of int64 of shape (n_labels + 1, n_labels)
        ``end + 2 start + 4 type(c) start``: two label sequences have the same
        chunks when their codes are equal at every token (for labels whose
        chunks are all marked by these events, e.g. B/I/E/S/O prefixes).
    type_offsets, type_labels : ndarray of intp
        The labels of type ``t``, increasing:
        ``type_labels[type_offsets[t]:type_offsets[t + 1]]``.
    masks : ndarray of uint8 of shape (n_masks, n_labels + 1, n_labels)
        The label pairs a span query allows at a boundary (see
        :meth:`carry_queries` and :meth:`gold_queries`).
    columns : ndarray of uint8 of shape (n_masks, n_labels)
        1 where a mask allows label ``c`` after every label, 2 after none, else 0.
    off_type : ndarray of float64 of shape (n_types, n_labels)
        ``-inf`` for the labels of the type, 0 for the others.
    """

    def __init__(self, classes, scheme):
        super().__init__(classes, scheme)
        self._gold_structure = None  # chunk_margins' gold queries and events, per gold set
        n, cur_typ = self.n_labels, self.label_type
        self.code = (self.end.astype(np.int64) + 2 * self.start
                     + 4 * np.where(self.start, cur_typ[None, :], 0))
        n_codes = 4 * self.n_types
        self.type_labels = np.argsort(cur_typ, kind="stable").astype(np.intp)
        self.type_offsets = np.searchsorted(cur_typ[self.type_labels],
                                            np.arange(self.n_types + 1)).astype(np.intp)
        same = cur_typ[None, :] == np.arange(self.n_types)[:, None]  # (n_types, L)
        # Mask table (n_masks, L + 1, L): 0 no end, 1 end, 2 no end (exit),
        # then start of type t, then (start bit, type) and (code, type).
        masks = [~self.end, self.end, ~self.end]
        masks += [self.start & same[t][None, :] for t in range(self.n_types)]
        masks += [(self.start == bool(s)) & same[t][None, :]
                  for s in (0, 1) for t in range(self.n_types)]
        masks += [(self.code == e) & same[t][None, :]
                  for e in range(n_codes) for t in range(self.n_types)]
        self.masks = np.ascontiguousarray(np.array(masks), dtype=np.uint8)
        inside = self.masks[:, :n, :].astype(bool)  # the rows of the labels (not the start)
        self.columns = np.where(inside.all(axis=1), 1, np.where(~inside.any(axis=1), 2, 0))
        self.columns = np.ascontiguousarray(self.columns, dtype=np.uint8)
        self.off_type = np.where(same, -np.inf, 0.0)
        self._start_id, self._gstart_id = 3, 3 + self.n_types
        self._gin_id = 3 + 3 * self.n_types

    # -- events of label sequences ------------------------------------------

    def _prev(self, path, offsets):
        prev = np.empty_like(path)
        prev[1:] = path[:-1]
        firsts = offsets[:-1][np.diff(offsets) > 0]
        prev[firsts] = self.n_labels
        return prev

    def token_events(self, path, offsets):
        """``(code, start, end)`` of the boundary before every token of ``path``."""
        prev = self._prev(path, offsets)
        return self.code[prev, path], self.start[prev, path], self.end[prev, path]

    def max_incorrect(self, unary, transition, start, end, offsets, y, n_threads=1, mm=None,
                      exclude=True, gold_events=None):
        """Best label sequence whose chunks differ from those of ``y`` (Eq. 5 on chunks).

        The label-level maximum incorrect output, read off the max-marginal
        tables ``mm`` (computed if not given; as
        :func:`~sklearn_crfloss.inference.viterbi_excluding` up to ties),
        where its chunks differ from the gold ones; else (it only re-encodes
        the gold chunks) a Viterbi over (label, chunks-deviated-yet) states on
        that sequence. Returns ``y``'s labels for a sequence without any other
        chunk set. Without ``exclude``: the Viterbi path. ``transition`` may
        be a :class:`~sklearn_crfloss.inference.PositionTransitions`;
        ``gold_events``: :meth:`token_events` of ``y`` if known.
        """
        c = Chain.checked(unary, transition, start, end, offsets, n_threads, positions=True)
        y = c.labels(y, "y")
        mm, off = _tables(c, y) if mm is None else (mm, (None, None))
        path = np.empty(c.n_tokens, dtype=np.intp)
        max_incorrect_from_tables(mm.alpha, mm.beta, mm.bp_fwd, mm.bp_bwd, c.offsets, y, exclude,
                                  path, np.zeros(c.n_seq), c.n_threads, *off)
        if exclude:
            self.differ_in_chunks(c, path, y, gold_events)
        return path

    def differ_in_chunks(self, c, path, y, gold_events=None):
        """Where ``path`` (the label-level maximum incorrect output) only re-encodes
        the chunks of ``y``, replace it by the best sequence with other chunks (in place).

        ``c`` is the checked chain (:class:`~sklearn_crfloss._chain.Chain`);
        ``gold_events``: :meth:`token_events` of ``y`` if known.
        """
        offsets = c.offsets
        gold_code = (self.token_events(y, offsets) if gold_events is None else gold_events)[0]
        lengths = np.diff(offsets)
        differs = np.bincount(np.repeat(np.arange(lengths.shape[0]), lengths),
                              self.code[self._prev(path, offsets), path] != gold_code,
                              minlength=lengths.shape[0])
        redo = np.flatnonzero((lengths > 0) & ~(differs > 0))
        if redo.shape[0]:  # all of them at once, padded with their last token
            lens = lengths[redo]
            steps = np.arange(int(lens.max()))[None, :]
            rows = offsets[redo][:, None] + np.minimum(steps, lens[:, None] - 1)
            out = self._chunk_excluding(c.unary, c.transition, c.start, c.end, rows,
                                        gold_code[rows], y[rows], lens)
            inside = steps < lens[:, None]
            path[rows[inside]] = out[inside]

    def _chunk_excluding(self, unary, transition, start, end, rows, gold_code, y, lengths):
        """Viterbi over (label, deviated) on sequences ``rows`` (m, T) of ``lengths`` (m,).

        Positions past a sequence's length (padding) are computed and ignored.
        """
        m, length = rows.shape
        L = self.n_labels
        score = start[None, :] + unary[rows[:, 0]]
        eq = self.code[L][None, :] == gold_code[:, :1]
        ok, dev = np.where(eq, score, _NEG), np.where(eq, _NEG, score)
        final = np.where((lengths == 1)[:, None], dev + end[None, :], _NEG)
        bps = []
        codes = self.code[:L]
        for t in range(1, length):
            edge = (transition.table[transition.index[rows[:, t]]]
                    if isinstance(transition, PositionTransitions) else transition[None])
            s_ok = ok[:, :, None] + edge
            s_dev = dev[:, :, None] + edge
            eq = codes[None] == gold_code[:, t, None, None]
            ok_in = np.where(eq, s_ok, _NEG)
            both = np.concatenate([s_dev, np.where(eq, _NEG, s_ok)], axis=1)
            bp_ok, bp_dev = ok_in.argmax(axis=1), both.argmax(axis=1)
            u = unary[rows[:, t]]
            ok = np.take_along_axis(ok_in, bp_ok[:, None, :], 1)[:, 0] + u
            dev = np.take_along_axis(both, bp_dev[:, None, :], 1)[:, 0] + u
            bps.append((bp_ok, bp_dev))
            last = lengths == t + 1
            final[last] = dev[last] + end[None, :]
        lab = final.argmax(axis=1)
        out = np.empty((m, length), dtype=np.intp)
        out[:, -1] = lab
        in_dev = np.ones(m, dtype=bool)
        r = np.arange(m)
        for t in range(length - 1, 0, -1):
            bp_ok, bp_dev = bps[t - 1]
            b = bp_dev[r, lab]
            inside = t < lengths  # else lab stays the sequence's last label
            lab, in_dev = (np.where(inside, np.where(in_dev, b % L, bp_ok[r, lab]), lab),
                           np.where(inside, in_dev & (b < L), in_dev))
            out[:, t - 1] = lab
        none = ~np.isfinite(final.max(axis=1))
        out[none] = y[none]
        return out

    # -- span queries -------------------------------------------------------

    def carry_queries(self, seq, begin, stop, types):
        """Constraints of "the sequence has the chunk ``(begin, stop, type)``".

        Returns ``(tok_type, first, inner, exit)``: the type every span token
        must have (implied), one entry per token of every query, queries one
        after the other; the mask at the boundary before ``begin`` (per
        query), at the inner boundaries (per token, the first of each query
        not read) and at ``stop`` (per query).
        """
        n_tok = int(np.sum(stop - begin))
        tok_type = np.repeat(types, stop - begin)
        return (tok_type, self._start_id + types, np.zeros(n_tok, dtype=np.intp),
                np.ones(seq.shape[0], dtype=np.intp))

    def gold_queries(self, seq, begin, stop, y, offsets, events):
        """Constraints of "the sequence has the gold chunk events on the span".

        The chunk analogue of "the gold labels on the span" (the first term
        of the paper's false-positive measure): the same label type on every
        span token, the same start event (and type) at ``begin``, the same
        events inside and the same end event at ``stop``. ``events`` is
        :meth:`token_events` of ``y``. Returned as :meth:`carry_queries` does.
        """
        code, st, en = events
        lengths = stop - begin
        first_tok = (np.cumsum(lengths) - lengths).astype(np.intp)  # empty for no spans
        at = (offsets[seq] + begin).astype(np.intp)
        pos = np.repeat(at - first_tok, lengths) + np.arange(int(np.sum(lengths)))
        tok_type = self.label_type[y[pos]]
        first = self._gstart_id + st[at].astype(np.intp) * self.n_types + tok_type[first_tok]
        inner = self._gin_id + code[pos] * self.n_types + tok_type
        after = np.minimum(offsets[seq] + stop, max(y.shape[0] - 1, 0))
        exit_ = np.where(en[after], 1, 2)
        return tok_type, first, inner, exit_


class _Part:
    """One set of span queries (sorted by sequence) and what the values pass returns."""

    def __init__(self, c, seq, begin, stop, queries, need_without):
        lengths = (stop - begin).astype(np.intp)
        self.n = seq.shape[0]
        self.q_offsets = np.searchsorted(seq, np.arange(c.n_seq + 1)).astype(np.intp)
        self.begin = np.ascontiguousarray(begin + c.offsets[seq], dtype=np.intp)
        self.stop = self.begin + lengths
        self.q_tokens = np.concatenate([[0], np.cumsum(lengths)]).astype(np.intp)
        self.tok_type, self.first, self.inner, self.exit = (
            np.ascontiguousarray(q, dtype=np.intp) for q in queries)
        self.need = np.full(self.n, need_without, dtype=np.uint8)
        self.with_, self.without = np.empty(self.n), np.empty(self.n)
        self.how = np.empty((self.n, 8), dtype=np.intp)
        self.paths = np.empty((2, self.q_tokens[-1]), dtype=np.intp)

    @classmethod
    def stacked(cls, parts):
        """What the gradient pass reads of all the parts, as one.

        Their spans, ``how`` and paths end to end, ``q_offsets`` one row per
        part; the constraints and values (read by the values pass only) are
        empty.
        """
        out = cls.__new__(cls)
        for name in ("begin", "stop", "how"):
            setattr(out, name, np.concatenate([getattr(p, name) for p in parts]))
        out.tok_type = out.inner = out.first = out.exit = np.zeros(0, dtype=np.intp)
        out.need = np.zeros(0, dtype=np.uint8)
        out.with_ = out.without = np.zeros(0)
        base = np.cumsum([0] + [p.n for p in parts[:-1]])
        tok_base = np.cumsum([0] + [p.q_tokens[-1] for p in parts[:-1]])
        out.q_offsets = np.stack([p.q_offsets + b for p, b in zip(parts, base)])
        out.q_tokens = np.concatenate([p.q_tokens[:-1] + b for p, b in zip(parts, tok_base)]
                                      + [[tok_base[-1] + parts[-1].q_tokens[-1]]]).astype(np.intp)
        out.paths = np.concatenate([p.paths for p in parts], axis=1)
        return out


class SpanQueries:
    """Best scores with and without chunk constraints on spans, and their gradient.

    The chunk-query kernel (``sklearn_crfloss._chain._chunk_queries``): a Viterbi
    pass over each span's allowed labels, entered through the forward and
    left through the backward max-marginal tables; one call per set of
    queries for the values, one for the gradient of all of them.

    Parameters
    ----------
    ev : ChunkEvents
    chain : Chain
        The checked potentials (:class:`~sklearn_crfloss._chain.Chain`).
    mm : MaxMarginalsResult
        The max-marginal tables of the potentials.
    """

    def __init__(self, ev, chain, mm):
        self.ev, self.chain, self.mm = ev, chain, mm
        self.parts = []

    def bind(self, seq, begin, stop, queries, need_without):
        """One set of queries, bound to the chain's sequences, for :meth:`run`.

        ``seq`` (non-decreasing), ``begin`` and ``stop`` (exclusive): the
        sequence and span of every query; ``queries``: its constraints
        (:meth:`ChunkEvents.carry_queries` or :meth:`ChunkEvents.gold_queries`);
        ``need_without``: whether the best score violating them is computed
        (else ``-inf``).
        """
        return _Part(self.chain, seq, begin, stop, queries, need_without)

    def run(self, part, max_incorrect=None):
        """Evaluate a bound set of queries; returns the best scores ``(with_, without)``.

        Views of ``part``'s buffers, written again by the next run. With
        ``max_incorrect = (ref, exclude, path, (off_best, off_arg))`` the
        same pass writes the path of
        ``_max_marginals.max_incorrect_from_tables`` into ``path`` (``off_*``:
        the tables' best max-marginals off ``ref``, or None).
        """
        part.q_offsets = part.q_offsets[None]
        try:
            self._run(part, np.zeros(0), np.zeros(0), None, None, max_incorrect)
        finally:
            part.q_offsets = part.q_offsets[0]
        self.parts.append(part)
        return part.with_, part.without

    def _run(self, part, coef_with, coef_without, d_unary, acc, mi=None):
        c, mm, ev = self.chain, self.mm, self.ev
        L = c.n_labels
        table, index = transition_table(c.transition)
        lengths = np.diff(c.offsets)
        max_length = int(lengths.max()) if lengths.shape[0] else 0
        span = int((part.stop - part.begin).max()) if part.stop.shape[0] else 0
        grad = d_unary is not None
        if not grad:
            d_unary = np.empty((0, L))
            acc = (np.zeros((1, 1)), np.zeros((1, 2 * L)))
        ref, exclude, path, off = mi or (np.zeros(0, dtype=np.intp), False,
                                         np.zeros(0, dtype=np.intp), (None, None))
        chunk_queries_batch(
            c.unary, table, index, c.start, mm.alpha, mm.beta, mm.bp_fwd, mm.bp_bwd, c.offsets,
            ev.masks, ev.columns, ev.label_type, ev.off_type, ev.type_offsets, ev.type_labels,
            part.q_offsets, part.begin, part.stop, part.q_tokens, part.tok_type, part.inner,
            part.first, part.exit, part.need, part.with_, part.without, part.how, part.paths[0],
            part.paths[1], coef_with, coef_without, grad, d_unary, acc[0], acc[1],
            np.empty((c.n_threads, 5 * L + (2 * max_length * L if grad else 0))),
            np.empty((c.n_threads, (span + 2) * L), dtype=np.int32), ref, exclude, path,
            np.empty(c.n_seq if path.shape[0] else 0), c.n_threads, *off)

    def add_gradient(self, d_unary, acc, coef_with, coef_without):
        """Add the gradient of ``sum coef_with with_ - coef_without without``.

        ``coef_with`` and ``coef_without`` are lists with one array per
        set of queries (in the order of :meth:`run`); the gradient goes into
        ``d_unary`` (n_tokens, n_labels) and the accumulators ``acc =
        (transitions, start and end)`` of the max-product kernels.
        """
        # zero coefficients where the score is -inf (no such path)
        cw = [np.where(np.isfinite(p.with_), c, 0.0) for p, c in zip(self.parts, coef_with)]
        cwo = [np.where(np.isfinite(p.without), c, 0.0)
               for p, c in zip(self.parts, coef_without)]
        self._run(_Part.stacked(self.parts), np.concatenate(cw), np.concatenate(cwo), d_unary,
                  acc)


def chunk_margins(loss, events, unary, transition, start, end, y, offsets, gold, n_threads,
                  segments):
    """Segment margins of MCE-F with segments compared as chunks.

    Parameters
    ----------
    loss : SegmentFScoreMCE
        Its ``false_positives``.
    events : ChunkEvents
        Of the loss's classes and scheme (it keeps the gold queries).
    unary, transition, start, end, y, offsets
        Potentials and gold labels (checked by the caller); ``transition``
        may be a :class:`~sklearn_crfloss.inference.PositionTransitions`.
    gold : tuple
        ``(seq, begin, stop, key, type)`` of the gold chunks.
    n_threads : int
    segments : callable
        ``segments(labels, offsets)``: the ``(seq, begin, stop, key, type)``
        of the chunks of label paths, as the loss decodes them.

    Returns
    -------
    m_gold : ndarray of shape (n_gold,)
        Best score with each gold chunk minus the best score without it.
    fp_seq : ndarray of shape (n_fp,)
        Sequence of every false positive chunk.
    m_fp : ndarray of shape (n_fp,)
        The false positives' measures: best score with the chunk minus the
        best score with the gold chunk events on its span (``'gold'``) or
        without the chunk (the variants).
    gradient : callable
        ``gradient(coef_gold, coef_fp)``: the gradient of ``sum coef_gold
        m_gold + coef_fp m_fp``, ``(d_unary, d_transition, d_start, d_end)``
        (``d_transition`` of the shape of ``transition``'s table when it is
        position-dependent).
    """
    c = Chain.checked(unary, transition, start, end, offsets, n_threads, positions=True)
    y = c.labels(y, "y")
    mm, off = _tables(c, y)  # off: each token's best max-marginal off y's label
    gseq, gbeg, gend, gkey, gtype = gold
    q = SpanQueries(events, c, mm)
    cache = events._gold_structure  # the gold queries and events, per gold set
    if cache is None or cache[0] is not gold:
        cache = (gold, q.bind(gseq, gbeg, gend, events.carry_queries(gseq, gbeg, gend, gtype),
                              True), events.token_events(y, offsets))
        events._gold_structure = cache
    exclude = loss.false_positives != "viterbi"
    wrong = np.empty(c.n_tokens, dtype=np.intp)
    g_with, g_without = q.run(cache[1], (y, exclude, wrong, off))
    if exclude:
        events.differ_in_chunks(c, wrong, y, cache[2])
    wseq, wbeg, wend, wkey, wtype = segments(wrong, offsets)
    if gkey.shape[0] and np.all(gkey[1:] > gkey[:-1]):  # sorted (the decoder's order)
        keep = gkey[np.minimum(np.searchsorted(gkey, wkey), gkey.shape[0] - 1)] != wkey
    else:
        keep = ~np.isin(wkey, gkey)
    fseq, fbeg, fend, ftype = wseq[keep], wbeg[keep], wend[keep], wtype[keep]
    paper = loss.false_positives == "gold"
    f_with, f_without = q.run(q.bind(fseq, fbeg, fend,
                                     events.carry_queries(fseq, fbeg, fend, ftype), not paper))
    m_gold = g_with - g_without
    if paper:  # the first term of the false positives' measure
        m_fp = f_with - q.run(q.bind(fseq, fbeg, fend, events.gold_queries(
            fseq, fbeg, fend, y, offsets, cache[2]), False))[0]
    else:
        m_fp = f_with - f_without

    def gradient(coef_gold, coef_fp):
        zero = np.zeros_like(coef_fp)
        if paper:
            coefs = [coef_gold, coef_fp, -coef_fp], [coef_gold, zero, zero]
        else:
            coefs = [coef_gold, coef_fp], [coef_gold, coef_fp]
        return path_gradient(c, lambda d_unary, acc: q.add_gradient(d_unary, acc, *coefs))

    return m_gold, fseq, m_fp, gradient
