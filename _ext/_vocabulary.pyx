# Feature dicts to CSR rows through a fitted DictVectorizer vocabulary.
#
# scikit-learn's DictVectorizer.transform builds a Python list of one float
# object per stored value (about 32 bytes each) and forms each column name
# with the % operator: on CoNLL-2000 it is the bulk of predict and, in fit,
# a peak of a few hundred MB. vocabulary_rows does the same lookup in one
# compiled loop over the dicts, writing int32 column indices (and float64
# values only if one differs from 1) straight into numpy arrays.
#
# It covers the common value types and gives up (returns None) on anything
# else, for the caller to use DictVectorizer.transform itself:
#   str value v          -> column 'key<separator>v', value 1
#   int / float / bool   -> column 'key', value float(v)
# with keys of type str and tokens of type dict (exact types: a subclass may
# format or convert differently). Names not in the vocabulary are skipped,
# as DictVectorizer.transform skips them.

import numpy as np

from cpython.dict cimport PyDict_Next
from cpython.object cimport PyObject


cdef extern from "Python.h":
    PyObject* PyDict_GetItemWithError(object d, object key) except? NULL


def vocabulary_rows(list tokens, dict vocabulary, str separator, dict table=None):
    """CSR arrays of feature dicts against a DictVectorizer vocabulary (low level).

    Parameters
    ----------
    tokens : list of dict
    vocabulary : dict
        ``DictVectorizer.vocabulary_`` (column name -> column index).
    separator : str
        ``DictVectorizer.separator``.
    table : dict or None, default=None
        The same vocabulary as a two-level table key -> {value -> column}
        for the string values: looked up as table[key][value], no column
        name is built. None: look up 'key<separator>value' in vocabulary.

    Returns
    -------
    (indptr, indices, data) or None
        indptr (n_tokens + 1,) intp, indices (nnz,) int32 in each dict's
        order, data (nnz,) float64 or None when every value is 1. None if a
        token, key or value has a type outside the fast path.
    """
    cdef Py_ssize_t n = len(tokens), cap = 0, nnz = 0, i, pos
    cdef PyObject* key_p
    cdef PyObject* value_p
    cdef PyObject* col_p
    cdef PyObject* sub_p
    cdef object token, key, value
    cdef double x
    cdef bint has_data = False
    cdef Py_ssize_t[::1] ptr
    cdef int[::1] ind
    cdef double[::1] val
    for token in tokens:
        if type(token) is not dict:
            return None
        cap += len(<dict>token)
    indptr = np.empty(n + 1, dtype=np.intp)
    indices = np.empty(max(cap, 1), dtype=np.int32)
    data = None
    ptr = indptr
    ind = indices
    ptr[0] = 0
    for i in range(n):
        token = tokens[i]
        pos = 0
        while PyDict_Next(token, &pos, &key_p, &value_p):
            key = <object>key_p
            value = <object>value_p
            if type(key) is not str:
                return None
            if type(value) is str:
                x = 1.0
                if table is None:
                    col_p = PyDict_GetItemWithError(vocabulary, f"{key}{separator}{value}")
                else:
                    sub_p = PyDict_GetItemWithError(table, key)
                    col_p = NULL if sub_p == NULL else PyDict_GetItemWithError(<object>sub_p,
                                                                               value)
            elif type(value) is float or type(value) is int or type(value) is bool:
                x = float(value)
                col_p = PyDict_GetItemWithError(vocabulary, key)
            else:
                return None
            if col_p == NULL:
                continue
            ind[nnz] = <object>col_p
            if x != 1.0 and not has_data:
                data = np.ones(max(cap, 1))
                val = data
                has_data = True
            if has_data:
                val[nnz] = x
            nnz += 1
        ptr[i + 1] = nnz
    return indptr, indices[:nnz], (data[:nnz] if has_data else None)
