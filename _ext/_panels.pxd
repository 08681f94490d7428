# Row-vector times matrix products for several vectors at once (the batched
# sum-product of _forward_backward), cimported as `from _panels cimport ...`;
# everything is inline C, compiled into each kernel that uses it.
#
# The scaled forward-backward of one sequence is a chain of vector-matrix
# products x @ M with an (L, Lp) matrix M (exp of the transitions or its
# transpose): each product reads all of M once for L * Lp multiply-adds. A
# single vector leaves no reuse, so when M outgrows the L2 cache (2 MB at
# L = 500) every token streams it from L3. Several independent vectors
# (one per sequence of a batch, advanced together) share each pass over M:
# the columns of M are taken in panels of CRF_PANEL columns (n * CRF_PANEL
# doubles: 128 kB at n = 500), each panel is used for every vector before
# the next panel is read, and two vectors at a time share the loads of a
# row of the panel in registers. Each output is still the sum over
# increasing i of x[i] * M[i, j], with its partial sums in registers: the
# same terms in the same order for any batch, so the results do not depend
# on which vectors are batched together.

cdef extern from *:
    """
    #include <stddef.h>
    /* Columns per panel: the block of outputs whose sums stay in registers,
       for two vectors at once (AVX-512: 2 x 4 zmm; AVX: 2 x 4 ymm; SSE2:
       2 x 4 xmm). */
    #if defined(__AVX512F__)
    #define CRF_PANEL 32
    #elif defined(__AVX__)
    #define CRF_PANEL 16
    #else
    #define CRF_PANEL 8
    #endif

    /* Eight doubles (one AVX-512 vector, two AVX ones, four SSE2 ones:
       GCC's vector extension lowers it to what the target has), loaded
       from any 8-byte boundary. */
    typedef double crf_v8 __attribute__((vector_size(64), aligned(8)));

    /* o_r[0:W] = x_r[:n] @ M[:, 0:W] (add: o_r[0:W] += it) for R = 1 or 2
       vectors x_0, x_1 (x1, o1 unused when R = 1); rows of M of stride
       ld; W a multiple of 8 up to 32. W and R are constants after
       inlining, so that the W sums of each vector are registers. */
    static inline __attribute__((always_inline)) void crf_panel_block(
            const double* x0, const double* x1, const double* M, double* o0, double* o1,
            ptrdiff_t n, ptrdiff_t ld, const int W, const int R, const int add) {
        const int NV = W / 8;
        crf_v8 a0[4], a1[4];
        for (int v = 0; v < NV; v++) { a0[v] = (crf_v8){0}; a1[v] = (crf_v8){0}; }
        for (ptrdiff_t i = 0; i < n; i++) {
            const crf_v8* row = (const crf_v8*)(M + i * ld);
            const double b0 = x0[i];
            const double b1 = R == 2 ? x1[i] : 0.0;
            for (int v = 0; v < NV; v++) {
                a0[v] += b0 * row[v];
                if (R == 2) a1[v] += b1 * row[v];
            }
        }
        crf_v8* p0 = (crf_v8*)o0;
        crf_v8* p1 = (crf_v8*)o1;
        for (int v = 0; v < NV; v++) {
            p0[v] = add ? p0[v] + a0[v] : a0[v];
            if (R == 2) p1[v] = add ? p1[v] + a1[v] : a1[v];
        }
    }

    /* One panel (columns jb:jb+W) for all K vectors, two at a time. */
    static inline __attribute__((always_inline)) void crf_panel_all(
            const double* const* x, const double* M, double* const* out, ptrdiff_t K,
            ptrdiff_t n, ptrdiff_t ld, ptrdiff_t jb, const int W, const int add) {
        ptrdiff_t k = 0;
        for (; k + 2 <= K; k += 2)
            crf_panel_block(x[k], x[k + 1], M + jb, out[k] + jb, out[k + 1] + jb, n, ld, W, 2,
                            add);
        if (k < K)
            crf_panel_block(x[k], x[k], M + jb, out[k] + jb, out[k] + jb, n, ld, W, 1, add);
    }

    static inline __attribute__((always_inline)) void crf_panels_generic(
            const double* const* x, const double* M, double* const* out, ptrdiff_t K,
            ptrdiff_t n, ptrdiff_t Lp, const int add, const int width) {
        ptrdiff_t jb = 0;
        for (; jb + width <= Lp; jb += width)
            crf_panel_all(x, M, out, K, n, Lp, jb, width, add);
        switch (Lp - jb) {  /* Lp is a multiple of 8 */
        case 24: crf_panel_all(x, M, out, K, n, Lp, jb, 24, add); break;
        case 16: crf_panel_all(x, M, out, K, n, Lp, jb, 16, add); break;
        case 8: crf_panel_all(x, M, out, K, n, Lp, jb, 8, add); break;
        }
    }

    /* A portable build runs the AVX2 + FMA version where the CPU has it
       (CRF_DISPATCH and crf_has_avx2 of _chain.pxd, cimported first). */
    #ifdef CRF_DISPATCH
    __attribute__((target("avx2,fma"))) static void crf_panels_avx2(
            const double* const* x, const double* M, double* const* out, ptrdiff_t K,
            ptrdiff_t n, ptrdiff_t Lp, int add) {
        if (add) crf_panels_generic(x, M, out, K, n, Lp, 1, 16);
        else crf_panels_generic(x, M, out, K, n, Lp, 0, 16);
    }
    #endif

    static __attribute__((noinline)) void crf_panels(
            const double* const* x, const double* M, double* const* out, ptrdiff_t K,
            ptrdiff_t n, ptrdiff_t Lp, int add) {
    #ifdef CRF_DISPATCH
        if (crf_has_avx2()) { crf_panels_avx2(x, M, out, K, n, Lp, add); return; }
    #endif
        if (add) crf_panels_generic(x, M, out, K, n, Lp, 1, CRF_PANEL);
        else crf_panels_generic(x, M, out, K, n, Lp, 0, CRF_PANEL);
    }
    """
    void _panels "crf_panels"(const double* const* x, const double* M, double* const* out,
                              Py_ssize_t K, Py_ssize_t n, Py_ssize_t Lp, int add) noexcept nogil


