# Unary potentials from sparse features (U = X @ W), and the chain rule back
# to the weights (dW = X.T @ dU): the two sparse-dense products.
#
# Training stores only the free state weights (ParameterLayout.state_index,
# sorted flat indices attribute * n_labels + label: theta's state block is
# attribute-major), in a hybrid form (see _chain.pxd: gather_token and
# _model._objective._StateWeights): an attribute with more than COLD_MAX = 3 free
# labels gets a dense row of W_hot (its products are whole-row vector
# operations), the others keep their few weights where they sit in theta
# (CRFsuite's per-attribute feature lists), with their labels packed in the
# attribute's int64 code. Against a dense (n_attributes, n_labels) W this
# reads a fraction of the weight memory on CoNLL-2000 (456,238 free of 7.4 M
# entries; 14,364 dense rows, 2.8 MB) and copies nothing but the dense rows.
#
#   pair_potentials: U[t] = sum over (a, v) in row t of X of v * W[a]
#                    (rows in parallel)
#   pair_gradient:   g = X.T @ dU in the compact weights, from the same CSR
#                    rows (one pass over X for both products, no CSC copy):
#                    each thread scatters its rows into its own row of the
#                    accumulator, the wrapper sums the rows
#   pair_counts:     the same scatter of the gold labels' indicators: the
#                    observed feature counts, once per training set
#   order_entries:   each row's entries partitioned by attribute class (dense
#                    row, compact with 1, 2, 3 labels): the branches of the
#                    per-entry loops of _chain.pxd on the class are then
#                    predicted, once per training set
#
# The per-token steps (gather_token, scatter_token) are the inline helpers of
# _chain.pxd, shared with the fused conditional log-likelihood kernel of
# _forward_backward.pyx.

import numpy as np

from cython.parallel cimport prange

from _chain cimport gather_token, indptr_t, scatter_token


cdef inline bint _zero_row(const double* x, Py_ssize_t n) noexcept nogil:
    """Whether x[:n] is all zeros."""
    cdef Py_ssize_t j
    for j in range(n):
        if x[j] != 0.0:
            return False
    return True


def pair_potentials(const indptr_t[::1] indptr, const int[::1] indices,
                    const double[::1] data, bint binary, const long long[::1] code,
                    const double[::1] w, const double[:, ::1] W_hot, double[:, ::1] out,
                    int n_threads):
    """U = X @ W for CSR X and hybrid state weights (code, w, W_hot) (low level).

    out (n_tokens, n_labels); W_hot (n_hot, Lp), at least one row. With
    ``binary`` every stored value of X is 1 and ``data`` is not read (pass
    any one-element array).
    """
    cdef Py_ssize_t t, n_tokens = out.shape[0], L = out.shape[1], nnz = indices.shape[0]
    cdef Py_ssize_t Lp = W_hot.shape[1]
    with nogil:
        for t in prange(n_tokens, num_threads=n_threads, schedule='static', chunksize=256):
            gather_token(&indptr[0], &indices[0], &data[0], binary, &code[0], &w[0],
                         &W_hot[0, 0], Lp, t, L, nnz, &out[t, 0])


