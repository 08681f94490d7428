# Sum-product inference for a batch of linear-chain CRF sequences.
#
# Design notes
# ------------
# * A sequence i occupies rows offsets[i]:offsets[i+1] of the unary potentials
#   U (n_tokens, L). Its score is start[y_0] + sum_t U[t, y_t]
#   + sum_{t>0} T[y_{t-1}, y_t] + end[y_{T-1}].
# * Scaled forward-backward (Rabiner 1989; CRFsuite's crf1d_context.c): every
#   alpha row is normalised to sum 1 and the log of its normaliser c_t kept,
#   so log Z = sum_t log c_t plus the shifts below. The exponentials are taken
#   once: exp(T - max T), exp(start - max), exp(end - max) once per call (by
#   the Python wrapper), and exp(U[t] - max_j U[t, j]) once per token (the
#   vectorised exp_nonpos of _chain.pxd).
# * With these normalisations the node marginal is alpha_hat[t] * beta_hat[t]
#   and the pair marginal of edge (t-1, t) is
#   alpha_hat[t-1, i] * expT[i, j] * psi[t, j] * beta_hat[t, j] / c_t.
#   The factor expT[i, j] is the same for every edge of every sequence, so the
#   kernel accumulates sum_t outer(alpha_hat[t-1], psi[t] * beta_hat[t] / c_t)
#   and the wrapper multiplies by expT once.
# * One core (_scaled_group) runs a batch of sequences in the thread's own
#   buffers, rows of Lp = padded_width(L) doubles (_chain.pxd), advancing
#   the batch's sequences together: at each position one pass over expT
#   (or its transpose) serves every sequence of the batch (_panels.pxd's
#   vec_mat_many), so that a transition matrix larger than the L2 cache
#   (L = 500: 2 MB) is not streamed from L3 once per token, and the pair
#   sums of the batch are one matrix product (_pair_sums). Batches are
#   consecutive sequences of one chunk (below), at most GROUP_ROWS tokens
#   (or the chunk's longest sequence). Two front ends feed it:
#   - forward_backward_batch copies the rows of U in and the marginals out
#     (every loss, predict_marginals);
#   - cll_features_batch gathers the rows of U from the sparse features and
#     compact state weights (gather_token), and scatters the weighted node
#     marginals straight back into the state-weight gradient
#     (scatter_token): the conditional log-likelihood's expected counts with
#     no (n_tokens, L) array in memory, no second pass over the features.
# * If a normaliser underflows (all paths through a position lose their mass
#   in double precision, which needs potentials of magnitude ~700 or more),
#   or the range of the potentials could flush a row's entry to 0 that a
#   later token makes likely (MAX_RANGE in _chain.pxd), or a backward row
#   overflows, that sequence is recomputed in log space. The fallback is exact but does
#   L^2 exp/log per edge; ordinary models never reach it.
# * Chunks of CHUNK sequences run in parallel (OpenMP prange, a static
#   schedule dealt to the threads round robin); each thread owns its
#   scratch rows. The accumulators are per block, not per thread: chunk c
#   adds into accumulator c % n_acc, and the wrapper sums them in block
#   order. With n_acc a multiple of n_threads a block's chunks all run on
#   one thread, in order (no atomics), so the sums, rounding included, do
#   not depend on the number of threads (accumulator_blocks).

import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport exp, log, isfinite, INFINITY
from libc.stdint cimport uintptr_t

from _chain cimport (LANES, exp_nonpos, logsumexp_row, padded_width, row_max_padded,
                     row_sum_padded, row_too_wide, scale_ok, scatter_token,
                     scatter_token_split, tail_range)
from _chain cimport gather_rows as _gather_sequence
from _panels cimport MANY_MAX, mat_mat_acc, vec_mat_many
from _chain cimport indptr_t


def exp_potentials(transition, start, end):
    """Shifted exponentials of the transition, start and end potentials (low level).

    Returns ``exp(T - max T)``, ``exp(start - max start)``,
    ``exp(end - max end)`` and the three shifts (transition, start, end),
    which the batch kernels add back to log Z.
    """
    shifts = (float(np.max(transition)), float(np.max(start)), float(np.max(end)))
    return (np.exp(transition - shifts[0]), np.exp(start - shifts[1]),
            np.exp(end - shifts[2]), shifts)


