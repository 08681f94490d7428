# Inline helpers shared by the chain kernels (_forward_backward, _marginal_vjp,
# _viterbi, _max_marginals), cimported as `from _chain cimport ...`. There is
# no _chain module: everything here is `cdef inline` and compiles into each
# kernel that uses it.
#
# Layout: a sequence of n tokens is n contiguous rows of L = n_labels doubles
# (C order), and the (L, L) matrices are C ordered, [i, j] for label i then
# label j. Every helper takes raw pointers to such rows; the innermost loop of
# each runs over one contiguous row of L values, so that it vectorises.
#
# * Sum-product (scaled, Rabiner 1989; CRFsuite's crf1d_context.c):
#   exp_row, vec_mat, vec_mat2, scale_row, scaled_forward (also in the
#   expectation semiring, for the marginals' VJP), logsumexp_row, MIN_SCALE;
#   exp_nonpos, the exponential they take (a polynomial that vectorises,
#   like CRFsuite's vecexp).
# * Padded rows (the forward-backward kernel's own buffers): rows of
#   Lp = padded_width(L) doubles, a multiple of LANES, whose entries past L
#   are 0 (probabilities) or -inf (potentials), so that every row loop runs
#   over whole vectors and keeps its accumulators in registers:
#   padded_width, vec_mat_padded, outer_acc_padded, row_max_padded,
#   row_sum_padded.
# * Sparse features against hybrid state weights: a dense padded row for
#   an attribute with many free labels, CRFsuite-style compact (label,
#   weight) entries for the others, one int64 code per attribute saying
#   which. gather_token (one row of X @ W) and scatter_token (its
#   transpose: one token's share of X.T @ dU).
# * Max-product (score domain, additions and comparisons only; ties go to
#   the smallest label): max_plus_step, argmax_sum, backtrace, and the Viterbi
#   over (label, deviated-from-a-reference) states, deviated_viterbi (and
#   deviated_viterbi_at, with a matrix per edge) and deviated_backtrace (Suzuki et al. 2006: the maximum incorrect output,
#   Eq. 5, and the best path off a segment's labels, Eq. 15).

