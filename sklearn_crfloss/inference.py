"""Inference on linear-chain CRF potentials: partition function, marginals, Viterbi.

Every function here works on potentials only, for a batch of sequences laid
end to end (the layout of a CSR matrix): sequence ``i`` occupies rows
``offsets[i]:offsets[i + 1]`` of the unary potentials. A label sequence
``y`` of length ``T`` scores

    score(y) = start[y_0] + sum_t U[t, y_t] + sum_{t>0} transition[y_{t-1}, y_t] + end[y_{T-1}]

and ``p(y | x) = exp(score(y)) / Z``. The heavy lifting is done by the
compiled kernels (``_ext/``: ``_forward_backward`` for sum-product,
``_marginal_vjp`` for the marginals' vector-Jacobian product, ``_viterbi``
for max-product decoding, ``_max_marginals`` for the max-marginal tables and
segment margins, ``_second_order`` for second-order chains, whose score
adds label-trigram potentials ``W3[y_{t-2}, y_{t-1}, y_t]``); these wrappers
check shapes and dtypes, allocate outputs and per-thread buffers, and add
back the constant shifts.
"""

from dataclasses import dataclass
from numbers import Integral

import numpy as np

from ._chain import (accumulator_blocks, Accumulators, Chain, chain_doc, check_potentials,
                     exp_potentials, forward_backward_batch, marginals_vjp_batch,
                     marginals_vjp_log_space, max_incorrect_batch, max_marginals_batch,
                     n_best_batch, nonempty_sequences, PairStates, position_forward_backward,
                     position_gold_counts, position_scores, position_viterbi, PositionTransitions,
                     scratch_width, second_order_forward_backward, second_order_scores,
                     second_order_viterbi, SecondOrderResult, segment_margins_batch,
                     transition_table, viterbi_batch)
from .exceptions import PotentialMagnitudeError

__all__ = [
    "ForwardBackwardResult",
    "MaxMarginalsResult",
    "PairStates",
    "PositionTransitions",
    "SecondOrderResult",
    "check_potentials",
    "forward_backward",
    "inner_positions",
    "marginals_vjp",
    "max_marginals",
    "second_order_forward_backward",
    "second_order_scores",
    "second_order_viterbi",
    "segment_margins",
    "sequence_scores",
    "viterbi",
    "viterbi_2best",
    "viterbi_excluding",
    "viterbi_nbest",
]


@dataclass
class ForwardBackwardResult:
    """Output of :func:`forward_backward`.

    Attributes
    ----------
    log_z : ndarray of shape (n_sequences,)
        Log partition function of each sequence (0 for an empty sequence).
    marginals : ndarray of shape (n_tokens, n_labels)
        Node marginals ``p(y_t = j | x)``; each row sums to 1.
    transition_counts : ndarray of shape (n_labels, n_labels)
        Expected transition counts ``sum_i w_i sum_t p(y_{t-1}=a, y_t=b | x_i)``.
    start_counts, end_counts : ndarray of shape (n_labels,)
        Weighted sums of the first and of the last token's marginals.
    n_fallback : int
        Number of sequences that needed the log-space fallback.
    """

    log_z: np.ndarray
    marginals: np.ndarray
    transition_counts: np.ndarray
    start_counts: np.ndarray
    end_counts: np.ndarray
    n_fallback: int = 0


