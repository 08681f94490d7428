# Unary potentials from sparse features (U = X @ W), and the chain rule back
# to the weights (dW = X.T @ dU): the two sparse-dense products.
#
# Training stores only the free state weights, compactly (CRFsuite's
# per-attribute feature lists): attribute a owns w[attr_ptr[a]:attr_ptr[a+1]]
# for the labels pair_label[attr_ptr[a]:attr_ptr[a+1]] (sorted), which is the
# order of theta's state block (ParameterLayout.state_index, sorted flat
# indices attribute * n_labels + label), so w is theta's own memory. An
# attribute with every label is a contiguous row of n_labels weights (the
# inner loop vectorises); a rarer one scatters a few weights. Against a
# dense (n_attributes, n_labels) W this reads 16 times less weight memory on
# CoNLL-2000 (456,238 free of 7.4 M entries) and needs no copy of theta.
#
#   pair_potentials: U[t] = sum over (a, v) in row t of X of v * W[a]
#                    (rows in parallel)
#   pair_gradient:   g = X.T @ dU in the compact weights, from the same CSR
#                    rows (one pass over X for both products, no CSC copy):
#                    each thread scatters its rows into its own row of the
#                    accumulator, the wrapper sums the rows
#   pair_counts:     the same scatter of the gold labels' indicators: the
#                    observed feature counts, once per training set
#   dense_potentials: U = X @ W for a dense W (prediction from coef_)
#
# The per-token steps (gather_token, scatter_token) are the inline helpers of
# _chain.pxd, shared with the fused conditional log-likelihood kernel of
# _forward_backward.pyx.

from cython.parallel cimport prange, threadid

from _chain cimport PREFETCH_NEAR, gather_token, prefetch, scatter_token


def pair_potentials(const Py_ssize_t[::1] indptr, const int[::1] indices,
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


def pair_gradient(const Py_ssize_t[::1] indptr, const int[::1] indices,
                  const double[::1] data, bint binary, const long long[::1] code,
                  const double[:, ::1] d_unary, double[:, ::1] acc, double[:, :, ::1] hot_acc,
                  int n_threads):
    """X.T @ dU into per-thread accumulators of the hybrid state weights (low level).

    Rows of X are split among threads; thread tid adds into acc[tid]
    (n_threads, len(w)) and hot_acc[tid] (n_threads, n_hot, Lp), zeroed by
    the caller. A static schedule: the same sums from run to run.
    """
    cdef Py_ssize_t t, n_tokens = d_unary.shape[0], L = d_unary.shape[1]
    cdef Py_ssize_t nnz = indices.shape[0], Lp = hot_acc.shape[2]
    cdef int tid
    with nogil:
        for t in prange(n_tokens, num_threads=n_threads, schedule='static', chunksize=256):
            tid = threadid()
            scatter_token(&indptr[0], &indices[0], &data[0], binary, &code[0], &acc[tid, 0],
                          &hot_acc[tid, 0, 0], Lp, &d_unary[t, 0], 1.0, t, L, nnz)


def pair_counts(const Py_ssize_t[::1] indptr, const int[::1] indices, const double[::1] data,
                bint binary, const Py_ssize_t[::1] attr_ptr, const int[::1] pair_label,
                const Py_ssize_t[::1] y, const double[::1] token_weight, double[::1] out):
    """out[k] += sum of token_weight[t] * v over the tokens t whose gold label is k's label
    and whose row holds k's attribute with value v (low level; serial).

    The observed counts of the free state weights (CRFsuite's feature
    frequencies): weights of pairs that are not free are skipped.
    """
    cdef Py_ssize_t t, p, k, k0, k1, n_tokens = y.shape[0]
    cdef double v
    with nogil:
        for t in range(n_tokens):
            for p in range(indptr[t], indptr[t + 1]):
                k0 = attr_ptr[indices[p]]
                k1 = attr_ptr[indices[p] + 1]
                v = token_weight[t] if binary else token_weight[t] * data[p]
                for k in range(k0, k1):
                    if pair_label[k] == y[t]:
                        out[k] += v
                        break


def dense_potentials(const Py_ssize_t[::1] indptr, const int[::1] indices,
                     const double[::1] data, bint binary, const double[:, ::1] W,
                     double[:, ::1] out, int n_threads):
    """U = X @ W for CSR X and dense W (n_attributes, n_labels) (low level).

    With ``binary`` every stored value of X is 1 and ``data`` is not read.
    The row of W each entry needs is prefetched PREFETCH_NEAR entries ahead (rows
    of rare attributes are cache misses that the hardware cannot predict).
    """
    cdef Py_ssize_t t, p, q, j, n_tokens = out.shape[0], L = out.shape[1]
    cdef Py_ssize_t nnz = indices.shape[0]
    cdef double v
    cdef const double* m
    with nogil:
        for t in prange(n_tokens, num_threads=n_threads, schedule='static', chunksize=256):
            for j in range(L):
                out[t, j] = 0.0
            for p in range(indptr[t], indptr[t + 1]):
                q = p + PREFETCH_NEAR
                if q < nnz:
                    m = &W[indices[q], 0]
                    for j in range(0, L, 8):
                        prefetch(m + j)
                m = &W[indices[p], 0]
                v = 1.0 if binary else data[p]
                for j in range(L):
                    out[t, j] += v * m[j]