from libc.math cimport exp, log, isfinite, INFINITY

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* A scaled normaliser at or below this (or not finite) means the pass
       has lost the sequence's mass in double precision; the kernel then
       recomputes the sequence in log space. */
    static const double CRF_MIN_SCALE = 1e-250;
    /* The scaled passes also lose information without any normaliser
       underflowing: an entry of an unnormalised row below the smallest
       normal double is flushed to 0 (or loses bits), and a later step can
       make its path the likely one (Rabiner's beta_hat is only bounded by
       1 / alpha_hat). Every entry of such a row is at least exp(-R) / L,
       with R the range (max - min, finite entries) of the transition or
       start potentials plus that of the unary row; the passes are exact
       while R + log L stays below this (exp(-690) ~ 1e-300), and a
       sequence past it is computed in log space. */
    static const double CRF_MAX_RANGE = 690.0;
    /* The low 32 bits of a compact attribute's code: its first weight. */
    static const long long CRF_LOW32 = 0xFFFFFFFFLL;

    /* exp(x) for x <= 0 (the shifted potentials u - max u), branch free so
       that loops over rows vectorise: x = k ln2 + r with |r| <= ln2 / 2
       (Cody-Waite split of ln2), exp(r) by its Taylor polynomial of degree
       13 (truncation error below 2e-18 relative), times 2^k built in the
       exponent bits. Within 2 ulp of the correctly rounded exp; 0 below
       -708 (where exp(x) < 2^-1021 is negligible against the row's maximum,
       1), so -inf gives 0; NaN gives NaN. */
    static inline double crf_exp_nonpos(double x) {
        const double shifter = 6755399441055744.0;  /* 1.5 * 2^52 */
        double kd = x * 1.4426950408889634 + shifter;  /* round(x / ln2) + shifter */
        double k = kd - shifter;
        double r = (x - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;
        double p = 1.0 / 6227020800.0;
        p = p * r + 1.0 / 479001600.0;
        p = p * r + 1.0 / 39916800.0;
        p = p * r + 1.0 / 3628800.0;
        p = p * r + 1.0 / 362880.0;
        p = p * r + 1.0 / 40320.0;
        p = p * r + 1.0 / 5040.0;
        p = p * r + 1.0 / 720.0;
        p = p * r + 1.0 / 120.0;
        p = p * r + 1.0 / 24.0;
        p = p * r + 1.0 / 6.0;
        p = p * r + 0.5;
        p = p * r + 1.0;
        p = p * r + 1.0;
        uint64_t bits;
        memcpy(&bits, &kd, sizeof bits);
        bits = (bits - 0x4338000000000000ULL + 1023) << 52;  /* 2^k (unsigned: no UB) */
        double scale;
        memcpy(&scale, &bits, sizeof scale);
        return x < -708.0 ? 0.0 : p * scale;
    }
    """
    const double MIN_SCALE "CRF_MIN_SCALE"
    const double MAX_RANGE "CRF_MAX_RANGE"
    const long long LOW32 "CRF_LOW32"
    double exp_nonpos "crf_exp_nonpos"(double x) noexcept nogil


# Doubles per block of a padded row: one AVX-512 vector, two AVX2 ones.
cdef enum:
    LANES = 8


# ---------------------------------------------------------------- sum-product

cdef inline double logsumexp_row(const double* x, Py_ssize_t n) noexcept nogil:
    """log(sum(exp(x[:n]))), -inf for an empty or all -inf row."""
    cdef double m = -INFINITY, s = 0.0
    cdef Py_ssize_t k
    for k in range(n):
        if x[k] > m:
            m = x[k]
    if m == -INFINITY:
        return m
    for k in range(n):
        s += exp(x[k] - m)
    return m + log(s)


cdef inline double finite_range(const double* x, Py_ssize_t n) noexcept nogil:
    """max - min of the finite entries of x[:n] (0 if there are none)."""
    cdef double lo = INFINITY, hi = -INFINITY
    cdef Py_ssize_t k
    for k in range(n):
        if isfinite(x[k]):
            lo = x[k] if x[k] < lo else lo
            hi = x[k] if x[k] > hi else hi
    return hi - lo if hi >= lo else 0.0


cdef inline bint scale_ok(double c) noexcept nogil:
    """Whether a scaled pass's normaliser c can be divided by (else: log space)."""
    return c > MIN_SCALE and isfinite(c)


cdef inline bint row_too_wide(double t_range, const double* row, Py_ssize_t L) noexcept nogil:
    """Whether a unary row's range plus the transitions' t_range passes MAX_RANGE.

    Past it, exp(row - max) of the scaled passes flushes entries to 0 that a
    later token can make likely: the caller must fall back to log space.
    """
    return t_range + finite_range(row, L) > MAX_RANGE


cdef inline double tail_range(const double* transition, const double* start,
                              Py_ssize_t L, double scale) noexcept nogil:
    """scale * max(range(transition), range(start)) + log(L) (see MAX_RANGE).

    The part of the scaled passes' range bound that does not depend on
    the unary rows (scale: a positive factor of the potentials, 1 but in
    the SGD kernel's scaled representation).
    """
    cdef double r = finite_range(transition, L * L)
    cdef double r0 = finite_range(start, L)
    return scale * (r if r > r0 else r0) + log(<double>L)


cdef inline double exp_row(const double* u, double* psi, Py_ssize_t L) noexcept nogil:
    """psi = exp(u - max(u)); returns max(u)."""
    cdef double m = u[0]
    cdef Py_ssize_t j
    for j in range(1, L):
        if u[j] > m:
            m = u[j]
    for j in range(L):
        psi[j] = exp_nonpos(u[j] - m)
    return m


cdef inline void vec_mat(const double* x, const double* M, double* out,
                         Py_ssize_t L) noexcept nogil:
    """out = x @ M for an (L, L) matrix M, as a sum of rows of M.

    An axpy per row vectorises; a dot product per column of M would need
    horizontal additions. With M = exp_trans this is the forward step, with
    M = exp_trans.T (contiguous) the backward step ``exp_trans @ x``.
    """
    cdef Py_ssize_t i, j
    cdef double a
    for j in range(L):
        out[j] = 0.0
    for i in range(L):
        a = x[i]
        for j in range(L):
            out[j] += a * M[i * L + j]


cdef inline void vec_mat2(const double* x, const double* y, const double* M,
                          double* out_x, double* out_y, Py_ssize_t L) noexcept nogil:
    """out_x = x @ M and out_y = y @ M in one pass over the rows of M."""
    cdef Py_ssize_t i, j
    cdef double a, b
    for j in range(L):
        out_x[j] = 0.0
        out_y[j] = 0.0
    for i in range(L):
        a = x[i]
        b = y[i]
        for j in range(L):
            out_x[j] += a * M[i * L + j]
            out_y[j] += b * M[i * L + j]


cdef inline double scale_row(double* alpha, double* psi, Py_ssize_t L) noexcept nogil:
    """Normalise an alpha row to sum 1, and divide psi's row by the same c.

    Returns the normaliser c, or 0.0 (nothing scaled) when c <= MIN_SCALE or
    is not finite: the caller must then fall back to log space.
    """
    cdef double c = 0.0, r
    cdef Py_ssize_t j
    for j in range(L):
        c += alpha[j]
    if not scale_ok(c):
        return 0.0
    r = 1.0 / c
    for j in range(L):
        alpha[j] *= r
        psi[j] *= r
    return c


cdef inline double scaled_forward(
    const double* unary, Py_ssize_t n, Py_ssize_t L,
    const double* exp_trans, const double* exp_start, const double* exp_end,
    double* psi, double* alpha, double* v, double* log_z,
    const double* grad, double* A, double* w, double t_range,
) noexcept nogil:
    """Scaled forward pass over the n rows of ``unary`` (one sequence).

    exp_trans, exp_start, exp_end are the shifted exponentials of the
    transition, start and end potentials, t_range their :func:`tail_range`
    (0.0 is returned if it plus the range of a unary row passes
    MAX_RANGE); psi and alpha have n rows of L, v
    is one row of scratch. On return psi[t] = exp(U[t] - max U[t]) / c_t and
    alpha[t] = alpha_hat[t], the forward row normalised to sum 1 by c_t, so
    that alpha_hat[t] = (alpha_hat[t-1] @ exp_trans) * psi[t] (with psi
    already divided; exp_start in place of the product at t = 0). Returns c_end = alpha_hat[n-1] . exp_end, or 0.0 if a
    normaliser underflowed (the rows are then partial). If log_z is not
    NULL it receives sum_t max U[t] + sum_t log c_t + log c_end: log Z
    minus the shifts of the exponentials.

    If A is not NULL the pass runs in the first-order expectation semiring
    too (the marginals' VJP): with grad (n rows of L) and one more scratch
    row w, A[t] = (A[t-1] @ exp_trans) * psi[t] + alpha_hat[t] * grad[t]
    (A[0] = alpha_hat[0] * grad[0]), the two products sharing one pass over
    exp_trans. On underflow A's rows are partial, like alpha's.
    """
    cdef Py_ssize_t t, j
    cdef double c, lz = 0.0
    for t in range(n):
        if row_too_wide(t_range, &unary[t * L], L):
            return 0.0
        lz += exp_row(&unary[t * L], &psi[t * L], L)
    for t in range(n):
        if t == 0:  # the "previous row times exp_trans" of token 0: exp_start
            for j in range(L):
                v[j] = exp_start[j]
                if A != NULL:
                    w[j] = 0.0
        elif A != NULL:
            vec_mat2(&alpha[(t - 1) * L], &A[(t - 1) * L], exp_trans, v, w, L)
        else:
            vec_mat(&alpha[(t - 1) * L], exp_trans, v, L)
        for j in range(L):
            alpha[t * L + j] = v[j] * psi[t * L + j]
        c = scale_row(&alpha[t * L], &psi[t * L], L)
        if c == 0.0:
            return 0.0
        if log_z != NULL:
            lz += log(c)
        if A != NULL:
            for j in range(L):
                A[t * L + j] = w[j] * psi[t * L + j] + alpha[t * L + j] * grad[t * L + j]
    c = 0.0
    for j in range(L):
        c += alpha[(n - 1) * L + j] * exp_end[j]
    if not scale_ok(c):
        return 0.0
    if log_z != NULL:
        log_z[0] = lz + log(c)
    return c


# ---------------------------------------------------------------- padded rows

cdef inline Py_ssize_t padded_width(Py_ssize_t L) noexcept nogil:
    """The row width Lp >= L of the padded buffers: L rounded up to LANES."""
    return (L + LANES - 1) // LANES * LANES


cdef extern from *:
    """
    #include <math.h>
    #include <stddef.h>
    /* Outputs per block of vec_mat_padded: the block's sums stay in
       registers over the rows of M. With AVX, 32 (4 zmm or 8 ymm): enough
       independent multiply-adds per row to hide their latency (faster
       than blocks of 8 at L = 44..500 with -march=native). Without
       (portable flags), 8 (4 xmm), but see CRF_DISPATCH below. */
    #if defined(__AVX__)
    #define CRF_VM_WIDTH 32
    #else
    #define CRF_VM_WIDTH 8
    #endif

    /* out[0:W] = x[:n] @ M[:, 0:W] for rows of M of stride ld; W is a
       constant after inlining, so that the W sums are registers. */
    static inline __attribute__((always_inline)) void crf_vm_block(
            const double* restrict x, const double* restrict M, double* restrict out,
            ptrdiff_t n, ptrdiff_t ld, const int W) {
        double acc[32];  /* W <= 32 */
        for (int j = 0; j < W; j++) acc[j] = 0.0;
        for (ptrdiff_t i = 0; i < n; i++) {
            const double a = x[i];
            const double* restrict row = M + i * ld;
            for (int j = 0; j < W; j++) acc[j] += a * row[j];
        }
        for (int j = 0; j < W; j++) out[j] = acc[j];
    }

    static inline __attribute__((always_inline)) void crf_vec_mat_generic(
            const double* x, const double* M, double* out, ptrdiff_t n, ptrdiff_t Lp,
            const int width) {
        ptrdiff_t jb = 0;
        for (; jb + width <= Lp; jb += width)
            crf_vm_block(x, M + jb, out + jb, n, Lp, width);
        switch (Lp - jb) {  /* Lp is a multiple of LANES = 8 */
        case 24: crf_vm_block(x, M + jb, out + jb, n, Lp, 24); break;
        case 16: crf_vm_block(x, M + jb, out + jb, n, Lp, 16); break;
        case 8: crf_vm_block(x, M + jb, out + jb, n, Lp, 8); break;
        }
    }

    /* A build without AVX (portable flags) still runs the AVX2 + FMA
       versions of the L x L products (this one and crf_max_plus) where the
       CPU has them: GCC or Clang on x86-64 compile them for that target and
       crf_has_avx2 picks them at run time. */
    #if !defined(__AVX__) && defined(__x86_64__) && defined(__GNUC__)
    #define CRF_DISPATCH 1
    static int crf_avx2_state = -1;  /* -1: not asked yet; atomic: threads may ask at once */
    static inline int crf_has_avx2(void) {
        int avx2 = __atomic_load_n(&crf_avx2_state, __ATOMIC_RELAXED);
        if (avx2 < 0) {
            __builtin_cpu_init();
            avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
            __atomic_store_n(&crf_avx2_state, avx2, __ATOMIC_RELAXED);
        }
        return avx2;
    }
    __attribute__((target("avx2,fma"))) static void crf_vec_mat_avx2(
            const double* x, const double* M, double* out, ptrdiff_t n, ptrdiff_t Lp) {
        crf_vec_mat_generic(x, M, out, n, Lp, 32);
    }
    #endif

    static inline void crf_vec_mat_padded(const double* x, const double* M, double* out,
                                          ptrdiff_t n, ptrdiff_t Lp) {
    #ifdef CRF_DISPATCH
        if (crf_has_avx2()) { crf_vec_mat_avx2(x, M, out, n, Lp); return; }
    #endif
        crf_vec_mat_generic(x, M, out, n, Lp, CRF_VM_WIDTH);
    }

    /* cur[j] = max_i prev[i] + M[i, j], bp[j] = the first such i (see
       max_plus_step). The loop over a row of M compiles to vector
       compare-and-select. */
    static inline __attribute__((always_inline)) void crf_max_plus_generic(
            const double* restrict prev, const double* restrict M, double* restrict cur,
            int* restrict bp, ptrdiff_t L, int bp_init) {
        for (ptrdiff_t j = 0; j < L; j++) { cur[j] = -INFINITY; bp[j] = bp_init; }
        for (ptrdiff_t i = 0; i < L; i++) {
            const double c = prev[i];
            for (ptrdiff_t j = 0; j < L; j++) {
                const double v = c + M[i * L + j];
                if (v > cur[j]) { cur[j] = v; bp[j] = (int)i; }
            }
        }
    }
    /* 1 where max_plus_step calls crf_max_plus (to pick the AVX2 version at
       run time); elsewhere it keeps its own loop, faster than this one with
       -march=native. */
    #ifdef CRF_DISPATCH
    #define CRF_HAS_DISPATCH 1
    #else
    #define CRF_HAS_DISPATCH 0
    #endif
    #ifdef CRF_DISPATCH
    __attribute__((target("avx2,fma"))) static void crf_max_plus_avx2(
            const double* prev, const double* M, double* cur, int* bp, ptrdiff_t L,
            int bp_init) {
        crf_max_plus_generic(prev, M, cur, bp, L, bp_init);
    }
    #endif
    static inline void crf_max_plus(const double* prev, const double* M, double* cur, int* bp,
                                    ptrdiff_t L, int bp_init) {
    #ifdef CRF_DISPATCH
        if (crf_has_avx2()) { crf_max_plus_avx2(prev, M, cur, bp, L, bp_init); return; }
    #endif
        crf_max_plus_generic(prev, M, cur, bp, L, bp_init);
    }
    """
    void _vec_mat_padded "crf_vec_mat_padded"(const double* x, const double* M, double* out,
                                              Py_ssize_t n, Py_ssize_t Lp) noexcept nogil
    void _max_plus "crf_max_plus"(const double* prev, const double* M, double* cur, int* bp,
                                  Py_ssize_t L, int bp_init) noexcept nogil
    const int HAS_DISPATCH "CRF_HAS_DISPATCH"


cdef inline void vec_mat_padded(const double* x, const double* M, double* out,
                                Py_ssize_t L, Py_ssize_t Lp) noexcept nogil:
    """out = x[:L] @ M for padded rows: M has L rows of Lp, out gets Lp values.

    :func:`vec_mat` with the sums of a block of outputs (32 with AVX, 8
    without) held in registers over the L rows of M: one vector multiply-add
    per row and vector of the block, enough of them independent to hide
    their latency, no loads and stores of out in the loop. The same terms
    summed in the same order (increasing row).
    """
    _vec_mat_padded(x, M, out, L, Lp)


cdef inline void outer_acc_padded(const double* A, const double* V, Py_ssize_t m,
                                  Py_ssize_t L, Py_ssize_t Lp, double weight,
                                  double* At, double* tmp, double* out) noexcept nogil:
    """out[i, :] += weight * sum_{t < m} A[t, i] * V[t, :] (rows of Lp; i < L).

    The pair expectations of one sequence, sum_t outer(alpha_hat[t-1], v_t):
    A's columns are copied into the rows of At (L rows of m), and each row
    of the sum is a :func:`vec_mat_padded` (its sums in registers, in
    increasing t), added to out once. tmp has Lp doubles.
    """
    cdef Py_ssize_t i, t, j
    for t in range(m):
        for i in range(L):
            At[i * m + t] = A[t * Lp + i]
    for i in range(L):
        vec_mat_padded(&At[i * m], V, tmp, m, Lp)
        for j in range(Lp):
            out[i * Lp + j] += weight * tmp[j]


cdef inline double row_max_padded(const double* u, Py_ssize_t Lp) noexcept nogil:
    """max(u[:Lp]) (pads of potentials rows are -inf), by LANES partial maxima."""
    cdef Py_ssize_t jb, jj
    cdef double acc[LANES]
    cdef double m
    for jj in range(LANES):
        acc[jj] = u[jj]
    for jb in range(8, Lp, 8):  # LANES
        for jj in range(LANES):
            acc[jj] = u[jb + jj] if u[jb + jj] > acc[jj] else acc[jj]
    m = acc[0]
    for jj in range(1, LANES):
        if acc[jj] > m:
            m = acc[jj]
    return m


cdef inline double row_sum_padded(const double* u, Py_ssize_t Lp) noexcept nogil:
    """sum(u[:Lp]), by LANES partial sums."""
    cdef Py_ssize_t jb, jj
    cdef double acc[LANES]
    for jj in range(LANES):
        acc[jj] = u[jj]
    for jb in range(8, Lp, 8):  # LANES
        for jj in range(LANES):
            acc[jj] += u[jb + jj]
    return (((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])))