@chain_doc
def forward_backward(unary, transition, start, end, offsets, sample_weight=None, n_threads=1):
    """Log partition function, node marginals and expected transition counts.

    Scaled forward-backward (each alpha row normalised, the log of its sum
    kept; exponentials of the transitions once per call and of each unary
    row once). A sequence whose scaled pass underflows (potentials of
    magnitude ~700 or more) is recomputed in log space. ``transition`` may
    be a :class:`~sklearn_crfloss.inference.PositionTransitions`
    (observation-dependent label bigrams): the pass then runs in log space
    and ``transition_counts`` has the shape of its table.

    Parameters
    ----------
    {chain_parameters}
    sample_weight : array-like of shape (n_sequences,), default=None
        Per-sequence weights applied to the expected counts (not to the
        marginals). ``None`` means 1 for every sequence.
    {n_threads}

    Returns
    -------
    ForwardBackwardResult
        ``log_z``, node marginals, expected transition, start and end counts.

    Raises
    ------
    {shape_error}
    PotentialMagnitudeError
        A ``ValueError``: if the marginals of a sequence with a finite
        ``log_z`` are not a distribution to within ``MARGINAL_TOLERANCE``
        (1e-6): potentials of
        magnitude beyond about ``1e10`` (their error grows as the magnitude
        times 1e-16; ``log_z`` itself stays exact), naming the sequence and
        the magnitude.
    """
    c = Chain.checked(unary, transition, start, end, offsets, n_threads, positions=True)
    if isinstance(c.transition, PositionTransitions):
        result = ForwardBackwardResult(*position_forward_backward(*c[:5], sample_weight))
        _check_marginals(result.marginals, result.log_z, c)
        return result
    L = c.n_labels
    weights = (np.ones(c.n_seq) if sample_weight is None
               else np.ascontiguousarray(sample_weight, dtype=np.float64))
    if weights.shape != (c.n_seq,):
        raise ValueError(f"sample_weight must have shape {(c.n_seq,)} (one weight per "
                         f"sequence), got {weights.shape}")
    nonempty, sub_offsets = nonempty_sequences(c.offsets)
    exp_trans, exp_start, exp_end, shifts = exp_potentials(c.transition, c.start, c.end)
    marginals = c.rows()
    sub_log_z = np.zeros(sub_offsets.shape[0] - 1)
    acc = Accumulators(c.n_threads, L)
    max_length = int(np.diff(c.offsets).max()) if c.n_seq else 0
    n_fallback = forward_backward_batch(
        c.unary, c.transition, c.start, c.end, exp_trans, exp_start, exp_end,
        sub_offsets, np.ascontiguousarray(weights[nonempty]), marginals, sub_log_z,
        acc.pair, acc.direct, acc.boundary, c.scratch(scratch_width(L, max_length)),
        max_length, shifts[1], shifts[2], shifts[0], c.n_threads,
    )
    log_z = np.zeros(c.n_seq)
    log_z[nonempty] = sub_log_z
    _check_marginals(marginals, log_z, c)
    counts, start_counts, end_counts = acc.counts(exp_trans, n_fallback)
    return ForwardBackwardResult(
        log_z=log_z,
        marginals=marginals,
        transition_counts=counts,
        start_counts=start_counts,
        end_counts=end_counts,
        n_fallback=int(n_fallback),
    )



