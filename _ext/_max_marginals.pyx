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
#   _viterbi.pyx; the backtrace and the Viterbi over (label, deviated)
#   states are the inline helpers of _chain.pxd.
# * The tables' max-plus products (crf_mp_* below) keep a block of up to 32
#   columns of running maxima and of their arguments in vector registers
#   over the rows of the padded transition matrix (as the sum-product's
#   crf_vec_mat_padded does): the same values and pointers as _chain.pxd's
#   max_plus_step, with both pointer tables written (the readers follow them
#   in O(1)).
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
#   label); the gradient is added later from those nodes
#   (span_gradients_batch, every set of segments in one pass): MCE-F
#   knows its coefficients only once every margin of the batch is known.
#   It counts the best prefixes and suffixes of all of a sequence's paths
#   at once, as node weights swept back and forth through the backpointers.
# * mce_f_labels_batch runs all of MCE-F's evaluation (segment_match='labels',
#   one transition matrix) in one call: per sequence the tables, the maximum
#   incorrect output, the chunks of both (_chunk_decoder.pxd) and the margins
#   of mode 3; then, serially, the smoothing and the F-score ratio with numpy's
#   operations in numpy's order (pairwise sums, no fused multiply-add), so
#   that its value and gradient are bitwise those of the Python path
#   (losses._mce_f_fast.label_margins and SegmentFScoreMCE.value_and_grad); then per
#   sequence the span gradients as span_gradients_batch adds them.

import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from _chain cimport (argmax_sum, backtrace, deviated_backtrace, deviated_viterbi_at,
                    padded_width)
from _chunk_decoder cimport chunks_of_sequence
from _fscore cimport mce_f_ratio
from _max_product cimport (_block, _first_max, _index_ptr, _matrix, _max_incorrect_sequence,
                          _off_reference_max, _off_reference_ptrs, _span_weights, _sweep)


