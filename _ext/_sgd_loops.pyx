# Stochastic gradient descent for linear-chain CRFs: the per-sequence loop of
# solver='sgd' (sklearn_crfloss/solvers/_sgd.py), after L. Bottou's crfsgd
# and crfasgd ("Stochastic gradient descent tricks", 2012).
#
# Design notes
# ------------
# * Parameters: state weights W (n_features, L), C order, and the "tail"
#   [T.ravel(), start, end] (L * L + 2 L), both in the scaled representation
#   theta = a * V: the L2 shrinkage theta <- (1 - eta lam) theta of every
#   step is the scalar a <- a (1 - eta lam), and a gradient step touches only
#   the rows of the attributes present in the sequence (V += -(eta / a) g).
#   When a falls below 1e-9 it is folded back into V (one dense pass).
# * One step on sequences B (one sequence, or a minibatch of the generic
#   path) at step count t (sequences seen so far):
#       eta = eta0 / (1 + eta0 lam_s t) ** power
#       g = gradient of sum_{i in B} w_i loss_i at theta
#       a <- a (1 - eta lam |B|);  V <- V - (eta / a) g;  t <- t + |B|
#   so that theta <- (1 - eta lam |B|) theta - eta g. The free-parameter
#   masks (observed (attribute, label) pairs; the tail entries of a label
#   expert) keep the other entries at exactly 0.
# * Averaging (ASGD): the sum of the iterates theta_k = a_k V_k since
#   averaging started is S V - B, with S = sum_k a_k and B += S D for every
#   sparse change D of V (B is touched on the same rows as V). A fold keeps
#   the sum: B -= S V, S = 0, then V *= a, a = 1.
# * Per-sequence gradients computed here (the losses whose gradient on one
#   sequence is a chain kernel):
#     KIND_SUM (cll, and softmax-margin with a cost matrix): the scaled
#       forward pass of _chain.pxd, a backward pass, marginals minus the gold
#       indicators; the cost rows c(y_t, .) are added to the unary potentials.
#     KIND_MAX (max-margin): Viterbi on the cost-augmented potentials with
#       the max-plus step of _chain.pxd; the subgradient is the counts of
#       that path minus the gold counts.
#   A sequence whose scaled pass underflows stops the loop (sgd_pass returns
#   its position); the Python side steps on it through the loss's own
#   value_and_grad (log-space fallback) and resumes.
# * Observation-dependent label bigrams (optional): bigram attributes have
#   (L, L) blocks B[b] (in the scaled representation too, V-side) and their
#   own CSR rows (none at the first token of a sequence). A sequence with
#   active ones gets one matrix per edge, M_t = a (T + sum_b x[t, b] B[b])
#   (_position_matrices), a forward-backward over them
#   (_position_sum_product_grad: exponentials per token, the pair marginals
#   P_t overwrite them) or the max-product step per token; the update adds
#   gain x[t, b] (P_t - gold pair) to B[b] (_scatter_blocks; for max-margin
#   only the predicted and gold pairs), and the shrinkage, the folds and the
#   averaging sums cover the blocks. A sequence without active bigram
#   attributes takes the dense path above unchanged.
# * Other losses (the generic path) compute dU on a minibatch in Python from
#   the potentials of batch_potentials and apply it with sgd_step, which
#   shares the update code (_apply) with the loop.
# * Serial by nature (each step reads the previous one's parameters).

from libc.math cimport exp, log, pow, NAN, isfinite, isnan
from libc.stdlib cimport free, malloc

from _chain cimport (argmax_sum, backtrace, exp_row, finite_range, max_plus_step, row_too_wide,
                     scale_ok, scale_row, scaled_forward, tail_range, vec_mat)