cdef inline int scaled_forward_padded(double* psi, double* alpha, double* rs, Py_ssize_t n,
                                      Py_ssize_t L, Py_ssize_t Lp, const double* E,
                                      const double* es, double t_range,
                                      double* lz) noexcept nogil:
    """The scaled forward pass over n padded rows. 0, or 1 on underflow or range.

    On entry psi holds the n rows of U (pads -inf); on return psi[t] =
    exp(U[t] - max U[t]), alpha[t] = alpha_hat[t] (rows normalised to sum
    1 by c_t; alpha_hat[0] from exp_start es), rs[t] = 1 / c_t and lz the
    sum of the row maxima and log c_t. 1 when a row's range plus t_range
    passes MAX_RANGE (:func:`row_too_wide`) or a normaliser underflows.
    """
    cdef Py_ssize_t t, j
    cdef double m, c, r, total = lz[0]  # a local: lz may alias the rows
    cdef double* row
    cdef double* a
    for t in range(n):
        row = psi + t * Lp
        if row_too_wide(t_range, row, L):
            return 1
        m = row_max_padded(row, Lp)
        total += m
        for j in range(Lp):
            row[j] = exp_nonpos(row[j] - m)
    for t in range(n):
        a = alpha + t * Lp
        row = psi + t * Lp
        if t == 0:  # the "previous row times expT" of token 0: exp_start
            for j in range(Lp):
                a[j] = es[j] * row[j]
        else:
            vec_mat_padded(alpha + (t - 1) * Lp, E, a, L, Lp)
            for j in range(Lp):
                a[j] *= row[j]
        c = row_sum_padded(a, Lp)
        if not scale_ok(c):
            return 1
        r = 1.0 / c
        rs[t] = r
        for j in range(Lp):
            a[j] *= r
        total += log(c)
    lz[0] = total
    return 0