cdef extern from *:
    """
    /* The max-plus products of the max-marginal tables, register-blocked as
       crf_vec_mat_padded (_chain.pxd) blocks the sum-product: W columns of
       the running maxima and of their arguments stay in vector registers
       (GCC/Clang vector extensions, as wide as the build's vectors) over
       the rows of M, whose rows are padded to Lp (a multiple of 8) columns.
       Forward: out[j] = max_i (x[i] + M[i, j]); backward:
       out[j] = max_i ((M[i, j] + x[i]) + y[i]), M the transpose of the
       transitions, rounded as ((T + U) + beta) as the other kernels do.
       arg[j] = the first such i (strict '>' over increasing i: the smallest
       label among ties), 0 where every candidate is -inf. The same values
       and arguments as _chain.pxd's max_plus_step, in fewer instructions. */
    #if defined(__AVX512F__)
    #define CRF_MP_VN 8
    #elif defined(__AVX__)
    #define CRF_MP_VN 4
    #else
    #define CRF_MP_VN 2
    #endif
    #define CRF_MP_WIDTH (4 * CRF_MP_VN)
    typedef double crf_mpd __attribute__((vector_size(8 * CRF_MP_VN)));
    typedef long long crf_mpl __attribute__((vector_size(8 * CRF_MP_VN)));
    static inline __attribute__((always_inline)) crf_mpd crf_mp_splat(double a) {
    #if CRF_MP_VN == 8
        return (crf_mpd){a, a, a, a, a, a, a, a};
    #elif CRF_MP_VN == 4
        return (crf_mpd){a, a, a, a};
    #else
        return (crf_mpd){a, a};
    #endif
    }
    static inline __attribute__((always_inline)) void crf_mp_block(
            const double* restrict x, const double* restrict y, const double* restrict M,
            ptrdiff_t n, ptrdiff_t ld, double* restrict out, int* restrict arg, const int W,
            const int with_y, const int with_arg) {
        const int NV = W / CRF_MP_VN;  /* W <= 32, a multiple of 8 */
        crf_mpd best[32 / CRF_MP_VN], at[32 / CRF_MP_VN], r;
        const crf_mpd one = crf_mp_splat(1.0);
        crf_mpd di = crf_mp_splat(0.0);
        for (int k = 0; k < NV; k++) { best[k] = crf_mp_splat(-INFINITY); at[k] = di; }
        for (ptrdiff_t i = 0; i < n; i++, di += one) {
            const crf_mpd c = crf_mp_splat(x[i]), d = crf_mp_splat(with_y ? y[i] : 0.0);
            const double* restrict row = M + i * ld;
            for (int k = 0; k < NV; k++) {
                __builtin_memcpy(&r, row + k * CRF_MP_VN, sizeof r);
                const crf_mpd v = with_y ? (r + c) + d : c + r;
                const crf_mpl gt = v > best[k];
                if (with_arg)
                    at[k] = (crf_mpd)(((crf_mpl)di & gt) | ((crf_mpl)at[k] & ~gt));
                best[k] = (crf_mpd)(((crf_mpl)v & gt) | ((crf_mpl)best[k] & ~gt));
            }
        }
        __builtin_memcpy(out, best, NV * sizeof best[0]);
        if (with_arg) {
            double a[32];
            __builtin_memcpy(a, at, NV * sizeof at[0]);
            for (int j = 0; j < W; j++) arg[j] = (int)a[j];
        }
    }
    static inline __attribute__((always_inline)) void crf_mp_row(
            const double* x, const double* y, const double* M, double* out, int* arg,
            ptrdiff_t L, ptrdiff_t Lp, const int with_y, const int with_arg) {
        ptrdiff_t jb = 0;
        for (; jb + CRF_MP_WIDTH <= Lp; jb += CRF_MP_WIDTH)
            crf_mp_block(x, y, M + jb, L, Lp, out + jb, arg + jb, CRF_MP_WIDTH, with_y,
                         with_arg);
        switch (Lp - jb) {  /* a multiple of 8 below CRF_MP_WIDTH */
        case 24: crf_mp_block(x, y, M + jb, L, Lp, out + jb, arg + jb, 24, with_y, with_arg);
                 break;
        case 16: crf_mp_block(x, y, M + jb, L, Lp, out + jb, arg + jb, 16, with_y, with_arg);
                 break;
        case 8: crf_mp_block(x, y, M + jb, L, Lp, out + jb, arg + jb, 8, with_y, with_arg);
                break;
        }
    }
    #define CRF_MP_VARIANT(name, with_y, with_arg) \
        static inline __attribute__((always_inline)) void name##_generic( \
                const double* x, const double* y, const double* M, double* out, int* arg, \
                ptrdiff_t L, ptrdiff_t Lp) { \
            crf_mp_row(x, y, M, out, arg, L, Lp, with_y, with_arg); \
        }
    CRF_MP_VARIANT(crf_mp_fwd, 0, 1)
    CRF_MP_VARIANT(crf_mp_back, 1, 1)
    #ifdef CRF_DISPATCH
    #define CRF_MP_DISPATCH(name) \
        __attribute__((target("avx2,fma"))) static void name##_avx2( \
                const double* x, const double* y, const double* M, double* out, int* arg, \
                ptrdiff_t L, ptrdiff_t Lp) { \
            name##_generic(x, y, M, out, arg, L, Lp); \
        } \
        static inline void name(const double* x, const double* y, const double* M, \
                                double* out, int* arg, ptrdiff_t L, ptrdiff_t Lp) { \
            if (crf_has_avx2()) { name##_avx2(x, y, M, out, arg, L, Lp); return; } \
            name##_generic(x, y, M, out, arg, L, Lp); \
        }
    #else
    #define CRF_MP_DISPATCH(name) \
        static inline void name(const double* x, const double* y, const double* M, \
                                double* out, int* arg, ptrdiff_t L, ptrdiff_t Lp) { \
            name##_generic(x, y, M, out, arg, L, Lp); \
        }
    #endif
    CRF_MP_DISPATCH(crf_mp_fwd)
    CRF_MP_DISPATCH(crf_mp_back)

    """
    void mp_fwd "crf_mp_fwd"(const double* x, const double* y, const double* M, double* out,
                             int* arg, Py_ssize_t L, Py_ssize_t Lp) noexcept nogil
    void mp_back "crf_mp_back"(const double* x, const double* y, const double* M, double* out,
                               int* arg, Py_ssize_t L, Py_ssize_t Lp) noexcept nogil



cdef inline void _off_reference_row(
    const double* alpha, const double* beta, Py_ssize_t r, Py_ssize_t L, double* buf,
    double* best, Py_ssize_t* arg,
) noexcept nogil:
    # _max_product.pxd's _off_reference_max without its branches (buf: L
    # scratch): the same sums, so the same value and label.
    cdef Py_ssize_t j
    for j in range(L):
        buf[j] = alpha[j] + beta[j]
    buf[r] = -INFINITY
    arg[0] = _first_max(buf, L, -1)
    best[0] = buf[arg[0]] if arg[0] >= 0 else -INFINITY


