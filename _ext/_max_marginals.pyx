# Max-marginals and segment margins for minimum classification error
# training (Suzuki et al. 2006): the forward and backward Viterbi tables
# (max-marginals, Eq. 14) and, for given segments, the best score with and
# without the segment's labels on its span (Eq. 15) with the path-count
# gradients (MCE-F, section 4.2).
#
# Design notes
# ------------
# * Everything runs in the score (log) domain with additions and comparisons
#   only. Ties are broken towards the smallest label index, as in
#   _viterbi.pyx; the max-plus step, the backtrace and the Viterbi over
#   (label, deviated) states are the inline helpers of _chain.pxd.
# * The segment kernel reads the max-marginal tables: it enters a span
#   through alpha, runs the deviated-state Viterbi over the span, and leaves
#   through beta; the best full paths are completed with the tables'
#   backpointers.
# * prange runs over sequences; the rows of the unary gradient belong to one
#   sequence, the transition/start/end sums go to per-thread accumulators
#   that the Python wrapper adds up.
# * Transitions come as a table of (L, L) matrices and an index: the matrix
#   index[t] scores the edge into token t (observation-dependent label
#   bigrams); with an empty index the table's one matrix scores every edge
#   (the plain chain, the fast path). The transition accumulators then have
#   one (L, L) block per matrix.
# * The segment kernel also reads a segment's best competitor off the
#   max-marginal tables (mode 3: the best max-marginal over the span's tokens
#   and the labels off the segment's, O(span L)) and keeps its (token,
#   label); the gradient is added later from those nodes (mode 2): MCE-F
#   knows its coefficients only once every margin of the batch is known.
#   Mode 2 counts the best prefixes and suffixes of all of a sequence's paths
#   at once, as node weights swept back and forth through the backpointers.

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY

from _chain cimport argmax_sum, backtrace, deviated_backtrace, deviated_viterbi_at, max_plus_step


cdef extern from *:
    """
    /* The backward max-plus step: cur[j] = max_i (M[i, j] + u[i]) + b[i],
       bp[j] = the first such i, with M the transpose of the transitions
       (its rows contiguous). Restrict pointers and a plain row loop: it
       compiles to vector compare-and-select like crf_max_plus (_chain.pxd),
       with the AVX2 version picked at run time in a portable build. The
       sums are rounded as ((T + U) + beta), as the other kernels do. */
    static inline __attribute__((always_inline)) void crf_max_plus_back_generic(
            const double* restrict u, const double* restrict b, const double* restrict M,
            double* restrict cur, int* restrict bp, ptrdiff_t L) {
        for (ptrdiff_t j = 0; j < L; j++) { cur[j] = -INFINITY; bp[j] = 0; }
        for (ptrdiff_t i = 0; i < L; i++) {
            const double c = u[i], d = b[i];
            const double* restrict row = M + i * L;
            for (ptrdiff_t j = 0; j < L; j++) {
                const double v = (row[j] + c) + d;
                if (v > cur[j]) { cur[j] = v; bp[j] = (int)i; }
            }
        }
    }
    #ifdef CRF_DISPATCH
    __attribute__((target("avx2,fma"))) static void crf_max_plus_back_avx2(
            const double* u, const double* b, const double* M, double* cur, int* bp,
            ptrdiff_t L) {
        crf_max_plus_back_generic(u, b, M, cur, bp, L);
    }
    #endif
    static inline void crf_max_plus_back(const double* u, const double* b, const double* M,
                                         double* cur, int* bp, ptrdiff_t L) {
    #ifdef CRF_DISPATCH
        if (crf_has_avx2()) { crf_max_plus_back_avx2(u, b, M, cur, bp, L); return; }
    #endif
        crf_max_plus_back_generic(u, b, M, cur, bp, L);
    }
    /* The same maximum without backpointers: a plain vector max. */
    static inline __attribute__((always_inline)) void crf_max_back_generic(
            const double* restrict u, const double* restrict b, const double* restrict M,
            double* restrict cur, ptrdiff_t L) {
        for (ptrdiff_t j = 0; j < L; j++) cur[j] = -INFINITY;
        for (ptrdiff_t i = 0; i < L; i++) {
            const double c = u[i], d = b[i];
            const double* restrict row = M + i * L;
            for (ptrdiff_t j = 0; j < L; j++) {
                const double v = (row[j] + c) + d;
                cur[j] = v > cur[j] ? v : cur[j];
            }
        }
    }
    #ifdef CRF_DISPATCH
    __attribute__((target("avx2,fma"))) static void crf_max_back_avx2(
            const double* u, const double* b, const double* M, double* cur, ptrdiff_t L) {
        crf_max_back_generic(u, b, M, cur, L);
    }
    #endif
    static inline void crf_max_back(const double* u, const double* b, const double* M,
                                    double* cur, ptrdiff_t L) {
    #ifdef CRF_DISPATCH
        if (crf_has_avx2()) { crf_max_back_avx2(u, b, M, cur, L); return; }
    #endif
        crf_max_back_generic(u, b, M, cur, L);
    }
    """
    void max_back "crf_max_back"(const double* u, const double* b, const double* M,
                                 double* cur, Py_ssize_t L) noexcept nogil
    void max_plus_back "crf_max_plus_back"(const double* u, const double* b, const double* M,
                                           double* cur, int* bp, Py_ssize_t L) noexcept nogil