cdef extern from *:
    """
    #include <stddef.h>
    /* The rows of V (and of the mask and the averaging corrections) that a
       step reads and writes belong to the attributes of a few random
       sequences: most are outside the caches (V of CoNLL-2000 is 60 MB) and
       the loops wait on memory, not on arithmetic. The loops below ask for
       the rows of the stored feature CRF_SGD_AHEAD entries ahead first
       (software prefetch), so that several rows are on their way at once. */
    #define CRF_SGD_AHEAD 12
    #if defined(__GNUC__)
    #define CRF_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #else
    #define CRF_PREFETCH(p) ((void)0)
    #endif
    static inline void crf_prefetch_row(const double* row, ptrdiff_t L) {
        const char* p = (const char*)row;
        const char* last = (const char*)(row + L) - 1;
        for (; p < last; p += 64) CRF_PREFETCH(p);
        CRF_PREFETCH(last);
    }

    /* The prefetches of a step at stored feature p (entries up to pend):
       the rows of the mask and of BW of entry p + AHEAD (the rows of V a
       step writes were just read by the potentials); of BW only the lines
       of the columns cols[:nz] when cols is not NULL (the columns of the
       current row of dU: a row of the next token may need others, which are
       then missed). */
    static inline void crf_prefetch_step(const double* BW, const unsigned char* mask,
                                         const int* idx, ptrdiff_t p, ptrdiff_t pend,
                                         ptrdiff_t L, const Py_ssize_t* cols, ptrdiff_t nz) {
        if (p + CRF_SGD_AHEAD >= pend)
            return;
        const ptrdiff_t k = (ptrdiff_t)idx[p + CRF_SGD_AHEAD] * L;
        if (mask != NULL) {
            CRF_PREFETCH(mask + k);
            CRF_PREFETCH(mask + k + L - 1);
        }
        if (BW == NULL)
            return;
        if (cols == NULL)
            crf_prefetch_row(BW + k, L);
        else
            for (ptrdiff_t q = 0; q < nz; q++) CRF_PREFETCH(BW + k + cols[q]);
    }

    /* u[:L] = sum_{p0 <= p < p1} x_p W[idx[p]] (x_p = val[p], or 1 when val
       is NULL); prefetches the rows up to entry pend (the sequence's end). */
    static inline void crf_gather_rows(double* restrict u, const double* restrict W,
                                       const int* restrict idx, const double* restrict val,
                                       ptrdiff_t p0, ptrdiff_t p1, ptrdiff_t pend, ptrdiff_t L) {
        for (ptrdiff_t j = 0; j < L; j++) u[j] = 0.0;
        for (ptrdiff_t p = p0; p < p1; p++) {
            if (p + CRF_SGD_AHEAD < pend)
                crf_prefetch_row(W + (ptrdiff_t)idx[p + CRF_SGD_AHEAD] * L, L);
            const double* restrict m = W + (ptrdiff_t)idx[p] * L;
            if (val == NULL) {
                for (ptrdiff_t j = 0; j < L; j++) u[j] += m[j];
            } else {
                const double v = val[p];
                for (ptrdiff_t j = 0; j < L; j++) u[j] += v * m[j];
            }
        }
    }

    /* The step V[idx[p]] += g_p du at the nonzero entries cols[:nz] of du
       (g_p = gain val[p], or gain when val is NULL), and BW[idx[p]] +=
       S g_p du (BW NULL: no averaging yet), for p0 <= p < p1. An entry
       outside the mask is skipped: it stays 0 without its row of V being
       read or written (most attributes of a corpus are seen with one label). */
    static inline void crf_scatter_columns(double* restrict W, double* restrict BW,
                                           const unsigned char* restrict mask,
                                           const int* restrict idx, const double* restrict val,
                                           ptrdiff_t p0, ptrdiff_t p1, ptrdiff_t pend,
                                           ptrdiff_t L, const double* restrict du,
                                           const Py_ssize_t* restrict cols, ptrdiff_t nz,
                                           double gain, double S) {
        for (ptrdiff_t p = p0; p < p1; p++) {
            const double g = val == NULL ? gain : gain * val[p];
            const double h = S * g;
            const ptrdiff_t k = (ptrdiff_t)idx[p] * L;
            crf_prefetch_step(BW, mask, idx, p, pend, L, cols, nz);
            for (ptrdiff_t q = 0; q < nz; q++) {
                const ptrdiff_t j = cols[q];
                if (mask != NULL && !mask[k + j]) continue;
                W[k + j] += g * du[j];
                if (BW != NULL) BW[k + j] += h * du[j];
            }
        }
    }

    /* The step V[idx[p]] += g_p du (g_p as above), and BW[idx[p]] += S g_p du
       (BW NULL: no averaging yet), for p0 <= p < p1, times the mask row
       (entries outside it stay 0); branch free. */
    static inline void crf_scatter_dense(double* restrict W, double* restrict BW,
                                         const unsigned char* restrict mask,
                                         const int* restrict idx, const double* restrict val,
                                         ptrdiff_t p0, ptrdiff_t p1, ptrdiff_t pend, ptrdiff_t L,
                                         const double* restrict du, double gain, double S) {
        for (ptrdiff_t p = p0; p < p1; p++) {
            const double g = val == NULL ? gain : gain * val[p];
            const double h = S * g;
            const ptrdiff_t k = (ptrdiff_t)idx[p] * L;
            double* restrict w = W + k;
            crf_prefetch_step(BW, mask, idx, p, pend, L, NULL, 0);
            if (mask == NULL) {
                if (BW == NULL) {
                    for (ptrdiff_t j = 0; j < L; j++) w[j] += g * du[j];
                } else {
                    double* restrict b = BW + k;
                    for (ptrdiff_t j = 0; j < L; j++) {
                        w[j] += g * du[j];
                        b[j] += h * du[j];
                    }
                }
                continue;
            }
            const unsigned char* restrict m = mask + k;
            /* (g m) du, not g du m: g m is exact, so an entry inside the mask
               gets g du + w rounded as crf_scatter_columns gives it, also where
               the compiler fuses the multiply-add (FMA, native builds). */
            if (BW == NULL) {
                for (ptrdiff_t j = 0; j < L; j++) w[j] += (g * m[j]) * du[j];
            } else {
                double* restrict b = BW + k;
                for (ptrdiff_t j = 0; j < L; j++) {
                    w[j] += (g * m[j]) * du[j];
                    b[j] += (h * m[j]) * du[j];
                }
            }
        }
    }
    """
    void crf_gather_rows(double* u, const double* W, const int* idx, const double* val,
                         Py_ssize_t p0, Py_ssize_t p1, Py_ssize_t pend, Py_ssize_t L) noexcept nogil
    void crf_scatter_columns(double* W, double* BW, const unsigned char* mask, const int* idx,
                             const double* val, Py_ssize_t p0, Py_ssize_t p1, Py_ssize_t pend,
                             Py_ssize_t L, const double* du, const Py_ssize_t* cols,
                             Py_ssize_t nz, double gain, double S) noexcept nogil
    void crf_scatter_dense(double* W, double* BW, const unsigned char* mask, const int* idx,
                           const double* val, Py_ssize_t p0, Py_ssize_t p1, Py_ssize_t pend,
                           Py_ssize_t L, const double* du, double gain, double S) noexcept nogil


