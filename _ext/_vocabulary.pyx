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
#
# The string values are looked up, without building a column name, in a
# VocabularyTable: an open-addressing hash table (int32 slots into an array
# of entries, the entries in the order given: the most frequent columns
# first, so that they share cache lines) keyed by (key id, hash of the
# value), each entry holding the value's characters (in the entry itself up
# to 11 bytes, else in an arena), so that a hit is confirmed by comparing
# them (an exact match, as a dict lookup, never a hash match alone) without
# touching a Python object of the table. The lookups of one token are done
# in stages (hash and slot of every value, then the slots, then the
# entries) with the next stage's memory prefetched, so that the cache misses
# of a token's values overlap instead of following one another.

import numpy as np

from cpython.dict cimport PyDict_Next, PyDict_SetItem
from cpython.list cimport PyList_GET_ITEM
from cpython.object cimport PyObject
from cpython.unicode cimport (PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND,
                              PyUnicode_Substring, PyUnicode_Tailmatch)
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy


cdef extern from "Python.h":
    const Py_ssize_t PY_SSIZE_T_MAX
    PyObject* PyDict_GetItemWithError(object d, object key) except? NULL
    Py_hash_t PyObject_Hash(object o) except -1

cdef extern from *:
    """
    /* 0, or -1 with an exception set (Python < 3.12: a legacy string not yet ready). */
    static int crfloss_ready(PyObject *s) {
    #if PY_VERSION_HEX < 0x030C0000
        return PyUnicode_READY(s);
    #else
        (void)s;
        return 0;
    #endif
    }
    /* A dict with room for n items (no resizing while they are entered), where
       CPython exports the call (3.10-3.13); else an empty dict. */
    static PyObject *crfloss_new_dict(Py_ssize_t n) {
    #if PY_VERSION_HEX < 0x030E0000 && !defined(PYPY_VERSION)
        return _PyDict_NewPresized(n);
    #else
        (void)n;
        return PyDict_New();
    #endif
    }
    #if defined(__GNUC__) || defined(__clang__)
    #define crfloss_prefetch(p) __builtin_prefetch(p)
    #else
    #define crfloss_prefetch(p) ((void)0)
    #endif
    """
    int ready "crfloss_ready"(PyObject* s) except -1
    object new_dict "crfloss_new_dict"(Py_ssize_t n)
    void prefetch "crfloss_prefetch"(const void* p) noexcept nogil


# A value of at most INLINE bytes is kept in its entry, a longer one in the
# table's arena (its offset in the entry's first 8 bytes). CPython keeps a
# str in the narrowest of 1, 2 or 4 bytes per character that holds it, so two
# strs are equal exactly when their kinds and bytes are.
cdef enum:
    INLINE = 11

ctypedef struct entry_t:
    Py_hash_t hash      # hash of the value
    int32_t key         # the key's id
    int32_t column
    uint32_t nbytes     # the value's length in bytes
    uint8_t kind        # and bytes per character
    char text[INLINE]   # the value's bytes, or their offset in the arena


cdef inline Py_ssize_t slot_of(Py_hash_t h, int32_t key, Py_ssize_t mask) noexcept nogil:
    cdef uint64_t x = (<uint64_t>h) ^ ((<uint64_t>key + 1) * 0x9E3779B97F4A7C15ULL)
    return <Py_ssize_t>((x ^ (x >> 32)) & <uint64_t>mask)