cdef inline const double* _matrix(const double* table, const Py_ssize_t* index, Py_ssize_t t,
                                  Py_ssize_t L) noexcept nogil:
    # The (L, L) matrix of the edge into token t.
    return table if index == NULL else table + index[t] * L * L


cdef inline const Py_ssize_t* _index_ptr(const Py_ssize_t[::1] index) noexcept nogil:
    # NULL for an empty index: one matrix for every edge.
    return &index[0] if index.shape[0] else NULL


cdef void _max_marginals_sequence(
    const double[:, ::1] unary, const double* table, const double* table_t,
    const Py_ssize_t* index, const double[::1] start, const double[::1] end,
    Py_ssize_t s, Py_ssize_t e,
    double[:, ::1] alpha, double[:, ::1] beta,
    int[:, ::1] bp_fwd, int[:, ::1] bp_bwd, bint with_bp_bwd,
) noexcept nogil:
    # Forward: the max-plus step of _chain.pxd. Backward: the same with the
    # previous label outermost over the contiguous rows of the transpose
    # (max_plus_back), so that the inner loop vectorises too; strict '>' over
    # increasing i keeps the smallest label among ties.
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, j
    for j in range(L):
        alpha[s, j] = start[j] + unary[s, j]
        bp_fwd[s, j] = 0
    for t in range(s + 1, e):
        max_plus_step(&alpha[t - 1, 0], _matrix(table, index, t, L), &alpha[t, 0],
                      &bp_fwd[t, 0], L, 0)
        for j in range(L):
            alpha[t, j] += unary[t, j]
    for j in range(L):
        beta[e - 1, j] = end[j]
        if with_bp_bwd:
            bp_bwd[e - 1, j] = 0
    for t in range(e - 2, s - 1, -1):
        # (T + U) + beta, as the other kernels round
        if not with_bp_bwd:
            max_back(&unary[t + 1, 0], &beta[t + 1, 0], _matrix(table_t, index, t + 1, L),
                     &beta[t, 0], L)
            continue
        max_plus_back(&unary[t + 1, 0], &beta[t + 1, 0], _matrix(table_t, index, t + 1, L),
                      &beta[t, 0], &bp_bwd[t, 0], L)


def max_marginals_batch(
    const double[:, ::1] unary, const double[:, :, ::1] table,
    const double[:, :, ::1] table_t, const Py_ssize_t[::1] index,
    const double[::1] start, const double[::1] end,
    const Py_ssize_t[::1] offsets, double[:, ::1] alpha, double[:, ::1] beta,
    int[:, ::1] bp_fwd, int[:, ::1] bp_bwd, int n_threads, bint with_bp_bwd=True,
):
    """Forward and backward Viterbi tables of a batch (low level).

    Use :func:`sklearn_crfloss.inference.max_marginals`. ``alpha[t, j]`` is
    the best score of a prefix ending with label j at t (its unary
    included), ``beta[t, j]`` the best score of the rest of the sequence
    after t given label j at t; ``bp_fwd[t, j]`` / ``bp_bwd[t, j]`` the label
    at t - 1 / t + 1 on those best paths. All of shape (n_tokens, L).
    ``table`` (n_matrices, L, L): the matrix ``index[t]`` scores the edge
    into token t, or the one matrix of a (1, L, L) table every edge when
    ``index`` is empty; ``table_t`` holds the matrices' contiguous transposes.
    Without ``with_bp_bwd`` bp_bwd is not written (any (1, L) array will do;
    :func:`max_incorrect_from_tables` and the segment kernel's modes 2 and 3
    recompute the few backward pointers they follow).
    """
    cdef Py_ssize_t k
    cdef const Py_ssize_t* idx = _index_ptr(index)
    with nogil:
        for k in prange(offsets.shape[0] - 1, num_threads=n_threads, schedule='static',
                        chunksize=8):
            if offsets[k + 1] > offsets[k]:
                _max_marginals_sequence(unary, &table[0, 0, 0], &table_t[0, 0, 0], idx, start,
                                        end, offsets[k], offsets[k + 1], alpha, beta, bp_fwd,
                                        bp_bwd, with_bp_bwd)


cdef inline Py_ssize_t _next_label(
    const double[:, ::1] unary, const double* table, const Py_ssize_t* index,
    const double[:, ::1] beta, Py_ssize_t t, Py_ssize_t j, Py_ssize_t L,
) noexcept nogil:
    # The label at t + 1 on the best suffix after label j at t: the backward
    # pointer of max_plus_back, recomputed with its rounding and ties.
    cdef const double* row = _matrix(table, index, t + 1, L) + j * L
    cdef Py_ssize_t i, arg = 0
    cdef double v, best = -INFINITY
    for i in range(L):
        v = (row[i] + unary[t + 1, i]) + beta[t + 1, i]
        if v > best:
            best = v
            arg = i
    return arg