@chain_doc
def marginals_vjp(unary, transition, start, end, offsets, grad_marginals, n_threads=1):
    """Vector-Jacobian product of the node marginals (backpropagation through them).

    For a scalar function ``l`` of the node marginals
    ``mu[t, j] = p(y_t = j | x)`` (see :func:`forward_backward`), returns the
    gradient of ``l`` with respect to the potentials given
    ``grad_marginals = dl/dmu``. Because ``d mu[t, j] / d theta =
    Cov(1{y_t = j}, phi_theta(y))``, the product is the covariance
    ``Cov(g(y), phi(y))`` of the additive path function
    ``g(y) = sum_t grad_marginals[t, y_t]`` with the sufficient statistics,
    computed by one forward-backward pass in the expectation semiring: the
    recurrences of Gross et al. (2006), Section 3.2.2, Eqs. (16)-(22), with
    ``Q'(w) 1{y_k = y*_k}`` generalised to an arbitrary ``grad_marginals``.
    O(T L^2) per sequence, about twice a forward-backward pass. Every
    marginal-based loss (pointwise, mixed, labelwise, risk) applies its
    own ``dl/dmu`` and calls this.

    Parameters
    ----------
    {chain_parameters}
    grad_marginals : array-like of float64 of shape (n_tokens, n_labels)
        ``dl/dmu``. Per-sequence or per-token weights are applied by scaling
        its rows (the product is linear in it).
    {n_threads}

    Returns
    -------
    d_unary : ndarray of shape (n_tokens, n_labels)
        Gradient of ``l`` with respect to the unary potentials.
    d_transition : ndarray of shape (n_labels, n_labels)
        Gradient with respect to the transition potentials.
    d_start, d_end : ndarray of shape (n_labels,)
        Gradients with respect to the start and end potentials.

    Raises
    ------
    ValueError
        On inconsistent shapes (see :func:`check_potentials`) or if
        ``grad_marginals`` does not have the shape of ``unary`` or is not finite.
    PotentialMagnitudeError
        A ``ValueError``: if the product is not finite (potentials whose
        exponentials overflow: seen from magnitudes of 1e20), naming the
        sequence and the magnitude.

    Notes
    -----
    With position-dependent transitions
    (:class:`~sklearn_crfloss.inference.PositionTransitions`) every sequence
    runs in log space (NumPy, per token: the general path, slower than the
    compiled kernel) and ``d_transition`` has the shape of their table.
    A sequence whose scaled pass underflows (potentials of magnitude ~700)
    is recomputed in log space, after shifting ``grad_marginals`` by a
    constant per row (which leaves the covariance unchanged) so that it is
    positive.

    References
    ----------
    S. S. Gross, O. Russakovsky, C. B. Do, S. Batzoglou (2006). Training
    conditional random fields for maximum labelwise accuracy. NIPS.
    Z. Li, J. Eisner (2009). First- and second-order expectation semirings
    with applications to minimum-risk training on translation forests. EMNLP.
    """
    c = Chain.checked(unary, transition, start, end, offsets, n_threads, positions=True)
    L = c.n_labels
    grad = np.ascontiguousarray(grad_marginals, dtype=np.float64)
    if grad.shape != c.unary.shape:
        raise ValueError(
            f"grad_marginals must have the shape of unary {c.unary.shape}, got {grad.shape}"
        )
    if not np.all(np.isfinite(grad)):
        raise ValueError("grad_marginals contains NaN or infinite values")
    d_unary = np.zeros((c.n_tokens, L))
    if isinstance(c.transition, PositionTransitions):  # the general path, in log space
        return _position_vjp(c, grad, d_unary)
    nonempty, sub_offsets = nonempty_sequences(c.offsets)
    if nonempty.shape[0] == 0:
        return d_unary, np.zeros((L, L)), np.zeros(L), np.zeros(L)
    max_length = int(np.diff(sub_offsets).max())
    with np.errstate(over="ignore", invalid="ignore"):  # (refused below: _check_vjp)
        exp_trans, exp_start, exp_end, _ = exp_potentials(c.transition, c.start, c.end)
    exp_trans_t = np.ascontiguousarray(exp_trans.T)
    n_acc = accumulator_blocks(c.n_threads, L * L + 2 * L)  # sums independent of n_threads
    pair_acc = np.zeros((n_acc, L, L))
    boundary_acc = np.zeros((n_acc, 2, L))
    failed = np.zeros(sub_offsets.shape[0] - 1, dtype=np.int8)
    n_failed = marginals_vjp_batch(
        c.unary, c.transition, c.start, grad, exp_trans, exp_trans_t, exp_start, exp_end, sub_offsets, d_unary,
        pair_acc, boundary_acc, c.scratch((2 * max_length + 5 + L) * L), failed, c.n_threads,
    )
    d_trans = pair_acc.sum(axis=0) * exp_trans
    d_start, d_end = boundary_acc.sum(axis=0)
    for k in np.flatnonzero(failed):
        s, e = sub_offsets[k], sub_offsets[k + 1]
        with np.errstate(over="ignore", invalid="ignore"):
            dU, dT, ds, de = marginals_vjp_log_space(
                c.unary[s:e], c.transition, c.start, c.end, grad[s:e]
            )
        d_unary[s:e] = dU
        d_trans += dT
        d_start += ds
        d_end += de
    _check_vjp(c, d_unary, d_trans, d_start, d_end)
    return d_unary, d_trans, d_start, d_end


def _check_vjp(c, d_unary, *others):
    """Refuse a vector-Jacobian product that is not finite (potentials of huge magnitude)."""
    if all(np.all(np.isfinite(a)) for a in (d_unary, *others)):
        return
    rows = np.flatnonzero(~np.all(np.isfinite(d_unary), axis=1))
    seq = int(np.searchsorted(c.offsets, rows[0], side="right") - 1) if rows.shape[0] else 0
    raise PotentialMagnitudeError(
        f"marginals_vjp: the product is not finite (sequence {seq}): the potentials reach "
        f"magnitude {_magnitude(c, seq):.3g}, whose exponentials overflow double precision. "
        "Scale the features or the weights.")


#: How far from 1 a row of marginals may sum before forward_backward refuses them.
MARGINAL_TOLERANCE = 1e-6


def _magnitude(c, seq):
    """The largest finite potential of sequence ``seq`` in magnitude (its unary, the rest)."""
    parts = [c.unary[c.offsets[seq]:c.offsets[seq + 1]], c.start, c.end,
             c.transition.table if isinstance(c.transition, PositionTransitions)
             else c.transition]
    return max((float(np.max(np.abs(p[np.isfinite(p)]), initial=0.0)) for p in parts))