cdef class VocabularyTable:
    """The string-valued columns of a vocabulary as a compiled hash table (low level).

    Every column name ``key<separator>value`` is entered under each split
    at the separator (``'a=b=c'``: key ``'a'`` value ``'b=c'``, key
    ``'a=b'`` value ``'c'``), so every (key, value) pair DictVectorizer maps
    to a column is found. The table holds copies of the values' characters,
    not references to the names.

    Parameters
    ----------
    names : list of str
        ``DictVectorizer.feature_names_`` (column index -> name).
    separator : str
        ``DictVectorizer.separator`` (not empty).
    order : sequence of int or None, default=None
        The columns in the order their entries are laid out (most frequent
        first); None: 0, 1, ...

    Attributes
    ----------
    keys : dict of {str: int}
        Key -> key id.
    n_entries : int
        Entries ((key, value) pairs).
    nbytes : int
        Memory held by the entries, the slots and the arena.
    """

    cdef entry_t* entries
    cdef int32_t* index
    cdef char* arena
    cdef Py_ssize_t mask, arena_size, capacity, arena_capacity
    cdef readonly Py_ssize_t n_entries
    cdef readonly dict keys

    def __cinit__(self):
        self.entries = NULL
        self.index = NULL
        self.arena = NULL

    def __dealloc__(self):
        free(self.entries)
        free(self.index)
        free(self.arena)

    @property
    def nbytes(self):
        return (self.n_entries * sizeof(entry_t) + (self.mask + 1) * sizeof(int32_t)
                + self.arena_size)

    def __init__(self, list names, str separator, order=None):
        cdef Py_ssize_t lsep = len(separator), i
        self.keys = {}
        self.n_entries = self.capacity = 0
        self.arena_size = self.arena_capacity = 0
        for column in (range(len(names)) if order is None else order):
            name = names[column]
            i = name.find(separator)
            while i >= 0:
                self._append(self.keys.setdefault(name[:i], len(self.keys)), name[i + lsep:],
                             column)
                i = name.find(separator, i + 1)
        self._build_index()

    cdef int _append(self, int32_t key, str value, int32_t column) except -1:
        """A new entry at the end (growing the entries as needed); not yet in a slot."""
        cdef entry_t* grown
        if self.n_entries == self.capacity:
            self.capacity = max(2 * self.capacity, 1024)
            grown = <entry_t*>realloc(self.entries, self.capacity * sizeof(entry_t))
            if grown == NULL:
                raise MemoryError()
            self.entries = grown
        self._set_entry(&self.entries[self.n_entries], key, value, column)
        self.n_entries += 1
        return 0

    cdef int _set_entry(self, entry_t* ent, int32_t key, str value, int32_t column) except -1:
        cdef uint64_t offset
        cdef char* grown
        ready(<PyObject*>value)
        ent.hash = PyObject_Hash(value)
        ent.key = key
        ent.column = column
        ent.kind = PyUnicode_KIND(value)
        ent.nbytes = PyUnicode_GET_LENGTH(value) * ent.kind
        if ent.nbytes <= INLINE:
            memcpy(ent.text, PyUnicode_DATA(value), ent.nbytes)
            return 0
        if self.arena_size + ent.nbytes > self.arena_capacity:
            self.arena_capacity = max(2 * self.arena_capacity, self.arena_size + ent.nbytes,
                                      4096)
            grown = <char*>realloc(self.arena, self.arena_capacity)
            if grown == NULL:
                raise MemoryError()
            self.arena = grown
        offset = self.arena_size
        memcpy(self.arena + offset, PyUnicode_DATA(value), ent.nbytes)
        memcpy(ent.text, &offset, sizeof(uint64_t))
        self.arena_size += ent.nbytes
        return 0

    cdef int _insert(self, int32_t key, str value, int32_t column, Py_ssize_t slot) except -1:
        """Enter a (key, value) pair not in the table at its free ``slot`` (found by _find_entry).

        The slots are rebuilt, twice as many, when they are half full (their
        ``mask`` then changes: a slot found before is stale).
        """
        self._append(key, value, column)
        self.index[slot] = self.n_entries - 1
        if 2 * self.n_entries > self.mask + 1:
            free(self.index)
            self.index = NULL
            self._build_index()
        return 0

    cdef int _build_index(self) except -1:
        """The slots of the entries (a repeated (key, value): the last entry's column)."""
        cdef Py_ssize_t size = 8, slot, i
        cdef int32_t e
        cdef entry_t* ent
        while size < 2 * self.n_entries:
            size *= 2
        self.mask = size - 1
        self.index = <int32_t*>malloc(size * sizeof(int32_t))
        if self.index == NULL:
            raise MemoryError()
        for slot in range(size):
            self.index[slot] = -1
        for i in range(self.n_entries):
            ent = &self.entries[i]
            slot = slot_of(ent.hash, ent.key, self.mask)
            e = self._find_entry(ent.hash, ent.key, self._text(ent), ent.nbytes, ent.kind,
                                 &slot, self.index[slot])
            if e >= 0:
                self.entries[e].column = ent.column
            else:
                self.index[slot] = i
        return 0

    cdef inline const char* _text(self, entry_t* ent) noexcept:
        cdef uint64_t offset
        if ent.nbytes <= INLINE:
            return ent.text
        memcpy(&offset, ent.text, sizeof(uint64_t))
        return self.arena + offset

    cdef inline int32_t _find_entry(self, Py_hash_t h, int32_t key, const char* data,
                                    uint32_t nbytes, uint8_t kind, Py_ssize_t* slot,
                                    int32_t e) noexcept:
        """The entry of (key, value) from its slot's entry ``e``; -1 (``slot``: the free slot)."""
        cdef entry_t* ent
        while e >= 0:
            ent = &self.entries[e]
            if (ent.hash == h and ent.key == key and ent.nbytes == nbytes and ent.kind == kind
                    and memcmp(self._text(ent), data, nbytes) == 0):
                return e
            slot[0] = (slot[0] + 1) & self.mask
            e = self.index[slot[0]]
        return -1


