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