class Accumulators:
    """The per-block accumulators of the batch kernels and their totals (low level).

    ``pair`` (n_acc, L, Lp) and ``boundary`` (n_acc, 2, Lp) in the
    kernels' padded rows (Lp = ``row_width(L)``), ``direct`` (n_acc, L,
    L) for the log-space fallback; all zeroed. ``n_acc``:
    :func:`accumulator_blocks` of the number of threads. With
    ``n_matrices`` (position-dependent transitions, ``_positions``),
    ``pair`` and ``direct`` have one (L, Lp) and (L, L) sum per matrix:
    shapes (n_acc, n_matrices, L, Lp) and (n_acc, n_matrices, L, L).
    """

    def __init__(self, n_threads, n_labels, n_matrices=None):
        Lp = padded_width(n_labels)
        lead = () if n_matrices is None else (n_matrices,)
        n_acc = accumulator_blocks(n_threads, self.n_values(n_labels, n_matrices))
        self.n_labels = n_labels
        self.pair = np.zeros((n_acc,) + lead + (n_labels, Lp))
        self.direct = np.zeros((n_acc,) + lead + (n_labels, n_labels))
        self.boundary = np.zeros((n_acc, 2, Lp))

    @staticmethod
    def n_values(n_labels, n_matrices=None):
        """Doubles of one block (what :func:`accumulator_blocks` is asked about)."""
        Lp = padded_width(n_labels)
        return (n_matrices or 1) * n_labels * (Lp + n_labels) + 2 * Lp

    def counts(self, exp_trans, n_fallback):
        """Expected transition (per matrix), start and end counts (the pair sums times expT, once).

        ``exp_trans``: (L, L), or (n_matrices, L, L or Lp).
        """
        L = self.n_labels
        counts = self.pair.sum(axis=0)[..., :L] * exp_trans[..., :L]
        if n_fallback:
            counts += self.direct.sum(axis=0)
        boundary = self.boundary.sum(axis=0)[:, :L]
        return counts, boundary[0].copy(), boundary[1].copy()


#: Sequences per chunk of the static schedule (the kernels' prange chunksize).
CHUNK = 8
#: Accumulator blocks when memory allows (a multiple of 1, 2 and 4 threads). More
#: cost more: on 4,000 CoNLL-2000 sentences one CLL evaluation on one thread took
#: 1.05x (2 blocks), 1.08x (4) and 1.31x (8) the time of a single accumulator
#: (benchmarks/README.md).
N_BLOCKS = 4


def accumulator_blocks(n_threads, n_values, max_bytes=2**28):
    """How many accumulators of ``n_values`` doubles the batch kernels get (low level).

    ``N_BLOCKS`` (4) when it is a multiple of ``n_threads`` and they fit in
    ``max_bytes``: the sums are then bitwise the same for 1, 2 or 4
    threads. Otherwise one per thread (the sums depend on ``n_threads``
    through the rounding of their order).
    """
    n_threads = max(1, int(n_threads))
    if N_BLOCKS % n_threads == 0 and N_BLOCKS * n_values * 8 <= max_bytes:
        return N_BLOCKS
    return n_threads


def row_width(Py_ssize_t n_labels):
    """Lp, the padded row width of the accumulators (n_labels rounded up to 8)."""
    return padded_width(n_labels)


cdef enum:
    BATCH_ROWS = 256  # GROUP_ROWS

#: Tokens of a batch of sequences run together (more if a sequence of the chunk
#: is longer): a chunk's sequences in order, as many as fit (at least one).
GROUP_ROWS = BATCH_ROWS


def scratch_width(Py_ssize_t n_labels, Py_ssize_t max_length):
    """Doubles of scratch per thread for sequences of at most max_length tokens."""
    cdef Py_ssize_t Lp = padded_width(n_labels)
    cdef Py_ssize_t R = max(max_length, BATCH_ROWS)  # rows of the batch buffers
    return 2 * Lp * Lp + 4 * Lp + 2 * MANY_MAX * Lp + padded_width(R) + 4 * R * Lp + LANES


cdef struct Buffers:
    # A thread's padded rows (scratch_width): expT, its transpose, exp_start,
    # exp_end, 2 rows of scratch, 2 beta rows per sequence, the inverse scales,
    # R rows each of psi, alpha, marginals, and alpha transposed (L rows of R).
    double* E
    double* Et
    double* es
    double* ee
    double* tmp
    double* beta
    double* rs
    double* psi
    double* alpha
    double* mu
    double* alpha_t


cdef inline Buffers _buffers(double* row, Py_ssize_t Lp, Py_ssize_t max_len) noexcept nogil:
    """The thread's buffers in its scratch row, from a 64-byte boundary."""
    cdef Buffers b
    cdef Py_ssize_t R = max(max_len, BATCH_ROWS)
    b.E = <double*>((<uintptr_t>row + 63) & ~(<uintptr_t>63))
    b.Et = b.E + Lp * Lp
    b.es = b.Et + Lp * Lp
    b.ee = b.es + Lp
    b.tmp = b.ee + Lp
    b.beta = b.tmp + 2 * Lp
    b.rs = b.beta + 2 * MANY_MAX * Lp
    b.psi = b.rs + padded_width(R)
    b.alpha = b.psi + R * Lp
    b.mu = b.alpha + R * Lp
    b.alpha_t = b.mu + R * Lp
    return b


cdef void _setup_threads(double[:, ::1] scratch, int n_threads, Py_ssize_t L,
                         Py_ssize_t max_len, const double[:, ::1] exp_trans,
                         const double[::1] exp_start, const double[::1] exp_end) noexcept nogil:
    """Copy expT, its transpose, exp_start and exp_end into every thread's padded rows."""
    cdef Py_ssize_t Lp = padded_width(L)
    cdef Py_ssize_t i, j
    cdef int tid
    cdef Buffers b
    for tid in range(n_threads):
        b = _buffers(&scratch[tid, 0], Lp, max_len)
        for i in range(Lp):
            for j in range(Lp):
                b.E[i * Lp + j] = exp_trans[i, j] if i < L and j < L else 0.0
                b.Et[i * Lp + j] = exp_trans[j, i] if i < L and j < L else 0.0
            b.es[i] = exp_start[i] if i < L else 0.0
            b.ee[i] = exp_end[i] if i < L else 0.0