# ---------------------------------------------------------------- sparse features

cdef extern from *:
    # GCC/Clang builtin: hint the cache to load an address (no fault on bad ones).
    void prefetch "__builtin_prefetch"(const void* addr) noexcept nogil

# How far ahead (in stored entries of X) the feature helpers prefetch: the
# attribute's code PREFETCH_FAR entries ahead, its weights (or gradient)
# PREFETCH_NEAR entries ahead. Rare attributes are cache misses that the
# hardware cannot predict; the index arrays say what comes next. (The
# distances were chosen by timing the fused CLL kernel on CoNLL-2000.)
cdef enum:
    PREFETCH_NEAR = 16
    PREFETCH_FAR = 32
    # A compact attribute has at most COLD_MAX labels, packed in its code
    # (bits 0-57); bit OWN_BIT is free for scatter_token_split.
    COLD_MAX = 3
    OWN_BIT = 58


# The row pointers of the CSR features: the matrix's own int32 ones (scipy's
# for fewer than 2**31 stored entries) or intp; each kernel taking them is
# compiled for both.
ctypedef fused indptr_t:
    int
    Py_ssize_t


cdef inline const double* _weights_of(long long c, const double* w, const double* W_hot,
                                      Py_ssize_t Lp) noexcept nogil:
    """Where the weights of an attribute of code c start (see gather_token)."""
    if c < 0:
        return &W_hot[(-c - 1) * Lp]
    return &w[c & LOW32]


