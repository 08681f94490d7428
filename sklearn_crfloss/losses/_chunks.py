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
"""

import numpy as np

from ..inference import viterbi_excluding
from ..segments import _END, _EVENTS, _START, _label_table

__all__ = ["ChunkEvents", "Gradient", "SpanQueries"]

_NEG = -np.inf


class ChunkEvents:
    """Chunk events of a label set and the span queries of MCE-F on them.

    Parameters
    ----------
    classes : sequence of str of length n_labels
        Label names.
    scheme : str
        Tagging scheme of :func:`sklearn_crfloss.segments.segments_from_codes`.

    Attributes
    ----------
    end, start : ndarray of bool of shape (n_labels + 1, n_labels)
        ``end[p, c]`` (``start[p, c]``): a chunk ends (starts) between a
        token labelled ``p`` and the next labelled ``c``; row ``n_labels`` is
        the sequence start (conlleval's blank line).
    code : ndarray of int64 of shape (n_labels + 1, n_labels)
        ``end + 2 start + 4 type(c) start``: two label sequences have the same
        chunks when their codes are equal at every token (for labels whose
        chunks are all marked by these events, e.g. B/I/E/S/O prefixes).
    label_type : ndarray of intp of shape (n_labels,)
        Type code of every label (0: the empty type, e.g. ``O``).
    """

    def __init__(self, classes, scheme):
        category, type_code, type_names = _label_table(list(classes), scheme)
        rule = "iobes" if scheme in ("iobes", "bilou") else "conlleval"
        n = len(classes)
        prev_cat = np.concatenate([category[1:], category[:1]])
        prev_typ = np.concatenate([type_code[1:], type_code[:1]])
        cur_cat, cur_typ = category[1:], type_code[1:]
        events = _EVENTS[rule][prev_cat[:, None], cur_cat[None, :],
                               (prev_typ[:, None] != cur_typ[None, :]).view(np.uint8)]
        self.n_labels, self.n_types = n, len(type_names)
        self.end = (events & _END) > 0
        self.start = (events & _START) > 0
        self.label_type = cur_typ
        self.code = (self.end.astype(np.int64) + 2 * self.start
                     + 4 * np.where(self.start, cur_typ[None, :], 0))
        n_codes = 4 * self.n_types
        width = max(int(np.bincount(cur_typ, minlength=self.n_types).max()), 1)
        members = np.full((self.n_types, width), -1, dtype=np.intp)
        for t in range(self.n_types):  # padded with the type's first label (a repeat)
            idx = np.flatnonzero(cur_typ == t)
            if idx.shape[0]:
                members[t] = idx[np.minimum(np.arange(width), idx.shape[0] - 1)]
        self.members = members
        same = cur_typ[None, :] == np.arange(self.n_types)[:, None]  # (n_types, L)
        # Mask table (n_masks, L + 1, L): 0 no end, 1 end, 2 no end (exit),
        # then start of type t, then (start bit, type) and (code, type).
        masks = [~self.end, self.end, ~self.end]
        masks += [self.start & same[t][None, :] for t in range(self.n_types)]
        masks += [(self.start == bool(s)) & same[t][None, :]
                  for s in (0, 1) for t in range(self.n_types)]
        masks += [(self.code == e) & same[t][None, :]
                  for e in range(n_codes) for t in range(self.n_types)]
        self.masks = np.array(masks)
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

    def max_incorrect(self, unary, transition, start, end, offsets, y, n_threads=1):
        """Best label sequence whose chunks differ from those of ``y`` (Eq. 5 on chunks).

        The label-level maximum incorrect output
        (:func:`~sklearn_crfloss.inference.viterbi_excluding`) where its
        chunks differ from the gold ones; else (it only re-encodes the gold
        chunks) a Viterbi over (label, chunks-deviated-yet) states on that
        sequence. Returns ``y``'s labels for a sequence without any other
        chunk set.
        """
        path, _ = viterbi_excluding(unary, transition, start, end, offsets, y,
                                    n_threads=n_threads)
        gold_code = self.token_events(y, offsets)[0]
        lengths = np.diff(offsets)
        differs = np.bincount(np.repeat(np.arange(lengths.shape[0]), lengths),
                              self.token_events(path, offsets)[0] != gold_code,
                              minlength=lengths.shape[0])
        redo = np.flatnonzero((lengths > 0) & ~(differs > 0))
        for length in np.unique(lengths[redo]):
            seqs = redo[lengths[redo] == length]
            rows = offsets[seqs][:, None] + np.arange(length)[None, :]
            path[rows] = self._chunk_excluding(unary, transition, start, end, rows,
                                               gold_code[rows], y[rows])
        return path

    def _chunk_excluding(self, unary, transition, start, end, rows, gold_code, y):
        """Viterbi over (label, deviated) on sequences of one length; rows (m, T)."""
        m, length = rows.shape
        L = self.n_labels
        score = start[None, :] + unary[rows[:, 0]]
        eq = self.code[L][None, :] == gold_code[:, :1]
        ok, dev = np.where(eq, score, _NEG), np.where(eq, _NEG, score)
        bps = []
        codes = self.code[:L]
        for t in range(1, length):
            s_ok = ok[:, :, None] + transition[None]
            s_dev = dev[:, :, None] + transition[None]
            eq = codes[None] == gold_code[:, t, None, None]
            ok_in = np.where(eq, s_ok, _NEG)
            both = np.concatenate([s_dev, np.where(eq, _NEG, s_ok)], axis=1)
            bp_ok, bp_dev = ok_in.argmax(axis=1), both.argmax(axis=1)
            u = unary[rows[:, t]]
            ok = np.take_along_axis(ok_in, bp_ok[:, None, :], 1)[:, 0] + u
            dev = np.take_along_axis(both, bp_dev[:, None, :], 1)[:, 0] + u
            bps.append((bp_ok, bp_dev))
        final = dev + end[None, :]
        lab = final.argmax(axis=1)
        out = np.empty((m, length), dtype=np.intp)
        out[:, -1] = lab
        in_dev = np.ones(m, dtype=bool)
        r = np.arange(m)
        for t in range(length - 1, 0, -1):
            bp_ok, bp_dev = bps[t - 1]
            b = bp_dev[r, lab]
            nxt = np.where(in_dev, b % L, bp_ok[r, lab])
            in_dev = in_dev & (b < L)
            lab = nxt
            out[:, t - 1] = lab
        none = ~np.isfinite(final.max(axis=1))
        out[none] = y[none]
        return out

    # -- span queries -------------------------------------------------------

    def carry_queries(self, seq, begin, stop, types):
        """Constraints of "the sequence has the chunk ``(begin, stop, type)``".

        Returns ``(tok_type, first, inner, exit)``: the type every span token
        must have (implied), the mask at the boundary before ``begin``, at the
        inner boundaries and at ``stop``.
        """
        span = int((stop - begin).max()) if seq.shape[0] else 1
        tok_type = np.repeat(types[:, None], span, axis=1)
        inner = np.zeros((seq.shape[0], span), dtype=np.intp)
        return tok_type, self._start_id + types, inner, np.ones(seq.shape[0], dtype=np.intp)

    def gold_queries(self, seq, begin, stop, y, offsets, events):
        """Constraints of "the sequence has the gold chunk events on the span".

        The chunk analogue of "the gold labels on the span" (the first term
        of the paper's false-positive measure): the same label type on every
        span token, the same start event (and type) at ``begin``, the same
        events inside and the same end event at ``stop``. ``events`` is
        :meth:`token_events` of ``y``.
        """
        code, st, en = events
        span = int((stop - begin).max()) if seq.shape[0] else 1
        pos = (offsets[seq] + begin)[:, None] + np.arange(span)[None, :]
        pos = np.minimum(pos, max(y.shape[0] - 1, 0))
        tok_type = self.label_type[y[pos]]
        first = self._gstart_id + st[pos[:, 0]].astype(np.intp) * self.n_types + tok_type[:, 0]
        inner = self._gin_id + code[pos] * self.n_types + tok_type
        after = np.minimum(offsets[seq] + stop, max(y.shape[0] - 1, 0))
        exit_ = np.where(en[after], 1, 2)
        return tok_type, first, inner, exit_


class SpanQueries:
    """Best scores with and without a span's chunk constraints, kept for the gradient.

    Parameters
    ----------
    ev : ChunkEvents
    unary, transition, start : ndarray
        The potentials (checked by the caller).
    mm : MaxMarginalsResult
        :func:`~sklearn_crfloss.inference.max_marginals` of the potentials.
    offsets : ndarray of intp of shape (n_sequences + 1,)
    seq, begin, stop : ndarray of intp of shape (n_queries,)
        Sequence and span (``stop`` exclusive) of every query.
    queries : tuple
        From :meth:`ChunkEvents.carry_queries` or :meth:`ChunkEvents.gold_queries`.
    need_without : bool
        Whether the best score violating the constraints is computed.
    structure : list or None
        The ``structure`` attribute of an earlier instance with the same
        queries and offsets (it does not depend on the potentials).

    Attributes
    ----------
    with_, without : ndarray of shape (n_queries,)
        Best scores of the sequences that satisfy (violate) the constraints;
        ``without`` is ``-inf`` where none violates or it is not computed.
    structure : list
        Per group of queries of one span length: their indices and the
        constraint masks gathered for them.
    """

    def __init__(self, ev, unary, transition, start, mm, offsets, seq, begin, stop, queries,
                 need_without=True, structure=None):
        n_q = seq.shape[0]
        self.with_, self.without = np.full(n_q, _NEG), np.full(n_q, _NEG)
        text = np.vstack([transition, start[None, :]])  # row L: from the sequence start
        node = mm.alpha + mm.beta
        if structure is None:
            structure = _structure(ev, offsets, seq, begin, stop, queries)
        self.structure = structure
        self.groups = []
        for idx, shape in structure:
            g = _Group(shape, unary, transition, text, mm, node, need_without)
            self.with_[idx], self.without[idx] = g.with_value, g.without_value
            self.groups.append((idx, g))

    def add_gradient(self, acc, coef_with, coef_without):
        """Add the gradient of ``sum coef_with with_ - coef_without without`` to ``acc``."""
        for idx, g in self.groups:
            g.gradient(acc, np.where(np.isfinite(g.with_value), coef_with[idx], 0.0),
                       coef_without[idx])


class Gradient:
    """Gradient accumulator: direct counts plus best-prefix/suffix node weights.

    Every ``add_*`` call records (index, weight) pairs, summed once by
    :meth:`finish`, which also turns the node weights into the counts of the
    best prefixes (suffixes) through the max-marginal backpointers and
    returns ``(d_unary, d_transition, d_start, d_end)``.
    """

    _PARTS = ("unary", "trans", "start", "prefix", "suffix")

    def __init__(self, n_tokens, L):
        self.n_tokens, self.L = n_tokens, L
        self._items = {part: ([], []) for part in self._PARTS}

    def add(self, part, flat_index, w):
        """Add ``w`` at ``flat_index`` of ``part`` (token * L + label, or p * L + c)."""
        index, weight = self._items[part]
        index.append(np.asarray(flat_index, dtype=np.intp).ravel())
        weight.append(np.broadcast_to(w, np.shape(flat_index)).ravel())

    def node(self, part, t, c, w):
        """Add ``w`` at (token ``t``, label ``c``) of ``part``."""
        self.add(part, t * self.L + c, w)

    def edge(self, p, c, w):
        """Transition p -> c (p == L: the start potential of c)."""
        first = p == self.L
        self.add("start", c[first], w[first])
        self.add("trans", p[~first] * self.L + c[~first], w[~first])

    def _sum(self, part, size):
        index, weight = self._items[part]
        if not index:
            return np.zeros(size)
        return np.bincount(np.concatenate(index), np.concatenate(weight).astype(np.float64),
                           minlength=size).astype(np.float64, copy=False)

    def finish(self, mm, offsets):
        L, n_tokens = self.L, self.n_tokens
        unary = self._sum("unary", n_tokens * L).reshape(n_tokens, L)
        trans = self._sum("trans", L * L).reshape(L, L)
        start = self._sum("start", L)
        end = np.zeros(L)
        prefix = self._sum("prefix", n_tokens * L).reshape(n_tokens, L)
        suffix = self._sum("suffix", n_tokens * L).reshape(n_tokens, L)
        lengths = np.diff(offsets)
        order = np.argsort(-lengths, kind="stable")
        longest = int(lengths.max()) if lengths.shape[0] else 0
        labels = np.arange(L)

        def spread(index, w, n):
            return np.bincount((np.arange(n)[:, None] * L + index).ravel(), w.ravel(),
                               minlength=n * L).reshape(n, L)

        for r in range(longest - 1, -1, -1):  # best prefixes, backwards
            rows = offsets[order[:np.searchsorted(-lengths[order], -r, side="left")]] + r
            w = prefix[rows]
            live = w.any(axis=1)
            rows, w = rows[live], w[live]
            if not rows.shape[0]:
                continue
            unary[rows] += w
            if r == 0:
                start += w.sum(axis=0)
                continue
            prev = mm.bp_fwd[rows].astype(np.intp)
            trans += np.bincount((prev * L + labels).ravel(), w.ravel(),
                                 minlength=L * L).reshape(L, L)
            prefix[rows - 1] += spread(prev, w, rows.shape[0])
        for r in range(longest):  # best suffixes, forwards
            ks = order[:np.searchsorted(-lengths[order], -r, side="left")]
            rows = offsets[ks] + r
            w = suffix[rows]
            live = w.any(axis=1)
            rows, w, ks = rows[live], w[live], ks[live]
            if not rows.shape[0]:
                continue
            last = lengths[ks] == r + 1
            end += w[last].sum(axis=0)
            rows, w = rows[~last], w[~last]
            nxt = mm.bp_bwd[rows].astype(np.intp)
            trans += np.bincount((labels * L + nxt).ravel(), w.ravel(),
                                 minlength=L * L).reshape(L, L)
            moved = spread(nxt, w, rows.shape[0])
            unary[rows + 1] += moved
            suffix[rows + 1] += moved
        return unary, trans, start, end


def _structure(ev, offsets, seq, begin, stop, queries):
    """Queries grouped by span length, with their label sets and masks gathered."""
    tok_type, first, inner, exit_ = queries
    lengths = np.diff(offsets)
    span_len = stop - begin
    out = []
    L = ev.n_labels
    for n in np.unique(span_len):
        n = int(n)
        members = np.flatnonzero(span_len == n)
        for idx in np.array_split(members, max(1, members.shape[0] // 4096)):
            t0 = offsets[seq[idx]] + begin[idx]
            lab = ev.members[tok_type[idx, :n]]  # (Q, n, W)
            valid = lab >= 0
            lab = np.where(valid, lab, 0)
            m0 = ev.masks[first[idx, None, None], np.arange(L + 1)[None, :, None],
                          lab[:, None, 0, :]] & valid[:, None, 0, :]
            inner_masks = [ev.masks[inner[idx, j, None, None], lab[:, j - 1, :, None],
                                    lab[:, j, None, :]]
                           & valid[:, j - 1, :, None] & valid[:, j, None, :]
                           for j in range(1, n)]
            mx = ev.masks[exit_[idx, None], lab[:, n - 1]]  # (Q, W, L)
            out.append((idx, dict(n=n, t0=t0, has_prev=begin[idx] > 0,
                                  has_exit=begin[idx] + n < lengths[seq[idx]], lab=lab,
                                  valid=valid, m0=m0, inner=inner_masks, mx=mx)))
    return out


class _Group:
    """Span queries of one span length ``n``, evaluated together."""

    def __init__(self, shape, unary, transition, text, mm, node, need_without):
        L = unary.shape[1]
        n, t0, lab, valid = shape["n"], shape["t0"], shape["lab"], shape["valid"]
        has_prev, has_exit, m0 = shape["has_prev"], shape["has_exit"], shape["m0"]
        Q = t0.shape[0]
        r = np.arange(Q)
        self.L, self.n, self.r, self.t0, self.has_exit, self.lab = L, n, r, t0, has_exit, lab
        prev = np.full((Q, L + 1), _NEG)
        prev[has_prev, :L] = mm.alpha[t0[has_prev] - 1]
        prev[~has_prev, L] = 0.0
        # token a: from any previous label (or the start) into the span's labels
        s0 = prev[:, :, None] + text.T[lab[:, 0]].transpose(0, 2, 1)  # (Q, L+1, W)
        sw = np.where(m0, s0, _NEG)
        bp = [sw.argmax(axis=1)]
        ok = np.take_along_axis(sw, bp[0][:, None, :], 1)[:, 0] + _gather(unary[t0], lab[:, 0])
        ok[~valid[:, 0]] = _NEG
        best = np.full(Q, _NEG)
        how = np.zeros((Q, 4), dtype=np.intp)  # kind, step, ok state / prev, label
        if need_without:
            out_a = node[t0].copy()
            np.put_along_axis(out_a, lab[:, 0], _NEG, 1)
            self._improve(best, how, out_a, 0, 0, lambda a: (np.zeros_like(a), a))
            tail = _gather(unary[t0] + mm.beta[t0], lab[:, 0])[:, None, :]
            sv = np.where(~m0 & valid[:, None, 0, :], s0, _NEG) + tail
            self._improve(best, how, sv.reshape(Q, -1), 1, 0,
                          lambda a: (a // lab.shape[2], lab[r, 0, a % lab.shape[2]]))
        for j in range(1, n):
            t = t0 + j
            lp, lc = lab[:, j - 1], lab[:, j]
            mj = shape["inner"][j - 1]
            s = ok[:, :, None] + transition[lp[:, :, None], lc[:, None, :]]
            sw = np.where(mj, s, _NEG)
            bp.append(sw.argmax(axis=1))
            new_ok = np.take_along_axis(sw, bp[-1][:, None, :], 1)[:, 0] + _gather(unary[t], lc)
            if need_without:
                out = ok[:, :, None] + transition[lp] + (unary[t] + mm.beta[t])[:, None, :]
                out = np.where(valid[:, j - 1, :, None], out, _NEG)
                np.put_along_axis(out, np.repeat(lc[:, None, :], lp.shape[1], 1), _NEG, 2)
                W = lp.shape[1]
                self._improve(best, how, out.reshape(Q, -1), 2, j,
                              lambda a: (a // L, a % L))
                tail = _gather(unary[t] + mm.beta[t], lc)[:, None, :]
                sv = np.where(~mj & valid[:, j - 1, :, None] & valid[:, j, None, :], s,
                              _NEG) + tail
                self._improve(best, how, sv.reshape(Q, -1), 2, j,
                              lambda a, lc=lc, W=W: (a // W, lc[r, a % W]))
            ok = new_ok
        self.bp = bp
        last = t0 + n - 1
        ll = lab[:, n - 1]
        # leaving the span: the boundary after it, or the sequence's end
        nxt = np.minimum(last + 1, unary.shape[0] - 1)
        mx = shape["mx"]
        sx = ok[:, :, None] + transition[ll] + (unary[nxt] + mm.beta[nxt])[:, None, :]
        with_x = np.where(mx, sx, _NEG).reshape(Q, -1)
        at_end = ok + _gather(mm.beta[last], ll)
        W = ll.shape[1]
        arg_x, arg_e = with_x.argmax(axis=1), at_end.argmax(axis=1)
        self.with_value = np.where(has_exit, with_x[r, arg_x], at_end[r, arg_e])
        self.with_state = np.where(has_exit, arg_x // L, arg_e)
        self.with_next = np.where(has_exit, arg_x % L, -1)
        if need_without:
            without_x = np.where(mx, _NEG, sx).reshape(Q, -1)
            without_x[~has_exit] = _NEG
            self._improve(best, how, without_x, 3, n - 1, lambda a: (a // L, a % L))
        self.without_value, self.how = best, how

    @staticmethod
    def _improve(best, how, cand, kind, step, decode):
        """Keep, per query, the best violating candidate (flattened ``cand``)."""
        arg = cand.argmax(axis=1)
        val = cand[np.arange(cand.shape[0]), arg]
        better = val > best
        if not better.any():
            return
        best[better] = val[better]
        a, b = decode(arg)
        how[better] = np.stack([np.full(arg.shape[0], kind), np.full(arg.shape[0], step),
                                a, b], axis=1)[better]

    def _walk(self, acc, step, state, w):
        """Counts of the span path kept in the ok states, ending at ``step``/``state``."""
        r, lab = self.r, self.lab
        state = state.copy()
        for j in range(self.n - 1, -1, -1):
            act = (j <= step) & (w != 0)
            if not act.any():
                continue
            rr, s = r[act], state[act]
            c = lab[rr, j, s]
            acc.node("unary", self.t0[rr] + j, c, w[act])
            back = self.bp[j][rr, s]
            if j > 0:
                acc.edge(lab[rr, j - 1, back], c, w[act])
                state[act] = back
            else:
                acc.edge(back, c, w[act])
                inner = back < self.L
                acc.node("prefix", self.t0[rr][inner] - 1, back[inner], w[act][inner])

    def gradient(self, acc, coef_with, coef_without):
        L, r = self.L, self.r
        last = self.t0 + self.n - 1
        self._walk(acc, np.full(r.shape[0], self.n - 1), self.with_state, coef_with)
        x = self.has_exit
        ll = self.lab[r, self.n - 1, self.with_state]
        acc.edge(ll[x], self.with_next[x], coef_with[x])
        acc.node("unary", last[x] + 1, self.with_next[x], coef_with[x])
        acc.node("suffix", last[x] + 1, self.with_next[x], coef_with[x])
        acc.node("suffix", last[~x], ll[~x], coef_with[~x])
        w = -np.where(np.isfinite(self.without_value), coef_without, 0.0)
        kind, step, a, c = self.how.T
        k0 = (kind == 0) & (w != 0)  # another label at the first token
        acc.node("prefix", self.t0[k0], c[k0], w[k0])
        acc.node("suffix", self.t0[k0], c[k0], w[k0])
        k1 = (kind == 1) & (w != 0)  # a forbidden edge into the first token
        acc.edge(a[k1], c[k1], w[k1])
        inner = k1 & (a < L)
        acc.node("prefix", self.t0[inner] - 1, a[inner], w[inner])
        acc.node("unary", self.t0[k1], c[k1], w[k1])
        acc.node("suffix", self.t0[k1], c[k1], w[k1])
        k2 = (kind >= 2) & (w != 0)  # a forbidden edge after the span path's step - 1
        at = np.where(kind == 3, step, step - 1)
        self._walk(acc, np.where(k2, at, -1), np.where(k2, a, 0), np.where(k2, w, 0.0))
        prev_lab = self.lab[r, np.maximum(at, 0), np.where(k2, a, 0)]
        pos = self.t0 + at + 1
        acc.edge(prev_lab[k2], c[k2], w[k2])
        acc.node("unary", pos[k2], c[k2], w[k2])
        acc.node("suffix", pos[k2], c[k2], w[k2])


def _gather(values, lab):
    """values[q, lab[q, w]] for (Q, L) values and (Q, W) label indices."""
    return np.take_along_axis(values, lab, axis=1)


def chunk_margins(loss, events, unary, transition, start, end, y, offsets, gold, n_threads):
    """Segment margins of MCE-F with segments compared as chunks.

    Parameters
    ----------
    loss : SegmentFScoreMCE
        Its ``false_positives`` and ``_segments``.
    events : ChunkEvents
        Of the loss's classes and scheme.
    unary, transition, start, end, y, offsets
        Potentials and gold labels (checked by the caller).
    gold : tuple
        ``(seq, begin, stop, key, type)`` of the gold chunks.
    n_threads : int

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
        m_gold + coef_fp m_fp``, ``(d_unary, d_transition, d_start, d_end)``.
    """
    from ..inference import max_marginals, viterbi

    if loss.false_positives == "viterbi":
        wrong = viterbi(unary, transition, start, end, offsets, n_threads=n_threads)[0]
    else:
        wrong = events.max_incorrect(unary, transition, start, end, offsets, y, n_threads)
    mm = max_marginals(unary, transition, start, end, offsets, n_threads=n_threads)
    gseq, gbeg, gend, gkey, gtype = gold
    wseq, wbeg, wend, wkey, wtype = loss._segments(wrong, offsets)
    keep = ~np.isin(wkey, gkey)
    fseq, fbeg, fend, ftype = wseq[keep], wbeg[keep], wend[keep], wtype[keep]
    args = (events, unary, transition, start, mm, offsets)
    cache = getattr(loss, "_chunk_structure", None)  # the gold queries' masks, per gold set
    gold_q = SpanQueries(*args, gseq, gbeg, gend, events.carry_queries(gseq, gbeg, gend, gtype),
                         structure=cache[1] if cache is not None and cache[0] is gold else None)
    loss._chunk_structure = (gold, gold_q.structure)
    paper = loss.false_positives == "gold"
    fp_q = SpanQueries(*args, fseq, fbeg, fend, events.carry_queries(fseq, fbeg, fend, ftype),
                       need_without=not paper)
    m_gold = gold_q.with_ - gold_q.without
    if paper:
        span_q = SpanQueries(*args, fseq, fbeg, fend,
                             events.gold_queries(fseq, fbeg, fend, y, offsets,
                                                 events.token_events(y, offsets)),
                             need_without=False)
        m_fp = fp_q.with_ - span_q.with_
    else:
        m_fp = fp_q.with_ - fp_q.without

    def gradient(coef_gold, coef_fp):
        acc = Gradient(*unary.shape)
        gold_q.add_gradient(acc, coef_gold, coef_gold)
        if paper:
            fp_q.add_gradient(acc, coef_fp, np.zeros_like(coef_fp))
            span_q.add_gradient(acc, -coef_fp, np.zeros_like(coef_fp))
        else:
            fp_q.add_gradient(acc, coef_fp, coef_fp)
        return acc.finish(mm, offsets)

    return m_gold, fseq, m_fp, gradient