def max_incorrect_from_tables(
    const double[:, ::1] unary, const double[:, :, ::1] table, const Py_ssize_t[::1] index,
    const double[:, ::1] alpha, const double[:, ::1] beta, const int[:, ::1] bp_fwd,
    const Py_ssize_t[::1] offsets, const Py_ssize_t[::1] ref,
    bint exclude, Py_ssize_t[::1] path, double[::1] score, int n_threads,
):
    """Viterbi path, or best path different from ``ref``, read off max-marginal tables (low level).

    With ``exclude``: per sequence, the best ``alpha[t, j] + beta[t, j]``
    over the tokens t and labels ``j != ref[t]`` (Suzuki et al. 2006, Eq. 5:
    a sequence that differs from ``ref`` differs at some (t, j), and the
    best one through (t, j) is the max-marginal's), the first such (t, j) in
    token then label order among ties, completed through the backpointers;
    ``path = ref`` and ``score = -inf`` where there is none. Without: the
    Viterbi path (the best label at the last token). Empty sequences are
    skipped. Shapes as in :func:`max_marginals_batch` (the backward
    pointers are recomputed from the potentials); path (n_tokens,), score
    (n_sequences,).
    """
    cdef const Py_ssize_t* idx = _index_ptr(index)
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t L = alpha.shape[1]
    cdef Py_ssize_t k, s, e, t, j, bt, bj
    cdef double v, best
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            s = offsets[k]
            e = offsets[k + 1]
            if e == s:
                continue
            best = -INFINITY
            bt = -1
            bj = -1
            for t in range(s if exclude else e - 1, e):
                for j in range(L):
                    v = alpha[t, j] + beta[t, j]
                    if v > best and not (exclude and j == ref[t]):
                        best = v
                        bt = t
                        bj = j
            score[k] = best
            if bt < 0:
                for t in range(s, e):
                    path[t] = ref[t]
                continue
            path[bt] = bj
            backtrace(&bp_fwd[s, 0], &path[s], bt - s + 1, L)
            for t in range(bt, e - 1):
                path[t + 1] = _next_label(unary, &table[0, 0, 0], idx, beta, t, path[t], L)


cdef void _add_path(
    const Py_ssize_t* p, const Py_ssize_t* index, Py_ssize_t s, Py_ssize_t e, double c,
    Py_ssize_t L, double[:, ::1] d_unary, double* acc_trans, double* acc_start,
    double* acc_end,
) noexcept nogil:
    # Add c times the counts of the path p[0 .. e-s-1] of tokens s .. e-1
    # (the transitions into the block of the edge's matrix).
    cdef Py_ssize_t t
    acc_start[p[0]] += c
    acc_end[p[e - s - 1]] += c
    d_unary[s, p[0]] += c
    for t in range(s + 1, e):
        d_unary[t, p[t - s]] += c
        acc_trans[(0 if index == NULL else index[t] * L * L) + p[t - s - 1] * L + p[t - s]] += c


cdef void _complete_path(
    Py_ssize_t* p, Py_ssize_t s, Py_ssize_t e, Py_ssize_t a, Py_ssize_t b,
    const int[:, ::1] bp_fwd, const int[:, ::1] bp_bwd,
) noexcept nogil:
    # p[a-s .. b-1-s] is set; fill the best prefix and the best suffix.
    cdef Py_ssize_t L = bp_fwd.shape[1]
    cdef Py_ssize_t t
    backtrace(&bp_fwd[s, 0], p, a - s + 1, L)
    for t in range(b - 1, e - 1):
        p[t + 1 - s] = bp_bwd[t, p[t - s]]


cdef void _segment_margin(
    const double[:, ::1] unary, const double* table, const Py_ssize_t* index,
    const double[:, ::1] alpha, const double[:, ::1] beta,
    const int[:, ::1] bp_fwd, const int[:, ::1] bp_bwd,
    const Py_ssize_t[::1] ref,
    Py_ssize_t s, Py_ssize_t e, Py_ssize_t a, Py_ssize_t b,
    double* work, int* span_bp, Py_ssize_t* p,
    double* g_carry, double* g_other, double coef, double coef_other, bint do_grad,
    double[:, ::1] d_unary, double* acc_trans, double* acc_start, double* acc_end,
) noexcept nogil:
    # g_carry: best score of a sequence with labels ref[a:b] on tokens a..b-1
    # (Eq. 15). g_other: best score of a sequence whose labels on a..b-1
    # differ from ref[a:b] somewhere, by the deviated-state Viterbi restricted
    # to the span, entered through alpha and left through beta.
    # span_bp[(t - a) * L + j] is the previous label of the deviated state j
    # at t, or -1 when it left the reference labels at t.
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, jb
    cdef double d0
    cdef double* last = deviated_viterbi_at(&unary[a, 0], table,
                                            NULL if index == NULL else index + a, &ref[a],
                                            b - a, L, &alpha[a, 0], work, span_bp, &d0)
    g_carry[0] = d0 + beta[b - 1, ref[b - 1]]
    jb = argmax_sum(last, &beta[b - 1, 0], L, g_other)
    if not do_grad:
        return
    if coef != 0.0:
        # + coef * counts(best carrying path)
        for t in range(a, b):
            p[t - s] = ref[t]
        _complete_path(p, s, e, a, b, bp_fwd, bp_bwd)
        _add_path(p, index, s, e, coef, L, d_unary, acc_trans, acc_start, acc_end)
    if jb < 0 or coef_other == 0.0:
        return
    # - coef_other * counts(best path that does not carry the span's labels)
    p[b - 1 - s] = jb
    deviated_backtrace(span_bp, &ref[a], &p[a - s], b - a, L)
    _complete_path(p, s, e, a, b, bp_fwd, bp_bwd)
    _add_path(p, index, s, e, -coef_other, L, d_unary, acc_trans, acc_start, acc_end)