cdef enum:
    KIND_SUM = 0
    KIND_MAX = 1

# The scale a is folded back into V below this.
cdef double MIN_SCALE_FACTOR = 1e-9


cdef struct Model:
    # Data: CSR rows of X, gold labels, sequence offsets.
    const Py_ssize_t* indptr
    const int* indices
    const double* data
    bint binary
    const Py_ssize_t* y
    const Py_ssize_t* offsets
    Py_ssize_t L
    # Parameters (scaled), masks, averaging accumulators (NULL: no averaging).
    double* W
    Py_ssize_t n_w
    const unsigned char* mask
    double* tail
    const double* tail_mask
    double* BW
    double* Btail
    # Cost rows added to the unary potentials (NULL: none).
    const double* cost
    # Bigram attributes (bptr NULL: none): CSR rows of their entries (block
    # indices; bdata NULL: all 1), blocks (n_b, L, L) scaled like W, their
    # averaging corrections (NULL: no averaging), scratch (max_len, L, L).
    const Py_ssize_t* bptr
    const int* bind
    const double* bdata
    double* B
    double* BB
    Py_ssize_t n_b
    double* E
    # Scratch: rows of the longest sequence and (L, L) tables.
    double* U
    double* psi
    double* marg
    double* work
    double* dtail
    int* bp
    Py_ssize_t* path


cdef inline double _rowmax(const double* x, Py_ssize_t n, double a) noexcept nogil:
    cdef double m = a * x[0]
    cdef Py_ssize_t j
    for j in range(1, n):
        if a * x[j] > m:
            m = a * x[j]
    return m


cdef void _potentials(Model* c, Py_ssize_t s, Py_ssize_t n, double a) noexcept nogil:
    """U[t] = a * sum_{(k, v) in row s + t of X} v W[k] (+ cost[y_{s+t}]), t < n."""
    cdef Py_ssize_t L = c.L, t, j, end = c.indptr[s + n]
    cdef double* u
    cdef const double* cr
    for t in range(n):
        u = &c.U[t * L]
        crf_gather_rows(u, c.W, c.indices, NULL if c.binary else c.data, c.indptr[s + t],
                        c.indptr[s + t + 1], end, L)
        if c.cost != NULL:
            cr = &c.cost[c.y[s + t] * L]
            for j in range(L):
                u[j] = a * u[j] + cr[j]
        else:
            for j in range(L):
                u[j] *= a


cdef double _gold(Model* c, Py_ssize_t s, Py_ssize_t n, double a) noexcept nogil:
    """Score of the gold path under U and a * tail; subtracts its counts from
    the gradient rows (marg) and dtail."""
    cdef Py_ssize_t L = c.L, t, yt, yp = -1
    cdef double g = 0.0
    cdef double* dT = c.dtail
    for t in range(n):
        yt = c.y[s + t]
        g += c.U[t * L + yt]
        c.marg[t * L + yt] -= 1.0
        if t > 0:
            g += a * c.tail[yp * L + yt]
            dT[yp * L + yt] -= 1.0
        yp = yt
    yt = c.y[s]
    g += a * (c.tail[L * L + yt] + c.tail[L * L + L + yp])
    dT[L * L + yt] -= 1.0
    dT[L * L + L + yp] -= 1.0
    return g


