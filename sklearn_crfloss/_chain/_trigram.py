"""Second-order (label-trigram) chains: the allowed pair states and exact inference on them.

A second-order linear-chain CRF (Sha & Pereira 2003; McDonald et al. 2005)
scores a label sequence ``y`` of ``n`` tokens as

    score(y) = start[y_0] + sum_t U[t, y_t] + sum_{t>0} T[y_{t-1}, y_t]
               + sum_{t>1} W3[y_{t-2}, y_{t-1}, y_t] + end[y_{n-1}].

It is a first-order chain over the label pairs ``(y_{t-1}, y_t)``, whose
transitions ``(a, b) -> (b, c)`` are sparse. :class:`PairStates` lists the
allowed pairs of a boolean ``(L, L)`` mask and, per middle label ``b``, the
dense block of triples ``(a, b, c)`` between the pairs entering and leaving
``b``; the compiled kernels (``_ext/_second_order.pyx``) run over these
blocks only, so that a step costs the number of allowed triples (both
``(a, b)`` and ``(b, c)`` allowed), not ``L**3``. A
sequence may only follow allowed pairs; a trigram that is not allowed has
no parameter.
"""

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from ._checked import nonempty_sequences
from ._forward_backward import accumulator_blocks
from ._second_order import (second_order_forward_backward_batch, second_order_scratch_width,
                            second_order_viterbi_batch)

__all__ = ["PairStates", "SecondOrderResult", "second_order_forward_backward",
           "second_order_scores", "second_order_viterbi"]

#: A sequence whose potentials span more than this (log space) is computed in
#: log space: the scaled pass could flush a state that a later token needs.
_MAX_RANGE = 600.0


class PairStates:
    """The allowed label pairs of a second-order chain and the blocks of triples through each label.

    Parameters
    ----------
    allowed : array-like of bool of shape (n_labels, n_labels)
        ``allowed[b, c]``: label ``c`` may follow label ``b``.

    Attributes
    ----------
    allowed : ndarray of bool of shape (n_labels, n_labels)
    n_labels, n_pairs, n_triples : int
    first, last : ndarray of intp of shape (n_pairs,)
        Pair ``p`` is ``(first[p], last[p])``, in row-major order of
        ``allowed``: the pairs ``(b, .)`` are ``out_ptr[b]:out_ptr[b + 1]``.
    out_ptr, in_ptr, block_ptr : ndarray of intp of shape (n_labels + 1,)
    in_pair : ndarray of intp of shape (n_pairs,)
        The pairs ``(a, b)`` entering label ``b`` are
        ``in_pair[in_ptr[b]:in_ptr[b + 1]]`` (``a`` ascending). The triples
        through ``b`` form a block of ``n_in(b) x n_out(b)`` from
        ``block_ptr[b]``, row-major: triple ``block_ptr[b] + i * n_out(b) +
        j`` is ``(a_i, b, c_j)`` of the ``i``-th pair entering and the
        ``j``-th pair leaving ``b``.
    edge_from, edge_to : ndarray of intp of shape (n_triples,)
        The pairs ``(a, b)`` and ``(b, c)`` of every triple.
    triples : ndarray of intp of shape (n_triples, 3)
        ``(a, b, c)`` of every triple, in the block order.
    triple_index : ndarray of intp of shape (n_triples,)
        Flat index ``(a * L + b) * L + c`` of every triple into an
        ``(L, L, L)`` array.

    Raises
    ------
    ValueError
        If ``allowed`` is not a square boolean matrix.
    """

    def __init__(self, allowed):
        allowed = np.asarray(allowed)
        if allowed.ndim != 2 or allowed.shape[0] != allowed.shape[1] or allowed.dtype != bool:
            raise ValueError(f"allowed must be a square boolean matrix, got shape "
                             f"{allowed.shape} and dtype {allowed.dtype}")
        L = allowed.shape[0]
        self.allowed = allowed
        self.n_labels = L
        first, last = np.nonzero(allowed)
        self.first = first.astype(np.intp)
        self.last = last.astype(np.intp)
        self.n_pairs = first.shape[0]
        pair_id = np.full((L, L), -1, dtype=np.intp)
        pair_id[first, last] = np.arange(self.n_pairs)
        n_out = allowed.sum(axis=1)
        n_in = allowed.sum(axis=0)
        self.out_ptr = np.concatenate([[0], np.cumsum(n_out)]).astype(np.intp)
        self.in_ptr = np.concatenate([[0], np.cumsum(n_in)]).astype(np.intp)
        self.block_ptr = np.concatenate([[0], np.cumsum(n_in * n_out)]).astype(np.intp)
        into, onto = np.nonzero(allowed.T)  # (b, a) row-major: per b, a ascending
        self.in_pair = pair_id[onto, into].astype(np.intp)
        # Triple (i, j) of block b: the i-th pair into b, the j-th out of b.
        blocks = [np.stack(np.meshgrid(self.in_pair[self.in_ptr[b]:self.in_ptr[b + 1]],
                                       np.arange(self.out_ptr[b], self.out_ptr[b + 1]),
                                       indexing="ij"), axis=-1).reshape(-1, 2)
                  for b in range(L)]
        edges = np.concatenate(blocks).astype(np.intp) if L else np.zeros((0, 2), np.intp)
        self.edge_from, self.edge_to = edges[:, 0].copy(), edges[:, 1].copy()
        a, b, c = self.first[self.edge_from], self.first[self.edge_to], self.last[self.edge_to]
        self.triples = np.stack([a, b, c], axis=1)
        self.triple_index = ((a * L + b) * L + c).astype(np.intp)
        self.n_triples = self.triple_index.shape[0]

    def tables(self):
        """``(first, last, out_ptr, in_ptr, in_pair, block_ptr)``, as the kernels take them."""
        return (self.first, self.last, self.out_ptr, self.in_ptr, self.in_pair,
                self.block_ptr)

    def pair_values(self, matrix):
        """``matrix[first, last]``: an (L, L) array's entries of the allowed pairs, float64."""
        return np.ascontiguousarray(np.asarray(matrix, dtype=np.float64)[self.first, self.last])

    def triple_values(self, transition, trigram):
        """``T[b, c] + W3[a, b, c]`` of every allowed triple, float64 of shape (n_triples,)."""
        a, b, c = self.triples.T
        return np.ascontiguousarray(np.asarray(transition, dtype=np.float64)[b, c]
                                    + np.asarray(trigram, dtype=np.float64)[a, b, c])

    def restricted(self, allowed):
        """The pair states allowed here and by ``allowed`` (None: these)."""
        return self if allowed is None else PairStates(self.allowed & np.asarray(allowed, bool))