cdef void _segment_from_tables(
    const double[:, ::1] unary, const double* table, const Py_ssize_t* index,
    const double[:, ::1] alpha, const double[:, ::1] beta, const Py_ssize_t[::1] ref,
    Py_ssize_t a, Py_ssize_t b, bint need_other, double* g_carry, double* g_other,
    Py_ssize_t* node,
) noexcept nogil:
    # The same values read off the max-marginal tables: g_carry along ref's
    # labels on the span (alpha in, beta out), g_other the best
    # alpha[t, j] + beta[t, j] over the span's tokens t and labels j != ref[t]
    # (a sequence that leaves ref's labels on the span does so at some (t, j),
    # and the best one through (t, j) is the max-marginal's: O(span L), not
    # the span Viterbi's O(span L^2)). node = (t, j) of that max-marginal,
    # the first in token then label order among ties, or (-1, -1).
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, j
    cdef double v, best = -INFINITY
    cdef double d0 = alpha[a, ref[a]]
    cdef const double* M
    for t in range(a + 1, b):
        M = _matrix(table, index, t, L)
        d0 = d0 + M[ref[t - 1] * L + ref[t]] + unary[t, ref[t]]
    g_carry[0] = d0 + beta[b - 1, ref[b - 1]]
    node[0] = -1
    node[1] = -1
    if need_other:
        for t in range(a, b):
            for j in range(L):
                v = alpha[t, j] + beta[t, j]
                if v > best and j != ref[t]:
                    best = v
                    node[0] = t
                    node[1] = j
    g_other[0] = best


cdef inline Py_ssize_t _block(const Py_ssize_t* index, Py_ssize_t t, Py_ssize_t L) noexcept nogil:
    # Offset of the transition block of the edge into token t.
    return 0 if index == NULL else index[t] * L * L


cdef void _span_weights(
    const Py_ssize_t* lab, Py_ssize_t s, Py_ssize_t e, Py_ssize_t a, Py_ssize_t b, double c,
    const double[:, ::1] unary, const double* table, const Py_ssize_t* index,
    const double[:, ::1] beta, const int[:, ::1] bp_fwd, Py_ssize_t L,
    double* pre, double* suf, double[:, ::1] d_unary, double* acc_trans, double* acc_start,
    double* acc_end,
) noexcept nogil:
    # c times the counts of the best path with labels lab[0 .. b-a-1] on tokens
    # a .. b-1: the span's own counts now; its best prefix (suffix) as a node
    # weight at the token before (after) the span, spread by _sweep.
    cdef Py_ssize_t t, i
    for t in range(a, b):
        d_unary[t, lab[t - a]] += c
    for t in range(a + 1, b):
        acc_trans[_block(index, t, L) + lab[t - a - 1] * L + lab[t - a]] += c
    if a > s:
        i = bp_fwd[a, lab[0]]
        acc_trans[_block(index, a, L) + i * L + lab[0]] += c
        pre[(a - 1 - s) * L + i] += c
    else:
        acc_start[lab[0]] += c
    if b < e:
        i = _next_label(unary, table, index, beta, b - 1, lab[b - 1 - a], L)
        acc_trans[_block(index, b, L) + lab[b - 1 - a] * L + i] += c
        suf[(b - s) * L + i] += c
    else:
        acc_end[lab[b - 1 - a]] += c


cdef void _sweep(
    Py_ssize_t s, Py_ssize_t e, const double[:, ::1] unary, const double* table,
    const Py_ssize_t* index, const double[:, ::1] beta, const int[:, ::1] bp_fwd,
    Py_ssize_t L, double* pre, double* suf, double[:, ::1] d_unary,
    double* acc_trans, double* acc_start, double* acc_end,
) noexcept nogil:
    # The counts of the best prefixes (suffixes) weighted in pre (suf): one
    # pass back (forward) through the backpointers, O(n L) for all of them.
    cdef Py_ssize_t t, j, i
    cdef double w
    for t in range(e - 1, s - 1, -1):
        for j in range(L):
            w = pre[(t - s) * L + j]
            if w == 0.0:
                continue
            d_unary[t, j] += w
            if t > s:
                i = bp_fwd[t, j]
                acc_trans[_block(index, t, L) + i * L + j] += w
                pre[(t - 1 - s) * L + i] += w
            else:
                acc_start[j] += w
    for t in range(s, e):
        for j in range(L):
            w = suf[(t - s) * L + j]
            if w == 0.0:
                continue
            d_unary[t, j] += w
            if t < e - 1:
                i = _next_label(unary, table, index, beta, t, j, L)
                acc_trans[_block(index, t + 1, L) + j * L + i] += w
                suf[(t + 1 - s) * L + i] += w
            else:
                acc_end[j] += w


