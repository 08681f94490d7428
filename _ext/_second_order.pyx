# Exact inference for a second-order (label-trigram) linear-chain CRF.
#
# Design notes
# ------------
# * A sequence i occupies rows offsets[i]:offsets[i+1] of the unary potentials
#   U (n_tokens, L). Its score is start[y_0] + sum_t U[t, y_t]
#   + sum_{t>0} T[y_{t-1}, y_t] + sum_{t>1} W3[y_{t-2}, y_{t-1}, y_t]
#   + end[y_{T-1}] (Sha & Pereira 2003; McDonald et al. 2005).
# * A second-order chain over L labels is a first-order chain over the label
#   pairs (b, c) = (y_{t-1}, y_t), whose transitions (a, b) -> (b, c) are
#   sparse. Only the P allowed pairs of a boolean mask are states (pair p is
#   (pair_first[p], pair_last[p]), in row-major order, so that the pairs
#   leaving label b are out_ptr[b]:out_ptr[b+1]); the pairs entering b,
#   (a, b), are in_pair[in_ptr[b]:in_ptr[b+1]]. The edges through b form a
#   dense block of n_in(b) x n_out(b) weights from blk_ptr[b], row i for the
#   i-th pair entering b (exp(T[b, c] + W3[a, b, c] - shift) for sum-product,
#   the score itself for max-product): a step is, per middle label b, a
#   small vector-matrix product over contiguous rows, which the compiler
#   vectorises (rather than a gather per edge). Position 0 has the L single
#   labels as states, position 1 reaches the pairs through T alone
#   (pair_weight). The cost per token is the number of allowed triples, not
#   L^3.
# * Sum-product is scaled as _forward_backward.pyx's (Rabiner 1989): every
#   alpha row is normalised to sum 1 and the log of its normaliser kept; the
#   exponentials of the transition tables are taken once per call by the
#   Python wrapper (shifted by their maximum), those of U once per token
#   (shifted by the row's maximum). A sequence whose normaliser underflows or
#   whose backward rows overflow is reported (failed[i] = 1) and left to the
#   caller's log-space path, as is every sequence the caller marks in
#   ``failed`` on entry; its accumulators are not touched.
# * Chunks of 8 sequences run in parallel (OpenMP prange, static schedule,
#   chunk c on thread c % n_threads); chunk c adds into accumulator block
#   c % n_acc, and the caller sums the blocks in order: with n_acc a multiple
#   of n_threads the sums do not depend on the number of threads (as in
#   _forward_backward.pyx, accumulator_blocks).

import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport exp, log, isfinite, INFINITY


def second_order_scratch_width(Py_ssize_t n_labels, Py_ssize_t n_pairs, Py_ssize_t max_length):
    """Doubles of scratch per thread for sequences of at most ``max_length`` tokens (low level)."""
    cdef Py_ssize_t W = max(n_labels, n_pairs)
    return 2 * max_length * W + max_length * n_labels + max_length + W + 1


cdef inline bint _scale_ok(double c) noexcept nogil:
    return c > 1e-300 and isfinite(c)


cdef inline void _blocks_axpy(
    const double* x, const double* M, double* out, bint outer, Py_ssize_t L,
    const Py_ssize_t* out_ptr, const Py_ssize_t* in_ptr, const Py_ssize_t* in_pair,
    const Py_ssize_t* blk_ptr,
) noexcept nogil:
    """Per middle label b, row i of its block: dst += x[pair i into b] * src (n_out(b) wide).

    outer=False: out (pairs) += x @ M's blocks (the forward step);
    outer=True: out's blocks (triples) += outer(x into b, M out of b) (the edge sums).
    """
    cdef Py_ssize_t b, i, j, o0, n_out
    cdef double xi
    cdef double* dst
    cdef const double* src
    for b in range(L):
        o0 = out_ptr[b]
        n_out = out_ptr[b + 1] - o0
        for i in range(in_ptr[b + 1] - in_ptr[b]):
            xi = x[in_pair[in_ptr[b] + i]]
            if xi == 0.0:
                continue
            if outer:
                dst = out + blk_ptr[b] + i * n_out
                src = M + o0
            else:
                dst = out + o0
                src = M + blk_ptr[b] + i * n_out
            for j in range(n_out):
                dst[j] = dst[j] + xi * src[j]