@dataclass
class SecondOrderResult:
    """Output of :func:`second_order_forward_backward`.

    Attributes
    ----------
    log_z : ndarray of shape (n_sequences,)
        Log partition function of each sequence (0 for an empty one).
    marginals : ndarray of shape (n_tokens, n_labels)
        Token marginals ``p(y_t = j | x)``.
    transition_counts : ndarray of shape (n_labels, n_labels)
        ``sum_i w_i sum_{t>0} p(y_{t-1} = b, y_t = c | x_i)``.
    trigram_counts : ndarray of shape (n_labels, n_labels, n_labels)
        ``sum_i w_i sum_{t>1} p(y_{t-2} = a, y_{t-1} = b, y_t = c | x_i)``.
    start_counts, end_counts : ndarray of shape (n_labels,)
        Weighted marginals of the first and last labels.
    n_fallback : int
        Sequences computed in log space.
    """

    log_z: np.ndarray
    marginals: np.ndarray
    transition_counts: np.ndarray
    trigram_counts: np.ndarray
    start_counts: np.ndarray
    end_counts: np.ndarray
    n_fallback: int = 0


def _check(unary, transition, trigram, start, end, offsets, allowed=None):
    """float64 C-ordered copies (or views) of the potentials, shapes checked, and the states."""
    unary = np.ascontiguousarray(unary, dtype=np.float64)
    if unary.ndim != 2:
        raise ValueError(f"unary must be 2-D (n_tokens, n_labels), got shape {unary.shape}")
    L = unary.shape[1]
    transition = np.ascontiguousarray(transition, dtype=np.float64)
    trigram = np.ascontiguousarray(trigram, dtype=np.float64)
    start = np.ascontiguousarray(start, dtype=np.float64)
    end = np.ascontiguousarray(end, dtype=np.float64)
    for name, value, shape in (("transition", transition, (L, L)),
                               ("trigram", trigram, (L, L, L)), ("start", start, (L,)),
                               ("end", end, (L,))):
        if value.shape != shape:
            raise ValueError(f"{name} must have shape {shape}, got {value.shape}")
    offsets = np.ascontiguousarray(offsets, dtype=np.intp)
    if offsets.ndim != 1 or offsets[0] != 0 or offsets[-1] != unary.shape[0] or np.any(
            np.diff(offsets) < 0):
        raise ValueError("offsets must be non-decreasing from 0 to n_tokens")
    return unary, transition, trigram, start, end, offsets, _states(allowed, L)


