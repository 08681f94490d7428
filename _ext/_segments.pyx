# Max-product kernels for minimum classification error training
# (Suzuki et al. 2006): the exact 2-best Viterbi (the maximum incorrect
# output of Eq. 5), forward and backward Viterbi max-marginals (Eq. 15), and
# segment margins with their path-count gradients (MCE-F, section 4.2).
#
# Everything runs in the score (log) domain with additions and comparisons
# only. Ties are broken towards the smallest (label, rank) index, as in
# _viterbi.pyx. prange runs over sequences; the rows of the unary gradient
# belong to one sequence, the transition/start/end sums go to per-thread
# accumulators that the Python wrapper adds up.

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY


cdef void _two_best_sequence(
    const double[:, ::1] unary, const double[:, ::1] transition,
    const double[::1] start, const double[::1] end,
    Py_ssize_t s, Py_ssize_t e,
    int[:, ::1] bp, Py_ssize_t[::1] path1, Py_ssize_t[::1] path2,
    double* scratch, double* score1, double* score2,
) noexcept nogil:
    # List Viterbi with a list of 2: prev[2*i + r] is the score of the r-th
    # best prefix ending in label i; bp[t, 2*j + r] = 2*i + r' points to the
    # prefix it extends. Distinct (i, r') candidates give distinct paths, so
    # the two survivors of every cell are distinct and the result is exact.
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, i, j, r, c0, c1, code
    cdef double v, b0, b1
    cdef double* prev = scratch
    cdef double* cur = scratch + 2 * L
    cdef double* tmp
    for j in range(L):
        prev[2 * j] = start[j] + unary[s, j]
        prev[2 * j + 1] = -INFINITY
    for t in range(s + 1, e):
        for j in range(L):
            b0 = -INFINITY
            b1 = -INFINITY
            c0 = 0
            c1 = 1
            for i in range(L):
                for r in range(2):
                    v = prev[2 * i + r] + transition[i, j]
                    if v > b0:
                        b1 = b0
                        c1 = c0
                        b0 = v
                        c0 = 2 * i + r
                    elif v > b1:
                        b1 = v
                        c1 = 2 * i + r
            cur[2 * j] = b0 + unary[t, j]
            cur[2 * j + 1] = b1 + unary[t, j]
            bp[t, 2 * j] = <int>c0
            bp[t, 2 * j + 1] = <int>c1
        tmp = prev
        prev = cur
        cur = tmp
    b0 = -INFINITY
    b1 = -INFINITY
    c0 = 0
    c1 = 1
    for j in range(L):
        for r in range(2):
            v = prev[2 * j + r] + end[j]
            if v > b0:
                b1 = b0
                c1 = c0
                b0 = v
                c0 = 2 * j + r
            elif v > b1:
                b1 = v
                c1 = 2 * j + r
    score1[0] = b0
    score2[0] = b1
    code = c0
    path1[e - 1] = code // 2
    for t in range(e - 1, s, -1):
        code = bp[t, code]
        path1[t - 1] = code // 2
    code = c1
    path2[e - 1] = code // 2
    for t in range(e - 1, s, -1):
        code = bp[t, code]
        path2[t - 1] = code // 2


