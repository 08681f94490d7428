# Max-product decoding for a batch of linear-chain CRF sequences: the
# Viterbi path, the exact n-best lists (lazy k-best) and the best
# path different from a reference (the maximum incorrect output of Suzuki et
# al. 2006, Eq. 5).
#
# Design notes
# ------------
# * Max-product needs no exponentials: it runs in the log (score) domain
#   with additions and comparisons only, so it is stable for any finite
#   potentials. -inf transitions (decode-time constraints) are allowed.
# * Ties are broken towards the smallest label (resp. (label, rank)) index,
#   so results are deterministic.
# * The max-plus step, the backtrace and the Viterbi over (label, deviated)
#   states are the inline helpers of _chain.pxd, shared with the
#   max-marginal kernels (_max_marginals.pyx).
# * Sequences run in parallel (prange, static schedule); each thread owns
#   its scratch rows; backpointers are per token, so no sharing.

import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc, realloc

from _chain cimport argmax_sum, backtrace, deviated_backtrace, deviated_viterbi_at, max_plus_step


cdef void _viterbi_sequence(
    const double[:, ::1] unary, const double* transition, const Py_ssize_t* index,
    const double[::1] start, const double[::1] end,
    Py_ssize_t s, Py_ssize_t e,
    int[:, ::1] backpointers, Py_ssize_t[::1] path, double* scratch,
    double* score_out,
) noexcept nogil:
    # transition: one (L, L) matrix (index NULL), or a table of them whose
    # matrix index[t] scores the edge into token t (position-dependent).
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, j, best_j
    cdef double* prev = scratch
    cdef double* cur = scratch + L
    cdef double* tmp
    for j in range(L):
        prev[j] = start[j] + unary[s, j]
    for t in range(s + 1, e):
        max_plus_step(prev, transition if index == NULL else transition + index[t] * L * L,
                      cur, &backpointers[t, 0], L, 0)
        for j in range(L):
            cur[j] += unary[t, j]
        tmp = prev
        prev = cur
        cur = tmp
    best_j = argmax_sum(prev, &end[0], L, score_out)
    path[e - 1] = best_j if best_j >= 0 else 0
    backtrace(&backpointers[s, 0], &path[s], e - s, L)


def viterbi_batch(
    const double[:, ::1] unary, const double[:, ::1] transition,
    const double[::1] start, const double[::1] end, const Py_ssize_t[::1] offsets,
    Py_ssize_t[::1] path, double[::1] score,
    int[:, ::1] backpointers, double[:, ::1] scratch, int n_threads,
):
    """Viterbi path and score for a batch of sequences (low level).

    Use :func:`sklearn_crfloss.inference.viterbi`, which allocates the
    outputs. Shapes: unary (n_tokens, L); transition (L, L); start, end (L,);
    offsets (n_sequences + 1,) intp; path (n_tokens,) intp; score
    (n_sequences,); backpointers (n_tokens, L) int32; scratch
    (n_threads, 2 * L). Empty sequences are skipped (score left untouched).
    """
    cdef Py_ssize_t k
    with nogil:
        for k in prange(offsets.shape[0] - 1, num_threads=n_threads, schedule='static',
                        chunksize=8):
            if offsets[k + 1] > offsets[k]:
                _viterbi_sequence(unary, &transition[0, 0], NULL, start, end, offsets[k],
                                  offsets[k + 1], backpointers, path, &scratch[threadid(), 0],
                                  &score[k])


