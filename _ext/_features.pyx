# Unary potentials from sparse features, and the chain rule back to weights.
#
# The state weights are the (attribute, label) pairs the model owns, sorted
# by attribute then label and stored as a flat vector theta (CRFsuite's
# feature references, crf1d_feature.c). ref_ptr[a]:ref_ptr[a+1] are the
# entries of attribute a; ref_label[k] is the label of entry k. With every
# label for every attribute this is a dense (n_attributes, n_labels) matrix
# W in C order, so U = X @ W; with only the pairs seen in training (the
# default) it touches a small fraction of W.
#
#   state_potentials: U[t, label[k]] = sum over (a, v) in row t of X, over k
#                     in refs(a), of v * theta[k]          (rows in parallel)
#   state_gradient:   g[k] = sum over (t, v) in column a of X of
#                     v * dU[t, label[k]]                   (attributes in
#                     parallel, from the CSC form of X; each g[k] is written
#                     by one thread only, so no atomics and no reduction)

from cython.parallel cimport prange


def state_potentials(
    const Py_ssize_t[::1] indptr,
    const Py_ssize_t[::1] indices,
    const double[::1] data,
    const Py_ssize_t[::1] ref_ptr,
    const Py_ssize_t[::1] ref_label,
    const double[::1] theta,
    double[:, ::1] out,
    int n_threads,
):
    """Unary potentials of every token (low level).

    indptr, indices, data: a CSR matrix X (n_tokens, n_attributes) with intp
    indices; ref_ptr (n_attributes + 1,), ref_label and theta (n_state,);
    out (n_tokens, n_labels) is overwritten.
    """
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t L = out.shape[1]
    cdef Py_ssize_t t, p, k, a, j
    cdef double v
    with nogil:
        for t in prange(n_rows, num_threads=n_threads, schedule='static', chunksize=256):
            for j in range(L):
                out[t, j] = 0.0
            for p in range(indptr[t], indptr[t + 1]):
                a = indices[p]
                v = data[p]
                for k in range(ref_ptr[a], ref_ptr[a + 1]):
                    out[t, ref_label[k]] += v * theta[k]


def state_gradient(
    const Py_ssize_t[::1] col_ptr,
    const Py_ssize_t[::1] row_index,
    const double[::1] data,
    const Py_ssize_t[::1] ref_ptr,
    const Py_ssize_t[::1] ref_label,
    const double[:, ::1] d_unary,
    double[::1] out,
    int n_threads,
):
    """Gradient of the state weights from the gradient of the potentials (low level).

    col_ptr, row_index, data: X in CSC form (the CSR form of X.T) with intp
    indices; ref_ptr, ref_label as for state_potentials; d_unary
    (n_tokens, n_labels); out (n_state,) is overwritten.
    """
    cdef Py_ssize_t n_attr = col_ptr.shape[0] - 1
    cdef Py_ssize_t a, p, k, t, k0, k1
    cdef double v
    with nogil:
        for a in prange(n_attr, num_threads=n_threads, schedule='dynamic', chunksize=64):
            k0 = ref_ptr[a]
            k1 = ref_ptr[a + 1]
            for k in range(k0, k1):
                out[k] = 0.0
            for p in range(col_ptr[a], col_ptr[a + 1]):
                t = row_index[p]
                v = data[p]
                for k in range(k0, k1):
                    out[k] += v * d_unary[t, ref_label[k]]