def _check_marginals(marginals, log_z, c):
    """Refuse marginals that are not distributions: potentials too large for double precision.

    Sequences whose ``log_z`` is ``-inf`` (no labelling allowed) are left
    as they are.
    """
    if marginals.shape[0] == 0:
        return
    row_seq = np.repeat(np.arange(c.n_seq), np.diff(c.offsets))
    off = np.abs(marginals.sum(axis=1) - 1.0)
    bad = np.flatnonzero(~(off <= MARGINAL_TOLERANCE) & np.isfinite(log_z[row_seq]))
    if bad.shape[0]:
        seq = int(row_seq[bad[0]])
        raise PotentialMagnitudeError(
            f"forward_backward: the marginals of sequence {seq} (token "
            f"{int(bad[0] - c.offsets[seq])}) sum to {marginals[bad[0]].sum():.6g}, not 1: "
            f"its potentials reach magnitude {_magnitude(c, seq):.3g}, beyond what double "
            "precision resolves in the marginals (their error grows as the magnitude times "
            "1e-16, to 1e-6 at about 1e10). Scale the features or the weights.")


def _position_vjp(c, grad, d_unary):
    """:func:`marginals_vjp` with position-dependent transitions: each sequence in log space."""
    table, index = c.transition
    d_table, d_start, d_end = np.zeros_like(table), np.zeros(c.n_labels), np.zeros(c.n_labels)
    for s, e in zip(c.offsets[:-1].tolist(), c.offsets[1:].tolist()):
        if e > s:
            d_unary[s:e], dT, ds, de = marginals_vjp_log_space(
                c.unary[s:e], table, c.start, c.end, grad[s:e], index[s:e])
            d_table += dT
            d_start += ds
            d_end += de
    _check_vjp(c, d_unary, d_table, d_start, d_end)
    return d_unary, d_table, d_start, d_end


@chain_doc
def viterbi(unary, transition, start, end, offsets, n_threads=1):
    """Most probable label sequence (Viterbi) of each sequence and its score.

    Max-product in the score domain (no exponentials): ``-inf`` transitions
    (forbidden pairs, e.g. decode-time constraints) are allowed.
    ``transition`` may be a
    :class:`~sklearn_crfloss.inference.PositionTransitions`.

    Parameters
    ----------
    {chain_parameters_n_threads}

    Returns
    -------
    path : ndarray of intp of shape (n_tokens,)
        Label index of every token on the best path of its sequence.
    score : ndarray of float64 of shape (n_sequences,)
        ``score(path)`` per sequence (0 for an empty sequence). Ties are
        broken towards the smaller label index.

    Raises
    ------
    {shape_error}
    """
    c = Chain.checked(unary, transition, start, end, offsets, n_threads, positions=True)
    if isinstance(c.transition, PositionTransitions):
        return position_viterbi(*c[:5])
    path = np.zeros(c.n_tokens, dtype=np.intp)
    score = np.zeros(c.n_seq)
    viterbi_batch(c.unary, c.transition, c.start, c.end, c.offsets, path, score,
                  c.rows(dtype=np.int32), c.scratch(2 * c.n_labels), c.n_threads)
    return path, score


@chain_doc
def viterbi_2best(unary, transition, start, end, offsets, n_threads=1):
    """The best and the second-best label sequence of each sequence (exact).

    :func:`viterbi_nbest` with ``n_best=2`` (a list Viterbi: every cell
    keeps its two best prefixes), so the two results are distinct sequences and the second is
    the exact runner-up. It gives the maximum incorrect output of Suzuki et
    al. (2006), Eq. 5: the best path when it differs from the gold sequence,
    else the second best (the paper finds the latter by A*; any exact method
    does). Cost: about twice a Viterbi pass.

    Parameters
    ----------
    {chain_parameters_n_threads}

    Returns
    -------
    path1, path2 : ndarray of intp of shape (n_tokens,)
        Best and second-best label sequence (token-aligned, like ``viterbi``).
    score1, score2 : ndarray of float64 of shape (n_sequences,)
        Their scores; ``score2`` is ``-inf`` when the sequence has a single
        possible labelling (one label, one token; ``path2`` then repeats
        ``path1``), 0 for empty sequences.
        Ties are broken towards smaller (label, rank) indices.

    Raises
    ------
    {shape_error}

    References
    ----------
    {suzuki2006}, Eq. 5 and section 3.3.
    """
    paths, scores = viterbi_nbest(unary, transition, start, end, offsets, 2,
                                  n_threads=n_threads)
    if paths.shape[0] == 1:  # a single labelling of every sequence
        paths = np.vstack([paths, paths])
        scores = np.hstack([scores, np.full_like(scores, -np.inf)])
    path1, path2 = paths
    score1, score2 = scores[:, 0].copy(), scores[:, 1].copy()
    lengths = np.diff(np.asarray(offsets, dtype=np.intp))
    score2[lengths == 0] = 0.0
    single = np.repeat(~np.isfinite(score2), lengths)  # one labelling: path2 = path1
    path2[single] = path1[single]
    return path1, path2, score1, score2