cdef double _sum_product_grad(Model* c, Py_ssize_t s, Py_ssize_t n, double a) noexcept nogil:
    """log Z - score(gold) of rows s:s+n; marg <- marginals - onehot(y),
    dtail <- expected minus gold counts. NaN if the scaled pass underflows
    (or its backward rows overflow)."""
    cdef Py_ssize_t L = c.L, LL = c.L * c.L, t, i, j
    cdef double m_t, m_s, m_e, lz = 0.0, c_end, x
    cdef double* et = c.work
    cdef double* et_t = c.work + LL
    cdef double* pair = c.work + 2 * LL
    cdef double* es = c.work + 3 * LL
    cdef double* ee = es + L
    cdef double* v = ee + L
    cdef double* b_next = v + L
    cdef double* b_cur = b_next + L
    cdef double* tmp
    cdef double* dT = c.dtail
    cdef double* ds = c.dtail + LL
    cdef double* de = ds + L
    m_t = _rowmax(c.tail, LL, a)
    m_s = _rowmax(&c.tail[LL], L, a)
    m_e = _rowmax(&c.tail[LL + L], L, a)
    for i in range(L):
        for j in range(L):
            x = exp(a * c.tail[i * L + j] - m_t)
            et[i * L + j] = x
            et_t[j * L + i] = x
            pair[i * L + j] = 0.0
        es[i] = exp(a * c.tail[LL + i] - m_s)
        ee[i] = exp(a * c.tail[LL + L + i] - m_e)
    c_end = scaled_forward(c.U, n, L, et, es, ee, c.psi, c.marg, v, &lz, NULL, NULL, NULL,
                           tail_range(c.tail, &c.tail[LL], L, a))
    if c_end == 0.0:
        return NAN
    # Backward pass: beta_hat[n-1] = exp_end / c_end; beta_hat[t-1] =
    # exp_trans @ (psi[t] * beta_hat[t]) (psi already divided by c_t); the
    # alpha rows in marg become the marginals alpha_hat * beta_hat.
    c_end = 1.0 / c_end
    for j in range(L):
        b_next[j] = ee[j] * c_end
    for j in range(L):
        de[j] = c.marg[(n - 1) * L + j] * b_next[j]
    for t in range(n - 1, 0, -1):
        for j in range(L):
            v[j] = c.psi[t * L + j] * b_next[j]
        vec_mat(v, et_t, b_cur, L)
        # The backward rows can overflow where alpha_hat underflowed to 0
        # (see _forward_backward.pyx): NaN, as for a forward underflow.
        x = 0.0
        for j in range(L):
            x += b_cur[j]
        if not isfinite(x):
            return NAN
        for i in range(L):
            x = c.marg[(t - 1) * L + i]
            for j in range(L):
                pair[i * L + j] += x * v[j]
        for j in range(L):
            c.marg[t * L + j] *= b_next[j]
        tmp = b_next
        b_next = b_cur
        b_cur = tmp
    for j in range(L):
        c.marg[j] *= b_next[j]
        ds[j] = c.marg[j]
    for i in range(LL):
        dT[i] = et[i] * pair[i]
    return lz + m_s + m_e + (n - 1) * m_t - _gold(c, s, n, a)


cdef double _max_product_grad(Model* c, Py_ssize_t s, Py_ssize_t n, double a,
                              bint position) noexcept nogil:
    """max_y score(y) - score(gold) on U (cost-augmented); marg <- onehot(best)
    - onehot(y), dtail <- counts(best) - counts(gold). With ``position`` the
    edge into t has the matrix E[t] (_position_matrices) instead of a T."""
    cdef Py_ssize_t L = c.L, LL = c.L * c.L, t, j, best_j
    cdef double best
    cdef double* tm = c.work
    cdef double* prev = c.work + LL
    cdef double* cur = prev + L
    cdef double* en = cur + L
    cdef double* tmp
    cdef double* dT = c.dtail
    for j in range(LL):
        tm[j] = a * c.tail[j]
        dT[j] = 0.0
    for j in range(L):
        prev[j] = a * c.tail[LL + j] + c.U[j]
        en[j] = a * c.tail[LL + L + j]
        dT[LL + j] = 0.0
        dT[LL + L + j] = 0.0
    for t in range(1, n):
        max_plus_step(prev, &c.E[t * LL] if position else tm, cur, &c.bp[t * L], L, 0)
        for j in range(L):
            cur[j] += c.U[t * L + j]
        tmp = prev
        prev = cur
        cur = tmp
    best_j = argmax_sum(prev, en, L, &best)
    c.path[n - 1] = best_j if best_j >= 0 else 0
    backtrace(c.bp, c.path, n, L)
    for t in range(n):
        for j in range(L):
            c.marg[t * L + j] = 0.0
        c.marg[t * L + c.path[t]] = 1.0
        if t > 0:
            dT[c.path[t - 1] * L + c.path[t]] += 1.0
    dT[LL + c.path[0]] += 1.0
    dT[LL + L + c.path[n - 1]] += 1.0
    return best - _gold(c, s, n, a)


cdef inline bint _has_bigrams(Model* c, Py_ssize_t s, Py_ssize_t n) noexcept nogil:
    """Whether bigram attributes are active on an edge of rows s:s+n."""
    return c.bptr != NULL and c.bptr[s + n] > c.bptr[s]


cdef double _position_matrices(Model* c, Py_ssize_t s, Py_ssize_t n, double a) noexcept nogil:
    """E[t] = a (T + sum_b x[s + t, b] B[b]) for 0 < t < n; returns the gold
    path's share of the blocks, sum_t (E[t] - a T)[y_{t-1}, y_t]."""
    cdef Py_ssize_t L = c.L, LL = c.L * c.L, t, p, q, yp, yt
    cdef double v, g = 0.0
    cdef double* M
    cdef const double* Bb
    for t in range(1, n):
        M = &c.E[t * LL]
        for q in range(LL):
            M[q] = c.tail[q]
        for p in range(c.bptr[s + t], c.bptr[s + t + 1]):
            Bb = &c.B[c.bind[p] * LL]
            v = 1.0 if c.bdata == NULL else c.bdata[p]
            for q in range(LL):
                M[q] += v * Bb[q]
        for q in range(LL):
            M[q] *= a
        yp = c.y[s + t - 1]
        yt = c.y[s + t]
        g += M[yp * L + yt] - a * c.tail[yp * L + yt]
    return g