def _states(allowed, L):
    if isinstance(allowed, PairStates):
        return allowed
    return PairStates(np.ones((L, L), dtype=bool) if allowed is None
                      else np.asarray(allowed, dtype=bool))


def _shifted_exp(values):
    """``(exp(values - shift), shift)`` with shift the largest finite value (0 if none)."""
    finite = values[np.isfinite(values)]
    shift = float(finite.max()) if finite.shape[0] else 0.0
    return np.ascontiguousarray(np.exp(values - shift)), shift


def _log_space(U, states, start, end, s2, s3):
    """Log-space forward-backward of one sequence over the pair states (the fallback).

    Returns ``(log_z, marginals (n, L), pair marginals (n, P), edge
    marginals (n, n_triples))``, the last two zero where not defined.
    """
    n, L = U.shape
    P, K = states.n_pairs, states.n_triples
    pb, pc, pred, owner = states.first, states.last, states.edge_from, states.edge_to
    alpha = [start + U[0]]
    for t in range(1, n):
        if t == 1:
            alpha.append(alpha[0][pb] + s2 + U[1, pc])
        else:
            edge = alpha[-1][pred] + s3
            row = np.full(P, -np.inf)
            if K:
                np.logaddexp.at(row, owner, edge)
            alpha.append(row + U[t, pc])
    last = alpha[-1] + (end if n == 1 else end[pc])
    log_z = float(logsumexp(last))
    beta = [None] * n
    beta[n - 1] = end if n == 1 else end[pc]
    for t in range(n - 1, 0, -1):
        v = U[t, pc] + beta[t]
        if t == 1:
            row = np.full(L, -np.inf)
            np.logaddexp.at(row, pb, s2 + v)
        else:
            row = np.full(P, -np.inf)
            if K:
                np.logaddexp.at(row, pred, s3 + v[owner])
        beta[t - 1] = row
    marg = np.zeros((n, L))
    pairs = np.zeros((n, P))
    edges = np.zeros((n, K))
    marg[0] = np.exp(alpha[0] + beta[0] - log_z)
    for t in range(1, n):
        pairs[t] = np.exp(alpha[t] + beta[t] - log_z)
        np.add.at(marg[t], pc, pairs[t])
        if t >= 2:
            edges[t] = np.exp(alpha[t - 1][pred] + s3 + (U[t, pc] + beta[t])[owner] - log_z)
    return log_z, marg, pairs, edges