def two_best_batch(
    const double[:, ::1] unary,
    const double[:, ::1] transition,
    const double[::1] start,
    const double[::1] end,
    const Py_ssize_t[::1] offsets,
    Py_ssize_t[::1] path1,
    Py_ssize_t[::1] path2,
    double[::1] score1,
    double[::1] score2,
    int[:, ::1] bp,
    double[:, ::1] scratch,
    int n_threads,
):
    """Best and second-best label sequences of a batch (low level).

    Use :func:`sklearn_crfloss.inference.viterbi_2best`. Shapes: unary
    (n_tokens, L); offsets (n_sequences + 1,) intp; path1, path2 (n_tokens,)
    intp; score1, score2 (n_sequences,); bp (n_tokens, 2 * L) int32; scratch
    (n_threads, 4 * L). Empty sequences are skipped.
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t k, s, e, tid
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            tid = threadid()
            s = offsets[k]
            e = offsets[k + 1]
            if e > s:
                _two_best_sequence(unary, transition, start, end, s, e, bp,
                                   path1, path2, &scratch[tid, 0],
                                   &score1[k], &score2[k])


cdef void _max_marginals_sequence(
    const double[:, ::1] unary, const double[:, ::1] transition,
    const double[:, ::1] transition_t,
    const double[::1] start, const double[::1] end,
    Py_ssize_t s, Py_ssize_t e,
    double[:, ::1] alpha, double[:, ::1] beta,
    int[:, ::1] bp_fwd, int[:, ::1] bp_bwd,
) noexcept nogil:
    # Previous label outermost, current label innermost: the inner loops run
    # over contiguous rows (of transition, resp. its transpose) and compile
    # to vector compare-and-select. Strict '>' over increasing i keeps the
    # smallest label among ties.
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, i, j
    cdef double v, c, b
    for j in range(L):
        alpha[s, j] = start[j] + unary[s, j]
        bp_fwd[s, j] = 0
    for t in range(s + 1, e):
        for j in range(L):
            alpha[t, j] = -INFINITY
            bp_fwd[t, j] = 0
        for i in range(L):
            c = alpha[t - 1, i]
            for j in range(L):
                v = c + transition[i, j]
                if v > alpha[t, j]:
                    alpha[t, j] = v
                    bp_fwd[t, j] = <int>i
        for j in range(L):
            alpha[t, j] += unary[t, j]
    for j in range(L):
        beta[e - 1, j] = end[j]
        bp_bwd[e - 1, j] = 0
    for t in range(e - 2, s - 1, -1):
        for j in range(L):
            beta[t, j] = -INFINITY
            bp_bwd[t, j] = 0
        for i in range(L):
            c = unary[t + 1, i]
            b = beta[t + 1, i]
            for j in range(L):
                v = transition_t[i, j] + c + b  # (T + U) + beta, as the other kernels round
                if v > beta[t, j]:
                    beta[t, j] = v
                    bp_bwd[t, j] = <int>i


def max_marginals_batch(
    const double[:, ::1] unary,
    const double[:, ::1] transition,
    const double[:, ::1] transition_t,
    const double[::1] start,
    const double[::1] end,
    const Py_ssize_t[::1] offsets,
    double[:, ::1] alpha,
    double[:, ::1] beta,
    int[:, ::1] bp_fwd,
    int[:, ::1] bp_bwd,
    int n_threads,
):
    """Forward and backward Viterbi tables of a batch (low level).

    Use :func:`sklearn_crfloss.inference.max_marginals`. ``alpha[t, j]`` is
    the best score of a prefix ending with label j at t (its unary
    included), ``beta[t, j]`` the best score of the rest of the sequence
    after t given label j at t; ``bp_fwd[t, j]`` / ``bp_bwd[t, j]`` the label
    at t - 1 / t + 1 on those best paths. All of shape (n_tokens, L).
    ``transition_t`` is the contiguous transpose of ``transition``.
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t k, s, e
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            s = offsets[k]
            e = offsets[k + 1]
            if e > s:
                _max_marginals_sequence(unary, transition, transition_t, start, end, s, e,
                                        alpha, beta, bp_fwd, bp_bwd)


cdef void _add_path(
    const Py_ssize_t* p, Py_ssize_t s, Py_ssize_t e, double c, Py_ssize_t L,
    double[:, ::1] d_unary, double* acc_trans, double* acc_start, double* acc_end,
) noexcept nogil:
    # Add c times the counts of the path p[0 .. e-s-1] of tokens s .. e-1.
    cdef Py_ssize_t t
    acc_start[p[0]] += c
    acc_end[p[e - s - 1]] += c
    d_unary[s, p[0]] += c
    for t in range(s + 1, e):
        d_unary[t, p[t - s]] += c
        acc_trans[p[t - s - 1] * L + p[t - s]] += c


cdef void _complete_path(
    Py_ssize_t* p, Py_ssize_t s, Py_ssize_t e, Py_ssize_t a, Py_ssize_t b,
    const int[:, ::1] bp_fwd, const int[:, ::1] bp_bwd,
) noexcept nogil:
    # p[a-s .. b-1-s] is set; fill the best prefix and the best suffix.
    cdef Py_ssize_t t
    for t in range(a, s, -1):
        p[t - 1 - s] = bp_fwd[t, p[t - s]]
    for t in range(b - 1, e - 1):
        p[t + 1 - s] = bp_bwd[t, p[t - s]]