cdef double _position_sum_product_grad(Model* c, Py_ssize_t s, Py_ssize_t n,
                                       double a) noexcept nogil:
    """_sum_product_grad with one matrix per edge (bigram attributes active).

    On return E[t] (0 < t < n) holds the pair marginals minus the gold pair,
    the gradient of the edge's matrix; dtail their sum (and the boundary
    counts) minus the gold counts. NaN if the scaled pass would lose mass."""
    cdef Py_ssize_t L = c.L, LL = c.L * c.L, t, i, j, q
    cdef double m_s, m_e, lz = 0.0, c_t, x, lo, hi, t_range, g_blocks
    cdef double* es = c.work
    cdef double* ee = es + L
    cdef double* v = ee + L
    cdef double* b_next = v + L
    cdef double* b_cur = b_next + L
    cdef double* tmp
    cdef double* M
    cdef double* alpha = c.marg
    cdef double* dT = c.dtail
    cdef double* ds = c.dtail + LL
    cdef double* de = ds + L
    g_blocks = _position_matrices(c, s, n, a)
    m_s = _rowmax(&c.tail[LL], L, a)
    m_e = _rowmax(&c.tail[LL + L], L, a)
    t_range = a * finite_range(&c.tail[LL], L)
    for i in range(L):
        es[i] = exp(a * c.tail[LL + i] - m_s)
        ee[i] = exp(a * c.tail[LL + L + i] - m_e)
    for q in range(LL):
        dT[q] = 0.0
    # Shifted exponentials of every edge's matrix (the shifts go into log Z).
    for t in range(1, n):
        M = &c.E[t * LL]
        lo = M[0]
        hi = M[0]
        for q in range(1, LL):
            lo = M[q] if M[q] < lo else lo
            hi = M[q] if M[q] > hi else hi
        t_range = hi - lo if hi - lo > t_range else t_range
        lz += hi
        for q in range(LL):
            M[q] = exp(M[q] - hi)
    t_range += log(<double>L)
    for t in range(n):
        if row_too_wide(t_range, &c.U[t * L], L):
            return NAN
        lz += exp_row(&c.U[t * L], &c.psi[t * L], L)
    for t in range(n):
        if t == 0:
            for j in range(L):
                alpha[j] = es[j] * c.psi[j]
        else:
            vec_mat(&alpha[(t - 1) * L], &c.E[t * LL], v, L)
            for j in range(L):
                alpha[t * L + j] = v[j] * c.psi[t * L + j]
        c_t = scale_row(&alpha[t * L], &c.psi[t * L], L)
        if c_t == 0.0:
            return NAN
        lz += log(c_t)
    c_t = 0.0
    for j in range(L):
        c_t += alpha[(n - 1) * L + j] * ee[j]
    if not scale_ok(c_t):
        return NAN
    lz += log(c_t)
    # Backward pass (as in _sum_product_grad), the pair marginals in place
    # of E[t]: P_t[i, j] = alpha_hat[t-1, i] E[t][i, j] psi[t, j] beta_hat[t, j].
    c_t = 1.0 / c_t
    for j in range(L):
        b_next[j] = ee[j] * c_t
        de[j] = alpha[(n - 1) * L + j] * b_next[j]
    for t in range(n - 1, 0, -1):
        M = &c.E[t * LL]
        for j in range(L):
            v[j] = c.psi[t * L + j] * b_next[j]
        x = 0.0
        for i in range(L):
            c_t = 0.0
            for j in range(L):
                c_t += M[i * L + j] * v[j]
            b_cur[i] = c_t
            x += c_t
        if not isfinite(x):
            return NAN
        for i in range(L):
            x = alpha[(t - 1) * L + i]
            for j in range(L):
                M[i * L + j] *= x * v[j]
                dT[i * L + j] += M[i * L + j]
        M[c.y[s + t - 1] * L + c.y[s + t]] -= 1.0
        for j in range(L):
            alpha[t * L + j] *= b_next[j]
        tmp = b_next
        b_next = b_cur
        b_cur = tmp
    for j in range(L):
        alpha[j] *= b_next[j]
        ds[j] = alpha[j]
    return lz + m_s + m_e - _gold(c, s, n, a) - g_blocks