cdef int _sequence(
    const double* U, Py_ssize_t n, Py_ssize_t L, Py_ssize_t P,
    const double* es, const double* ee, const double* e2, const Py_ssize_t* pb,
    const Py_ssize_t* pc, const Py_ssize_t* out_ptr, const Py_ssize_t* in_ptr,
    const Py_ssize_t* in_pair, const Py_ssize_t* blk_ptr, const double* e3, double weight,
    double* marg, double* log_z, double* pair_acc, double* triple_acc, double* start_acc,
    double* end_acc, double* work,
) noexcept nogil:
    """Scaled forward-backward of one sequence over pair states; 1 if it failed."""
    cdef Py_ssize_t W = L if L > P else P
    cdef double* alpha = work
    cdef double* beta = alpha + n * W
    cdef double* psi = beta + n * W
    cdef double* rs = psi + n * L
    cdef double* v_row = rs + n
    cdef Py_ssize_t t, j, p, b, i, o0, n_out
    cdef double m, c, s, v, lz = 0.0
    cdef const double* row
    for t in range(n):
        m = -INFINITY
        for j in range(L):
            if U[t * L + j] > m:
                m = U[t * L + j]
        if not isfinite(m):
            return 1
        lz += m
        for j in range(L):
            psi[t * L + j] = exp(U[t * L + j] - m)
    # Forward.
    c = 0.0
    for j in range(L):
        alpha[j] = es[j] * psi[j]
        c += alpha[j]
    if not _scale_ok(c):
        return 1
    rs[0] = 1.0 / c
    lz += log(c)
    for j in range(L):
        alpha[j] *= rs[0]
    for t in range(1, n):
        if t == 1:
            for p in range(P):
                alpha[W + p] = alpha[pb[p]] * e2[p]
        else:  # per middle label: alpha[t-1] (pairs into b) @ block
            for p in range(P):
                alpha[t * W + p] = 0.0
            _blocks_axpy(alpha + (t - 1) * W, e3, alpha + t * W, False, L, out_ptr, in_ptr,
                         in_pair, blk_ptr)
        c = 0.0
        for p in range(P):
            s = alpha[t * W + p] * psi[t * L + pc[p]]
            alpha[t * W + p] = s
            c += s
        if not _scale_ok(c):
            return 1
        rs[t] = 1.0 / c
        lz += log(c)
        for p in range(P):
            alpha[t * W + p] *= rs[t]
    # End.
    c = 0.0
    if n == 1:
        for j in range(L):
            c += alpha[j] * ee[j]
    else:
        for p in range(P):
            c += alpha[(n - 1) * W + p] * ee[pc[p]]
    if not _scale_ok(c):
        return 1
    lz += log(c)
    if n == 1:
        for j in range(L):
            beta[j] = ee[j] / c
    else:
        for p in range(P):
            beta[(n - 1) * W + p] = ee[pc[p]] / c
    # Backward: beta[t-1] from beta[t], scattered along the edges.
    for t in range(n - 1, 0, -1):
        for p in range(P):
            v_row[p] = psi[t * L + pc[p]] * beta[t * W + p] * rs[t]
        if t == 1:
            for j in range(L):
                beta[j] = 0.0
            for p in range(P):
                beta[pb[p]] += e2[p] * v_row[p]
        else:
            for b in range(L):  # block @ v (pairs out of b), per pair into b
                o0 = out_ptr[b]
                n_out = out_ptr[b + 1] - o0
                for i in range(in_ptr[b + 1] - in_ptr[b]):
                    row = e3 + blk_ptr[b] + i * n_out
                    s = 0.0
                    for j in range(n_out):
                        s = s + row[j] * v_row[o0 + j]
                    beta[(t - 1) * W + in_pair[in_ptr[b] + i]] = s
        s = 0.0
        for j in range(L if t == 1 else P):
            s += beta[(t - 1) * W + j]
        if not isfinite(s):
            return 1
    # Success: marginals and the weighted sums.
    log_z[0] = lz
    for j in range(L):
        marg[j] = alpha[j] * beta[j]
        start_acc[j] += weight * marg[j]
    for t in range(1, n):
        for j in range(L):
            marg[t * L + j] = 0.0
        for p in range(P):
            v = alpha[t * W + p] * beta[t * W + p]
            marg[t * L + pc[p]] += v
            pair_acc[p] += weight * v
            v_row[p] = weight * psi[t * L + pc[p]] * beta[t * W + p] * rs[t]
        if t >= 2:  # the outer products alpha[t-1] (into b) x v (out of b)
            _blocks_axpy(alpha + (t - 1) * W, v_row, triple_acc, True, L, out_ptr, in_ptr,
                         in_pair, blk_ptr)
    for j in range(L):
        end_acc[j] += weight * marg[(n - 1) * L + j]
    return 0