@chain_doc
def viterbi_nbest(unary, transition, start, end, offsets, n_best, n_threads=1):
    """The ``n_best`` highest-scoring label sequences of each sequence (exact).

    Lazy k-best (Huang & Chiang 2005, Algorithm 3) on the Viterbi table:
    one Viterbi pass gives the best prefix ending in every (token, label)
    cell; a cell's next-best prefix is made only when a path through it is
    asked for, from a heap holding the next candidate of each label before
    it. The list holds distinct sequences in order of decreasing score, the
    first being the Viterbi path, and is the list of the parallel list
    Viterbi (Seshadri & Sundberg 1994; every cell keeping its ``n_best``
    best prefixes), ties included. Cost: the Viterbi pass, then at most
    ``n_tokens`` heap operations of ``O(log n_labels)`` per path, and
    memory for the prefixes made (at most ``n_tokens`` per path) besides
    the outputs. ``-inf`` potentials (decode-time constraints) are allowed:
    a sequence of score ``-inf`` is never listed. ``transition`` may be a
    :class:`~sklearn_crfloss.inference.PositionTransitions`.

    Parameters
    ----------
    {chain_parameters}
    n_best : int
        Number of sequences to return per input sequence, ``>= 1``.
    {n_threads}

    Returns
    -------
    paths : ndarray of intp of shape (k, n_tokens)
        ``paths[m]`` holds the ``m``-th best label sequence of every input
        sequence (token-aligned, like :func:`viterbi`); 0 where that
        sequence has fewer than ``m + 1`` labellings of finite score.
        ``k = min(n_best, n_labels ** max_length)`` (at least 1): no more
        rows than the longest sequence has labellings, so a large
        ``n_best`` costs no more than listing them all.
    scores : ndarray of float64 of shape (n_sequences, k)
        ``score(paths[m])`` of each sequence, non-increasing along a row;
        ``-inf`` past the number of labellings of finite score. An empty
        sequence has one labelling (the empty one) of score 0. Ties are
        broken towards smaller (label, rank) indices, as in
        :func:`viterbi_2best`: among prefixes of equal score ending in the
        same cell, the one extending a smaller label comes first, then the
        one extending a better-ranked prefix of that label.

    Raises
    ------
    ValueError
        On inconsistent shapes (see :func:`check_potentials`), if
        ``n_best`` is not an integer >= 1, or if more than ``2**31 - 1``
        paths would be listed per sequence.
    MemoryError
        If the prefixes of a sequence's lists cannot be allocated.

    References
    ----------
    L. Huang, D. Chiang (2005). Better k-best parsing. IWPT, Algorithm 3
    (lazy k-best).
    N. Seshadri, C.-E. W. Sundberg (1994). List Viterbi decoding algorithms
    with applications. IEEE Transactions on Communications 42(2/3/4): the
    parallel list Viterbi algorithm.
    """
    if isinstance(n_best, bool) or not isinstance(n_best, Integral) or n_best < 1:
        raise ValueError(f"n_best must be an integer >= 1, got {n_best!r}")
    c = Chain.checked(unary, transition, start, end, offsets, n_threads, positions=True)
    table, index = (c.transition if isinstance(c.transition, PositionTransitions)
                    else (c.transition[None], np.zeros(0, dtype=np.intp)))
    n_best = _n_labellings_cap(int(n_best), c.n_labels, np.diff(c.offsets))
    if n_best > _MAX_RANK:
        raise ValueError(f"n_best={n_best} is more than the {_MAX_RANK} paths per sequence "
                         "the n-best lists can rank.")
    paths = np.zeros((n_best, c.n_tokens), dtype=np.intp)
    scores = np.full((c.n_seq, n_best), -np.inf)
    scores[np.diff(c.offsets) == 0, 0] = 0.0
    failed = np.zeros(c.n_seq, dtype=np.int8)
    n_best_batch(c.unary, table, index, c.start, c.end, c.offsets, n_best, paths, scores,
                 failed, c.n_threads)
    if failed.any():
        raise MemoryError(f"viterbi_nbest: out of memory for the n-best lists of sequence "
                          f"{int(np.flatnonzero(failed)[0])} (n_best={n_best}).")
    return paths, scores


#: The largest n_best the kernel ranks (its ranks are 32-bit integers).
_MAX_RANK = 2**31 - 1