cdef inline void _axpy(double* y, double a, const double* x, Py_ssize_t n) noexcept nogil:
    """y[:n] += a * x[:n]."""
    cdef Py_ssize_t j
    for j in range(n):
        y[j] += a * x[j]


cdef inline long long _entry(const int* indices, const double* data, bint binary,
                             const long long* code, const double* w, const double* w_own,
                             bint split, const double* W_hot, Py_ssize_t Lp, Py_ssize_t p,
                             Py_ssize_t nnz, double scale, double* v) noexcept nogil:
    """The code of stored entry p's attribute; v = scale * its value.

    Prefetches the code PREFETCH_FAR entries ahead and the weights (of w
    and W_hot, or of the gradient arrays in their place; of w_own for a
    compact code with OWN_BIT set if ``split``, a constant of the caller)
    PREFETCH_NEAR entries ahead.
    """
    if p + PREFETCH_FAR < nnz:
        prefetch(&code[indices[p + PREFETCH_FAR]])
    cdef long long c
    cdef const double* row
    cdef Py_ssize_t j
    if p + PREFETCH_NEAR < nnz:
        c = code[indices[p + PREFETCH_NEAR]]
        row = _weights_of(c, w_own if split and (c >> OWN_BIT) & 1 else w, W_hot, Lp)
        prefetch(row)
        if c < 0:  # every cache line of a dense row
            for j in range(8, Lp, 8):
                prefetch(row + j)
    v[0] = scale if binary else scale * data[p]
    return code[indices[p]]