cdef void _max_marginals_sequence(
    const double[:, ::1] unary, const double* table, const double* table_t,
    const Py_ssize_t* index, const double[::1] start, const double[::1] end,
    Py_ssize_t s, Py_ssize_t e,
    double[:, ::1] alpha, double[:, ::1] beta,
    int[:, ::1] bp_fwd, int[:, ::1] bp_bwd, double* cur, int* arg,
    const Py_ssize_t* ref, double* off_best, Py_ssize_t* off_arg,
) noexcept nogil:
    # table and table_t hold padded rows (L, Lp) per matrix; cur and arg are
    # Lp-long scratch. Forward: alpha[t] = max_i (alpha[t-1, i] + M[i, :]) +
    # unary[t], as _chain.pxd's max_plus_step and an add; backward over the
    # rows of the transpose, (T + U) + beta. With a ref (else NULL), each
    # token's best max-marginal off ref's label while its rows are in cache.
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t Lp = padded_width(L)
    cdef Py_ssize_t t, j
    for j in range(L):
        alpha[s, j] = start[j] + unary[s, j]
        bp_fwd[s, j] = 0
    for t in range(s + 1, e):
        mp_fwd(&alpha[t - 1, 0], NULL, table if index == NULL else table + index[t] * L * Lp,
               cur, arg, L, Lp)
        for j in range(L):
            alpha[t, j] = cur[j] + unary[t, j]
            bp_fwd[t, j] = arg[j]
    for j in range(L):
        beta[e - 1, j] = end[j]
        bp_bwd[e - 1, j] = 0
    if ref != NULL:
        _off_reference_row(&alpha[e - 1, 0], &beta[e - 1, 0], ref[e - 1], L, cur,
                           &off_best[e - 1], &off_arg[e - 1])
    for t in range(e - 2, s - 1, -1):
        mp_back(&unary[t + 1, 0], &beta[t + 1, 0],
                table_t if index == NULL else table_t + index[t + 1] * L * Lp, cur, arg, L, Lp)
        for j in range(L):
            beta[t, j] = cur[j]
            bp_bwd[t, j] = arg[j]
        if ref != NULL:
            _off_reference_row(&alpha[t, 0], &beta[t, 0], ref[t], L, cur, &off_best[t],
                               &off_arg[t])


def _padded_rows(const double[:, :, ::1] table):
    """The matrices of ``table`` (n, L, L) with rows padded to Lp columns (zeros)."""
    cdef Py_ssize_t L = table.shape[2]
    out = np.zeros((table.shape[0], table.shape[1], padded_width(L)))
    out[:, :, :L] = table
    return out