def _n_labellings_cap(n_best, n_labels, lengths):
    """``min(n_best, n_labels ** longest length)``, at least 1, without overflow."""
    longest = int(lengths.max()) if lengths.shape[0] else 0
    if n_labels == 1 or longest * np.log(n_labels) >= np.log(n_best):
        return n_best if n_labels > 1 else 1
    return max(1, min(n_best, n_labels ** longest))


@chain_doc
def viterbi_excluding(unary, transition, start, end, offsets, y, n_threads=1):
    """Best label sequence of each sequence among those different from ``y``.

    The maximum incorrect output of Suzuki et al. (2006), Eq. 5, in one
    pass: a Viterbi over (label, has-deviated-from-``y``) states, about the
    cost of one Viterbi pass. Equals the Viterbi path when that differs from
    ``y``, else the second-best path of :func:`viterbi_2best` (up to ties).
    ``transition`` may be a
    :class:`~sklearn_crfloss.inference.PositionTransitions`.

    Parameters
    ----------
    {chain_parameters}
    y : array-like of int of shape (n_tokens,)
        The excluded label sequences (e.g. the gold labels).
    {n_threads}

    Returns
    -------
    path : ndarray of intp of shape (n_tokens,)
        The best sequence different from ``y`` (``y`` itself when there is
        none: one token and one label).
    score : ndarray of float64 of shape (n_sequences,)
        Its score; ``-inf`` when there is none, 0 for an empty sequence.

    Raises
    ------
    ValueError
        On inconsistent shapes, or labels out of range.

    References
    ----------
    {suzuki2006}, Eq. 5.
    """
    c = Chain.checked(unary, transition, start, end, offsets, n_threads, positions=True)
    y = c.labels(y, "y")
    path = np.zeros(c.n_tokens, dtype=np.intp)
    score = np.zeros(c.n_seq)
    table, index = transition_table(c.transition)
    max_incorrect_batch(c.unary, table, index, c.start, c.end, c.offsets, y, path, score,
                        c.rows(dtype=np.int32), c.scratch(2 * c.n_labels), c.n_threads)
    return path, score


@dataclass
class MaxMarginalsResult:
    """Output of :func:`max_marginals`.

    Attributes
    ----------
    alpha : ndarray of shape (n_tokens, n_labels)
        ``alpha[t, j]``: best score of a prefix ending with label ``j`` at
        token ``t`` (start potential and unaries up to ``t`` included).
    beta : ndarray of shape (n_tokens, n_labels)
        ``beta[t, j]``: best score of the rest of the sequence after ``t``
        given label ``j`` at ``t`` (end potential included).
    bp_fwd, bp_bwd : ndarray of int32 of shape (n_tokens, n_labels)
        Label at ``t - 1`` (resp. ``t + 1``) on the best prefix (resp. suffix).
    """

    alpha: np.ndarray
    beta: np.ndarray
    bp_fwd: np.ndarray
    bp_bwd: np.ndarray


@chain_doc
def max_marginals(unary, transition, start, end, offsets, n_threads=1):
    """Forward and backward Viterbi (max-product) tables.

    ``alpha[t, j] + beta[t, j]`` is the max-marginal: the best score of any
    sequence with label ``j`` at ``t`` (Suzuki et al. 2006, Eq. 14), and the
    best score of a sequence carrying given labels on a span ``a..b-1``
    (Eq. 15) is ``alpha[a, y_a] + sum_{a<t<b} (transition[y_{t-1}, y_t] +
    U[t, y_t]) + beta[b-1, y_{b-1}]``.
    ``transition`` may be a
    :class:`~sklearn_crfloss.inference.PositionTransitions` (then the sum
    takes the matrix of each edge).

    Parameters
    ----------
    {chain_parameters_n_threads}

    Returns
    -------
    MaxMarginalsResult
        The forward and backward tables and their backpointers.

    Raises
    ------
    {shape_error}

    References
    ----------
    {suzuki2006}, Eqs. 14-15, section 4.2
    ("forward and backward Viterbi algorithm").
    """
    c = Chain.checked(unary, transition, start, end, offsets, n_threads, positions=True)
    mm = MaxMarginalsResult(c.rows(), c.rows(), c.rows(dtype=np.int32), c.rows(dtype=np.int32))
    table, index = transition_table(c.transition)
    max_marginals_batch(c.unary, table, np.ascontiguousarray(table.transpose(0, 2, 1)), index,
                        c.start, c.end, c.offsets, mm.alpha, mm.beta, mm.bp_fwd, mm.bp_bwd,
                        c.n_threads)
    return mm