cdef inline void gather_token(
    const indptr_t* indptr, const int* indices, const double* data, bint binary,
    const long long* code, const double* w, const double* W_hot, Py_ssize_t Lp,
    Py_ssize_t t, Py_ssize_t width, Py_ssize_t nnz, double* out,
) noexcept nogil:
    """out[:width] = row t of X @ W for CSR X (nnz stored entries) and hybrid state weights.

    The state weights W (n_attributes, L) are stored by attribute a as
    its code[a]: if negative, a "hot" attribute with a dense row
    W_hot[-code - 1] of Lp doubles (0 past L and where the pair is not
    free); otherwise a compact one with cnt = (code >> 32) & 3 <= COLD_MAX
    weights w[k0:k0 + cnt], k0 = code & 0xFFFFFFFF, for the labels
    (code >> (34 + 8 q)) & 255, q < cnt. width is L, or Lp for a padded
    row (then W_hot's zero pads are added too). Every stored (a, v) of the
    row adds v * W[a] in the row's order: the terms and the order of a dense
    ``X @ W`` (the same doubles), without its zero products of compact
    attributes. With ``binary`` data is not read (every value is 1).
    """
    cdef Py_ssize_t p, q, j, k0
    cdef long long c
    cdef double v
    for j in range(width):
        out[j] = 0.0
    for p in range(indptr[t], indptr[t + 1]):
        c = _entry(indices, data, binary, code, w, w, False, W_hot, Lp, p, nnz, 1.0, &v)
        if c < 0:
            _axpy(out, v, &W_hot[(-c - 1) * Lp], width)
        else:
            k0 = c & LOW32
            for q in range((c >> 32) & 3):
                out[(c >> (34 + 8 * q)) & 255] += v * w[k0 + q]