cdef inline void _scaled_group(Buffers* b, Py_ssize_t K, const Py_ssize_t* first,
                        const Py_ssize_t* length, Py_ssize_t L, Py_ssize_t Lp, double t_range,
                        int* failed, double* log_z) noexcept nogil:
    """Scaled forward-backward of K <= MANY_MAX sequences advanced together.

    Sequence q has length[q] rows from row first[q] of the batch buffers, where
    b.psi holds the rows of U (pads -inf). On return (the products of
    :func:`_panels.vec_mat_many` are the sums of one sequence at a time):
    alpha holds alpha_hat, mu the node marginals (pads 0), psi's rows t >= 1
    v_t = psi_t / c_t * beta_hat[t] (edge (t-1, t)'s pair factor but for expT),
    log_z[q] log Z minus the shifts of the exponentials. failed[q] = 1 (rows
    left partial; the caller uses log space) when a normaliser underflows, a
    row of U's range plus t_range (tail_range) passes MAX_RANGE, or a
    backward row overflows.
    """
    cdef Py_ssize_t q, t, j, cnt, n_max = 0
    cdef double m, c, r
    cdef double *row, *a, *sw
    cdef const double* xs[MANY_MAX]
    cdef double* outs[MANY_MAX]
    cdef Py_ssize_t ids[MANY_MAX]
    cdef double* bq[MANY_MAX]
    cdef double* b2q[MANY_MAX]
    for q in range(K):
        failed[q] = 0
        log_z[q] = 0.0
        n_max = length[q] if length[q] > n_max else n_max
        bq[q] = b.beta + 2 * q * Lp
        b2q[q] = bq[q] + Lp
        for t in range(length[q]):
            row = b.psi + (first[q] + t) * Lp
            if row_too_wide(t_range, row, L):
                failed[q] = 1
                break
            m = row_max_padded(row, Lp)
            log_z[q] += m
            for j in range(Lp):
                row[j] = exp_nonpos(row[j] - m)
    # Forward: alpha_hat[t] = (alpha_hat[t-1] @ expT) * psi[t] / c_t, the
    # products of the batch's sequences at position t in one pass over expT.
    for t in range(n_max):
        cnt = 0
        for q in range(K):
            if failed[q] or t >= length[q]:
                continue
            a = b.alpha + (first[q] + t) * Lp
            if t == 0:  # the "previous row times expT" of token 0: exp_start
                for j in range(Lp):
                    a[j] = b.es[j]
            else:
                xs[cnt] = a - Lp
                outs[cnt] = a
                cnt = cnt + 1
        if cnt:
            vec_mat_many(xs, b.E, outs, cnt, L, Lp, False)
        for q in range(K):
            if failed[q] or t >= length[q]:
                continue
            a = b.alpha + (first[q] + t) * Lp
            row = b.psi + (first[q] + t) * Lp
            for j in range(Lp):
                a[j] *= row[j]
            c = row_sum_padded(a, Lp)
            if not scale_ok(c):
                failed[q] = 1
                continue
            r = 1.0 / c
            b.rs[first[q] + t] = r
            for j in range(Lp):
                a[j] *= r
            log_z[q] += log(c)
    # c_end = alpha_hat[n-1] . exp_end; beta_hat[n-1] = exp_end / c_end
    for q in range(K):
        if failed[q]:
            continue
        a = b.alpha + (first[q] + length[q] - 1) * Lp
        for j in range(Lp):
            b2q[q][j] = a[j] * b.ee[j]
        c = row_sum_padded(b2q[q], Lp)
        if not scale_ok(c):
            failed[q] = 1
            continue
        log_z[q] += log(c)
        r = 1.0 / c
        for j in range(Lp):
            bq[q][j] = b.ee[j] * r
    # Backward, each sequence from its last token: beta_hat[t-1] =
    # expT @ (psi_t / c_t * beta_hat[t]), one pass over expT.T per step.
    for t in range(1, n_max):  # step t: position length[q] - t of sequence q
        cnt = 0
        for q in range(K):
            if failed[q] or length[q] - t < 1:
                continue
            a = b.alpha + (first[q] + length[q] - t) * Lp
            row = b.psi + (first[q] + length[q] - t) * Lp
            r = b.rs[first[q] + length[q] - t]
            for j in range(Lp):
                b.mu[(first[q] + length[q] - t) * Lp + j] = a[j] * bq[q][j]
                row[j] = row[j] * r * bq[q][j]
            xs[cnt] = row
            outs[cnt] = b2q[q]
            ids[cnt] = q
            cnt = cnt + 1
        if not cnt:
            continue
        vec_mat_many(xs, b.Et, outs, cnt, L, Lp, False)
        for j in range(cnt):
            q = ids[j]
            # beta_hat[t-1, j] is only bounded by 1 / alpha_hat[t-1, j] (nothing
            # if that underflowed to 0): with potentials of a few hundred the
            # backward rows can overflow (inf, or NaN from 0 * inf in the pads)
            # with no forward normaliser underflowing. Then the row's sum is not
            # finite (terms >= 0 or NaN): redo it in log space.
            if not isfinite(row_sum_padded(b2q[q], Lp)):
                failed[q] = 1
                continue
            sw = bq[q]
            bq[q] = b2q[q]
            b2q[q] = sw
    for q in range(K):
        if not failed[q]:
            for j in range(Lp):
                b.mu[first[q] * Lp + j] = b.alpha[first[q] * Lp + j] * bq[q][j]