cdef void _scatter_blocks(Model* c, Py_ssize_t s, Py_ssize_t n, double gain, double S,
                          int kind) noexcept nogil:
    """B[b] += gain x[s + t, b] D_t (and BB[b] += S times that) for the bigram
    entries of rows s:s+n: D_t = E[t] (KIND_SUM), or the predicted pair minus
    the gold pair (KIND_MAX, path in c.path)."""
    cdef Py_ssize_t L = c.L, LL = c.L * c.L, t, p, q, i0, j0, i1, j1
    cdef double g, h
    cdef double* Bb
    cdef double* BBb
    cdef const double* D
    for t in range(1, n):
        if kind == KIND_MAX:
            i0 = c.path[t - 1]
            j0 = c.path[t]
            i1 = c.y[s + t - 1]
            j1 = c.y[s + t]
            if i0 == i1 and j0 == j1:
                continue
        D = &c.E[t * LL]
        for p in range(c.bptr[s + t], c.bptr[s + t + 1]):
            g = gain if c.bdata == NULL else gain * c.bdata[p]
            h = S * g
            Bb = &c.B[c.bind[p] * LL]
            BBb = &c.BB[c.bind[p] * LL] if S != 0.0 else NULL
            if kind == KIND_MAX:
                Bb[i0 * L + j0] += g
                Bb[i1 * L + j1] -= g
                if BBb != NULL:
                    BBb[i0 * L + j0] += h
                    BBb[i1 * L + j1] -= h
            elif BBb == NULL:
                for q in range(LL):
                    Bb[q] += g * D[q]
            else:
                for q in range(LL):
                    Bb[q] += g * D[q]
                    BBb[q] += h * D[q]


cdef void _fold(Model* c, double* state) noexcept nogil:
    """Fold the scale into V (and keep the averaged sum S V - B)."""
    cdef Py_ssize_t q, n_tail = c.L * c.L + 2 * c.L
    cdef double a = state[0], S = state[2]
    for q in range(c.n_w):
        if c.BW != NULL:
            c.BW[q] -= S * c.W[q]
        c.W[q] *= a
    for q in range(n_tail):
        if c.Btail != NULL:
            c.Btail[q] -= S * c.tail[q]
        c.tail[q] *= a
    for q in range(c.n_b * c.L * c.L):
        if c.BB != NULL:
            c.BB[q] -= S * c.B[q]
        c.B[q] *= a
    state[0] = 1.0
    state[2] = 0.0
    state[4] += 1.0


cdef void _scatter_columns(Model* c, Py_ssize_t r, Py_ssize_t end, const double* du,
                           double gain, double S, const Py_ssize_t* cols,
                           Py_ssize_t nz) noexcept nogil:
    """_scatter_rows' update of row r of X with the nonzero entries ``cols[:nz]`` of du
    (rows up to ``end`` prefetched)."""
    crf_scatter_columns(c.W, c.BW if S != 0.0 else NULL, c.mask, c.indices,
                        NULL if c.binary else c.data, c.indptr[r], c.indptr[r + 1], end, c.L,
                        du, cols, nz, gain, S)


cdef void _scatter_rows(Model* c, Py_ssize_t s, Py_ssize_t n, const double* dU,
                        double gain, double S, Py_ssize_t* cols) noexcept nogil:
    """V[k] += gain * v * dU[t] (and B[k] += S * that) for every entry (k, v)
    of rows s:s+n of X; masked entries stay unchanged (crf_scatter_dense,
    crf_scatter_columns). With ``cols`` (L entries of
    scratch; NULL: every row dense) a row of dU that is zero is skipped and
    one with at most L / 2 nonzero entries adds only those (a max-product
    gradient, MCE-F's path counts): the same sums, fewer rows of V and B
    written."""
    cdef Py_ssize_t L = c.L, t, j, nz = L
    cdef const double* du
    for t in range(n):
        du = &dU[t * L]
        if cols != NULL:
            nz = 0
            for j in range(L):
                if du[j] != 0.0:
                    cols[nz] = j
                    nz += 1
            if nz == 0:
                continue
            if 2 * nz <= L:
                _scatter_columns(c, s + t, c.indptr[s + n], du, gain, S, cols, nz)
                continue
        crf_scatter_dense(c.W, c.BW if S != 0.0 else NULL, c.mask, c.indices,
                          NULL if c.binary else c.data, c.indptr[s + t], c.indptr[s + t + 1],
                          c.indptr[s + n], L, du, gain, S)


cdef void _apply(Model* c, double* state, const Py_ssize_t* seqs, Py_ssize_t m,
                 const double* dU, const double* dtail, double eta, double lam,
                 double weight, double avg_start, bint sparse_rows, int blocks_kind,
                 const Py_ssize_t* bidx, Py_ssize_t m_b, const double* dB) noexcept nogil:
    """One step: shrink (and fold), the sparse step on the sequences' rows and
    the tail, the averaging sums, the step count. dU holds the rows of the m
    sequences seqs, in order. The bigram blocks: from E (blocks_kind >= 0, one
    sequence, see _scatter_blocks), or dB (m_b blocks bidx, rows of L * L).
    sparse_rows: dU's rows are mostly zero (see _scatter_rows)."""
    cdef Py_ssize_t k, q, s, n, row = 0, n_tail = c.L * c.L + 2 * c.L, LL = c.L * c.L
    cdef double factor = 1.0 - eta * lam * m
    cdef double gain, S, d
    cdef bint averaging = c.BW != NULL and state[1] >= avg_start
    cdef Py_ssize_t* cols = NULL
    if factor < 0.0:
        factor = 0.0
    state[0] *= factor
    if state[0] < MIN_SCALE_FACTOR:
        _fold(c, state)
    gain = -eta * weight / state[0]
    S = state[2]
    if sparse_rows:
        cols = <Py_ssize_t*>malloc(c.L * sizeof(Py_ssize_t))
    for k in range(m):
        s = c.offsets[seqs[k]]
        n = c.offsets[seqs[k] + 1] - s
        _scatter_rows(c, s, n, &dU[row * c.L], gain, S, cols)
        row += n
    free(cols)
    for q in range(n_tail):
        d = gain * dtail[q] * c.tail_mask[q]
        c.tail[q] += d
        if S != 0.0:
            c.Btail[q] += S * d
    if blocks_kind >= 0:
        _scatter_blocks(c, c.offsets[seqs[0]], c.offsets[seqs[0] + 1] - c.offsets[seqs[0]],
                        gain, S, blocks_kind)
    for k in range(m_b):
        for q in range(LL):
            d = gain * dB[k * LL + q]
            c.B[bidx[k] * LL + q] += d
            if S != 0.0:
                c.BB[bidx[k] * LL + q] += S * d
    if averaging:
        state[2] = S + state[0]
        state[3] += 1.0
    state[1] += m