cdef void _max_incorrect_sequence(
    const double[:, ::1] unary, const double* table, const Py_ssize_t* index,
    const double[::1] start, const double[::1] end, const Py_ssize_t[::1] ref,
    Py_ssize_t s, Py_ssize_t e, int[:, ::1] bp, Py_ssize_t[::1] path,
    double* work, double* score_out,
) noexcept nogil:
    # Viterbi over (label, deviated-from-ref-yet) states from the start
    # potentials to the end potentials; bp[t, j] as in deviated_viterbi.
    # table: one (L, L) matrix (index NULL), or a table of them whose matrix
    # index[t] scores the edge into token t (position-dependent).
    cdef Py_ssize_t L = unary.shape[1]
    cdef Py_ssize_t t, j, jb
    cdef double d0
    cdef double* last = work + L
    for j in range(L):
        last[j] = start[j] + unary[s, j]
    last = deviated_viterbi_at(&unary[s, 0], table, NULL if index == NULL else index + s,
                               &ref[s], e - s, L, last, work, &bp[s, 0], &d0)
    jb = argmax_sum(last, &end[0], L, score_out)
    if jb < 0:  # a single possible labelling: no incorrect output
        for t in range(s, e):
            path[t] = ref[t]
        return
    path[e - 1] = jb
    deviated_backtrace(&bp[s, 0], &ref[s], &path[s], e - s, L)


def max_incorrect_batch(
    const double[:, ::1] unary, const double[:, :, ::1] table, const Py_ssize_t[::1] index,
    const double[::1] start, const double[::1] end, const Py_ssize_t[::1] offsets,
    const Py_ssize_t[::1] ref, Py_ssize_t[::1] path, double[::1] score,
    int[:, ::1] bp, double[:, ::1] work, int n_threads,
):
    """Best label sequence different from ``ref`` for a batch (low level).

    Use :func:`sklearn_crfloss.inference.viterbi_excluding`. Shapes: table
    (n_matrices, L, L), the matrix index[t] scoring the edge into token t,
    or (1, L, L) with index of length 0 (the same matrix everywhere); ref,
    path (n_tokens,) intp; score (n_sequences,); bp (n_tokens, L) int32;
    work (n_threads, 2 * L). Empty sequences are skipped.
    """
    cdef Py_ssize_t k
    cdef const Py_ssize_t* idx = &index[0] if index.shape[0] else NULL
    with nogil:
        for k in prange(offsets.shape[0] - 1, num_threads=n_threads, schedule='static',
                        chunksize=8):
            if offsets[k + 1] > offsets[k]:
                _max_incorrect_sequence(unary, &table[0, 0, 0], idx, start, end, ref,
                                        offsets[k], offsets[k + 1], bp, path,
                                        &work[threadid(), 0], &score[k])


# ---------------------------------------------------------------- n-best
# The n best paths by lazy k-best (Huang & Chiang 2005, Algorithm 3) on the
# chain's hypergraph: node (t, j) is "a prefix ending in label j at token t",
# with one edge from each (t - 1, i), and a root joined to every (T - 1, j)
# by the end potentials. Rank 0 of every node is the Viterbi table's (one
# forward max-plus pass); rank r >= 1 of a node is made only when a path
# through it is asked for: the node keeps a frontier heap with the next
# candidate of each predecessor label (predecessor rank + edge), and the
# successor of the candidate it last took is pushed when the next rank is
# asked for, which asks the predecessor for its next rank, and so on down the
# chain (an explicit stack: no recursion). Asking the root for n paths costs
# O(T L^2) for the table and at most T heap operations of O(log L) per path.
#
# Order and ties are those of the list Viterbi this replaces: a node's list
# is sorted by score, then by predecessor label, then by predecessor rank,
# with the same sums ((prefix + transition) + unary; (prefix + end) at the
# root), so every list is the first ranks of the list Viterbi's and the
# paths, scores and ties are the same.


cdef struct _Item:
    double score     # the prefix's score (its token's unary potential included)
    int pred         # the label of the token before (the edge it came by)
    int rank         # the rank of the prefix it extends in that label's list


cdef struct _Node:
    _Item* items     # ranks 1, 2, ... (rank 0 is the Viterbi table's)
    Py_ssize_t n_items, cap
    _Item* heap      # the frontier: the next candidate of each predecessor label
    Py_ssize_t n_heap
    int pending      # the label whose next candidate is due before the next pop (-1: none)
    int pending_rank
    bint started     # the frontier built
    bint done        # no further finite prefix