cdef inline void gather_rows(
    const indptr_t* indptr, const int* indices, const double* data, bint binary,
    const long long* code, const double* w, const double* W_hot, Py_ssize_t s, Py_ssize_t n,
    Py_ssize_t L, Py_ssize_t Lp, Py_ssize_t nnz, double* psi,
) noexcept nogil:
    """The padded unary rows of tokens s:s+n (pads -inf) from the features (gather_token)."""
    cdef Py_ssize_t t, j
    for t in range(n):
        gather_token(indptr, indices, data, binary, code, w, W_hot, Lp, s + t, Lp, nnz,
                     psi + t * Lp)
        for j in range(L, Lp):
            psi[t * Lp + j] = -INFINITY


cdef inline void scatter_token(
    const indptr_t* indptr, const int* indices, const double* data, bint binary,
    const long long* code, double* g, double* dW_hot, Py_ssize_t Lp, const double* d,
    double scale, Py_ssize_t t, Py_ssize_t width, Py_ssize_t nnz,
) noexcept nogil:
    """The transpose of :func:`gather_token`: token t's share of ``X.T @ dU``.

    For every stored (a, v) of row t: dW_hot[-code - 1, :width] += scale * v
    * d[:width] for a hot attribute, g[k0 + q] += scale * v * d[label_q]
    for a compact one (the same code; d = dU[t]).
    """
    scatter_token_split(indptr, indices, data, binary, code, g, g, False, dW_hot, Lp, d, scale,
                        t, width, nnz)


cdef inline void scatter_token_split(
    const indptr_t* indptr, const int* indices, const double* data, bint binary,
    const long long* code, double* g, double* g_own, bint split, double* dW_hot,
    Py_ssize_t Lp, const double* d, double scale, Py_ssize_t t, Py_ssize_t width,
    Py_ssize_t nnz,
) noexcept nogil:
    """:func:`scatter_token`; if ``split`` (a constant of the caller), a compact attribute
    whose code has bit OWN_BIT set into g_own.

    (The fused CLL kernel's rounds: the attributes of a single block of
    sequences go straight into the gradient, the others into the block's
    accumulator g. gather_token does not read the bit.)
    """
    cdef Py_ssize_t p, q, k0
    cdef long long c
    cdef double v
    cdef double* dst
    for p in range(indptr[t], indptr[t + 1]):
        c = _entry(indices, data, binary, code, g, g_own, split, dW_hot, Lp, p, nnz, scale,
                   &v)
        if c < 0:
            _axpy(&dW_hot[(-c - 1) * Lp], v, d, width)
        else:
            k0 = c & LOW32
            dst = g_own if split and (c >> OWN_BIT) & 1 else g
            for q in range((c >> 32) & 3):
                dst[k0 + q] += v * d[(c >> (34 + 8 * q)) & 255]


# ---------------------------------------------------------------- max-product

cdef inline void max_plus_step(const double* prev, const double* transition,
                               double* cur, int* bp, Py_ssize_t L,
                               int bp_init) noexcept nogil:
    """cur[j] = max_i prev[i] + transition[i, j], bp[j] = the argmax i.

    Previous label outermost: the inner loop runs over a contiguous row of
    transition and compiles to vector compare-and-select (in a portable
    build, crf_max_plus: the same loop, its AVX2 version on a CPU that has
    it). Strict '>' over increasing i keeps the smallest label among ties;
    where every candidate is -inf, cur[j] = -inf and bp[j] = bp_init.
    """
    cdef Py_ssize_t i, j
    cdef double c, v
    if HAS_DISPATCH:
        _max_plus(prev, transition, cur, bp, L, bp_init)
        return
    for j in range(L):
        cur[j] = -INFINITY
        bp[j] = bp_init
    for i in range(L):
        c = prev[i]
        for j in range(L):
            v = c + transition[i * L + j]
            if v > cur[j]:
                cur[j] = v
                bp[j] = <int>i