cdef inline double _deviated_step(
    const double[:, ::1] unary, const double[:, ::1] transition,
    const Py_ssize_t[::1] ref, Py_ssize_t t, double d0,
    const double* d1, double* nd1, int* bp_row,
) noexcept nogil:
    """One step of Viterbi over (label, deviated-from-ref) states.

    d0 is the score of the ref prefix up to t - 1, d1[j] the best prefix
    ending in j at t - 1 that differs from ref somewhere. Fills nd1 (the same
    for t) and bp_row[j] (previous label of deviated state j, or -1 when it
    leaves ref at t); returns the ref prefix's score up to t.
    """
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t i, j
    cdef double v, c
    # Previous label outermost (contiguous rows of transition); strict '>'
    # over increasing i keeps the smallest label among ties, and staying
    # deviated wins a tie with leaving ref at t.
    for j in range(L):
        nd1[j] = -INFINITY
        bp_row[j] = -1
    for i in range(L):
        c = d1[i]
        for j in range(L):
            v = c + transition[i, j]
            if v > nd1[j]:
                nd1[j] = v
                bp_row[j] = <int>i
    for j in range(L):
        if j != ref[t]:
            v = d0 + transition[ref[t - 1], j]
            if v > nd1[j]:
                nd1[j] = v
                bp_row[j] = -1
        nd1[j] += unary[t, j]
    return d0 + transition[ref[t - 1], ref[t]] + unary[t, ref[t]]


cdef void _segment_margin(
    const double[:, ::1] unary, const double[:, ::1] transition,
    const double[:, ::1] alpha, const double[:, ::1] beta,
    const int[:, ::1] bp_fwd, const int[:, ::1] bp_bwd,
    const Py_ssize_t[::1] ref,
    Py_ssize_t s, Py_ssize_t e, Py_ssize_t a, Py_ssize_t b,
    double* work, int* span_bp, Py_ssize_t* p,
    double* g_carry, double* g_other, double coef, bint do_grad,
    double[:, ::1] d_unary, double* acc_trans, double* acc_start, double* acc_end,
) noexcept nogil:
    # g_carry: best score of a sequence with labels ref[a:b] on tokens a..b-1
    # (Eq. 15). g_other: best score of a sequence whose labels on a..b-1
    # differ from ref[a:b] somewhere, by a Viterbi restricted to the span on
    # (label, "has deviated") states, entered through alpha and left through
    # beta. span_bp[(t - a) * L + j] is the previous label of the deviated
    # state j at t, or -1 when it left the reference labels at t.
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, i, j, arg, jb
    cdef double v, best, d0
    cdef double* d1 = work
    cdef double* nd1 = work + L
    cdef double* tmp
    cdef bint deviated
    d0 = alpha[a, ref[a]]
    for j in range(L):
        d1[j] = alpha[a, j] if j != ref[a] else -INFINITY
    for t in range(a + 1, b):
        d0 = _deviated_step(unary, transition, ref, t, d0, d1, nd1, &span_bp[(t - a) * L])
        tmp = d1
        d1 = nd1
        nd1 = tmp
    g_carry[0] = d0 + beta[b - 1, ref[b - 1]]
    best = -INFINITY
    jb = -1
    for j in range(L):
        v = d1[j] + beta[b - 1, j]
        if v > best:
            best = v
            jb = j
    g_other[0] = best
    if not do_grad or coef == 0.0:
        return
    # + coef * counts(best carrying path)
    for t in range(a, b):
        p[t - s] = ref[t]
    _complete_path(p, s, e, a, b, bp_fwd, bp_bwd)
    _add_path(p, s, e, coef, L, d_unary, acc_trans, acc_start, acc_end)
    if jb < 0:
        return
    # - coef * counts(best path that does not carry the span's labels)
    p[b - 1 - s] = jb
    deviated = True
    for t in range(b - 1, a, -1):
        if deviated:
            arg = span_bp[(t - a) * L + p[t - s]]
            if arg < 0:
                deviated = False
                p[t - 1 - s] = ref[t - 1]
            else:
                p[t - 1 - s] = arg
        else:
            p[t - 1 - s] = ref[t - 1]
    _complete_path(p, s, e, a, b, bp_fwd, bp_bwd)
    _add_path(p, s, e, -coef, L, d_unary, acc_trans, acc_start, acc_end)