cdef struct _Lazy:
    Py_ssize_t L, T, s
    const double* unary          # rows s..s+T-1, (T, L)
    const double* transition     # one (L, L) matrix, or a table indexed by index[t]
    const Py_ssize_t* index
    const double* start
    const double* end
    double* best                 # (T L + 1): rank 0 of every node, the root last
    int* arg                     # its predecessor label
    _Node* nodes                 # (T L + 1)
    Py_ssize_t* stack            # 2 (T + 2): (node, rank) frames
    bint failed                  # an allocation failed


cdef inline double _edge(_Lazy* q, Py_ssize_t t, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    # The weight of the edge (t - 1, i) -> (t, j); t == T: the root (end[i]).
    cdef const double* T
    if t == q.T:
        return q.end[i]
    T = q.transition if q.index == NULL else q.transition + q.index[q.s + t] * q.L * q.L
    return T[i * q.L + j]


cdef inline Py_ssize_t _count(_Lazy* q, Py_ssize_t v) noexcept nogil:
    # Finite prefixes of node v made so far.
    if not (q.best[v] > -INFINITY):
        return 0
    return 1 + q.nodes[v].n_items


cdef inline double _score(_Lazy* q, Py_ssize_t v, Py_ssize_t r) noexcept nogil:
    return q.best[v] if r == 0 else q.nodes[v].items[r - 1].score


cdef inline bint _before(const _Item* a, const _Item* b) noexcept nogil:
    # The list Viterbi's order: higher score, then smaller predecessor label
    # (a frontier holds one candidate per label, so ranks never tie).
    return a.score > b.score or (a.score == b.score and a.pred < b.pred)


cdef void _heap_push(_Node* v, double score, int pred, int rank) noexcept nogil:
    cdef Py_ssize_t k = v.n_heap, parent
    cdef _Item item
    item.score, item.pred, item.rank = score, pred, rank
    v.n_heap += 1
    while k > 0:
        parent = (k - 1) // 2
        if not _before(&item, &v.heap[parent]):
            break
        v.heap[k] = v.heap[parent]
        k = parent
    v.heap[k] = item


cdef _Item _heap_pop(_Node* v) noexcept nogil:
    cdef _Item top = v.heap[0], last
    cdef Py_ssize_t k = 0, child, n
    v.n_heap -= 1
    n = v.n_heap
    last = v.heap[n]
    while True:
        child = 2 * k + 1
        if child >= n:
            break
        if child + 1 < n and _before(&v.heap[child + 1], &v.heap[child]):
            child += 1
        if not _before(&v.heap[child], &last):
            break
        v.heap[k] = v.heap[child]
        k = child
    if n > 0:
        v.heap[k] = last
    return top


cdef bint _start_frontier(_Lazy* q, Py_ssize_t v, Py_ssize_t t, Py_ssize_t j) noexcept nogil:
    # Rank 0 came from (t - 1, arg[v]) rank 0: the other labels' rank 0 are
    # the frontier; that label's rank 1 is pushed when asked for (pending).
    cdef _Node* node = &q.nodes[v]
    cdef Py_ssize_t i, L = q.L
    cdef double value
    node.heap = <_Item*>malloc(L * sizeof(_Item))
    if node.heap == NULL:
        return False
    for i in range(L):
        if i != q.arg[v]:
            value = q.best[(t - 1) * L + i] + _edge(q, t, i, j)
            if value > -INFINITY:
                _heap_push(node, value, <int>i, 0)
    node.pending, node.pending_rank = q.arg[v], 0
    node.started = True
    return True


cdef bint _append(_Node* node, double score, int pred, int rank) noexcept nogil:
    cdef _Item* grown
    if node.n_items == node.cap:
        node.cap = 2 * node.cap if node.cap else 4
        grown = <_Item*>realloc(node.items, node.cap * sizeof(_Item))
        if grown == NULL:
            return False
        node.items = grown
    node.items[node.n_items].score = score
    node.items[node.n_items].pred = pred
    node.items[node.n_items].rank = rank
    node.n_items += 1
    return True


cdef bint _ensure(_Lazy* q, Py_ssize_t v, Py_ssize_t k) noexcept nogil:
    # Make ranks of node v up to k (Huang & Chiang's LazyKthBest, with the
    # calls down the chain as frames of an explicit stack); whether rank k
    # exists (a finite prefix).
    cdef Py_ssize_t depth = 1, t, j, i, u, r, L = q.L
    cdef _Node* node
    cdef _Item top
    cdef double value
    q.stack[0], q.stack[1] = v, k
    while depth > 0:
        v, k = q.stack[2 * depth - 2], q.stack[2 * depth - 1]
        node = &q.nodes[v]
        if _count(q, v) > k or node.done or not (q.best[v] > -INFINITY):
            depth -= 1
            continue
        t, j = v // L, v % L  # (the root: t == T)
        if t == 0:  # one prefix per label at the first token
            node.done = True
            depth -= 1
            continue
        if not node.started and not _start_frontier(q, v, t, j):
            q.failed = True
            return False
        if node.pending >= 0:  # the successor of the last candidate taken
            i, r = node.pending, node.pending_rank + 1
            u = (t - 1) * L + i
            if not (_count(q, u) > r or q.nodes[u].done or not (q.best[u] > -INFINITY)):
                q.stack[2 * depth], q.stack[2 * depth + 1] = u, r
                depth += 1
                continue
            if _count(q, u) > r:
                value = _score(q, u, r) + _edge(q, t, i, j)
                if value > -INFINITY:
                    _heap_push(node, value, <int>i, <int>r)
            node.pending = -1
        if node.n_heap == 0:
            node.done = True
            depth -= 1
            continue
        top = _heap_pop(node)
        if not _append(node, top.score + q.unary[t * L + j] if t < q.T else top.score,
                       top.pred, top.rank):
            q.failed = True
            return False
        node.pending, node.pending_rank = top.pred, top.rank
    return _count(q, v) > k


cdef void _forward(_Lazy* q) noexcept nogil:
    # Rank 0 of every node: the Viterbi table, ties to the smaller label.
    cdef Py_ssize_t t, i, j, L = q.L, T = q.T
    cdef double value, top
    cdef int arg
    for j in range(L):
        q.best[j] = q.start[j] + q.unary[j]
        q.arg[j] = -1
    for t in range(1, T + 1):
        for j in range(L if t < T else 1):
            top, arg = -INFINITY, 0
            for i in range(L):
                value = q.best[(t - 1) * L + i] + _edge(q, t, i, j)
                if value > top:
                    top, arg = value, <int>i
            q.best[t * L + j] = top + q.unary[t * L + j] if t < T else top
            q.arg[t * L + j] = arg


cdef bint _n_best_sequence(
    const double[:, ::1] unary, const double* transition, const Py_ssize_t* index,
    const double[::1] start, const double[::1] end,
    Py_ssize_t s, Py_ssize_t e, Py_ssize_t n,
    Py_ssize_t[:, ::1] paths, double* score_out,
) noexcept nogil:
    # The n best paths of tokens s..e-1 into paths[:, s:e] and score_out[:n]
    # (-inf, paths left untouched, past the finite ones); False if out of memory.
    cdef _Lazy q
    cdef Py_ssize_t L = unary.shape[1], T = e - s, n_nodes = (e - s) * unary.shape[1] + 1
    cdef Py_ssize_t m, t, v, r, i
    cdef bint ok = True
    cdef _Item* item
    q.L, q.T, q.s = L, T, s
    q.unary, q.transition, q.index = &unary[s, 0], transition, index
    q.start, q.end = &start[0], &end[0]
    q.failed = False
    q.best = <double*>malloc(n_nodes * sizeof(double))
    q.arg = <int*>malloc(n_nodes * sizeof(int))
    q.nodes = <_Node*>malloc(n_nodes * sizeof(_Node))
    q.stack = <Py_ssize_t*>malloc(2 * (T + 2) * sizeof(Py_ssize_t))
    if q.best == NULL or q.arg == NULL or q.nodes == NULL or q.stack == NULL:
        ok = False
    else:
        for v in range(n_nodes):
            q.nodes[v].items = NULL
            q.nodes[v].heap = NULL
            q.nodes[v].n_items = q.nodes[v].cap = q.nodes[v].n_heap = 0
            q.nodes[v].pending = -1
            q.nodes[v].started = q.nodes[v].done = False
        _forward(&q)
        for m in range(n):
            score_out[m] = -INFINITY
        for m in range(n):
            if not _ensure(&q, n_nodes - 1, m):
                ok = not q.failed
                break
            score_out[m] = _score(&q, n_nodes - 1, m)
            v, r = n_nodes - 1, m
            for t in range(T, 0, -1):  # the predecessors back to the first token
                if r == 0:
                    i = q.arg[v]
                    r = 0
                else:
                    item = &q.nodes[v].items[r - 1]
                    i, r = item.pred, item.rank
                paths[m, s + t - 1] = i
                v = (t - 1) * L + i
        for v in range(n_nodes):
            free(q.nodes[v].items)
            free(q.nodes[v].heap)
    free(q.best)
    free(q.arg)
    free(q.nodes)
    free(q.stack)
    return ok


def n_best_batch(
    const double[:, ::1] unary, const double[:, :, ::1] transition,
    const Py_ssize_t[::1] index, const double[::1] start, const double[::1] end,
    const Py_ssize_t[::1] offsets,
    Py_ssize_t n_best, Py_ssize_t[:, ::1] paths, double[:, ::1] scores,
    signed char[::1] failed, int n_threads,
):
    """The n best label sequences of each sequence of a batch (low level).

    Use :func:`sklearn_crfloss.inference.viterbi_nbest`. Shapes: unary
    (n_tokens, L); transition (K, L, L): one matrix (K = 1, index empty) or
    a table whose matrix index[t] scores the edge into token t (index of
    shape (n_tokens,) intp: position-dependent transitions); offsets
    (n_sequences + 1,) intp; paths (n_best, n_tokens) intp; scores
    (n_sequences, n_best); failed (n_sequences,) int8, set to 1 where the
    memory of a sequence's lists could not be allocated. Empty sequences
    are skipped (their row of scores left untouched). n_best < 2**31.
    """
    cdef Py_ssize_t k
    cdef const Py_ssize_t* by_position = &index[0] if index.shape[0] else NULL
    with nogil:
        for k in prange(offsets.shape[0] - 1, num_threads=n_threads, schedule='dynamic'):
            if offsets[k + 1] > offsets[k]:
                if not _n_best_sequence(unary, &transition[0, 0, 0], by_position, start, end,
                                        offsets[k], offsets[k + 1], n_best, paths,
                                        &scores[k, 0]):
                    failed[k] = 1


def position_viterbi_batch(
    const double[:, ::1] unary, const double[:, :, ::1] table, const Py_ssize_t[::1] index,
    const double[::1] start, const double[::1] end, const Py_ssize_t[::1] offsets,
    Py_ssize_t[::1] path, double[::1] score,
):
    """Viterbi paths with position-dependent transitions (low level).

    The edge into token t has the transition matrix table[index[t]]
    (observation-dependent label bigrams); otherwise as
    :func:`viterbi_batch`. Use :func:`sklearn_crfloss.inference.viterbi`
    with a :class:`~sklearn_crfloss.inference.PositionTransitions`. Shapes:
    unary (n_tokens, L); table (K, L, L); index, path (n_tokens,) intp;
    start, end (L,); offsets (n_sequences + 1,); score (n_sequences,).
    Empty sequences get score 0.
    """
    cdef Py_ssize_t k
    cdef int[:, ::1] bp = np.zeros((max(unary.shape[0], 1), unary.shape[1]), dtype=np.intc)
    cdef double[::1] rows = np.empty(2 * unary.shape[1])
    with nogil:
        for k in range(offsets.shape[0] - 1):
            score[k] = 0.0
            if offsets[k + 1] > offsets[k]:
                _viterbi_sequence(unary, &table[0, 0, 0], &index[0], start, end, offsets[k],
                                  offsets[k + 1], bp, path, &rows[0], &score[k])