def exact_dicts(list tokens):
    """Whether every token is of type ``dict`` exactly (a C loop over the list)."""
    cdef object token
    for token in tokens:
        if type(token) is not dict:
            return False
    return True


cdef class _Rows:
    """The growing CSR arrays of one vocabulary_rows call."""

    cdef object indptr, indices, data
    cdef Py_ssize_t[::1] ptr
    cdef int[::1] ind
    cdef double[::1] val
    cdef Py_ssize_t nnz, cap
    cdef bint has_data

    def __init__(self, Py_ssize_t n, Py_ssize_t cap):
        self.indptr = np.empty(n + 1, dtype=np.intp)
        self.indices = np.empty(max(cap, 1), dtype=np.int32)
        self.ptr = self.indptr
        self.ind = self.indices
        self.ptr[0] = 0
        self.cap = cap
        self.nnz = 0
        self.has_data = False

    cdef inline void add(self, int column, double x):
        if x != 1.0 and not self.has_data:
            self.data = np.ones(max(self.cap, 1))
            self.val = self.data
            self.has_data = True
        self.ind[self.nnz] = column
        if self.has_data:
            self.val[self.nnz] = x
        self.nnz += 1

    cdef tuple result(self):
        return (self.indptr, self.indices[:self.nnz],
                (self.data[:self.nnz] if self.has_data else None))


cdef Py_ssize_t _capacity(list tokens, Py_ssize_t* longest):
    """Stored values of all tokens (-1 if one is not a dict); their longest dict."""
    cdef Py_ssize_t cap = 0, m
    cdef object token
    longest[0] = 0
    for token in tokens:
        if type(token) is not dict:
            return -1
        m = len(<dict>token)
        cap += m
        if m > longest[0]:
            longest[0] = m
    return cap


def vocabulary_rows(list tokens, dict vocabulary, str separator, VocabularyTable table=None):
    """CSR arrays of feature dicts against a DictVectorizer vocabulary (low level).

    Parameters
    ----------
    tokens : list of dict
    vocabulary : dict
        ``DictVectorizer.vocabulary_`` (column name -> column index).
    separator : str
        ``DictVectorizer.separator``.
    table : VocabularyTable or None, default=None
        The same vocabulary's string-valued columns: looked up there, no
        column name is built. None: look up 'key<separator>value' in
        vocabulary.

    Returns
    -------
    (indptr, indices, data) or None
        indptr (n_tokens + 1,) intp, indices (nnz,) int32 in each dict's
        order, data (nnz,) float64 or None when every value is 1. None if a
        token, key or value has a type outside the fast path.

    Raises
    ------
    OverflowError
        An int value too large for a float64.
    """
    cdef Py_ssize_t longest
    cdef Py_ssize_t cap = _capacity(tokens, &longest)
    if cap < 0:
        return None
    rows = _Rows(len(tokens), cap)
    if table is None:
        done = _flat_rows(tokens, vocabulary, separator, rows)
    else:
        done = _table_rows(tokens, vocabulary, table, rows, longest)
    return rows.result() if done else None