def segment_margins_batch(
    const double[:, ::1] unary,
    const double[:, ::1] transition,
    const double[:, ::1] alpha,
    const double[:, ::1] beta,
    const int[:, ::1] bp_fwd,
    const int[:, ::1] bp_bwd,
    const Py_ssize_t[::1] offsets,
    const Py_ssize_t[::1] ref,
    const Py_ssize_t[::1] seg_offsets,
    const Py_ssize_t[::1] seg_start,
    const Py_ssize_t[::1] seg_end,
    double[::1] g_carry,
    double[::1] g_other,
    const double[::1] coef,
    bint do_grad,
    double[:, ::1] d_unary,
    double[:, ::1] acc_trans,
    double[:, ::1] acc_boundary,
    double[:, ::1] work,
    int[:, ::1] span_bp,
    Py_ssize_t[:, ::1] path,
    int n_threads,
):
    """Segment discriminants (Eq. 15) and their gradients (low level).

    Use :func:`sklearn_crfloss.inference.segment_margins`. Segments of
    sequence k are ``seg_offsets[k]:seg_offsets[k + 1]``, spanning tokens
    ``seg_start[m]:seg_end[m]`` (absolute, end exclusive), with the labels
    ``ref`` on their span. With ``do_grad``, adds ``coef[m] * (counts of the
    best carrying path - counts of the best other path)`` to d_unary
    (n_tokens, L), acc_trans (n_threads, L * L) and acc_boundary
    (n_threads, 2 * L) (start then end). work (n_threads, 2 * L), span_bp
    (n_threads, max_length * L), path (n_threads, max_length).
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t k, m, tid
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            tid = threadid()
            for m in range(seg_offsets[k], seg_offsets[k + 1]):
                _segment_margin(unary, transition, alpha, beta, bp_fwd, bp_bwd, ref,
                                offsets[k], offsets[k + 1], seg_start[m], seg_end[m],
                                &work[tid, 0], &span_bp[tid, 0], &path[tid, 0],
                                &g_carry[m], &g_other[m], coef[m], do_grad, d_unary,
                                &acc_trans[tid, 0], &acc_boundary[tid, 0],
                                &acc_boundary[tid, L])


cdef void _max_incorrect_sequence(
    const double[:, ::1] unary, const double[:, ::1] transition,
    const double[::1] start, const double[::1] end, const Py_ssize_t[::1] ref,
    Py_ssize_t s, Py_ssize_t e, int[:, ::1] bp, Py_ssize_t[::1] path,
    double* work, double* score_out,
) noexcept nogil:
    # Viterbi over (label, deviated-from-ref-yet) states: d0 is the score of
    # the ref prefix, d1[j] the best prefix ending in j that differs from ref
    # somewhere. bp[t, j] is the previous label of the deviated state j at t,
    # or -1 when it leaves ref at t.
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, i, j, arg, jb
    cdef double v, best, d0
    cdef double* d1 = work
    cdef double* nd1 = work + L
    cdef double* tmp
    cdef bint deviated
    d0 = start[ref[s]] + unary[s, ref[s]]
    for j in range(L):
        d1[j] = start[j] + unary[s, j] if j != ref[s] else -INFINITY
        bp[s, j] = -1
    for t in range(s + 1, e):
        d0 = _deviated_step(unary, transition, ref, t, d0, d1, nd1, &bp[t, 0])
        tmp = d1
        d1 = nd1
        nd1 = tmp
    best = -INFINITY
    jb = -1
    for j in range(L):
        v = d1[j] + end[j]
        if v > best:
            best = v
            jb = j
    score_out[0] = best
    if jb < 0:  # a single possible labelling: no incorrect output
        for t in range(s, e):
            path[t] = ref[t]
        return
    path[e - 1] = jb
    deviated = True
    for t in range(e - 1, s, -1):
        if deviated:
            arg = bp[t, path[t]]
            if arg < 0:
                deviated = False
                path[t - 1] = ref[t - 1]
            else:
                path[t - 1] = arg
        else:
            path[t - 1] = ref[t - 1]


def max_incorrect_batch(
    const double[:, ::1] unary,
    const double[:, ::1] transition,
    const double[::1] start,
    const double[::1] end,
    const Py_ssize_t[::1] offsets,
    const Py_ssize_t[::1] ref,
    Py_ssize_t[::1] path,
    double[::1] score,
    int[:, ::1] bp,
    double[:, ::1] work,
    int n_threads,
):
    """Best label sequence different from ``ref`` for a batch (low level).

    Use :func:`sklearn_crfloss.inference.viterbi_excluding`. Shapes: ref,
    path (n_tokens,) intp; score (n_sequences,); bp (n_tokens, L) int32;
    work (n_threads, 2 * L).
    """
    cdef Py_ssize_t n_seq = offsets.shape[0] - 1
    cdef Py_ssize_t k, s, e, tid
    with nogil:
        for k in prange(n_seq, num_threads=n_threads, schedule='static', chunksize=8):
            tid = threadid()
            s = offsets[k]
            e = offsets[k + 1]
            if e > s:
                _max_incorrect_sequence(unary, transition, start, end, ref, s, e, bp, path,
                                        &work[tid, 0], &score[k])