cdef inline Py_ssize_t argmax_sum(const double* x, const double* y, Py_ssize_t L,
                                  double* best) noexcept nogil:
    """The smallest j maximising x[j] + y[j] (-1 if every sum is -inf); best gets the max."""
    cdef Py_ssize_t j, jb = -1
    cdef double v, b = -INFINITY
    for j in range(L):
        v = x[j] + y[j]
        if v > b:
            b = v
            jb = j
    best[0] = b
    return jb


cdef inline void backtrace(const int* bp, Py_ssize_t* path, Py_ssize_t n,
                           Py_ssize_t L) noexcept nogil:
    """path[t - 1] = bp[t, path[t]] for t = n-1 .. 1; path[n - 1] is set by the caller."""
    cdef Py_ssize_t t
    for t in range(n - 1, 0, -1):
        path[t - 1] = bp[t * L + path[t]]


cdef inline double* deviated_viterbi(
    const double* unary, const double* transition, const Py_ssize_t* ref,
    Py_ssize_t n, Py_ssize_t L, const double* entry, double* work, int* bp,
    double* d0,
) noexcept nogil:
    """Viterbi over (label, deviated-from-ref) states on n tokens.

    unary and ref start at the first token; entry[j] is the score of label j
    at token 0 (the entry into the chain: start + U[0], or a forward
    max-marginal row); it may be the second row of work. Two states per
    label: d0, the score of the prefix that follows ref, and d1[j], the best
    prefix ending in j that differs from ref somewhere, kept in the two rows
    of work (2 * L doubles, swapped at each token). bp[t * L + j] (t >= 1)
    is the previous label of the deviated state j at t, or -1 where it
    leaves ref at t; staying deviated wins a tie with leaving. Row 0 of bp
    is not written. Returns the row of work holding the deviated scores at
    token n - 1; d0 receives ref's score there.
    """
    return deviated_viterbi_at(unary, transition, NULL, ref, n, L, entry, work, bp, d0)


cdef inline double* deviated_viterbi_at(
    const double* unary, const double* table, const Py_ssize_t* index,
    const Py_ssize_t* ref, Py_ssize_t n, Py_ssize_t L, const double* entry, double* work,
    int* bp, double* d0,
) noexcept nogil:
    """:func:`deviated_viterbi` with position-dependent transitions.

    The edge into token t (t >= 1, counted from the first token, like unary
    and ref) is scored by the (L, L) matrix table + index[t] * L * L; with
    index NULL by table itself at every token.
    """
    cdef Py_ssize_t t, j
    cdef double v, s0 = entry[ref[0]]
    cdef double* d1 = work
    cdef double* nd1 = work + L
    cdef double* tmp
    cdef const double* transition = table
    cdef int* row
    for j in range(L):
        d1[j] = entry[j]
    d1[ref[0]] = -INFINITY
    for t in range(1, n):
        if index != NULL:
            transition = table + index[t] * L * L
        row = &bp[t * L]
        max_plus_step(d1, transition, nd1, row, L, -1)
        for j in range(L):
            if j != ref[t]:
                v = s0 + transition[ref[t - 1] * L + j]
                if v > nd1[j]:
                    nd1[j] = v
                    row[j] = -1
            nd1[j] += unary[t * L + j]
        s0 = s0 + transition[ref[t - 1] * L + ref[t]] + unary[t * L + ref[t]]
        tmp = d1
        d1 = nd1
        nd1 = tmp
    d0[0] = s0
    return d1


cdef inline void deviated_backtrace(const int* bp, const Py_ssize_t* ref,
                                    Py_ssize_t* path, Py_ssize_t n,
                                    Py_ssize_t L) noexcept nogil:
    """The deviated path of :func:`deviated_viterbi` ending in path[n - 1].

    Follows bp back until the path leaves ref (bp = -1), then copies ref.
    """
    cdef Py_ssize_t t, arg
    cdef bint deviated = True
    for t in range(n - 1, 0, -1):
        if deviated:
            arg = bp[t * L + path[t]]
            if arg < 0:
                deviated = False
                path[t - 1] = ref[t - 1]
            else:
                path[t - 1] = arg
        else:
            path[t - 1] = ref[t - 1]