def second_order_forward_backward_batch(
    const double[:, ::1] unary, const double[::1] exp_start, const double[::1] exp_end,
    const double[::1] exp_pair, const Py_ssize_t[::1] pair_first,
    const Py_ssize_t[::1] pair_last, const Py_ssize_t[::1] out_ptr,
    const Py_ssize_t[::1] in_ptr, const Py_ssize_t[::1] in_pair,
    const Py_ssize_t[::1] blk_ptr, const double[::1] exp_triple,
    const Py_ssize_t[::1] offsets, const double[::1] weights, double[:, ::1] marginals,
    double[::1] log_z, signed char[::1] failed, double[:, ::1] pair_acc,
    double[:, ::1] triple_acc, double[:, ::1] boundary_acc, double[:, ::1] scratch,
    int n_threads,
):
    """Scaled second-order forward-backward over a batch of sequences (low level).

    Use :func:`sklearn_crfloss.inference.second_order_forward_backward`,
    which builds the tables, adds back the shifts and runs the log-space
    path of the failed sequences. Shapes: unary, marginals (n_tokens, L);
    exp_start, exp_end (L,); exp_pair, pair_first, pair_last (P,); out_ptr,
    in_ptr, blk_ptr (L + 1,); in_pair (P,); exp_triple (n_edges,) in the
    block order (:class:`~sklearn_crfloss.inference.PairStates`); offsets
    (n_sequences + 1,);
    weights, log_z, failed (n_sequences,); pair_acc (n_acc, P), triple_acc
    (n_acc, n_edges), boundary_acc (n_acc, 2 * L), zeroed, n_acc a multiple
    of n_threads; scratch (n_threads, second_order_scratch_width(L, P,
    max_length)). ``failed[i] = 1`` on entry skips sequence i; on return it
    marks the sequences left to the caller (their marginals and log_z are
    not written). log_z is without the shifts; triple_acc holds the edge
    sums still to be multiplied by exp_triple. Every sequence must be
    non-empty.
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t n_chunks = (n_seq + 7) // 8
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t P = pair_first.shape[0]
    cdef Py_ssize_t n_acc = pair_acc.shape[0]
    cdef Py_ssize_t ch, i, a, s, n
    cdef int tid
    with nogil:
        for ch in prange(n_chunks, num_threads=n_threads, schedule='static', chunksize=1):
            tid = threadid()
            a = ch % n_acc
            for i in range(8 * ch, min(8 * ch + 8, n_seq)):
                if failed[i]:
                    continue
                s = offsets[i]
                n = offsets[i + 1] - s
                failed[i] = _sequence(
                    &unary[s, 0], n, L, P, &exp_start[0], &exp_end[0], &exp_pair[0],
                    &pair_first[0], &pair_last[0], &out_ptr[0], &in_ptr[0], &in_pair[0],
                    &blk_ptr[0], &exp_triple[0], weights[i], &marginals[s, 0], &log_z[i],
                    &pair_acc[a, 0],
                    &triple_acc[a, 0], &boundary_acc[a, 0], &boundary_acc[a, L],
                    &scratch[tid, 0])


cdef void _viterbi(
    const double* U, Py_ssize_t n, Py_ssize_t L, Py_ssize_t P, const double* start,
    const double* end, const double* s2, const Py_ssize_t* pb, const Py_ssize_t* pc,
    const Py_ssize_t* out_ptr, const Py_ssize_t* in_ptr, const Py_ssize_t* in_pair,
    const Py_ssize_t* blk_ptr, const double* s3, Py_ssize_t* path, double* score,
    double* delta, Py_ssize_t* back,
) noexcept nogil:
    """Second-order Viterbi of one sequence (max-product over pair states)."""
    cdef Py_ssize_t W = L if L > P else P
    cdef Py_ssize_t t, j, p, b, i, o0, n_out, arg, q
    cdef double best, x
    cdef double* d
    cdef Py_ssize_t* bk
    cdef const double* row
    for j in range(L):
        delta[j] = start[j] + U[j]
    for t in range(1, n):
        if t == 1:
            for p in range(P):
                delta[W + p] = delta[pb[p]] + s2[p]
                back[W + p] = pb[p]
        else:
            for b in range(L):  # max-plus over the pairs into b, row by row
                o0 = out_ptr[b]
                n_out = out_ptr[b + 1] - o0
                d = delta + t * W + o0
                bk = back + t * W + o0
                for j in range(n_out):
                    d[j] = -INFINITY
                    bk[j] = -1
                for i in range(in_ptr[b + 1] - in_ptr[b]):
                    q = in_pair[in_ptr[b] + i]
                    x = delta[(t - 1) * W + q]
                    row = s3 + blk_ptr[b] + i * n_out
                    for j in range(n_out):
                        if x + row[j] > d[j] or bk[j] < 0:
                            d[j] = x + row[j]
                            bk[j] = q
        for p in range(P):
            delta[t * W + p] += U[t * L + pc[p]]
    best = -INFINITY
    arg = 0
    for j in range(L if n == 1 else P):
        x = delta[(n - 1) * W + j] + end[j if n == 1 else pc[j]]
        if x > best:
            best = x
            arg = j
    score[0] = best
    if n == 1:
        path[0] = arg
        return
    p = arg
    for t in range(n - 1, 0, -1):
        path[t] = pc[p]
        q = back[t * W + p]
        if t == 1:
            path[0] = q if q >= 0 else pb[p]
        elif q < 0:  # no allowed predecessor (score -inf): any labels
            for j in range(t):
                path[j] = pb[p]
            return
        p = q


def second_order_viterbi_batch(
    const double[:, ::1] unary, const double[::1] start, const double[::1] end,
    const double[::1] pair_score, const Py_ssize_t[::1] pair_first,
    const Py_ssize_t[::1] pair_last, const Py_ssize_t[::1] out_ptr,
    const Py_ssize_t[::1] in_ptr, const Py_ssize_t[::1] in_pair,
    const Py_ssize_t[::1] blk_ptr, const double[::1] triple_score,
    const Py_ssize_t[::1] offsets, Py_ssize_t[::1] path, double[::1] score,
    double[:, ::1] scratch, Py_ssize_t[:, ::1] back, int n_threads,
):
    """Second-order Viterbi over a batch of sequences (low level).

    Use :func:`sklearn_crfloss.inference.second_order_viterbi`. Tables as
    in :func:`second_order_forward_backward_batch`, with scores in place of
    their exponentials (pair_score[p] = T[b, c], triple_score[k] = T[b, c]
    + W3[a, b, c]). path (n_tokens,) receives the label indices, score
    (n_sequences,) the best score (-inf if no path is allowed); scratch and
    back (n_threads, max_length * max(L, P)). Every sequence non-empty.
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t P = pair_first.shape[0]
    cdef Py_ssize_t i, s
    cdef int tid
    with nogil:
        for i in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            tid = threadid()
            s = offsets[i]
            _viterbi(&unary[s, 0], offsets[i + 1] - s, L, P, &start[0], &end[0],
                     &pair_score[0], &pair_first[0], &pair_last[0], &out_ptr[0], &in_ptr[0],
                     &in_pair[0], &blk_ptr[0], &triple_score[0], &path[s], &score[i],
                     &scratch[tid, 0], &back[tid, 0])
