# The F-score ratio of MCE-F (Suzuki et al. 2006, section 4, Eqs. 13-16) from
# the segments' margins, for the one-call kernel of _max_marginals
# (mce_f_labels_batch), cimported as `from _fscore cimport mce_f_ratio`.
#
# It repeats numpy's operations of SegmentFScoreMCE.value_and_grad (the
# Python path) in numpy's order, so that both give the same bits: the
# smoothing as scipy's expit, every a * x + b rounded twice (no fused
# multiply-add, which -ffp-contract=fast makes in the vector builds), the sums
# by numpy's pairwise summation over the arrays the Python path sums.

from libc.math cimport INFINITY, NAN, exp, isfinite

cdef extern from *:
    """
    /* numpy's arithmetic, for bitwise equal results. a * x + b with the
       product rounded first: -ffp-contract=fast would fuse it into one FMA
       in the vector builds, numpy rounds twice. */
    static inline double crf_mul_add(double a, double x, double b) {
        volatile double p = a * x;
        return p + b;
    }
    /* scipy.special.expit */
    static inline double crf_expit(double z) { return 1.0 / (1.0 + exp(-z)); }
    /* z ** 2 as Python computes it (pow, which the compiler would make z * z) */
    static inline double crf_square(double z) {
        volatile double two = 2.0;
        return pow(z, two);
    }
    /* np.sum of a contiguous float64 array: numpy's pairwise summation
       (numpy/_core/src/umath/loops_utils.h.src), the same additions in the
       same order. */
    static double crf_pairwise_sum(const double* x, ptrdiff_t n) {
        if (n < 8) {
            double res = 0.;
            for (ptrdiff_t i = 0; i < n; i++) res += x[i];
            return res;
        }
        if (n <= 128) {
            double r[8], res;
            ptrdiff_t i;
            for (int j = 0; j < 8; j++) r[j] = x[j];
            for (i = 8; i < n - (n % 8); i += 8)
                for (int j = 0; j < 8; j++) r[j] += x[i + j];
            res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            for (; i < n; i++) res += x[i];
            return res;
        }
        ptrdiff_t n2 = n / 2;
        n2 -= n2 % 8;
        return crf_pairwise_sum(x, n2) + crf_pairwise_sum(x + n2, n - n2);
    }
    """
    double mul_add "crf_mul_add"(double a, double x, double b) noexcept nogil
    double expit "crf_expit"(double z) noexcept nogil
    double square "crf_square"(double z) noexcept nogil
    double pairwise_sum "crf_pairwise_sum"(const double* x, Py_ssize_t n) noexcept nogil


cdef inline int mce_f_ratio(
    const Py_ssize_t[::1] offsets, const double[::1] weights, double sig_alpha,
    double sig_beta, double gamma2, int fp_mode, double saturated_z, const Py_ssize_t* counts,
    double* g_val, double* f_val, double* work, double* out,
) noexcept nogil:
    # The F-score ratio of mce_f_labels_batch from the margins in g_val and
    # f_val (slots by sequence), which it overwrites with the segments'
    # coefficients; out = (value, saturation). Returns 0, or 1 where the ratio
    # is undefined (TP_l underflowed; out[1] set). numpy's operations of
    # SegmentFScoreMCE.value_and_grad on the arrays of the gold segments and
    # of the false positives in order: work holds them (6 n_tokens doubles).
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t k, i, ig = 0, jf = 0, n_sel = 0, n_gold = 0, n_fp = 0
    cdef double w, z, sig, dl, l0 = expit(sig_beta), total, scale, tp, fn, fp
    cdef double z_n, z_d, z_d2, slope, k_g, k_f
    for k in range(n_seq):
        n_gold += counts[2 * k]
        n_fp += counts[2 * k + 1]
    cdef double* tp_t = work
    cdef double* fn_t = work + n_gold
    cdef double* fp_t = fn_t + n_gold
    cdef double* w_all = fp_t + n_fp  # the gold segments' weights, then the false positives'
    cdef double* sel = w_all + n_gold + n_fp
    for k in range(n_seq):
        w = 1.0 if weights.shape[0] == 0 else weights[k]
        for i in range(offsets[k], offsets[k] + counts[2 * k]):
            z = mul_add(sig_alpha, -g_val[i], sig_beta)  # d = -m
            sig = expit(z)
            dl = sig_alpha * sig * expit(-z)
            g_val[i] = dl
            tp_t[ig] = w * expit(-z)
            fn_t[ig] = w * sig
            w_all[ig] = w
            ig += 1
            if z < saturated_z or z > -saturated_z:
                sel[n_sel] = w
                n_sel += 1
    for k in range(n_seq):
        w = 1.0 if weights.shape[0] == 0 else weights[k]
        for i in range(offsets[k], offsets[k] + counts[2 * k + 1]):
            z = mul_add(sig_alpha, f_val[i], sig_beta)
            sig = expit(z)
            dl = sig_alpha * sig * expit(-z)
            if fp_mode == 2:  # (l(m) - l(0)) / (1 - l(0))
                sig = (sig - l0) / (1.0 - l0)
                dl = dl / (1.0 - l0)
            f_val[i] = dl
            fp_t[jf] = w * sig
            w_all[n_gold + jf] = w
            jf += 1
            if z < saturated_z or z > -saturated_z:
                sel[n_sel] = w
                n_sel += 1
    total = pairwise_sum(w_all, n_gold + n_fp)
    out[1] = pairwise_sum(sel, n_sel) / total if total > 0 else NAN
    tp = pairwise_sum(tp_t, n_gold)
    fn = pairwise_sum(fn_t, n_gold)
    fp = pairwise_sum(fp_t, n_fp)
    scale = pairwise_sum(w_all, n_gold)
    if scale > 0:
        z_n = mul_add(gamma2, fn, fp)
        z_d = (gamma2 + 1.0) * tp
        z_d2 = square(z_d)
        slope = gamma2 / z_d + (gamma2 + 1.0) * z_n / z_d2 if z_d2 > 0 else INFINITY
        if not isfinite(slope):
            return 1
        out[0] = scale * z_n / z_d
        k_g = -scale * slope
        k_f = scale / z_d
    else:  # no gold segment: the false positives at TP_l = S
        out[0] = fp / (gamma2 + 1.0)
    for k in range(n_seq):
        w = 1.0 if weights.shape[0] == 0 else weights[k]
        for i in range(offsets[k], offsets[k] + counts[2 * k]):
            g_val[i] = k_g * g_val[i] * w if scale > 0 else 0.0
        for i in range(offsets[k], offsets[k] + counts[2 * k + 1]):
            f_val[i] = k_f * f_val[i] * w if scale > 0 else f_val[i] * w / (gamma2 + 1.0)
    return 0