def max_marginals_batch(
    const double[:, ::1] unary, const double[:, :, ::1] table,
    const double[:, :, ::1] table_t, const Py_ssize_t[::1] index,
    const double[::1] start, const double[::1] end,
    const Py_ssize_t[::1] offsets, double[:, ::1] alpha, double[:, ::1] beta,
    int[:, ::1] bp_fwd, int[:, ::1] bp_bwd, int n_threads,
    const Py_ssize_t[::1] ref=None, double[::1] off_best=None, Py_ssize_t[::1] off_arg=None,
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
    With ``ref`` (n_tokens,), ``off_best[t]`` and ``off_arg[t]`` (n_tokens,)
    get the best ``alpha[t, j] + beta[t, j]`` over the labels ``j !=
    ref[t]`` and the first such j (-inf and -1 if none), which
    :func:`max_incorrect_from_tables` and :func:`segment_margins_batch`
    read instead of scanning the tables again.
    """
    cdef Py_ssize_t k, tid
    cdef const Py_ssize_t* r = NULL
    cdef double* ob = NULL
    cdef Py_ssize_t* oa = NULL
    if ref is not None and ref.shape[0]:
        r, ob, oa = &ref[0], &off_best[0], &off_arg[0]
    cdef const Py_ssize_t* idx = _index_ptr(index)
    cdef Py_ssize_t Lp = padded_width(unary.shape[1])
    cdef double[:, :, ::1] padded = _padded_rows(table)
    cdef double[:, :, ::1] padded_t = _padded_rows(table_t)
    cdef double[:, ::1] cur = np.empty((max(n_threads, 1), Lp))
    cdef int[:, ::1] arg = np.empty((max(n_threads, 1), Lp), dtype=np.int32)
    with nogil:
        for k in prange(offsets.shape[0] - 1, num_threads=n_threads, schedule='static',
                        chunksize=8):
            tid = threadid()
            if offsets[k + 1] > offsets[k]:
                _max_marginals_sequence(unary, &padded[0, 0, 0], &padded_t[0, 0, 0], idx,
                                        start, end, offsets[k], offsets[k + 1], alpha, beta,
                                        bp_fwd, bp_bwd, &cur[tid, 0], &arg[tid, 0], r,
                                        ob, oa)


def max_incorrect_from_tables(
    const double[:, ::1] alpha, const double[:, ::1] beta, const int[:, ::1] bp_fwd,
    const int[:, ::1] bp_bwd, const Py_ssize_t[::1] offsets, const Py_ssize_t[::1] ref,
    bint exclude, Py_ssize_t[::1] path, double[::1] score, int n_threads,
    const double[::1] off_best=None, const Py_ssize_t[::1] off_arg=None,
):
    """Viterbi path, or best path different from ``ref``, read off max-marginal tables (low level).

    With ``exclude``: per sequence, the best ``alpha[t, j] + beta[t, j]``
    over the tokens t and labels ``j != ref[t]`` (Suzuki et al. 2006, Eq. 5:
    a sequence that differs from ``ref`` differs at some (t, j), and the
    best one through (t, j) is the max-marginal's), the first such (t, j) in
    token then label order among ties, completed through the backpointers;
    ``path = ref`` and ``score = -inf`` where there is none. Without: the
    Viterbi path (the best label at the last token). Empty sequences are
    skipped. Shapes as in :func:`max_marginals_batch`; path (n_tokens,),
    score (n_sequences,). ``off_best``, ``off_arg``: those of
    :func:`max_marginals_batch` for the same ``ref``, if known.
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t k
    cdef const double* ob
    cdef const Py_ssize_t* oa
    _off_reference_ptrs(off_best, off_arg, &ob, &oa)
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            if offsets[k + 1] > offsets[k]:
                _max_incorrect_sequence(alpha, beta, bp_fwd, bp_bwd, ref, exclude, offsets[k],
                                        offsets[k + 1], path, &score[k], ob, oa)


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
    Py_ssize_t* node, const double* off_best, const Py_ssize_t* off_arg,
) noexcept nogil:
    # The same values read off the max-marginal tables: g_carry along ref's
    # labels on the span (alpha in, beta out), g_other the best
    # alpha[t, j] + beta[t, j] over the span's tokens t and labels j != ref[t]
    # (a sequence that leaves ref's labels on the span does so at some (t, j),
    # and the best one through (t, j) is the max-marginal's: O(span L), not
    # the span Viterbi's O(span L^2)). node = (t, j) of that max-marginal,
    # the first in token then label order among ties, or (-1, -1).
    # off_best, off_arg (or NULL): each token's best off ref's label.
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, jb
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
            if off_best != NULL:
                v = off_best[t]
                jb = off_arg[t]
            else:
                _off_reference_max(&alpha[t, 0], &beta[t, 0], ref[t], L, &v, &jb)
            if v > best:
                best = v
                node[0] = t
                node[1] = jb
    g_other[0] = best


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
    int n_threads, const double[::1] off_best=None, const Py_ssize_t[::1] off_arg=None,
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
      that gives ``g_other[m]``, or (-1, -1) (their gradient:
      :func:`span_gradients_batch`).

    work (n_threads, 2 * L), span_bp (n_threads, max_length * L), path
    (n_threads, max_length) are scratch of modes 0 and 1; ``weights`` is
    not read. ``off_best``, ``off_arg``: those of
    :func:`max_marginals_batch` for this ``ref``, if known (mode 3 reads
    them instead of the tables).
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t k, m, tid, a
    cdef Py_ssize_t n_acc = acc_trans.shape[0]
    cdef const double* ob
    cdef const Py_ssize_t* oa
    _off_reference_ptrs(off_best, off_arg, &ob, &oa)
    cdef const Py_ssize_t* idx = _index_ptr(index)
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            tid = threadid()
            a = (k // 8) % n_acc  # the block's accumulator, as in _forward_backward
            if mode == 3:
                for m in range(seg_offsets[k], seg_offsets[k + 1]):
                    _segment_from_tables(unary, &table[0, 0, 0], idx, alpha, beta, ref,
                                         seg_start[m], seg_end[m], need_other[m] != 0,
                                         &g_carry[m], &g_other[m], &nodes_out[m, 0], ob, oa)
                continue
            for m in range(seg_offsets[k], seg_offsets[k + 1]):
                _segment_margin(unary, &table[0, 0, 0], idx, alpha, beta, bp_fwd, bp_bwd, ref,
                                offsets[k], offsets[k + 1], seg_start[m], seg_end[m],
                                &work[tid, 0], &span_bp[tid, 0], &path[tid, 0],
                                &g_carry[m], &g_other[m], coef[m], coef_other[m], mode == 1,
                                d_unary, &acc_trans[a, 0], &acc_boundary[a, 0],
                                &acc_boundary[a, L])


cdef void _span_gradients_sequence(
    const int[:, ::1] bp_fwd, const int[:, ::1] bp_bwd, const Py_ssize_t* idx, Py_ssize_t s,
    Py_ssize_t e, const Py_ssize_t[:, ::1] refs, const Py_ssize_t[:, ::1] seg_offsets,
    Py_ssize_t k, const Py_ssize_t[::1] seg_start, const Py_ssize_t[::1] seg_end,
    const double[::1] coef, const double[::1] coef_other, const Py_ssize_t[:, ::1] nodes,
    double[:, ::1] d_unary, double* acc_trans, double* acc_boundary, double* pre,
) noexcept nogil:
    # One sequence (tokens s .. e-1, number k) of span_gradients_batch; pre:
    # 2 (e - s) L scratch, the prefix then the suffix weights.
    cdef Py_ssize_t L = d_unary.shape[1]
    cdef Py_ssize_t i, m, j
    cdef double* suf = pre + (e - s) * L
    for j in range(2 * (e - s) * L):
        pre[j] = 0.0
    for i in range(refs.shape[0]):
        for m in range(seg_offsets[i, k], seg_offsets[i, k + 1]):
            if coef[m] != 0.0:
                _span_weights(&refs[i, seg_start[m]], s, e, seg_start[m], seg_end[m], coef[m],
                              idx, bp_fwd, bp_bwd, L, pre, suf, d_unary, acc_trans,
                              acc_boundary, acc_boundary + L)
            if coef_other[m] != 0.0 and nodes[m, 0] >= 0:
                # the best path through the node: a one-token span
                _span_weights(&nodes[m, 1], s, e, nodes[m, 0], nodes[m, 0] + 1, -coef_other[m],
                              idx, bp_fwd, bp_bwd, L, pre, suf, d_unary, acc_trans,
                              acc_boundary, acc_boundary + L)
    _sweep(s, e, idx, bp_fwd, bp_bwd, L, pre, suf, d_unary, acc_trans, acc_boundary,
           acc_boundary + L)


def span_gradients_batch(
    const int[:, ::1] bp_fwd, const int[:, ::1] bp_bwd, const Py_ssize_t[::1] index,
    const Py_ssize_t[::1] offsets, const Py_ssize_t[:, ::1] refs,
    const Py_ssize_t[:, ::1] seg_offsets, const Py_ssize_t[::1] seg_start,
    const Py_ssize_t[::1] seg_end, const double[::1] coef, const double[::1] coef_other,
    const Py_ssize_t[:, ::1] nodes, double[:, ::1] d_unary, double[:, ::1] acc_trans,
    double[:, ::1] acc_boundary, double[:, ::1] weights, int n_threads,
):
    """The gradient of segment margins read off the tables (mode 3 of :func:`segment_margins_batch`).

    Adds ``coef[m] * counts of the best path carrying the labels
    ``refs[i, seg_start[m]:seg_end[m]]`` on its span - coef_other[m] *
    counts of the best path through the node ``nodes[m]`` (token, label;
    none where ``nodes[m, 0] < 0``)`` to d_unary (n_tokens, L), acc_trans
    (n_acc, n_matrices * L * L) and acc_boundary (n_acc, 2 * L) (start then
    end; chunk c of 8 sequences adds into accumulator c % n_acc), for the
    segments m of every set i (``refs`` (n_sets, n_tokens)) and sequence k:
    ``seg_offsets[i, k] <= m < seg_offsets[i, k + 1]``, the sets' arrays
    end to end. All the sequence's best prefixes and suffixes, of every set,
    are counted in one pass back and one forward through the backpointers
    (``weights``: (n_threads, 2 * max_length * L) scratch).
    """
    cdef Py_ssize_t k
    cdef const Py_ssize_t* idx = _index_ptr(index)
    with nogil:
        for k in prange(offsets.shape[0] - 1, num_threads=n_threads, schedule='static',
                        chunksize=8):
            # the block's accumulator, as in _forward_backward
            _span_gradients_sequence(
                bp_fwd, bp_bwd, idx, offsets[k], offsets[k + 1], refs, seg_offsets, k,
                seg_start, seg_end, coef, coef_other, nodes, d_unary,
                &acc_trans[(k // 8) % acc_trans.shape[0], 0],
                &acc_boundary[(k // 8) % acc_trans.shape[0], 0], &weights[threadid(), 0])


cdef void _mce_f_margins(
    const double[:, ::1] unary, const double* padded, const double* padded_t,
    const double* trans, const double[::1] start, const double[::1] end,
    const Py_ssize_t[::1] y, Py_ssize_t s, Py_ssize_t e, int fp_mode,
    double[:, ::1] alpha, double[:, ::1] beta, int[:, ::1] bp_fwd, int[:, ::1] bp_bwd,
    double* off_best, Py_ssize_t* off_arg, Py_ssize_t[::1] wrong,
    const unsigned char* ev_start, const unsigned char* ev_end, const Py_ssize_t* label_type,
    double* cur, int* arg, Py_ssize_t* wseg, Py_ssize_t* seg, Py_ssize_t n_tokens,
    double* g_val, double* f_val, Py_ssize_t* counts,
) noexcept nogil:
    # One sequence (tokens s .. e-1, e > s) of mce_f_labels_batch, values: the
    # tables (with each token's best max-marginal off y), the maximum
    # incorrect output (or the Viterbi path, fp_mode 2) into wrong, the gold
    # chunks of y and those of wrong that are not gold chunks (the false
    # positives), and the margins of mode 3 of segment_margins_batch:
    # g_val[s + i] of the i-th gold segment (with its competitor's node),
    # f_val[s + i] of the i-th false positive (fp_mode 0: against the gold
    # labels of its span, else against its competitor). seg: the intp slots
    # (rows of n_tokens: gold begin, stop, type, node (2 per slot); false
    # positive begin, stop, node (2)); wseg: 3 (e - s) scratch; counts: the
    # sequence's numbers of gold segments and false positives.
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t n = e - s
    cdef Py_ssize_t* gb = seg
    cdef Py_ssize_t* ge = seg + n_tokens
    cdef Py_ssize_t* gt = seg + 2 * n_tokens
    cdef Py_ssize_t* gnode = seg + 3 * n_tokens
    cdef Py_ssize_t* fb = seg + 5 * n_tokens
    cdef Py_ssize_t* fe = seg + 6 * n_tokens
    cdef Py_ssize_t* fnode = seg + 7 * n_tokens
    cdef Py_ssize_t ng, nw, nf = 0, i, j = 0, a, b
    cdef Py_ssize_t unused[2]
    cdef double score, carry, carry_y, other
    _max_marginals_sequence(unary, padded, padded_t, NULL, start, end, s, e, alpha, beta,
                            bp_fwd, bp_bwd, cur, arg, &y[0], off_best, off_arg)
    _max_incorrect_sequence(alpha, beta, bp_fwd, bp_bwd, y, fp_mode != 2, s, e, wrong, &score,
                            off_best, off_arg)
    ng = chunks_of_sequence(ev_start, ev_end, label_type, L, &y[s], n, &gb[s], &ge[s], &gt[s])
    nw = chunks_of_sequence(ev_start, ev_end, label_type, L, &wrong[s], n, wseg, wseg + n,
                            wseg + 2 * n)
    for i in range(nw):  # both in the order of their starts, one chunk a start
        while j < ng and gb[s + j] < wseg[i]:
            j += 1
        if (j < ng and gb[s + j] == wseg[i] and ge[s + j] == wseg[n + i]
                and gt[s + j] == wseg[2 * n + i]):
            continue  # a gold segment: same span and type
        fb[s + nf] = wseg[i] + s
        fe[s + nf] = wseg[n + i] + s
        nf += 1
    for i in range(s, s + ng):
        gb[i] += s
        ge[i] += s
        _segment_from_tables(unary, trans, NULL, alpha, beta, y, gb[i], ge[i], True, &carry,
                             &other, &gnode[2 * i], off_best, off_arg)
        g_val[i] = carry - other
    for i in range(s, s + nf):
        a = fb[i]
        b = fe[i]
        if fp_mode == 0:  # d(s') = g(s') - g(gold labels on the span)
            _segment_from_tables(unary, trans, NULL, alpha, beta, wrong, a, b, False, &carry,
                                 &other, unused, NULL, NULL)
            _segment_from_tables(unary, trans, NULL, alpha, beta, y, a, b, False, &carry_y,
                                 &other, unused, off_best, off_arg)
            f_val[i] = carry - carry_y
        else:
            _segment_from_tables(unary, trans, NULL, alpha, beta, wrong, a, b, True, &carry,
                                 &other, &fnode[2 * i], NULL, NULL)
            f_val[i] = carry - other
    counts[0] = ng
    counts[1] = nf


cdef void _mce_f_gradient(
    const int[:, ::1] bp_fwd, const int[:, ::1] bp_bwd, const Py_ssize_t[::1] y,
    const Py_ssize_t[::1] wrong, Py_ssize_t s, Py_ssize_t e, int fp_mode,
    const Py_ssize_t* seg, Py_ssize_t n_tokens, const double* g_coef, const double* f_coef,
    const Py_ssize_t* counts, double[:, ::1] d_unary, double* acc_trans, double* acc_boundary,
    double* pre,
) noexcept nogil:
    # One sequence of mce_f_labels_batch, gradient: d_unary's rows of the
    # sequence set to the counts of the best paths weighted by the segments'
    # coefficients, the transition, start and end counts added to the
    # accumulators; the same additions in the same order as
    # span_gradients_batch on losses._mce_f_fast.label_margins' sets of spans.
    cdef Py_ssize_t L = d_unary.shape[1]
    cdef Py_ssize_t i, j, t
    cdef double c
    cdef double* suf = pre + (e - s) * L
    cdef const Py_ssize_t* gb = seg
    cdef const Py_ssize_t* ge = seg + n_tokens
    cdef const Py_ssize_t* gnode = seg + 3 * n_tokens
    cdef const Py_ssize_t* fb = seg + 5 * n_tokens
    cdef const Py_ssize_t* fe = seg + 6 * n_tokens
    cdef const Py_ssize_t* fnode = seg + 7 * n_tokens
    for t in range(s, e):
        for j in range(L):
            d_unary[t, j] = 0.0
    for j in range(2 * (e - s) * L):
        pre[j] = 0.0
    for i in range(s, s + counts[0]):  # the gold segments, carrying and their competitor
        c = g_coef[i]
        if c != 0.0:
            _span_weights(&y[gb[i]], s, e, gb[i], ge[i], c, NULL, bp_fwd, bp_bwd, L, pre, suf,
                          d_unary, acc_trans, acc_boundary, acc_boundary + L)
            if gnode[2 * i] >= 0:
                _span_weights(&gnode[2 * i + 1], s, e, gnode[2 * i], gnode[2 * i] + 1, -c, NULL,
                              bp_fwd, bp_bwd, L, pre, suf, d_unary, acc_trans, acc_boundary,
                              acc_boundary + L)
    if fp_mode == 0:  # the gold labels on the false positives' spans
        for i in range(s, s + counts[1]):
            c = -f_coef[i]
            if c != 0.0:
                _span_weights(&y[fb[i]], s, e, fb[i], fe[i], c, NULL, bp_fwd, bp_bwd, L, pre,
                              suf, d_unary, acc_trans, acc_boundary, acc_boundary + L)
    for i in range(s, s + counts[1]):  # the false positives
        c = f_coef[i]
        if c != 0.0:
            _span_weights(&wrong[fb[i]], s, e, fb[i], fe[i], c, NULL, bp_fwd, bp_bwd, L, pre,
                          suf, d_unary, acc_trans, acc_boundary, acc_boundary + L)
            if fp_mode != 0 and fnode[2 * i] >= 0:
                _span_weights(&fnode[2 * i + 1], s, e, fnode[2 * i], fnode[2 * i] + 1, -c, NULL,
                              bp_fwd, bp_bwd, L, pre, suf, d_unary, acc_trans, acc_boundary,
                              acc_boundary + L)
    _sweep(s, e, NULL, bp_fwd, bp_bwd, L, pre, suf, d_unary, acc_trans, acc_boundary,
           acc_boundary + L)


def mce_f_labels_batch(
    const double[:, ::1] unary, const double[:, ::1] transition, const double[::1] start,
    const double[::1] end, const Py_ssize_t[::1] offsets, const Py_ssize_t[::1] y,
    const double[::1] weights, double sig_alpha, double sig_beta, double gamma2,
    int false_positives, double saturated_z, const unsigned char[:, ::1] start_events,
    const unsigned char[:, ::1] end_events, const Py_ssize_t[::1] label_type,
    double[:, ::1] d_unary, double[:, ::1] d_transition, double[::1] d_start,
    double[::1] d_end, int n_acc, int n_threads, tables=None,
):
    """MCE-F's value and gradient with segments compared as labels, in one call (low level).

    Use :meth:`sklearn_crfloss.losses.SegmentFScoreMCE.value_and_grad`
    (``segment_match='labels'``, one transition matrix): Suzuki et al. 2006,
    section 4, Eqs. 13-16, as ``losses._mce_f_fast.label_margins`` and the loss
    compute it, bitwise. Inputs are not checked: the potentials (unary (n_tokens,
    L), transition (L, L), start, end (L,)), offsets and the gold labels y
    (in [0, L)) as ``inference.check_potentials`` and ``_Chain.labels``
    return them; ``weights`` (n_sequences,) or empty (all 1);
    ``false_positives`` 0 ('gold'), 1 ('max_incorrect') or 2 ('viterbi');
    ``saturated_z`` the smoothing's saturation threshold (negative);
    start_events, end_events, label_type: the chunk decoder's tables
    (``ChunkDecoder``). Writes the gradient into d_unary (n_tokens, L),
    d_transition (L, L), d_start and d_end (L,); the transition, start and
    end counts go through ``n_acc`` accumulators as in ``path_gradient``.
    ``tables``: the max-marginal tables' buffers (alpha, beta, bp_fwd,
    bp_bwd, off_best, off_arg) to write, or None (allocated).
    Returns ``(value, saturation, defined)``: ``defined`` is False, and
    the value and the gradient are not computed, where TP_l underflowed.
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t n = unary.shape[0]
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t Lp = padded_width(L)
    cdef Py_ssize_t i, j, k, tid, b, max_length = 0
    cdef int status = 0
    cdef double out[2]
    out[0] = out[1] = 0.0
    if weights.shape[0] not in (0, n_seq) or y.shape[0] != n:
        raise ValueError("mce_f_labels_batch: weights or y of the wrong length")
    for k in range(n_seq):
        max_length = max(max_length, offsets[k + 1] - offsets[k])
    cdef double[:, ::1] alpha, beta, scores
    cdef int[:, ::1] bp_fwd, bp_bwd, pointers
    cdef double[::1] off_best
    cdef Py_ssize_t[::1] off_arg
    cdef Py_ssize_t[:, ::1] paths = np.empty((2, n), dtype=np.intp)
    cdef Py_ssize_t[::1] wrong = paths[0]
    if tables is None:  # (few allocations: a minibatch step is short)
        scores = np.empty((2 * n, L))
        pointers = np.empty((2 * n, L), dtype=np.int32)
        alpha, beta, bp_fwd, bp_bwd = scores[:n], scores[n:], pointers[:n], pointers[n:]
        off_best = np.empty(n)
        off_arg = paths[1]
    else:
        alpha, beta, bp_fwd, bp_bwd, off_best, off_arg = tables
    n_threads = max(n_threads, 1)
    n_acc = max(n_acc, 1)
    # doubles: padded tables, per-thread rows and weights, accumulators, the
    # segments' values and coefficients (2 n), the ratio's work (6 n)
    cdef Py_ssize_t per_thread = Lp + 2 * max_length * L
    cdef Py_ssize_t acc_size = L * L + 2 * L
    cdef double* fbuf = <double*>malloc((2 * L * Lp + n_threads * per_thread + n_acc * acc_size
                                         + 8 * n + 1) * sizeof(double))
    # intp: the segment slots (9 n), counts (2 n_seq), per-thread decoder
    # output (3 max_length); int: per-thread backpointer rows
    cdef Py_ssize_t* ibuf = <Py_ssize_t*>malloc((9 * n + 2 * n_seq
                                                + 3 * n_threads * max_length + 1)
                                               * sizeof(Py_ssize_t))
    cdef int* arg = <int*>malloc((n_threads * Lp + 1) * sizeof(int))
    if fbuf == NULL or ibuf == NULL or arg == NULL:
        free(fbuf)
        free(ibuf)
        free(arg)
        raise MemoryError()
    cdef double* padded = fbuf
    cdef double* padded_t = fbuf + L * Lp
    cdef double* thread_rows = padded_t + L * Lp
    cdef double* acc = thread_rows + n_threads * per_thread
    cdef double* g_val = acc + n_acc * acc_size
    cdef double* f_val = g_val + n
    cdef double* work = f_val + n
    cdef Py_ssize_t* seg = ibuf
    cdef Py_ssize_t* counts = ibuf + 9 * n
    cdef Py_ssize_t* wseg = counts + 2 * n_seq
    cdef const double* trans = &transition[0, 0]
    try:
        with nogil:
            for i in range(L):  # the rows padded with zeros, as _padded_rows
                for j in range(Lp):
                    padded[i * Lp + j] = trans[i * L + j] if j < L else 0.0
                    padded_t[i * Lp + j] = trans[j * L + i] if j < L else 0.0
            memset(acc, 0, n_acc * acc_size * sizeof(double))
            for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
                tid = threadid()
                counts[2 * k] = 0
                counts[2 * k + 1] = 0
                if offsets[k + 1] > offsets[k]:
                    _mce_f_margins(unary, padded, padded_t, trans, start, end, y, offsets[k],
                                   offsets[k + 1], false_positives, alpha, beta, bp_fwd,
                                   bp_bwd, &off_best[0], &off_arg[0], wrong, &start_events[0, 0],
                                   &end_events[0, 0], &label_type[0],
                                   &thread_rows[tid * per_thread], &arg[tid * Lp],
                                   &wseg[3 * tid * max_length], seg, n, g_val, f_val,
                                   &counts[2 * k])
            status = mce_f_ratio(offsets, weights, sig_alpha, sig_beta, gamma2,
                                  false_positives, saturated_z, counts, g_val, f_val, work, out)
            if status == 0:
                for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
                    tid = threadid()
                    b = (k // 8) % n_acc  # the block's accumulator, as in _forward_backward
                    if offsets[k + 1] > offsets[k]:
                        _mce_f_gradient(bp_fwd, bp_bwd, y, wrong, offsets[k], offsets[k + 1],
                                        false_positives, seg, n, g_val, f_val, &counts[2 * k],
                                        d_unary, &acc[b * acc_size],
                                        &acc[b * acc_size + L * L],
                                        &thread_rows[tid * per_thread + Lp])
                # the accumulators summed in order (numpy's sum over their axis 0)
                for i in range(L):
                    for j in range(L):
                        d_transition[i, j] = 0.0
                        for b in range(n_acc):
                            d_transition[i, j] += acc[b * acc_size + i * L + j]
                for j in range(L):
                    d_start[j] = 0.0
                    d_end[j] = 0.0
                    for b in range(n_acc):
                        d_start[j] += acc[b * acc_size + L * L + j]
                        d_end[j] += acc[b * acc_size + L * L + L + j]
    finally:
        free(fbuf)
        free(ibuf)
        free(arg)
    return out[0], out[1], status == 0