cdef void _pair_sums(Buffers* b, Py_ssize_t K, const Py_ssize_t* first, const Py_ssize_t* length,
                     const int* failed, const double* weights, Py_ssize_t L, Py_ssize_t Lp,
                     double* pair_acc) noexcept nogil:
    """pair_acc[i, :] += sum_q weights[q] sum_t alpha_hat_q[t-1, i] v_q[t, :] (rows of Lp).

    Over the sequences that did not fail, as one product alpha_t @ psi over the
    batch's P rows: alpha_t[i, p] = weights[q] * alpha_hat[p - 1, i] for row p of
    position t >= 1 of sequence q, 0 for first rows and failed sequences (whose
    psi rows, which may hold anything, are set to 0 here).
    """
    cdef Py_ssize_t q, t, i, j, p, P = first[K - 1] + length[K - 1]
    cdef double w
    cdef bint any_edge = False
    for q in range(K):
        for t in range(length[q]):
            p = first[q] + t
            if failed[q] or t == 0:
                for i in range(L):
                    b.alpha_t[i * P + p] = 0.0
                if failed[q]:
                    for j in range(Lp):
                        b.psi[p * Lp + j] = 0.0
            else:
                any_edge = True
                w = weights[q]
                for i in range(L):
                    b.alpha_t[i * P + p] = w * b.alpha[(p - 1) * Lp + i]
    if any_edge:
        mat_mat_acc(b.alpha_t, P, b.psi, pair_acc, L, P, Lp)


cdef void _log_sequence(
    const double* U, Py_ssize_t ldu, Py_ssize_t n, Py_ssize_t L,
    const double[:, ::1] transition, const double[::1] start, const double[::1] end,
    double weight, double* marg, Py_ssize_t ldm, double* work, double* lcs, double* scratch,
    double* direct_acc, double* start_acc, double* end_acc, double* log_z_out,
) noexcept nogil:
    """Log-space forward-backward of one sequence (the underflow fallback).

    U has n rows of stride ldu; marg (stride ldm) receives log alpha_hat,
    then the marginals; work has n * L doubles (log beta_hat), lcs n
    (the log normalisers), scratch L. direct_acc (L*L) is incremented by
    weight * the pair marginals themselves.

    The rows are normalised as in the scaled pass, but in log space: log
    alpha_hat[t] = log alpha[t] - lc_t with lc_t its logsumexp, and log
    beta_hat[t-1] = logsumexp(T + U[t] + log beta_hat[t]) - lc_t. Every
    value then keeps the magnitude of the potentials, not that of log Z
    (which grows with n), so that the rounding error of a marginal does not
    grow with its position; alpha_hat * beta_hat is the marginal.
    """
    cdef Py_ssize_t t, i, j
    cdef double lc, x
    cdef double log_z = 0.0
    for t in range(n):
        for j in range(L):
            if t == 0:
                x = start[j]
            else:
                for i in range(L):
                    scratch[i] = marg[(t - 1) * ldm + i] + transition[i, j]
                x = logsumexp_row(scratch, L)
            marg[t * ldm + j] = x + U[t * ldu + j]
        lc = logsumexp_row(&marg[t * ldm], L)
        lcs[t] = lc
        log_z += lc
        for j in range(L):
            marg[t * ldm + j] -= lc
    for j in range(L):
        scratch[j] = marg[(n - 1) * ldm + j] + end[j]
    lc = logsumexp_row(scratch, L)
    log_z_out[0] = log_z + lc
    for j in range(L):
        work[(n - 1) * L + j] = end[j] - lc
    for t in range(n - 1, 0, -1):
        for i in range(L):
            for j in range(L):
                scratch[j] = transition[i, j] + U[t * ldu + j] + work[t * L + j]
            work[(t - 1) * L + i] = logsumexp_row(scratch, L) - lcs[t]
    for t in range(1, n):
        for i in range(L):
            for j in range(L):
                x = (marg[(t - 1) * ldm + i] + transition[i, j] + U[t * ldu + j]
                     + work[t * L + j] - lcs[t])
                direct_acc[i * L + j] += weight * exp(x)
    for t in range(n):
        for j in range(L):
            marg[t * ldm + j] = exp(marg[t * ldm + j] + work[t * L + j])
    for j in range(L):
        start_acc[j] += weight * marg[j]
        end_acc[j] += weight * marg[(n - 1) * ldm + j]