def segment_margins_batch(
    const double[:, ::1] unary, const double[:, :, ::1] table, const Py_ssize_t[::1] index,
    const double[:, ::1] alpha, const double[:, ::1] beta,
    const int[:, ::1] bp_fwd, const int[:, ::1] bp_bwd,
    const Py_ssize_t[::1] offsets, const Py_ssize_t[::1] ref,
    const Py_ssize_t[::1] seg_offsets, const Py_ssize_t[::1] seg_start,
    const Py_ssize_t[::1] seg_end, double[::1] g_carry, double[::1] g_other,
    const double[::1] coef, const double[::1] coef_other, int mode,
    const unsigned char[::1] need_other, Py_ssize_t[:, ::1] nodes_out, double[:, ::1] d_unary,
    double[:, ::1] acc_trans, double[:, ::1] acc_boundary,
    double[:, ::1] work, int[:, ::1] span_bp, Py_ssize_t[:, ::1] path, double[:, ::1] weights,
    int n_threads,
):
    """Segment discriminants (Eq. 15) and their gradients (low level).

    Use :func:`sklearn_crfloss.inference.segment_margins`. Segments of
    sequence k are ``seg_offsets[k]:seg_offsets[k + 1]``, spanning tokens
    ``seg_start[m]:seg_end[m]`` (absolute, end exclusive), with the labels
    ``ref`` on their span; ``table`` and ``index`` as in
    :func:`max_marginals_batch`. Modes:

    * 0: the values ``g_carry`` and ``g_other`` (the span's Viterbi over
      (label, deviated) states);
    * 1: the values, and ``coef[m] * counts of the best carrying path -
      coef_other[m] * counts of the best other path`` added to d_unary
      (n_tokens, L), acc_trans (n_acc, n_matrices * L * L) and acc_boundary
      (n_acc, 2 * L) (start then end), n_acc a multiple of n_threads (chunk
      c of 8 sequences adds into accumulator c % n_acc);
    * 3: the values read off the max-marginal tables (the same up to
      rounding and ties), ``g_other[m]`` only where ``need_other[m]`` (else
      -inf), and ``nodes_out[m]`` = the (token, label) of the max-marginal
      that gives ``g_other[m]``, or (-1, -1);
    * 2: the gradient of mode 1 alone, the other paths those through the
      nodes of mode 3; all the sequence's best prefixes and suffixes are
      counted in one pass back and one forward (weights: (n_threads, 2 *
      max_length * L)).

    work (n_threads, 2 * L), span_bp (n_threads, max_length * L), path
    (n_threads, max_length) are scratch of modes 0 and 1.
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t k, m, tid, a
    cdef Py_ssize_t n_acc = acc_trans.shape[0]
    cdef const Py_ssize_t* idx = _index_ptr(index)
    cdef Py_ssize_t s, e, j
    cdef double* pre
    cdef double* suf
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            tid = threadid()
            a = (k // 8) % n_acc  # the block's accumulator, as in _forward_backward
            if mode == 3:
                for m in range(seg_offsets[k], seg_offsets[k + 1]):
                    _segment_from_tables(unary, &table[0, 0, 0], idx, alpha, beta, ref,
                                         seg_start[m], seg_end[m], need_other[m] != 0,
                                         &g_carry[m], &g_other[m], &nodes_out[m, 0])
                continue
            if mode == 2:
                s = offsets[k]
                e = offsets[k + 1]
                pre = &weights[tid, 0]
                suf = pre + (e - s) * L
                for j in range(2 * (e - s) * L):
                    pre[j] = 0.0
                for m in range(seg_offsets[k], seg_offsets[k + 1]):
                    if coef[m] != 0.0:
                        _span_weights(&ref[seg_start[m]], s, e, seg_start[m], seg_end[m],
                                      coef[m], unary, &table[0, 0, 0], idx, beta, bp_fwd, L,
                                      pre, suf, d_unary,
                                      &acc_trans[a, 0], &acc_boundary[a, 0],
                                      &acc_boundary[a, L])
                    if coef_other[m] != 0.0 and nodes_out[m, 0] >= 0:
                        # the best path through the node: a one-token span
                        _span_weights(&nodes_out[m, 1], s, e, nodes_out[m, 0],
                                      nodes_out[m, 0] + 1, -coef_other[m], unary,
                                      &table[0, 0, 0], idx, beta, bp_fwd, L, pre, suf, d_unary,
                                      &acc_trans[a, 0],
                                      &acc_boundary[a, 0], &acc_boundary[a, L])
                _sweep(s, e, unary, &table[0, 0, 0], idx, beta, bp_fwd, L, pre, suf, d_unary,
                       &acc_trans[a, 0], &acc_boundary[a, 0], &acc_boundary[a, L])
                continue
            for m in range(seg_offsets[k], seg_offsets[k + 1]):
                _segment_margin(unary, &table[0, 0, 0], idx, alpha, beta, bp_fwd, bp_bwd, ref,
                                offsets[k], offsets[k + 1], seg_start[m], seg_end[m],
                                &work[tid, 0], &span_bp[tid, 0], &path[tid, 0],
                                &g_carry[m], &g_other[m], coef[m], coef_other[m], mode == 1,
                                d_unary, &acc_trans[a, 0], &acc_boundary[a, 0],
                                &acc_boundary[a, L])


# -- chunk queries (MCE-F with segment_match='chunks') -----------------------
#
# A query asks for the best score of a sequence that satisfies constraints on
# a span a..b-1, and the best score of one that violates them: every span
# token has a label of a given type, and the (previous, current) label pair
# at each boundary a..b is allowed by a mask of shape (L + 1, L) (row L: the
# sequence start), the boundary b only when b is inside the sequence. A
# Viterbi pass over the span's allowed labels, entered through alpha and left
# through beta (Suzuki et al. 2006, section 4.2), gives the first; the second
# is the best over the first violation: at some boundary the path leaves the
# constraints (a label of another type, or a forbidden pair), after which the
# best suffix is beta's. The values pass keeps both best paths' span labels;
# the gradient pass counts them, their prefixes and suffixes swept as in mode
# 2 of segment_margins_batch. The candidates over all L next labels are
# maxima of rows (vectorised); the argmax is looked up only when it wins.

cdef extern from *:
    """
    /* acc[c] = max(acc[c], (row[c] + x) + u[c]): one previous label's
       candidates, elementwise so that the loop vectorises. */
    static inline void crf_acc_max(const double* restrict row, double x,
                                   const double* restrict u, double* restrict acc,
                                   ptrdiff_t L) {
        for (ptrdiff_t c = 0; c < L; c++) {
            const double v = (row[c] + x) + u[c];
            acc[c] = v > acc[c] ? v : acc[c];
        }
    }
    /* The same into acc_in where mask[c] and acc_out elsewhere. */
    static inline void crf_acc_max_split(const double* restrict row, double x,
                                         const double* restrict u,
                                         const unsigned char* restrict mask,
                                         double* restrict acc_in, double* restrict acc_out,
                                         ptrdiff_t L) {
        for (ptrdiff_t c = 0; c < L; c++) {
            const double v = (row[c] + x) + u[c];
            const int k = mask[c] != 0;
            acc_in[c] = (k && v > acc_in[c]) ? v : acc_in[c];
            acc_out[c] = (!k && v > acc_out[c]) ? v : acc_out[c];
        }
    }
    """
    void acc_max "crf_acc_max"(const double* row, double x, const double* u, double* acc,
                               Py_ssize_t L) noexcept nogil
    void acc_max_split "crf_acc_max_split"(const double* row, double x, const double* u,
                                           const unsigned char* mask, double* acc_in,
                                           double* acc_out, Py_ssize_t L) noexcept nogil


cdef inline double _row_max(const double* x, Py_ssize_t L) noexcept nogil:
    cdef Py_ssize_t c
    cdef double best = -INFINITY
    for c in range(L):
        if x[c] > best:
            best = x[c]
    return best


cdef bint _locate(
    const Py_ssize_t* labels, Py_ssize_t n_prev, const double* prev, const double* M,
    const double* u, const unsigned char* mask, int want, double target, Py_ssize_t L,
    Py_ssize_t* p_out, Py_ssize_t* c_out,
) noexcept nogil:
    # The first (p, c), p over labels[:n_prev] then c, whose candidate
    # (prev[p] + M[p, c]) + u[c] equals target (with mask[p, c] == want when a
    # mask is given): the argmax the maxima above found.
    cdef Py_ssize_t m, p, c
    for m in range(n_prev):
        p = labels[m]
        for c in range(L):
            if mask != NULL and (mask[p * L + c] != 0) != want:
                continue
            if (M[p * L + c] + prev[p]) + u[c] == target:
                p_out[0] = p
                c_out[0] = c
                return True
    return False


cdef void _chunk_query(
    const double[:, ::1] unary, const double* table, const Py_ssize_t* index,
    const double[::1] start, const double[:, ::1] alpha, const double[:, ::1] beta,
    const unsigned char[:, :, ::1] masks, const Py_ssize_t[::1] label_type,
    const Py_ssize_t[::1] type_offsets, const Py_ssize_t[::1] type_labels,
    Py_ssize_t s, Py_ssize_t e, Py_ssize_t a, Py_ssize_t b, const Py_ssize_t* tok_type,
    const Py_ssize_t* inner, Py_ssize_t first, Py_ssize_t exit_mask, bint need_without,
    double* ok, int* bp, double* out_with, double* out_without, Py_ssize_t* how,
    Py_ssize_t* path_with, Py_ssize_t* path_without,
) noexcept nogil:
    # how = (kind, j, p, c) of the best violation (kind 0: a label c of another
    # type at a, through the max-marginal; 1: the edge p -> c into token a + j
    # leaves the constraints, p the ok state at a + j - 1, or the previous
    # label / L (start) for j = 0), (state, next) of the best satisfying path
    # (next = -1 at the sequence's end), then the label before a (or L) of the
    # satisfying and of the violating path. path_with[0 .. n-1] and
    # path_without[0 .. j-1] get their span labels. bp[j * L + c]: the ok
    # state before (label, or L at j = 0).
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t n = b - a
    cdef Py_ssize_t j, t, p, c, m, q, mp, ty
    cdef double v, val, op, best_with = -INFINITY, bv = -INFINITY
    cdef double* prev = ok
    cdef double* cur = ok + L
    cdef double* u = ok + 2 * L
    cdef double* acc = ok + 3 * L
    cdef double* acc_out = ok + 4 * L
    cdef double* tmp
    cdef const double* M
    cdef const unsigned char* mk
    for j in range(8):
        how[j] = -1
    ty = tok_type[0]
    for c in range(L):
        cur[c] = -INFINITY
    if need_without:  # another type at token a
        for c in range(L):
            if label_type[c] != ty:
                v = alpha[a, c] + beta[a, c]
                if v > bv:
                    bv = v
                    how[0] = 0; how[1] = 0; how[2] = 0; how[3] = c
    mk = &masks[first, 0, 0]
    M = _matrix(table, index, a, L)
    for p in range(L + 1):
        if p == L:
            if a > s:
                continue
            op = 0.0
        elif a == s:
            continue
        else:
            op = alpha[a - 1, p]
        for m in range(type_offsets[ty], type_offsets[ty + 1]):
            c = type_labels[m]
            v = op + (start[c] if p == L else M[p * L + c])
            if mk[p * L + c]:
                if v > cur[c]:
                    cur[c] = v
                    bp[c] = <int>p
            elif need_without:
                val = v + (unary[a, c] + beta[a, c])
                if val > bv:
                    bv = val
                    how[0] = 1; how[1] = 0; how[2] = p; how[3] = c
    for m in range(type_offsets[ty], type_offsets[ty + 1]):
        cur[type_labels[m]] += unary[a, type_labels[m]]
    for j in range(1, n):
        t = a + j
        tmp = prev
        prev = cur
        cur = tmp
        for c in range(L):
            cur[c] = -INFINITY
        mp = tok_type[j - 1]
        ty = tok_type[j]
        M = _matrix(table, index, t, L)
        mk = &masks[inner[j], 0, 0]
        if need_without:  # another type at token t
            for c in range(L):
                u[c] = (unary[t, c] + beta[t, c]) if label_type[c] != ty else -INFINITY
                acc[c] = -INFINITY
            for m in range(type_offsets[mp], type_offsets[mp + 1]):
                p = type_labels[m]
                if prev[p] > -INFINITY:
                    acc_max(M + p * L, prev[p], u, acc, L)
            val = _row_max(acc, L)
            if val > bv and _locate(&type_labels[type_offsets[mp]],
                                    type_offsets[mp + 1] - type_offsets[mp], prev, M, u, NULL,
                                    0, val, L, &how[2], &how[3]):
                bv = val
                how[0] = 1
                how[1] = j
        for m in range(type_offsets[mp], type_offsets[mp + 1]):
            p = type_labels[m]
            for q in range(type_offsets[ty], type_offsets[ty + 1]):
                c = type_labels[q]
                v = prev[p] + M[p * L + c]
                if mk[p * L + c]:
                    if v > cur[c]:
                        cur[c] = v
                        bp[j * L + c] = <int>p
                elif need_without:
                    val = v + (unary[t, c] + beta[t, c])
                    if val > bv:
                        bv = val
                        how[0] = 1; how[1] = j; how[2] = p; how[3] = c
        for m in range(type_offsets[ty], type_offsets[ty + 1]):
            cur[type_labels[m]] += unary[t, type_labels[m]]
    ty = tok_type[n - 1]
    if b < e:  # leaving the span through the boundary b
        M = _matrix(table, index, b, L)
        mk = &masks[exit_mask, 0, 0]
        for c in range(L):
            u[c] = unary[b, c] + beta[b, c]
            acc[c] = -INFINITY
            acc_out[c] = -INFINITY
        for m in range(type_offsets[ty], type_offsets[ty + 1]):
            p = type_labels[m]
            if cur[p] > -INFINITY:
                acc_max_split(M + p * L, cur[p], u, mk + p * L, acc, acc_out, L)
        val = _row_max(acc, L)
        if val > -INFINITY and _locate(&type_labels[type_offsets[ty]],
                                       type_offsets[ty + 1] - type_offsets[ty], cur, M, u, mk,
                                       1, val, L, &how[4], &how[5]):
            best_with = val
        val = _row_max(acc_out, L)
        if need_without and val > bv and _locate(&type_labels[type_offsets[ty]],
                                                 type_offsets[ty + 1] - type_offsets[ty], cur,
                                                 M, u, mk, 0, val, L, &how[2], &how[3]):
            bv = val
            how[0] = 1
            how[1] = n
    else:  # the sequence ends with the span
        for m in range(type_offsets[ty], type_offsets[ty + 1]):
            p = type_labels[m]
            val = cur[p] + beta[b - 1, p]
            if val > best_with:
                best_with = val
                how[4] = p
    out_with[0] = best_with
    out_without[0] = bv if need_without else -INFINITY
    if how[4] >= 0:  # the span labels of the two paths, through the backpointers
        p = how[4]
        for j in range(n - 1, -1, -1):
            path_with[j] = p
            p = bp[j * L + p]
        how[6] = p
    if need_without and how[0] == 1 and how[1] > 0:
        p = how[2]
        for j in range(how[1] - 1, -1, -1):
            path_without[j] = p
            p = bp[j * L + p]
        how[7] = p


cdef void _count_span(
    const Py_ssize_t* lab, Py_ssize_t p0, const Py_ssize_t* index, Py_ssize_t s,
    Py_ssize_t a, Py_ssize_t n, double w, Py_ssize_t L, double* pre,
    double[:, ::1] d_unary, double* acc_trans, double* acc_start,
) noexcept nogil:
    # w times the counts of the labels lab[0 .. n-1] on tokens a .. a+n-1
    # entered from p0 at a - 1 (L: the sequence start), whose best prefix
    # becomes a node weight before a.
    cdef Py_ssize_t j
    for j in range(n):
        d_unary[a + j, lab[j]] += w
        if j > 0:
            acc_trans[_block(index, a + j, L) + lab[j - 1] * L + lab[j]] += w
    if p0 == L:
        acc_start[lab[0]] += w
    else:
        acc_trans[_block(index, a, L) + p0 * L + lab[0]] += w
        pre[(a - 1 - s) * L + p0] += w


def chunk_queries_batch(
    const double[:, ::1] unary, const double[:, :, ::1] table, const Py_ssize_t[::1] index,
    const double[::1] start, const double[:, ::1] alpha, const double[:, ::1] beta,
    const int[:, ::1] bp_fwd, const Py_ssize_t[::1] offsets,
    const unsigned char[:, :, ::1] masks, const Py_ssize_t[::1] label_type,
    const Py_ssize_t[::1] type_offsets, const Py_ssize_t[::1] type_labels,
    const Py_ssize_t[::1] q_offsets, const Py_ssize_t[::1] q_begin,
    const Py_ssize_t[::1] q_end, const Py_ssize_t[::1] q_tokens,
    const Py_ssize_t[::1] tok_type, const Py_ssize_t[::1] inner,
    const Py_ssize_t[::1] first, const Py_ssize_t[::1] exit_mask,
    const unsigned char[::1] need_without, double[::1] with_, double[::1] without,
    Py_ssize_t[:, ::1] how, Py_ssize_t[::1] path_with, Py_ssize_t[::1] path_without,
    const double[::1] coef_with, const double[::1] coef_without, bint do_grad,
    double[:, ::1] d_unary, double[:, ::1] acc_trans, double[:, ::1] acc_boundary,
    double[:, ::1] work, int[:, ::1] span_bp, int n_threads,
):
    """Chunk constraints on spans: best scores with and without them, and gradients (low level).

    Use :func:`sklearn_crfloss.losses._chunks.chunk_margins`. Query m of
    sequence k (``q_offsets[k] <= m < q_offsets[k + 1]``) spans the tokens
    ``q_begin[m]:q_end[m]`` (absolute, end exclusive); its token j must have
    a label of type ``tok_type[q_tokens[m] + j]`` (labels of type t:
    ``type_labels[type_offsets[t]:type_offsets[t + 1]]``, increasing), the
    label pair (p, c) at the boundary before token j must have
    ``masks[inner[q_tokens[m] + j], p, c]`` (j >= 1), ``masks[first[m], p,
    c]`` at the span's first token (p = L: the sequence start) and
    ``masks[exit_mask[m], p, c]`` into the token after the span, if any.

    Without ``do_grad``: ``with_[m]``, ``without[m]`` get the best scores of
    the sequences that satisfy (violate) them, -inf where there is none
    (``without`` only where ``need_without[m]``), and how (n_queries, 8),
    path_with and path_without (n_query_tokens,) what the gradient needs.
    With ``do_grad`` (after a pass without, its outputs unchanged): adds
    ``coef_with[m]`` times the counts of the best satisfying path minus
    ``coef_without[m]`` times those of the best violating one (zero
    coefficients where the score is -inf) to d_unary, acc_trans and
    acc_boundary as mode 2 of :func:`segment_margins_batch` does. ``table``,
    ``index``, the tables and the accumulators as there; work (n_threads, 5
    L, plus 2 max_length L with ``do_grad``) and span_bp (n_threads,
    max_span L) are scratch.
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t n_acc = acc_trans.shape[0]
    cdef const Py_ssize_t* idx = _index_ptr(index)
    cdef Py_ssize_t k, m, tid, acc, s, e, j, a
    cdef Py_ssize_t* hw
    cdef double* pre
    cdef double* suf
    cdef double w
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            if q_offsets[k + 1] == q_offsets[k]:
                continue
            tid = threadid()
            s = offsets[k]
            e = offsets[k + 1]
            if not do_grad:
                for m in range(q_offsets[k], q_offsets[k + 1]):
                    _chunk_query(unary, &table[0, 0, 0], idx, start, alpha, beta, masks,
                                 label_type, type_offsets, type_labels, s, e, q_begin[m],
                                 q_end[m], &tok_type[q_tokens[m]], &inner[q_tokens[m]],
                                 first[m], exit_mask[m], need_without[m] != 0, &work[tid, 0],
                                 &span_bp[tid, 0], &with_[m], &without[m], &how[m, 0],
                                 &path_with[q_tokens[m]], &path_without[q_tokens[m]])
                continue
            acc = (k // 8) % n_acc
            pre = &work[tid, 5 * L]
            suf = pre + (e - s) * L
            for j in range(2 * (e - s) * L):
                pre[j] = 0.0
            for m in range(q_offsets[k], q_offsets[k + 1]):
                hw = &how[m, 0]
                a = q_begin[m]
                w = coef_with[m]
                if w != 0.0 and hw[4] >= 0:
                    _count_span(&path_with[q_tokens[m]], hw[6], idx, s, a, q_end[m] - a, w, L,
                                pre, d_unary, &acc_trans[acc, 0], &acc_boundary[acc, 0])
                    if hw[5] >= 0:
                        acc_trans[acc, _block(idx, q_end[m], L) + hw[4] * L + hw[5]] += w
                        suf[(q_end[m] - s) * L + hw[5]] += w
                    else:
                        acc_boundary[acc, L + hw[4]] += w
                w = -coef_without[m]
                if w == 0.0 or hw[0] < 0:
                    continue
                if hw[0] == 0:  # the best path through (a, c)
                    _span_weights(&hw[3], s, e, a, a + 1, w, unary, &table[0, 0, 0], idx, beta,
                                  bp_fwd, L, pre, suf, d_unary, &acc_trans[acc, 0],
                                  &acc_boundary[acc, 0], &acc_boundary[acc, L])
                    continue
                j = hw[1]
                if j > 0:  # the ok path up to a + j - 1, then the edge out
                    _count_span(&path_without[q_tokens[m]], hw[7], idx, s, a, j, w, L, pre,
                                d_unary, &acc_trans[acc, 0], &acc_boundary[acc, 0])
                    acc_trans[acc, _block(idx, a + j, L) + hw[2] * L + hw[3]] += w
                elif hw[2] == L:
                    acc_boundary[acc, hw[3]] += w
                else:
                    acc_trans[acc, _block(idx, a, L) + hw[2] * L + hw[3]] += w
                    pre[(a - 1 - s) * L + hw[2]] += w
                suf[(a + j - s) * L + hw[3]] += w
            _sweep(s, e, unary, &table[0, 0, 0], idx, beta, bp_fwd, L, pre, suf, d_unary,
                   &acc_trans[acc, 0], &acc_boundary[acc, 0], &acc_boundary[acc, L])