cdef bint _flat_rows(list tokens, dict vocabulary, str separator, _Rows rows) except -1:
    """Fill ``rows`` by 'key<separator>value' lookups; False on a type outside the fast path."""
    cdef Py_ssize_t i, pos
    cdef PyObject* key_p
    cdef PyObject* value_p
    cdef PyObject* col_p
    cdef object token, key, value
    cdef double x
    for i in range(len(tokens)):
        token = tokens[i]
        pos = 0
        while PyDict_Next(token, &pos, &key_p, &value_p):
            key = <object>key_p
            value = <object>value_p
            if type(key) is not str:
                return False
            if type(value) is str:
                x = 1.0
                col_p = PyDict_GetItemWithError(vocabulary, f"{key}{separator}{value}")
            elif type(value) is float or type(value) is int or type(value) is bool:
                x = float(value)
                col_p = PyDict_GetItemWithError(vocabulary, key)
            else:
                return False
            if col_p != NULL:
                rows.add(<object>col_p, x)
        rows.ptr[i + 1] = rows.nnz
    return True


ctypedef struct probe_t:
    Py_hash_t hash        # the value's hash
    const char* data      # and bytes (the token dict holds the value)
    Py_ssize_t slot
    Py_ssize_t column     # the result: -1 none
    double x              # the stored value
    uint32_t nbytes
    int32_t key           # the key's id; -1: a number (column already set); -2: no column
    int32_t first         # the entry in the first slot
    uint8_t kind
    PyObject* key_seen    # the key object last seen at this position of a dict
    PyObject* value       # the value (vocabulary_fit: named when it is new)


cdef bint _table_rows(list tokens, dict vocabulary, VocabularyTable table, _Rows rows,
                      Py_ssize_t longest, str separator=None, list names=None) except -1:
    """Fill ``rows`` through ``table``; False as _flat_rows.

    One token at a time, in three stages: the hash and slot of every value
    (prefetching the slots), the slots (prefetching their entries), the
    entries; the key ids are remembered by position in the dict, so the
    same key objects in every dict (a template's) cost a pointer comparison.

    With ``names`` (a list; :func:`vocabulary_fit`) the table grows: a key,
    a (key, value) pair or a number's key not found gets a new id or
    column, the column's name ``key<separator>value`` or ``key`` appended
    to ``names`` (``vocabulary`` then holds the numbers' columns).
    """
    cdef probe_t* probes = <probe_t*>malloc(max(longest, 1) * sizeof(probe_t))
    cdef Py_ssize_t i, j
    if probes == NULL:
        raise MemoryError()
    try:
        for j in range(longest):
            probes[j].key_seen = NULL
        for i in range(len(tokens)):
            if i + 1 < len(tokens):
                _prefetch_values(tokens[i + 1])
            if not _hash_values(tokens[i], vocabulary, table, probes, &j, names):
                return False
            _probe_values(table, probes, j, rows, separator, names)
            rows.ptr[i + 1] = rows.nnz
    finally:
        free(probes)
    return True


cdef inline void _prefetch_values(object token):
    """Prefetch the value objects of the next token (their first reads miss the cache)."""
    cdef Py_ssize_t pos = 0
    cdef PyObject* key_p
    cdef PyObject* value_p
    if type(token) is dict:
        while PyDict_Next(token, &pos, &key_p, &value_p):
            prefetch(value_p)


cdef inline Py_ssize_t _key_id(VocabularyTable table, PyObject* key_p, list names) except -3:
    """The id of a key of str values (-2: none, or a new one if ``names`` is a list)."""
    cdef PyObject* found = PyDict_GetItemWithError(table.keys, <object>key_p)
    if found != NULL:
        return <object>found
    if names is None:
        return -2
    table.keys[<object>key_p] = len(table.keys)
    return len(table.keys) - 1


cdef inline Py_ssize_t _number_column(dict vocabulary, PyObject* key_p, list names) except -2:
    """The column of a number's key (-1: none, or a new one if ``names`` is a list)."""
    cdef PyObject* found = PyDict_GetItemWithError(vocabulary, <object>key_p)
    if found != NULL:
        return <object>found
    if names is None:
        return -1
    vocabulary[<object>key_p] = len(names)
    names.append(<object>key_p)
    return len(names) - 1