cdef Model _model(const Py_ssize_t[::1] indptr, const int[::1] indices, const double[::1] data,
                  bint binary, const Py_ssize_t[::1] y, const Py_ssize_t[::1] offsets,
                  double[:, ::1] W, const unsigned char[:, ::1] mask, double[::1] tail,
                  const double[::1] tail_mask, double[:, ::1] BW, double[::1] Btail):
    cdef Model c
    c.indptr = &indptr[0]
    c.indices = &indices[0] if indices.shape[0] else NULL
    c.data = &data[0] if data.shape[0] else NULL
    c.binary = binary
    c.y = &y[0]
    c.offsets = &offsets[0]
    c.L = W.shape[1]
    c.W = &W[0, 0]
    c.n_w = W.shape[0] * W.shape[1]
    c.mask = &mask[0, 0] if mask.shape[0] else NULL
    c.tail = &tail[0]
    c.tail_mask = &tail_mask[0]
    c.BW = &BW[0, 0] if BW.shape[0] else NULL
    c.Btail = &Btail[0] if Btail.shape[0] else NULL
    c.cost = NULL
    c.bptr = NULL
    c.bind = NULL
    c.bdata = NULL
    c.B = NULL
    c.BB = NULL
    c.n_b = 0
    c.E = NULL
    return c


cdef void _bind_blocks(Model* c, const Py_ssize_t[::1] bptr, const int[::1] bind,
                       const double[::1] bdata, double[::1] B, double[::1] BB,
                       double[::1] E) noexcept:
    """Bind the bigram arrays (bptr None: the model has none)."""
    if bptr is None:
        return
    c.bptr = &bptr[0]
    c.bind = &bind[0] if bind.shape[0] else NULL
    c.bdata = &bdata[0] if bdata.shape[0] else NULL
    c.n_b = B.shape[0] // (c.L * c.L)
    c.B = &B[0] if B.shape[0] else NULL
    c.BB = &BB[0] if BB.shape[0] else NULL
    c.E = &E[0] if E is not None and E.shape[0] else NULL


def sgd_pass(const Py_ssize_t[::1] indptr, const int[::1] indices, const double[::1] data,
             bint binary, const Py_ssize_t[::1] y, const Py_ssize_t[::1] offsets,
             const double[::1] weights, const Py_ssize_t[::1] order, Py_ssize_t first,
             double[:, ::1] W, const unsigned char[:, ::1] mask, double[::1] tail,
             const double[::1] tail_mask, double[:, ::1] BW, double[::1] Btail,
             const double[:, ::1] cost, int kind, double[::1] state, double eta0,
             double lam, double lam_schedule, double power, double avg_start, bint update,
             double[::1] scratch, int[::1] int_scratch, Py_ssize_t[::1] path_scratch,
             const Py_ssize_t[::1] bptr=None, const int[::1] bind=None,
             const double[::1] bdata=None, double[::1] B=None, double[::1] BB=None,
             double[::1] E=None):
    """Visit the sequences order[first:] one step each (low level).

    Use :class:`sklearn_crfloss.solvers.SGD`. Shapes: W, mask (uint8; 0 rows
    for no mask), BW (0 rows: no averaging) (n_features, L); tail, tail_mask,
    Btail (L * L + 2 L); cost (L, L) or 0 rows; state [a, t, S, n_avg, n_folds];
    scratch (3 * max_len + 4 * L + 7) * L doubles; int_scratch max_len * L;
    path_scratch max_len. kind: 0 sum-product (cll, softmax-margin with
    cost), 1 max-product (max-margin). With ``update`` False the parameters
    are not changed (the loss of each sequence is only evaluated). Step size
    ``eta0 / (1 + eta0 * lam_schedule * t) ** power``; shrinkage ``lam``;
    averaging from step count ``avg_start``. Bigram attributes (optional):
    bptr (n_tokens + 1,), bind, bdata (0 entries: all 1) their CSR rows
    (block indices, none at a sequence's first token), B and BB
    (n_bigram * L * L; BB empty without averaging), E scratch of
    max_len * L * L doubles.

    Returns
    -------
    stop : int
        len(order), or the position of a sequence whose scaled forward pass
        underflowed (not stepped on).
    loss : float
        Sum of w_i * loss_i of the sequences visited, each at the parameters
        before its own step.
    """
    cdef Model c = _model(indptr, indices, data, binary, y, offsets, W, mask, tail, tail_mask,
                          BW, Btail)
    cdef Py_ssize_t L = c.L, max_len = int_scratch.shape[0] // max(L, 1)
    cdef Py_ssize_t pos, i, s, n, stop = order.shape[0]
    cdef double total = 0.0, value, eta
    cdef bint position
    _bind_blocks(&c, bptr, bind, bdata, B, BB, E)
    c.cost = &cost[0, 0] if cost.shape[0] else NULL
    c.U = &scratch[0]
    c.psi = c.U + max_len * L
    c.marg = c.psi + max_len * L
    c.dtail = c.marg + max_len * L
    c.work = c.dtail + L * L + 2 * L
    c.bp = &int_scratch[0]
    c.path = &path_scratch[0]
    with nogil:
        for pos in range(first, order.shape[0]):
            i = order[pos]
            s = offsets[i]
            n = offsets[i + 1] - s
            if n == 0:
                continue
            _potentials(&c, s, n, state[0])
            position = _has_bigrams(&c, s, n)
            if kind == KIND_MAX:
                value = -_position_matrices(&c, s, n, state[0]) if position else 0.0
                value += _max_product_grad(&c, s, n, state[0], position)
            elif position:
                value = _position_sum_product_grad(&c, s, n, state[0])
            else:
                value = _sum_product_grad(&c, s, n, state[0])
            if isnan(value):
                stop = pos
                break
            total += weights[i] * value
            if update:
                eta = eta0 / pow(1.0 + eta0 * lam_schedule * state[1], power)
                _apply(&c, &state[0], &order[pos], 1, c.marg, c.dtail, eta, lam,
                       weights[i], avg_start, kind == KIND_MAX, kind if position else -1,
                       NULL, 0, NULL)
    return stop, total