cdef int _group(
    bint fused, Buffers* b, Py_ssize_t k, Py_ssize_t K, const double[:, ::1] unary,
    double[:, ::1] marginals, const indptr_t[::1] indptr, const int[::1] indices,
    const double[::1] data, bint binary, const long long[::1] code, const double[::1] w,
    const double[:, ::1] W_hot, double* grad_acc, double* grad_own, double* hot_acc,
    const double[:, ::1] transition, const double[::1] start, const double[::1] end,
    const Py_ssize_t[::1] offsets, const double[::1] weights, double[::1] log_z,
    double* pair_acc, double* direct_acc, double* start_acc, double* end_acc,
    Py_ssize_t L, Py_ssize_t Lp, double shift_start, double shift_end, double shift_trans,
    double t_range,
) noexcept nogil:
    """Sequences k:k+K (K <= MANY_MAX, at most the buffers' rows). Returns the fallbacks.

    Rows of U in (copied, or gathered from the features when ``fused``),
    :func:`_scaled_group`, in sequence order the boundary sums or the log-space
    fallback (direct pair sums), then :func:`_pair_sums` of the others, and the
    marginals out (copied, or scattered into the gradient).
    """
    cdef Py_ssize_t first[MANY_MAX]
    cdef Py_ssize_t length[MANY_MAX]
    cdef int failed[MANY_MAX]
    cdef double lz[MANY_MAX]
    cdef double wq[MANY_MAX]
    cdef Py_ssize_t nnz = indices.shape[0]
    cdef Py_ssize_t q, s, n, t, j
    cdef int n_fallback = 0
    cdef double* psi
    for q in range(K):
        s = offsets[k + q]
        first[q] = s - offsets[k]
        length[q] = offsets[k + q + 1] - s
        wq[q] = weights[k + q]
        psi = b.psi + first[q] * Lp
        if fused:
            _gather_sequence(&indptr[0], &indices[0], &data[0], binary, &code[0], &w[0],
                             &W_hot[0, 0], s, length[q], L, Lp, nnz, psi)
        else:
            for t in range(length[q]):
                for j in range(Lp):
                    psi[t * Lp + j] = unary[s + t, j] if j < L else -INFINITY
    _scaled_group(b, K, first, length, L, Lp, t_range, failed, lz)
    for q in range(K):
        s = offsets[k + q]
        n = length[q]
        if not failed[q]:
            log_z[k + q] = lz[q] + shift_start + shift_end + (n - 1) * shift_trans
            for j in range(Lp):
                start_acc[j] += wq[q] * b.mu[first[q] * Lp + j]
                end_acc[j] += wq[q] * b.mu[(first[q] + n - 1) * Lp + j]
            if not fused:
                for t in range(n):
                    for j in range(L):
                        marginals[s + t, j] = b.mu[(first[q] + t) * Lp + j]
            continue
        # Log space; the scaled pass touched no accumulator: nothing to undo.
        n_fallback += 1
        if fused:  # psi was overwritten: gather U again
            psi = b.psi + first[q] * Lp
            _gather_sequence(&indptr[0], &indices[0], &data[0], binary, &code[0], &w[0],
                             &W_hot[0, 0], s, n, L, Lp, nnz, psi)
            _log_sequence(psi, Lp, n, L, transition, start, end, wq[q], b.mu + first[q] * Lp,
                          Lp, b.alpha + first[q] * Lp, b.rs + first[q], b.tmp, direct_acc,
                          start_acc, end_acc, &log_z[k + q])
        else:
            _log_sequence(&unary[s, 0], L, n, L, transition, start, end, wq[q],
                          &marginals[s, 0], L, b.alpha + first[q] * Lp, b.rs + first[q], b.tmp,
                          direct_acc, start_acc, end_acc, &log_z[k + q])
    _pair_sums(b, K, first, length, failed, wq, L, Lp, pair_acc)
    if fused and grad_own != grad_acc:  # two copies: split a constant in each
        for q in range(K):
            for t in range(length[q]):
                scatter_token_split(&indptr[0], &indices[0], &data[0], binary, &code[0],
                                    grad_acc, grad_own, True, hot_acc, Lp,
                                    b.mu + (first[q] + t) * Lp, wq[q], offsets[k + q] + t, Lp,
                                    nnz)
    elif fused:
        for q in range(K):
            for t in range(length[q]):
                scatter_token(&indptr[0], &indices[0], &data[0], binary, &code[0], grad_acc,
                              hot_acc, Lp, b.mu + (first[q] + t) * Lp, wq[q],
                              offsets[k + q] + t, Lp, nnz)
    return n_fallback


cdef int _chunk(
    bint fused, Buffers* b, Py_ssize_t ch, Py_ssize_t n_seq, const double[:, ::1] unary,
    double[:, ::1] marginals, const indptr_t[::1] indptr, const int[::1] indices,
    const double[::1] data, bint binary, const long long[::1] code, const double[::1] w,
    const double[:, ::1] W_hot, double* grad_acc, double* grad_own, double* hot_acc,
    const double[:, ::1] transition, const double[::1] start, const double[::1] end,
    const Py_ssize_t[::1] offsets, const double[::1] weights, double[::1] log_z,
    double* pair_acc, double* direct_acc, double* boundary_acc, Py_ssize_t L, Py_ssize_t Lp,
    double shift_start, double shift_end, double shift_trans, double t_range,
) noexcept nogil:
    """Chunk ch (sequences 8ch:8ch+8) in batches of consecutive sequences of at most
    max(its longest, GROUP_ROWS) rows (:func:`_group`). Returns the fallbacks.

    Batches depend on the chunk alone, so the sums do not depend on the number
    of threads or on the other sequences.
    """
    cdef Py_ssize_t k = 8 * ch  # CHUNK
    cdef Py_ssize_t k1 = k + 8 if k + 8 < n_seq else n_seq
    cdef Py_ssize_t cap = BATCH_ROWS, kk, rows, K
    cdef int n_fallback = 0
    for kk in range(k, k1):
        if offsets[kk + 1] - offsets[kk] > cap:
            cap = offsets[kk + 1] - offsets[kk]
    while k < k1:
        K = 1
        rows = offsets[k + 1] - offsets[k]
        while k + K < k1 and rows + offsets[k + K + 1] - offsets[k + K] <= cap:
            rows = rows + offsets[k + K + 1] - offsets[k + K]
            K = K + 1
        n_fallback += _group(fused, b, k, K, unary, marginals, indptr, indices, data, binary,
                             code, w, W_hot, grad_acc, grad_own, hot_acc, transition, start,
                             end, offsets,
                             weights, log_z, pair_acc, direct_acc, boundary_acc,
                             boundary_acc + Lp, L, Lp, shift_start, shift_end, shift_trans,
                             t_range)
        k = k + K
    return n_fallback