cdef bint _hash_values(dict token, dict vocabulary, VocabularyTable table, probe_t* probes,
                       Py_ssize_t* m, list names) except -1:
    """Stage 1 for one token: ``m`` its number of values; False as _flat_rows."""
    cdef Py_ssize_t pos = 0
    cdef PyObject* key_p
    cdef PyObject* value_p
    cdef probe_t* p
    m[0] = 0
    while PyDict_Next(token, &pos, &key_p, &value_p):
        p = &probes[m[0]]
        m[0] += 1
        if type(<object>key_p) is not str:
            return False
        value = <object>value_p
        if type(value) is str:
            p.x = 1.0
            if key_p != p.key_seen:
                p.key = _key_id(table, key_p, names)
                p.key_seen = key_p
            if p.key < 0:
                continue
            ready(value_p)
            p.value = value_p
            p.hash = PyObject_Hash(value)
            p.kind = PyUnicode_KIND(value)
            p.nbytes = PyUnicode_GET_LENGTH(value) * p.kind
            p.data = <const char*>PyUnicode_DATA(value)
            p.slot = slot_of(p.hash, p.key, table.mask)
            prefetch(&table.index[p.slot])
        elif type(value) is float or type(value) is int or type(value) is bool:
            p.x = float(value)
            p.key_seen = NULL
            p.key = -1
            p.column = _number_column(vocabulary, key_p, names)
        else:
            return False
    return True


cdef int _probe_values(VocabularyTable table, probe_t* probes, Py_ssize_t m, _Rows rows,
                       str separator, list names) except -1:
    """Stages 2 and 3 for one token's ``m`` values, then their columns into ``rows``."""
    cdef Py_ssize_t j, mask = table.mask
    cdef int32_t e
    cdef probe_t* p
    for j in range(m):
        p = &probes[j]
        if p.key >= 0:
            p.first = table.index[p.slot]
            if p.first >= 0:
                prefetch(&table.entries[p.first])
    for j in range(m):
        p = &probes[j]
        if p.key >= 0:
            if names is not None:  # the slot read again: this token may have filled it
                if table.mask != mask:  # or rebuilt the slots
                    p.slot = slot_of(p.hash, p.key, table.mask)
                p.first = table.index[p.slot]
            e = table._find_entry(p.hash, p.key, p.data, p.nbytes, p.kind, &p.slot, p.first)
            p.column = -1 if e < 0 else table.entries[e].column
            if e < 0 and names is not None:
                p.column = len(names)
                names.append(f"{<object>p.key_seen}{separator}{<object>p.value}")
                table._insert(p.key, <object>p.value, p.column, p.slot)
        if p.key != -2 and p.column >= 0:
            rows.add(p.column, p.x)
    return 0


def vocabulary_fit(list tokens, str separator):
    """The vocabulary ``DictVectorizer.fit`` learns and the CSR rows of ``tokens`` (low level).

    One compiled pass over the dicts: the (key, value) pairs are entered in
    a growing :class:`VocabularyTable` as they are first seen (a provisional
    column each, named then), every stored value is written as its
    provisional column, and the columns are renumbered at the end in the
    order of their sorted names (equal names, e.g. ``'a=b'`` from
    ``{'a': 'b'}`` and from ``{'a=b': 1}``, one column), so that no second
    pass looks the values up again. A name is built per distinct pair, not
    per stored value.

    Parameters
    ----------
    tokens : list of dict
    separator : str
        ``DictVectorizer.separator``.

    Returns
    -------
    (names, indptr, indices, data) or None
        names: list of str, ``'key<separator>value'`` for a str value,
        ``'key'`` for an int, float or bool, each once, sorted
        (``DictVectorizer``'s ``feature_names_`` with ``sort=True``); the
        rows as :func:`vocabulary_rows` gives them against that vocabulary
        (indices in each dict's order). None if a token, key or value has a
        type outside the fast path (as :func:`vocabulary_rows`).

    Raises
    ------
    OverflowError
        As :func:`vocabulary_rows`.
    """
    cdef list names = []
    cdef Py_ssize_t t, longest
    cdef Py_ssize_t cap = _capacity(tokens, &longest)
    cdef int32_t[::1] remap
    cdef int[::1] ind
    cdef _Rows rows
    if cap < 0:
        return None
    rows = _Rows(len(tokens), cap)
    if not _table_rows(tokens, {}, VocabularyTable([], separator), rows, longest, separator,
                       names):
        return None
    indptr, indices, data = rows.result()
    names, remap = _sorted_columns(names)
    ind = indices
    for t in range(ind.shape[0]):
        ind[t] = remap[ind[t]]
    return names, indptr, indices, data