@chain_doc
def segment_margins(unary, transition, start, end, offsets, ref, segments, coef=None,
                    mm=None, n_threads=1, coef_other=None, out=None):
    """Best score with and without given labels on given spans, and gradients.

    For every segment ``m`` of sequence ``k`` spanning tokens ``a..b-1``
    with the labels ``ref[a:b]``: ``g_carry[m]``, the best score of a
    sequence of ``k`` carrying those labels on the span (Suzuki et al. 2006,
    Eq. 15), and ``g_other[m]``, the best score of a sequence of ``k`` whose
    labels on the span differ from them in at least one token (exact: a
    Viterbi over (label, deviated-yet) states restricted to the span, entered
    through the forward and left through the backward max-marginal tables).
    ``transition`` may be a
    :class:`~sklearn_crfloss.inference.PositionTransitions`; ``d_transition``
    then has the shape of its table (the counts of each matrix).

    Parameters
    ----------
    {chain_parameters}
    ref : array-like of int of shape (n_tokens,)
        Labels defining the segments' content (e.g. the gold labels).
    segments : tuple (seq, begin, stop) of int arrays of shape (n_segments,)
        Sequence index (non-decreasing) and token positions inside that
        sequence, ``stop`` exclusive, of every segment.
    coef : array-like of shape (n_segments,) or None, default=None
        If given, also return the gradient of ``sum_m coef[m] * (g_carry[m]
        - g_other[m])`` with respect to the potentials (the argmax paths'
        counts; ties broken towards smaller labels).
    mm : MaxMarginalsResult or None, default=None
        Precomputed :func:`max_marginals` of the same potentials.
    {n_threads}
    coef_other : array-like of shape (n_segments,) or None, default=None
        With ``coef``: the gradient is that of ``sum_m coef[m] * g_carry[m]
        - coef_other[m] * g_other[m]`` instead (None: ``coef_other = coef``;
        zeros: the gradient of the carrying scores alone).
    out : ndarray of float64 of shape (n_tokens, n_labels) or None, default=None
        With ``coef``: a C-contiguous array the unary gradient is added to
        (and returned as ``d_unary``), so that several calls accumulate
        into one array; None: a new array of zeros.

    Returns
    -------
    g_carry, g_other : ndarray of shape (n_segments,)
        ``g_other`` is ``-inf`` when every labelling carries the span (one label).
    grad : tuple (d_unary, d_transition, d_start, d_end) or None
        None when ``coef`` is None.

    Raises
    ------
    ValueError
        On inconsistent shapes or segments outside their sequence.

    References
    ----------
    {suzuki2006}, Eq. 15 and section 4.2.
    """
    c = Chain.checked(unary, transition, start, end, offsets, n_threads, positions=True)
    L = c.n_labels
    ref = c.labels(ref, "ref")
    seq, begin, stop = (np.asarray(a, dtype=np.intp) for a in segments)
    if not (seq.shape == begin.shape == stop.shape) or seq.ndim != 1:
        raise ValueError("segments must be three 1-D arrays of the same length")
    if seq.shape[0] and (np.any(np.diff(seq) < 0) or seq[0] < 0 or seq[-1] >= c.n_seq):
        raise ValueError("segment sequence indices must be sorted and within range")
    lengths = np.diff(c.offsets)
    if seq.shape[0] and np.any((begin < 0) | (stop <= begin) | (stop > lengths[seq])):
        raise ValueError("every segment must be a non-empty span inside its sequence")
    n_seg = seq.shape[0]
    do_grad = coef is not None
    coef = (np.zeros(n_seg) if coef is None
            else np.ascontiguousarray(coef, dtype=np.float64))
    if coef.shape != (n_seg,):
        raise ValueError(f"coef must have shape {(n_seg,)}, got {coef.shape}")
    coef_other = (coef if coef_other is None
                  else np.ascontiguousarray(coef_other, dtype=np.float64))
    if coef_other.shape != (n_seg,):
        raise ValueError(f"coef_other must have shape {(n_seg,)}, got {coef_other.shape}")
    if mm is None:
        mm = max_marginals(c.unary, c.transition, c.start, c.end, c.offsets,
                           n_threads=c.n_threads)
    g_carry = np.empty(n_seg)
    g_other = np.empty(n_seg)
    max_length = int(lengths.max()) if c.n_seq else 0
    if not do_grad:
        d_unary = np.empty((0, L))
    elif out is None:
        d_unary = np.zeros((c.n_tokens, L))
    else:
        d_unary = out
        if (not isinstance(out, np.ndarray) or out.dtype != np.float64
                or out.shape != (c.n_tokens, L) or not out.flags.c_contiguous):
            raise ValueError(f"out must be a C-contiguous float64 array of shape "
                             f"{(c.n_tokens, L)}")
    table, index = transition_table(c.transition)
    n_trans = table.shape[0] * L * L
    n_acc = accumulator_blocks(c.n_threads, n_trans + 2 * L)  # sums independent of n_threads
    acc_trans = np.zeros((n_acc, n_trans))
    acc_boundary = np.zeros((n_acc, 2 * L))
    segment_margins_batch(
        c.unary, table, index, mm.alpha, mm.beta, mm.bp_fwd, mm.bp_bwd, c.offsets, ref,
        np.searchsorted(seq, np.arange(c.n_seq + 1)).astype(np.intp),
        np.ascontiguousarray(begin + c.offsets[seq], dtype=np.intp),
        np.ascontiguousarray(stop + c.offsets[seq], dtype=np.intp),
        g_carry, g_other, coef, coef_other, int(do_grad), np.zeros(0, dtype=np.uint8),
        np.zeros((1, 2), dtype=np.intp), d_unary, acc_trans, acc_boundary,
        c.scratch(2 * L), np.empty((c.n_threads, max(1, max_length * L)), dtype=np.int32),
        np.empty((c.n_threads, max(1, max_length)), dtype=np.intp), np.zeros((1, 1)),
        c.n_threads,
    )
    if not do_grad:
        return g_carry, g_other, None
    boundary = acc_boundary.sum(axis=0)
    grad = (d_unary, acc_trans.sum(axis=0).reshape(table.shape), boundary[:L], boundary[L:])
    if not isinstance(c.transition, PositionTransitions):
        grad = (d_unary, grad[1][0]) + grad[2:]
    return g_carry, g_other, grad