cdef int _batch(
    bint fused, const double[:, ::1] unary, double[:, ::1] marginals,
    const indptr_t[::1] indptr, const int[::1] indices, const double[::1] data, bint binary,
    const long long[::1] code, const double[::1] w, const double[:, ::1] W_hot,
    double[:, ::1] grad_acc, double[:, :, ::1] hot_acc,
    const double[:, ::1] transition, const double[::1] start, const double[::1] end,
    const double[:, ::1] exp_trans, const double[::1] exp_start, const double[::1] exp_end,
    const Py_ssize_t[::1] offsets, const double[::1] weights, double[::1] log_z,
    double[:, :, ::1] pair_acc, double[:, :, ::1] direct_acc, double[:, :, ::1] boundary_acc,
    double[:, ::1] scratch, Py_ssize_t max_length, double shift_start, double shift_end,
    double shift_trans, int n_threads,
) noexcept nogil:
    """Both front ends: rows of U copied in and marginals out, or (fused) gathered and scattered.

    Chunk c (sequences 8c:8c+8, :func:`_chunk`) runs on thread c % n_threads
    into block c % n_acc (see the header).
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t n_chunks = (n_seq + 7) // 8  # CHUNK
    cdef Py_ssize_t L = exp_trans.shape[0]
    cdef Py_ssize_t Lp = padded_width(L)
    # Each set of accumulators has its own count (a multiple of n_threads).
    cdef Py_ssize_t n_acc = pair_acc.shape[0], n_grad = grad_acc.shape[0]
    cdef Py_ssize_t ch, a, g
    cdef int tid
    cdef int n_fallback = 0
    cdef double t_range = tail_range(&transition[0, 0], &start[0], L, 1.0)
    cdef Buffers b
    _setup_threads(scratch, n_threads, L, max_length, exp_trans, exp_start, exp_end)
    for ch in prange(n_chunks, num_threads=n_threads, schedule='static', chunksize=1):
        tid = threadid()
        a = ch % n_acc  # the block's accumulators (see the header)
        g = ch % n_grad
        b = _buffers(&scratch[tid, 0], Lp, max_length)
        n_fallback += _chunk(fused, &b, ch, n_seq, unary, marginals, indptr, indices, data,
                             binary, code, w, W_hot, &grad_acc[g, 0], &grad_acc[g, 0],
                             &hot_acc[g, 0, 0],
                             transition, start, end, offsets, weights, log_z,
                             &pair_acc[a, 0, 0], &direct_acc[a, 0, 0], &boundary_acc[a, 0, 0],
                             L, Lp, shift_start, shift_end, shift_trans, t_range)
    return n_fallback


cdef void _add_blocks(double* out, double* bufs, Py_ssize_t stride, Py_ssize_t first,
                      Py_ssize_t count, Py_ssize_t n, int n_threads) noexcept nogil:
    """out[:n] += bufs[first], then bufs[first + 1], ... (count blocks of stride doubles),
    each zeroed once read: the blocks' sum in block order, element by element."""
    cdef Py_ssize_t i, t
    cdef double* src
    if count <= 0:
        return
    for i in prange(n, num_threads=n_threads, schedule='static'):
        for t in range(first, first + count):
            src = bufs + t * stride
            out[i] = out[i] + src[i]
            src[i] = 0.0


cdef void _add_blocks_at(double* out, double* bufs, Py_ssize_t stride, Py_ssize_t first,
                         Py_ssize_t count, const Py_ssize_t* index, Py_ssize_t n,
                         int n_threads) noexcept nogil:
    """:func:`_add_blocks` at the n entries index[:n] alone."""
    cdef Py_ssize_t i, t, e
    cdef double* src
    if count <= 0:
        return
    for i in prange(n, num_threads=n_threads, schedule='static'):
        e = index[i]
        for t in range(first, first + count):
            src = bufs + t * stride
            out[e] = out[e] + src[e]
            src[e] = 0.0


