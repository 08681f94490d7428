# Unary potentials from sparse features, and the chain rule back to weights.
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

from cython.parallel cimport prange

cdef extern from *:
    # GCC/Clang builtin: hint the cache to load an address (no fault on bad ones).
    void __builtin_prefetch(const void* addr) nogil

# How many (token, attribute) entries ahead to prefetch the row they need.
# Rows of rare attributes are cache misses; the index arrays say which rows
# come next, which the hardware prefetcher cannot guess.
cdef enum:
    PREFETCH = 8


def dense_potentials(
    const Py_ssize_t[::1] indptr,
    const int[::1] indices,
    const double[::1] data,
    bint binary,
    const double[:, ::1] W,
    double[:, ::1] out,
    int n_threads,
):
    """U = X @ W for CSR X and dense W (n_attributes, n_labels) (low level).

    With ``binary`` every stored value of X is 1 and ``data`` is not read
    (indicator features: half the memory traffic).
    """
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t nnz = indices.shape[0]
    cdef Py_ssize_t L = out.shape[1]
    cdef Py_ssize_t t, p, a, j, q
    cdef double v
    cdef double* o
    cdef const double* w
    with nogil:
        for t in prange(n_rows, num_threads=n_threads, schedule='static', chunksize=256):
            o = &out[t, 0]
            for j in range(L):
                o[j] = 0.0
            for p in range(indptr[t], indptr[t + 1]):
                q = p + PREFETCH
                if q < nnz:
                    w = &W[indices[q], 0]
                    for j in range(0, L, 8):
                        __builtin_prefetch(w + j)
                w = &W[indices[p], 0]
                if binary:
                    for j in range(L):
                        o[j] += w[j]
                else:
                    v = data[p]
                    for j in range(L):
                        o[j] += v * w[j]


def dense_gradient(
    const Py_ssize_t[::1] col_ptr,
    const int[::1] row_index,
    const double[::1] data,
    bint binary,
    const double[:, ::1] d_unary,
    double[:, ::1] out,
    int n_threads,
):
    """dW = X.T @ dU from the CSC form of X (low level); out (n_attributes, n_labels).

    ``binary`` as for :func:`dense_potentials`.
    """
    cdef Py_ssize_t n_attr = col_ptr.shape[0] - 1
    cdef Py_ssize_t nnz = row_index.shape[0]
    cdef Py_ssize_t L = out.shape[1]
    cdef Py_ssize_t a, p, j, q
    cdef double v
    cdef double* o
    cdef const double* d
    with nogil:
        for a in prange(n_attr, num_threads=n_threads, schedule='dynamic', chunksize=64):
            o = &out[a, 0]
            for j in range(L):
                o[j] = 0.0
            for p in range(col_ptr[a], col_ptr[a + 1]):
                q = p + PREFETCH
                if q < nnz:
                    d = &d_unary[row_index[q], 0]
                    for j in range(0, L, 8):
                        __builtin_prefetch(d + j)
                d = &d_unary[row_index[p], 0]
                if binary:
                    for j in range(L):
                        o[j] += d[j]
                else:
                    v = data[p]
                    for j in range(L):
                        o[j] += v * d[j]
