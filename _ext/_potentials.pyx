# Unary potentials from sparse features (U = X @ W), and the chain rule back
# to the weights (dW = X.T @ dU): the two sparse-dense products.
#
# W is dense, (n_attributes, n_labels) in C order; with CRFsuite-style
# observed pairs only, the untrained entries are simply 0. Each kernel's inner
# loop runs over one contiguous row of n_labels values, which vectorises.
# (CRFsuite-style per-attribute lists of (label, weight) pairs do fewer
# multiplications but scatter into the output one label at a time; measured
# slower here.)
#
#   dense_potentials: U[t] = sum over (a, v) in row t of X of v * W[a]
#                     (rows in parallel)
#   dense_gradient:   dW[a] = sum over (t, v) in column a of X of v * dU[t]
#                     (attributes in parallel, from the CSC form of X; each
#                     row of dW is written by one thread, so no atomics and
#                     no reduction)
#
# Both are the same row gather (_gather_rows) over a compressed sparse
# index: rows of X for U, columns of X (rows of X.T) for dW.

from cython.parallel cimport prange

cdef extern from *:
    # GCC/Clang builtin: hint the cache to load an address (no fault on bad ones).
    void __builtin_prefetch(const void* addr) nogil

# How many (token, attribute) entries ahead to prefetch the row they need.
# Rows of rare attributes are cache misses; the index arrays say which rows
# come next, which the hardware prefetcher cannot guess.
cdef enum:
    PREFETCH = 8


cdef inline void _gather_rows(
    const Py_ssize_t* ptr, const int* index, const double* data, bint binary,
    const double* M, Py_ssize_t r, Py_ssize_t nnz, Py_ssize_t L, double* out,
) noexcept nogil:
    """out = sum over p in ptr[r]:ptr[r+1] of data[p] * M[index[p]] (rows of L).

    Row r of a CSR product X @ M, or, from the CSC form of X, row r of
    X.T @ M: both products are this gather. With ``binary`` data is not read.
    """
    cdef Py_ssize_t p, q, j
    cdef double v
    cdef const double* m
    for j in range(L):
        out[j] = 0.0
    for p in range(ptr[r], ptr[r + 1]):
        q = p + PREFETCH
        if q < nnz:
            m = &M[index[q] * L]
            for j in range(0, L, 8):
                __builtin_prefetch(m + j)
        m = &M[index[p] * L]
        if binary:
            for j in range(L):
                out[j] += m[j]
        else:
            v = data[p]
            for j in range(L):
                out[j] += v * m[j]


cdef void _sparse_dense(
    const Py_ssize_t[::1] ptr, const int[::1] index, const double[::1] data, bint binary,
    const double[:, ::1] M, double[:, ::1] out, int n_threads, bint dynamic,
) noexcept nogil:
    # out[r] = _gather_rows(r) for every r, in parallel. A static schedule
    # suits the rows of X (about as many features per token); a dynamic one
    # the columns (attribute frequencies are very uneven).
    cdef Py_ssize_t r, n_rows = ptr.shape[0] - 1, nnz = index.shape[0], L = out.shape[1]
    if dynamic:
        for r in prange(n_rows, num_threads=n_threads, schedule='dynamic', chunksize=64):
            _gather_rows(&ptr[0], &index[0], &data[0], binary, &M[0, 0], r, nnz, L, &out[r, 0])
    else:
        for r in prange(n_rows, num_threads=n_threads, schedule='static', chunksize=256):
            _gather_rows(&ptr[0], &index[0], &data[0], binary, &M[0, 0], r, nnz, L, &out[r, 0])


def dense_potentials(const Py_ssize_t[::1] indptr, const int[::1] indices,
                     const double[::1] data, bint binary, const double[:, ::1] W,
                     double[:, ::1] out, int n_threads):
    """U = X @ W for CSR X and dense W (n_attributes, n_labels) (low level).

    With ``binary`` every stored value of X is 1 and ``data`` is not read
    (indicator features: half the memory traffic).
    """
    with nogil:
        _sparse_dense(indptr, indices, data, binary, W, out, n_threads, False)


def dense_gradient(const Py_ssize_t[::1] col_ptr, const int[::1] row_index,
                   const double[::1] data, bint binary, const double[:, ::1] d_unary,
                   double[:, ::1] out, int n_threads):
    """dW = X.T @ dU from the CSC form of X (low level); out (n_attributes, n_labels).

    ``binary`` as for :func:`dense_potentials`.
    """
    with nogil:
        _sparse_dense(col_ptr, row_index, data, binary, d_unary, out, n_threads, True)