cdef int _batch_rounds(
    const indptr_t[::1] indptr, const int[::1] indices, const double[::1] data, bint binary,
    const long long[::1] code, const double[::1] w, const double[:, ::1] W_hot,
    double[::1] grad_out, double[:, ::1] hot_out, double[:, ::1] grad_buf,
    double[:, :, ::1] hot_buf,
    const double[:, ::1] transition, const double[::1] start, const double[::1] end,
    const double[:, ::1] exp_trans, const double[::1] exp_start, const double[::1] exp_end,
    const Py_ssize_t[::1] offsets, const double[::1] weights, double[::1] log_z,
    double[:, :, ::1] pair_acc, double[:, :, ::1] direct_acc, double[:, :, ::1] boundary_acc,
    double[:, ::1] scratch, Py_ssize_t max_length, double shift_start, double shift_end,
    double shift_trans, int n_threads, Py_ssize_t n_grad, const Py_ssize_t[::1] shared,
    double[:, ::1] no_rows,
) noexcept nogil:
    """The fused front end with the state sums reduced by rounds (cll_features_batch's out).

    The n_grad state blocks (a multiple of n_threads) are computed n_threads
    at a time: in round r, iteration t computes block r * n_threads + t
    (the chunks c = block mod n_grad, in order) into buffer t, block 0
    straight into the outputs; then the round's blocks are added into the
    outputs in block order. The outputs get ((b0 + b1) + b2) + ..., the
    sums of :func:`_batch` added in block order, with one state buffer per
    thread live instead of n_grad. A compact attribute whose code has
    OWN_BIT set (those of a single block) goes straight into grad_out
    (scatter_token_split: the same sum, 0 + its block's), so that only the
    compact entries ``shared`` of the others are added between rounds. The
    pair sums stay per block (pair_acc, n_acc a multiple of n_grad).
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t n_chunks = (n_seq + 7) // 8  # CHUNK
    cdef Py_ssize_t L = exp_trans.shape[0]
    cdef Py_ssize_t Lp = padded_width(L)
    cdef Py_ssize_t n_acc = pair_acc.shape[0]
    cdef Py_ssize_t n_hot = hot_out.shape[0] * hot_out.shape[1]
    cdef Py_ssize_t r, t, blk, ch, a, first
    cdef int tid
    cdef int n_fallback = 0
    cdef double t_range = tail_range(&transition[0, 0], &start[0], L, 1.0)
    cdef double *g
    cdef double *h
    cdef Buffers b
    _setup_threads(scratch, n_threads, L, max_length, exp_trans, exp_start, exp_end)
    for r in range(n_grad // n_threads):
        for t in prange(n_threads, num_threads=n_threads, schedule='static', chunksize=1):
            tid = threadid()
            blk = r * n_threads + t
            b = _buffers(&scratch[tid, 0], Lp, max_length)
            if blk == 0:
                g = &grad_out[0]
                h = &hot_out[0, 0]
            else:
                g = &grad_buf[t, 0]
                h = &hot_buf[t, 0, 0]
            ch = blk
            while ch < n_chunks:
                a = ch % n_acc
                n_fallback += _chunk(True, &b, ch, n_seq, no_rows, no_rows, indptr, indices, data,
                                     binary, code, w, W_hot, g, &grad_out[0], h, transition,
                                     start, end,
                                     offsets, weights, log_z, &pair_acc[a, 0, 0],
                                     &direct_acc[a, 0, 0], &boundary_acc[a, 0, 0], L, Lp,
                                     shift_start, shift_end, shift_trans, t_range)
                ch = ch + n_grad
        first = 1 if r == 0 else 0  # block 0 is in the outputs already
        if shared.shape[0]:
            _add_blocks_at(&grad_out[0], &grad_buf[0, 0], grad_buf.shape[1], first,
                           n_threads - first, &shared[0], shared.shape[0], n_threads)
        _add_blocks(&hot_out[0, 0], &hot_buf[0, 0, 0], n_hot, first, n_threads - first,
                    n_hot, n_threads)
    return n_fallback


def forward_backward_batch(
    const double[:, ::1] unary, const double[:, ::1] transition, const double[::1] start,
    const double[::1] end, const double[:, ::1] exp_trans, const double[::1] exp_start,
    const double[::1] exp_end, const Py_ssize_t[::1] offsets, const double[::1] weights,
    double[:, ::1] marginals, double[::1] log_z, double[:, :, ::1] pair_acc,
    double[:, :, ::1] direct_acc, double[:, :, ::1] boundary_acc, double[:, ::1] scratch,
    Py_ssize_t max_length, double shift_start, double shift_end, double shift_trans,
    int n_threads,
):
    """Scaled forward-backward over a batch of sequences (low level).

    Use :func:`sklearn_crfloss.inference.forward_backward`, which allocates
    the outputs and adds back the shifts. Shapes: unary, marginals
    (n_tokens, L); transition, exp_trans (L, L); start, end, exp_start,
    exp_end (L,); offsets (n_sequences + 1,) intp; weights, log_z
    (n_sequences,); pair_acc (n_acc, L, Lp) and boundary_acc
    (n_acc, 2, Lp) with Lp = row_width(L); direct_acc (n_acc, L, L), n_acc a
    multiple of n_threads (accumulator_blocks);
    scratch (n_threads, scratch_width(L, max_length)) where max_length is at
    least the longest sequence. All float64, C order, accumulators zeroed.
    exp_trans = exp(transition - shift_trans), and likewise for start/end.
    Every sequence must be non-empty. Returns the number of sequences that
    needed the log-space fallback.
    """
    cdef int n_fallback
    cdef Py_ssize_t[::1] no_ptr = np.zeros(1, dtype=np.intp)
    cdef int[::1] no_index = np.zeros(1, dtype=np.intc)
    cdef long long[::1] no_code = np.zeros(1, dtype=np.longlong)
    cdef double[::1] no_w = np.zeros(1)
    cdef double[:, ::1] no_rows = np.zeros((1, 1))
    cdef double[:, :, ::1] no_hot = np.zeros((1, 1, 1))
    with nogil:
        n_fallback = _batch(False, unary, marginals, no_ptr, no_index, no_w, True, no_code,
                            no_w, no_rows, no_rows, no_hot, transition, start, end, exp_trans,
                            exp_start, exp_end, offsets, weights, log_z, pair_acc, direct_acc,
                            boundary_acc, scratch, max_length, shift_start, shift_end,
                            shift_trans, n_threads)
    return n_fallback


def cll_features_batch(
    const indptr_t[::1] indptr, const int[::1] indices, const double[::1] data, bint binary,
    const long long[::1] code, const double[::1] w, const double[:, ::1] W_hot,
    const double[:, ::1] transition, const double[::1] start, const double[::1] end,
    const double[:, ::1] exp_trans, const double[::1] exp_start, const double[::1] exp_end,
    const Py_ssize_t[::1] offsets, const double[::1] weights, double[::1] log_z,
    double[:, ::1] grad_acc, double[:, :, ::1] hot_acc, double[:, :, ::1] pair_acc,
    double[:, :, ::1] direct_acc, double[:, :, ::1] boundary_acc, double[:, ::1] scratch,
    Py_ssize_t max_length, double shift_start, double shift_end, double shift_trans,
    int n_threads, double[::1] grad_out=None, double[:, ::1] hot_out=None,
    Py_ssize_t n_state_blocks=0, const Py_ssize_t[::1] shared=None,
):
    """Log Z and the expected feature counts from sparse features (low level).

    The conditional log-likelihood's model side in one pass per sequence:
    the unary rows U = X @ W of the sequence (CSR rows offsets[k]:
    offsets[k+1] of X; the state weights W in the hybrid storage of
    _chain.pxd's gather_token: code, compact weights w, dense rows W_hot
    (n_hot, Lp)), the scaled forward-backward of
    :func:`forward_backward_batch`, and the chain rule X.T @ (weight *
    marginals) into grad_acc[tid] (compact weights) and hot_acc[tid]
    (dense rows). ``data`` is not read when ``binary`` (pass any
    one-element array). Shapes as in :func:`forward_backward_batch`, and
    grad_acc (n_acc, len(w)), hot_acc (n_acc, n_hot, Lp), zeroed.
    Returns the number of sequences that needed the log-space fallback.

    With ``grad_out`` (len(w),) and ``hot_out`` (n_hot, Lp), zeroed, the
    state sums are reduced by rounds: grad_acc (n_threads, len(w)) and
    hot_acc (n_threads, n_hot, Lp) are the threads' buffers (zeroed, and
    zeroed again on return), ``n_state_blocks`` blocks of sequences (a
    multiple of n_threads dividing n_acc) are computed n_threads at a time
    and added into the outputs in block order: the outputs get the sums of
    grad_acc and hot_acc of the call without them (with n_acc =
    n_state_blocks), added in block order, rounding included. Then ``code``
    has bit 58 set on the compact attributes of one block of sequences at
    most, and ``shared`` (sorted, intp) lists the compact entries of the
    others.
    """
    cdef int n_fallback
    cdef double[:, ::1] no_rows = np.zeros((1, 1))
    if grad_out is not None:
        if (hot_out is None or shared is None or n_state_blocks < 1 or n_state_blocks % n_threads
                or pair_acc.shape[0] % n_state_blocks or grad_acc.shape[0] < n_threads
                or hot_acc.shape[0] < n_threads or grad_acc.shape[1] != grad_out.shape[0]
                or hot_acc.shape[1] != hot_out.shape[0] or hot_acc.shape[2] != hot_out.shape[1]):
            raise ValueError("grad_out, hot_out: rounds of n_threads buffers and "
                             "n_state_blocks a multiple of n_threads dividing n_acc")
        with nogil:
            n_fallback = _batch_rounds(indptr, indices, data, binary, code, w, W_hot, grad_out,
                                       hot_out, grad_acc, hot_acc, transition, start, end,
                                       exp_trans, exp_start, exp_end, offsets, weights, log_z,
                                       pair_acc, direct_acc, boundary_acc, scratch, max_length,
                                       shift_start, shift_end, shift_trans, n_threads,
                                       n_state_blocks, shared, no_rows)
        return n_fallback
    with nogil:
        n_fallback = _batch(True, no_rows, no_rows, indptr, indices, data, binary, code, w,
                            W_hot, grad_acc, hot_acc, transition, start, end, exp_trans,
                            exp_start, exp_end, offsets, weights, log_z, pair_acc, direct_acc,
                            boundary_acc, scratch, max_length, shift_start, shift_end,
                            shift_trans, n_threads)
    return n_fallback


def exp_nonpositive(const double[::1] x, double[::1] out):
    """out = exp(x) by the kernels' vectorised exponential (x <= 0; low level, for tests)."""
    cdef Py_ssize_t i
    with nogil:
        for i in range(x.shape[0]):
            out[i] = exp_nonpos(x[i])