def pair_gradient(const indptr_t[::1] indptr, const int[::1] indices,
                  const double[::1] data, bint binary, const long long[::1] code,
                  const double[:, ::1] d_unary, double[:, ::1] acc, double[:, :, ::1] hot_acc,
                  int n_threads):
    """X.T @ dU into per-thread accumulators of the hybrid state weights (low level).

    Rows of X are split among threads in chunks of 256 (a static schedule,
    dealt round robin); chunk c adds into acc[c % n_acc] (n_acc, len(w))
    and hot_acc[c % n_acc] (n_acc, n_hot, Lp), zeroed by the caller, n_acc
    a multiple of n_threads (``_forward_backward.accumulator_blocks``): a
    block's chunks run on one thread in order, so the sums do not depend
    on the number of threads.
    """
    cdef Py_ssize_t t, a, n_tokens = d_unary.shape[0], L = d_unary.shape[1]
    cdef Py_ssize_t nnz = indices.shape[0], Lp = hot_acc.shape[2], n_acc = acc.shape[0]
    with nogil:
        for t in prange(n_tokens, num_threads=n_threads, schedule='static', chunksize=256):
            a = (t // 256) % n_acc
            if _zero_row(&d_unary[t, 0], L):  # adds nothing (the path losses' rows off
                continue                      # their paths' differences)
            scatter_token(&indptr[0], &indices[0], &data[0], binary, &code[0], &acc[a, 0],
                          &hot_acc[a, 0, 0], Lp, &d_unary[t, 0], 1.0, t, L, nnz)


def pair_counts(const indptr_t[::1] indptr, const int[::1] indices, const double[::1] data,
                bint binary, const long long[::1] code, double[::1] acc, double[:, ::1] hot_acc,
                const Py_ssize_t[::1] y, const Py_ssize_t[::1] offsets,
                const double[::1] weights):
    """The observed counts X.T @ (weights * onehot(y)) in the hybrid state weights (low level).

    Sequence k (rows offsets[k]:offsets[k+1]) has weight weights[k]. Adds
    into acc (len(w)) and hot_acc (n_hot, Lp), zeroed by the caller:
    CRFsuite's feature frequencies. Serial (once per training set).
    """
    cdef Py_ssize_t k, t, nnz = indices.shape[0], Lp = hot_acc.shape[1]
    cdef double[::1] onehot = np.zeros(Lp)
    with nogil:
        for k in range(offsets.shape[0] - 1):
            for t in range(offsets[k], offsets[k + 1]):
                onehot[y[t]] = 1.0
                scatter_token(&indptr[0], &indices[0], &data[0], binary, &code[0], &acc[0],
                              &hot_acc[0, 0], Lp, &onehot[0], weights[k], t, Lp, nnz)
                onehot[y[t]] = 0.0


# Entry classes of order_entries, in the order they are stored within a row.
cdef enum:
    HOT = 0       # a dense row (code < 0)
    NO_LABEL = 4  # a compact attribute with no free label: last, read by no kernel


cdef inline int _entry_class(long long c) noexcept nogil:
    """HOT, the number of labels (1..3) of a compact code, or NO_LABEL."""
    cdef int n = <int>((c >> 32) & 3)
    if c < 0:
        return HOT
    return n if n else NO_LABEL


def order_entries(const indptr_t[::1] indptr, int[::1] indices, double[::1] data,
                  bint binary, const long long[::1] code):
    """Partition every CSR row's entries by attribute class, in place (low level).

    Within each row the stored entries (and their values, unless
    ``binary``) are reordered stably into: hot attributes (``code < 0``),
    compact ones with 1, 2 and 3 labels, then those with none. The feature
    helpers of _chain.pxd (gather_token, scatter_token) branch on each
    entry's class: in column order the classes alternate at random, and
    grouped, the branches are predicted. The rows' sums are unchanged but
    for their order. O(nnz): a byte per attribute (its class: the random
    reads stay in cache) and one scratch row.
    """
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1, t, p0, n, k, longest = 0
    cdef Py_ssize_t start[5]
    cdef int cls
    for t in range(n_rows):
        if indptr[t + 1] - indptr[t] > longest:
            longest = indptr[t + 1] - indptr[t]
    cdef int[::1] idx = np.empty(longest + 1, dtype=np.intc)
    cdef double[::1] val = np.empty(1 if binary else longest + 1)
    cdef unsigned char[::1] row_cls = np.empty(longest + 1, dtype=np.uint8)
    cdef unsigned char[::1] attr_cls = np.empty(code.shape[0] + 1, dtype=np.uint8)
    with nogil:
        for k in range(code.shape[0]):
            attr_cls[k] = <unsigned char>_entry_class(code[k])
        for t in range(n_rows):
            p0 = indptr[t]
            n = indptr[t + 1] - p0
            for k in range(5):
                start[k] = 0
            for k in range(n):  # the classes' counts, then where each class starts
                cls = attr_cls[indices[p0 + k]]
                row_cls[k] = <unsigned char>cls
                start[cls] += 1
            start[4] = n - start[4]
            for k in range(3, -1, -1):
                start[k] = start[k + 1] - start[k]
            for k in range(n):
                cls = row_cls[k]
                idx[start[cls]] = indices[p0 + k]
                if not binary:
                    val[start[cls]] = data[p0 + k]
                start[cls] += 1
            for k in range(n):
                indices[p0 + k] = idx[k]
                if not binary:
                    data[p0 + k] = val[k]