def batch_potentials(const Py_ssize_t[::1] indptr, const int[::1] indices,
                     const double[::1] data, bint binary, const Py_ssize_t[::1] offsets,
                     const Py_ssize_t[::1] seqs, const double[:, ::1] W, double scale,
                     double[:, ::1] out):
    """out = scale * X[rows of seqs] @ W, the sequences' rows in order (low level)."""
    cdef Model c
    cdef Py_ssize_t k, s, n, row = 0
    c.indptr = &indptr[0]
    c.indices = &indices[0] if indices.shape[0] else NULL
    c.data = &data[0] if data.shape[0] else NULL
    c.binary = binary
    c.L = W.shape[1]
    c.W = <double*>&W[0, 0]
    c.cost = NULL
    with nogil:
        for k in range(seqs.shape[0]):
            s = offsets[seqs[k]]
            n = offsets[seqs[k] + 1] - s
            c.U = &out[row, 0] if n else NULL
            if n:
                _potentials(&c, s, n, scale)
            row += n


def sgd_step(const Py_ssize_t[::1] indptr, const int[::1] indices, const double[::1] data,
             bint binary, const Py_ssize_t[::1] y, const Py_ssize_t[::1] offsets,
             const Py_ssize_t[::1] seqs, double[:, ::1] W, const unsigned char[:, ::1] mask,
             double[::1] tail, const double[::1] tail_mask, double[:, ::1] BW,
             double[::1] Btail, const double[:, ::1] d_unary, const double[::1] d_tail,
             double[::1] state, double eta, double lam, double avg_start,
             double[::1] B=None, double[::1] BB=None, const Py_ssize_t[::1] block_index=None,
             const double[:, ::1] d_blocks=None, bint sparse_rows=True):
    """One step of the generic path with the gradient of a minibatch (low level).

    d_unary holds the rows of the sequences ``seqs`` in order (the loss's
    gradient with respect to the unary potentials, sample weights included),
    d_tail the gradient with respect to [T.ravel(), start, end]. Same
    update as :func:`sgd_pass` (shrinkage by ``1 - eta * lam * len(seqs)``).
    Bigram blocks (optional): B, BB as for :func:`sgd_pass`, d_blocks
    (len(block_index), L * L) the gradient of the blocks ``block_index``.
    sparse_rows: add only the nonzero entries of the rows of d_unary that
    have at most L / 2 of them (the same parameters; False: every entry).
    """
    cdef Model c = _model(indptr, indices, data, binary, y, offsets, W, mask, tail, tail_mask,
                          BW, Btail)
    cdef Py_ssize_t m_b = 0 if block_index is None else block_index.shape[0]
    if B is not None and B.shape[0]:  # (folds of the scale cover the blocks)
        c.B = &B[0]
        c.BB = &BB[0] if BB.shape[0] else NULL
        c.n_b = B.shape[0] // (c.L * c.L)
    with nogil:
        _apply(&c, &state[0], &seqs[0], seqs.shape[0], &d_unary[0, 0], &d_tail[0], eta, lam,
               1.0, avg_start, sparse_rows, -1, &block_index[0] if m_b else NULL, m_b,
               &d_blocks[0, 0] if m_b else NULL)