def sequence_scores(unary, transition, start, end, y, offsets):
    """Score of given label sequences, ``score(y_i)`` for every sequence.

    Parameters
    ----------
    unary : ndarray of shape (n_tokens, n_labels)
        Unary potentials (checked with :func:`check_potentials`).
    transition : ndarray of shape (n_labels, n_labels) or PositionTransitions
        Transition potentials, ``[i, j]`` for label ``i`` then ``j``
        (position-dependent: :class:`~sklearn_crfloss.inference.PositionTransitions`).
    start, end : ndarray of shape (n_labels,)
        Potentials of the first and of the last label of a sequence.
    y : ndarray of int of shape (n_tokens,)
        Label index of every token.
    offsets : ndarray of int of shape (n_sequences + 1,)
        Sequence boundaries (CSR ``indptr`` style).

    Returns
    -------
    ndarray of float64 of shape (n_sequences,)
        The score (unnormalised log-probability); 0 for an empty sequence.

    Raises
    ------
    ValueError
        On inconsistent shapes (see :func:`check_potentials`) or labels out
        of range.
    """
    c = Chain.checked(unary, transition, start, end, offsets, 1, positions=True)
    unary, transition, start, end, offsets = c.unary, c.transition, c.start, c.end, c.offsets
    y = c.labels(y, "y")
    if isinstance(transition, PositionTransitions):
        return position_scores(unary, transition, start, end, y, offsets)
    n_seq = offsets.shape[0] - 1
    lengths = np.diff(offsets)
    seq_id = np.repeat(np.arange(n_seq), lengths)
    token = unary[np.arange(y.shape[0]), y]
    total = np.bincount(seq_id, weights=token, minlength=n_seq).astype(np.float64)
    nonempty = lengths > 0
    first = offsets[:-1][nonempty]
    last = offsets[1:][nonempty] - 1
    total[nonempty] += start[y[first]] + end[y[last]]
    inner = inner_positions(offsets, y.shape[0])
    total += np.bincount(
        seq_id[inner], weights=transition[y[inner - 1], y[inner]], minlength=n_seq
    )
    return total


def inner_positions(offsets, n_tokens):
    """Token indices that are not the first of their sequence: where the edges end.

    Position ``t`` is returned if tokens ``t - 1`` and ``t`` belong to the
    same sequence, so ``(y[t - 1], y[t])`` is a transition of the chain.

    Parameters
    ----------
    offsets : ndarray of intp of shape (n_sequences + 1,)
        Sequence boundaries (empty sequences allowed).
    n_tokens : int
        ``offsets[-1]``.

    Returns
    -------
    ndarray of intp of shape (n_tokens - n_nonempty_sequences,)
        Sorted.
    """
    is_first = np.zeros(n_tokens + 1, dtype=bool)
    is_first[offsets[:-1]] = True
    return np.flatnonzero(~is_first[:n_tokens])