def second_order_forward_backward(unary, transition, trigram, start, end, offsets,
                                  allowed=None, sample_weight=None, n_threads=1):
    """Log partition function, token marginals and expected counts of a second-order chain.

    Exact sum-product over the allowed label pairs (a first-order chain
    over pair states, Sha & Pereira 2003 section 2), scaled as the
    first-order forward-backward; a sequence whose potentials span more
    than the scaled pass can represent is computed in log space.

    Parameters
    ----------
    unary : array-like of shape (n_tokens, n_labels)
    transition : array-like of shape (n_labels, n_labels)
        Label-bigram potentials ``T[y_{t-1}, y_t]``.
    trigram : array-like of shape (n_labels, n_labels, n_labels)
        Label-trigram potentials ``W3[y_{t-2}, y_{t-1}, y_t]`` (entries of
        triples that are not allowed are not read).
    start, end : array-like of shape (n_labels,)
    offsets : array-like of intp of shape (n_sequences + 1,)
        Sequence ``i`` is rows ``offsets[i]:offsets[i + 1]``; empty ones allowed.
    allowed : array-like of bool of shape (n_labels, n_labels), PairStates or None
        The label pairs a sequence may contain; None: all.
    sample_weight : array-like of shape (n_sequences,) or None
        Weights of the expected counts (not of ``log_z`` or ``marginals``).
    n_threads : int, default=1
        OpenMP threads over sequences; with 1 to 4 the results are bitwise equal.

    Returns
    -------
    SecondOrderResult

    Raises
    ------
    ValueError
        On shapes that do not match.
    """
    unary, transition, trigram, start, end, offsets, states = _check(
        unary, transition, trigram, start, end, offsets, allowed)
    n_tokens, L = unary.shape
    n_seq = offsets.shape[0] - 1
    weights = (np.ones(n_seq) if sample_weight is None
               else np.ascontiguousarray(sample_weight, dtype=np.float64))
    nonempty, offs = nonempty_sequences(offsets)
    w = np.ascontiguousarray(weights[nonempty])
    s2, s3 = states.pair_values(transition), states.triple_values(transition, trigram)
    e2, sh2 = _shifted_exp(s2)
    e3, sh3 = _shifted_exp(s3)
    es, sh_s = _shifted_exp(start)
    ee, sh_e = _shifted_exp(end)
    P, K = states.n_pairs, states.n_triples
    n_threads = max(1, int(n_threads))
    n_acc = accumulator_blocks(n_threads, P + K + 2 * L)
    pair_acc, triple_acc = np.zeros((n_acc, P)), np.zeros((n_acc, K))
    boundary_acc = np.zeros((n_acc, 2 * L))
    marginals = np.zeros((n_tokens, L))
    log_z_ne = np.zeros(nonempty.shape[0])
    lengths = np.diff(offs)
    # Sequences whose potentials span too much go to log space directly.
    with np.errstate(invalid="ignore"):
        spread = np.ptp(unary, axis=1) if n_tokens else np.zeros(0)
    table = [np.ptp(v[np.isfinite(v)]) if np.isfinite(v).any() else 0.0
             for v in (s2, s3, start, end)]
    row_spread = np.maximum.reduceat(spread, offs[:-1]) if nonempty.shape[0] else spread[:0]
    failed = (~np.isfinite(row_spread) | (row_spread + sum(table) > _MAX_RANGE)).astype(np.int8)
    if nonempty.shape[0]:
        max_len = int(lengths.max())
        scratch = np.empty((n_threads, second_order_scratch_width(L, P, max_len)))
        second_order_forward_backward_batch(
            unary, es, ee, e2, *states.tables(), e3, offs, w, marginals, log_z_ne, failed,
            pair_acc, triple_acc, boundary_acc, scratch, n_threads)
        log_z_ne += sh_s + sh_e + np.maximum(lengths - 1, 0).clip(max=1) * sh2 + np.maximum(
            lengths - 2, 0) * sh3
    pairs = pair_acc.sum(axis=0)
    edges = triple_acc.sum(axis=0) * e3
    boundary = boundary_acc.sum(axis=0)
    fallback = np.flatnonzero(failed)
    for i in fallback:  # in sequence order, after the blocks: independent of n_threads
        a, b = offs[i], offs[i + 1]
        log_z_ne[i], marginals[a:b], pair_m, edge_m = _log_space(unary[a:b], states, start,
                                                                 end, s2, s3)
        pairs += w[i] * pair_m.sum(axis=0)
        edges += w[i] * edge_m.sum(axis=0)
        boundary[:L] += w[i] * marginals[a]
        boundary[L:] += w[i] * marginals[b - 1]
    log_z = np.zeros(n_seq)
    log_z[nonempty] = log_z_ne
    bigram = np.zeros((L, L))
    bigram[states.first, states.last] = pairs
    tri = np.zeros(L * L * L)
    tri[states.triple_index] = edges
    return SecondOrderResult(log_z, marginals, bigram, tri.reshape(L, L, L), boundary[:L].copy(),
                             boundary[L:].copy(), int(fallback.shape[0]))