cdef enum:
    # Vectors per call of vec_mat_many (a chunk of sequences).
    MANY_MAX = 8


cdef inline void vec_mat_many(const double** x, const double* M, double** out, Py_ssize_t K,
                              Py_ssize_t n, Py_ssize_t Lp, bint add) noexcept nogil:
    """out[k][:Lp] = x[k][:n] @ M for k < K (add: out[k] += it); M has n rows of Lp.

    The products of :func:`_chain.vec_mat_padded` for K vectors in one pass
    over M, panel by panel (see the header). Each out[k] must not overlap
    any x or M.
    """
    _panels(x, M, out, K, n, Lp, add)


cdef inline void mat_mat_acc(const double* A, Py_ssize_t lda, const double* M, double* out,
                             Py_ssize_t m, Py_ssize_t n, Py_ssize_t Lp) noexcept nogil:
    """out[i, :Lp] += A[i, :n] @ M for i < m (A rows of stride lda, out rows of Lp).

    M has n rows of Lp; rows of A are taken MANY_MAX at a time, each panel
    of M shared by them (:func:`vec_mat_many` with ``add``).
    """
    cdef const double* xs[MANY_MAX]
    cdef double* outs[MANY_MAX]
    cdef Py_ssize_t i0, q, cnt
    for i0 in range(0, m, 8):  # MANY_MAX
        cnt = m - i0 if m - i0 < MANY_MAX else MANY_MAX
        for q in range(cnt):
            xs[q] = A + (i0 + q) * lda
            outs[q] = out + (i0 + q) * Lp
        _panels(xs, M, outs, cnt, n, Lp, 1)