cdef tuple _sorted_columns(list names):
    """The distinct ``names`` sorted, and the column of each name in them (int32)."""
    cdef Py_ssize_t n = len(names), i, k
    cdef list order = sorted(range(n), key=names.__getitem__)
    cdef list distinct = []
    cdef int32_t column = -1
    cdef str name, previous = None
    out = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] remap = out
    for i in range(n):
        if i + 16 < n:  # the name objects are read in sorted order: at random in memory
            prefetch(PyList_GET_ITEM(names, <object>PyList_GET_ITEM(order, i + 16)))
        k = <object>PyList_GET_ITEM(order, i)
        name = <str>PyList_GET_ITEM(names, k)
        if column < 0 or name != previous:
            column += 1
            distinct.append(name)
            previous = name
        remap[k] = column
    return distinct, out


def pack_names(list names):
    """Column names kept compactly: ``(all of them joined, the end of each)`` (low level).

    Parameters
    ----------
    names : list of str

    Returns
    -------
    joined : str
    ends : ndarray of int32 of shape (len(names),)
        int64 when the joined names are 2**31 characters or longer.
    """
    cdef Py_ssize_t k, n = len(names)
    ends = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] e = ends
    cdef int64_t end = 0
    for k in range(n):
        end += PyUnicode_GET_LENGTH(<str?>names[k])
        e[k] = end
    return "".join(names), ends.astype(np.int32) if end < 2**31 else ends


def unpack_names(str joined, ends):
    """The list of names of :func:`pack_names`'s ``(joined, ends)`` (low level)."""
    cdef int64_t[::1] e = np.asarray(ends, dtype=np.int64)
    cdef Py_ssize_t k, start = 0
    cdef list names = [None] * e.shape[0]
    for k in range(e.shape[0]):
        names[k] = PyUnicode_Substring(joined, start, e[k])
        start = e[k]
    return names


def prefixed_names(names, str prefix):
    """Whether each name starts with ``prefix``, in one compiled loop (low level).

    Parameters
    ----------
    names : list of str, or tuple (joined, ends)
        The names, or :func:`pack_names`'s packed form (read without
        building a str per name). A list item that is not of type str is
        compared as ``str(item)``.
    prefix : str

    Returns
    -------
    ndarray of bool of shape (n_names,)
    """
    cdef Py_ssize_t k, start = 0, n
    cdef int64_t[::1] e
    cdef str joined
    cdef list items
    if type(names) is tuple:
        joined, e = names[0], np.asarray(names[1], dtype=np.int64)
        n = e.shape[0]
    else:
        items = names
        n = len(items)
    out = np.zeros(n, dtype=bool)
    cdef uint8_t[::1] mask = out.view(np.uint8)
    for k in range(n):
        if type(names) is tuple:
            mask[k] = PyUnicode_Tailmatch(joined, prefix, start, e[k], -1)
            start = e[k]
        else:
            item = items[k]
            mask[k] = (PyUnicode_Tailmatch(item, prefix, 0, PY_SSIZE_T_MAX, -1)
                       if type(item) is str else str(item).startswith(prefix))
    return out


def column_index(list names):
    """``{name: column}`` of the column names, as ``DictVectorizer.vocabulary_`` (low level).

    The dict made with room for every name at once (the same dict as
    ``dict(zip(names, range(len(names))))``, about half the time for a
    vocabulary of 338,500 names).
    """
    cdef Py_ssize_t k
    cdef dict index = new_dict(len(names))
    for k in range(len(names)):
        PyDict_SetItem(index, names[k], k)
    return index