def second_order_viterbi(unary, transition, trigram, start, end, offsets, allowed=None,
                         n_threads=1):
    """The best label sequence of each sequence under a second-order chain.

    Exact max-product over the allowed label pairs (second-order Viterbi,
    as in McDonald et al. 2005's second-order decoder).

    Parameters
    ----------
    unary, transition, trigram, start, end, offsets, allowed, n_threads
        As :func:`second_order_forward_backward`. Forbidden first or last
        labels: ``-inf`` in ``start`` or ``end``.

    Returns
    -------
    path : ndarray of intp of shape (n_tokens,)
        Label index of every token (ties: the lowest pair index wins).
    score : ndarray of float64 of shape (n_sequences,)
        The best score (0 for an empty sequence, -inf if no allowed path).

    Raises
    ------
    ValueError
        On shapes that do not match.
    """
    unary, transition, trigram, start, end, offsets, states = _check(
        unary, transition, trigram, start, end, offsets, allowed)
    n_tokens, L = unary.shape
    nonempty, offs = nonempty_sequences(offsets)
    path = np.zeros(n_tokens, dtype=np.intp)
    score = np.zeros(offsets.shape[0] - 1)
    if nonempty.shape[0]:
        n_threads = max(1, int(n_threads))
        width = int(np.diff(offs).max()) * max(L, states.n_pairs)
        score_ne = np.empty(nonempty.shape[0])
        second_order_viterbi_batch(
            unary, start, end, states.pair_values(transition), *states.tables(),
            states.triple_values(transition, trigram), offs, path, score_ne,
            np.empty((n_threads, width)), np.empty((n_threads, width), dtype=np.intp),
            n_threads)
        score[nonempty] = score_ne
    return path, score


def second_order_scores(unary, transition, trigram, start, end, y, offsets, allowed=None):
    """``score(y)`` of given label sequences under a second-order chain.

    Parameters
    ----------
    unary, transition, trigram, start, end, offsets
        As :func:`second_order_forward_backward`.
    y : array-like of intp of shape (n_tokens,)
        Label index of every token.
    allowed : array-like of bool of shape (n_labels, n_labels) or None, default=None
        The allowed label pairs: a sequence with another pair scores ``-inf``.

    Returns
    -------
    ndarray of float64 of shape (n_sequences,)
        0 for an empty sequence.
    """
    unary, transition, trigram, start, end, offsets, _ = _check(unary, transition, trigram,
                                                                start, end, offsets)
    y = np.asarray(y, dtype=np.intp)
    n_seq = offsets.shape[0] - 1
    seq = np.repeat(np.arange(n_seq), np.diff(offsets))
    score = np.bincount(seq, unary[np.arange(y.shape[0]), y], minlength=n_seq).astype(float)
    pos = np.arange(y.shape[0]) - offsets[seq]
    second = np.flatnonzero(pos >= 1)
    third = np.flatnonzero(pos >= 2)
    score += np.bincount(seq[second], transition[y[second - 1], y[second]], minlength=n_seq)
    score += np.bincount(seq[third], trigram[y[third - 2], y[third - 1], y[third]],
                         minlength=n_seq)
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    score[nonempty] += start[y[offsets[nonempty]]] + end[y[offsets[nonempty + 1] - 1]]
    if allowed is not None:
        bad = second[~np.asarray(allowed, dtype=bool)[y[second - 1], y[second]]]
        score[seq[bad]] = -np.inf
    return score


def second_order_gold_counts(y, offsets, n_labels, sample_weight=None):
    """Weighted gold label-trigram counts ``sum_i w_i sum_{t>1} [y_{t-2}, y_{t-1}, y_t]``.

    Parameters
    ----------
    y : ndarray of intp of shape (n_tokens,)
    offsets : ndarray of intp of shape (n_sequences + 1,)
    n_labels : int
    sample_weight : ndarray of shape (n_sequences,) or None

    Returns
    -------
    ndarray of float64 of shape (n_labels, n_labels, n_labels)
    """
    y = np.asarray(y, dtype=np.intp)
    offsets = np.asarray(offsets, dtype=np.intp)
    L = n_labels
    seq = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
    third = np.flatnonzero(np.arange(y.shape[0]) - offsets[seq] >= 2)
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)[seq[third]]
    flat = (y[third - 2] * L + y[third - 1]) * L + y[third]
    return np.bincount(flat, w, minlength=L ** 3).astype(np.float64).reshape(L, L, L)
