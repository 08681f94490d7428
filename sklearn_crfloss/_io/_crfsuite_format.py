"""Reading and writing CRFsuite 0.12 model files (first-order CRF, type ``FOMC``).

The layout, as CRFsuite's ``lib/crf/src/crf1d_model.c`` and
``lib/cqdb/src/cqdb.c`` define it (all integers little-endian ``uint32``,
weights little-endian IEEE ``float64``; offsets are from the start of the
file unless said otherwise):

- a 48-byte header: ``b'lCRF'``, file size, ``b'FOMC'``, version 100, the
  numbers of features, labels and attributes, then the offsets of the
  features chunk, the label and attribute dictionaries, and the label and
  attribute feature references;
- the features chunk ``b'FEAT'`` (chunk size, count), then 20 bytes per
  feature: type (0: state, 1: transition), source (attribute or previous
  label), destination (label), weight;
- two CQDB dictionaries (labels, attributes) mapping NUL-terminated strings
  to ids and back: a 24-byte header (``b'CQDB'``, size, flag 0, byte-order
  mark ``0x62445371``, number of ids, offset of the id -> record array),
  256 references to open-addressing hash tables (Bob Jenkins' lookup3
  ``hashlittle`` of the string with its NUL; table ``hash % 256``, slot
  ``(hash >> 8) % size``, tables twice as large as their content), the
  records (id, size, bytes), the tables, the id -> record array; offsets
  inside a CQDB are from its start;
- the label references ``b'LFRF'`` (aligned to 4 bytes; ``n_labels + 2``
  offsets, the last two 0) and attribute references ``b'AFRF'`` (aligned):
  per label the ids of its outgoing transition features, per attribute the
  ids of its state features, each list a count followed by the ids.

CRFsuite's tagger scores label ``j`` at a token as the sum of
``weight * value`` over the state features referenced by the token's
attributes, and the transition ``i -> j`` as the weight of the transition
feature referenced by label ``i`` with destination ``j``; there are no start
and end potentials. This module reads and writes the format with
:mod:`struct` and numpy; it does not link to CRFsuite.
"""

import struct

import numpy as np

__all__ = ["CRFsuiteModel", "hashlittle", "read_model", "write_model"]

_HEADER = struct.Struct("<4sI4s9I")  # 48 bytes
_CHUNK = struct.Struct("<4sII")  # 12 bytes
_CQDB_HEADER = struct.Struct("<4s5I")  # 24 bytes
_CQDB_DATA = _CQDB_HEADER.size + 256 * 8  # first record of a CQDB
_BYTEORDER = 0x62445371
_VERSION = 100
_FEATURE = np.dtype([("type", "<u4"), ("src", "<u4"), ("dst", "<u4"), ("weight", "<f8")])


class CRFsuiteModel:
    """The content of a CRFsuite model file.

    Parameters
    ----------
    labels : list of str
        Label names; the index is the label id.
    attributes : list of str
        Attribute names; the index is the attribute id.
    state : tuple of three 1-D ndarrays
        The state features: attribute ids, label ids and weights.
    transition : ndarray of float64 of shape (n_labels, n_labels)
        ``transition[i, j]``: weight of label ``i`` followed by ``j``.
    """

    def __init__(self, labels, attributes, state, transition):
        self.labels = labels
        self.attributes = attributes
        self.state = state
        self.transition = transition


# ------------------------------------------------------------------ hashing

def _rot(x, k):
    return (x << np.uint32(k)) | (x >> np.uint32(32 - k))


def _mix(a, b, c):
    for x, y, z, k in ((0, 2, 1, 4), (1, 0, 2, 6), (2, 1, 0, 8),
                       (0, 2, 1, 16), (1, 0, 2, 19), (2, 1, 0, 4)):
        v = [a, b, c]
        v[x] = (v[x] - v[y]) ^ _rot(v[y], k)
        v[y] = v[y] + v[z]
        a, b, c = v
    return a, b, c


def _final(a, b, c):
    for x, y, k in ((2, 1, 14), (0, 2, 11), (1, 0, 25), (2, 1, 16), (0, 2, 4), (1, 0, 14),
                    (2, 1, 24)):
        v = [a, b, c]
        v[x] = (v[x] ^ v[y]) - _rot(v[y], k)
        a, b, c = v
    return c


def hashlittle(keys):
    """Bob Jenkins' lookup3 ``hashlittle(key, len(key), 0)`` of byte strings.

    Vectorised over the keys of each length (numpy ``uint32`` arithmetic).

    Parameters
    ----------
    keys : list of bytes
        Non-empty keys (CQDB hashes a string with its terminating NUL).

    Returns
    -------
    ndarray of uint32 of shape (n_keys,)
    """
    out = np.zeros(len(keys), dtype=np.uint32)
    lengths = np.fromiter((len(k) for k in keys), dtype=np.intp, count=len(keys))
    for n in np.unique(lengths).tolist():
        index = np.flatnonzero(lengths == n)
        n_blocks = max(1, -(-n // 12))
        raw = np.zeros((index.shape[0], n_blocks * 12), dtype=np.uint8)
        raw[:, :n] = np.frombuffer(b"".join(keys[i] for i in index.tolist()),
                                   dtype=np.uint8).reshape(-1, n)
        words = raw.view("<u4").astype(np.uint32).reshape(-1, n_blocks, 3)
        a = b = c = np.full(index.shape[0], (0xDEADBEEF + n) & 0xFFFFFFFF, dtype=np.uint32)
        for k in range(n_blocks):
            a, b, c = a + words[:, k, 0], b + words[:, k, 1], c + words[:, k, 2]
            if k < n_blocks - 1:
                a, b, c = _mix(a, b, c)
        out[index] = _final(a, b, c)
    return out


# --------------------------------------------------------------------- CQDB

def _cqdb(strings):
    """The bytes of a CQDB chunk mapping ``strings[i]`` to id ``i`` and back."""
    keys = [s.encode("utf-8") + b"\0" for s in strings]
    records = [struct.pack("<II", i, len(k)) + k for i, k in enumerate(keys)]
    sizes = np.fromiter((len(r) for r in records), dtype=np.int64, count=len(records))
    offsets = _CQDB_DATA + np.cumsum(sizes) - sizes
    hashes = hashlittle(keys)
    table_of = hashes % 256
    cur = _CQDB_DATA + int(sizes.sum())
    refs, tables = [], []
    for t in range(256):
        members = np.flatnonzero(table_of == t)
        if members.shape[0] == 0:
            refs.append((0, 0))
            continue
        n = 2 * members.shape[0]
        bucket = np.zeros((n, 2), dtype="<u4")  # (hash, offset); offset 0 = empty
        for m in members.tolist():  # open addressing, in insertion order
            k = int(hashes[m] >> 8) % n
            while bucket[k, 1] != 0:
                k = (k + 1) % n
            bucket[k] = hashes[m], offsets[m]
        refs.append((cur, n))
        tables.append(bucket.tobytes())
        cur += 8 * n
    back = offsets.astype("<u4").tobytes()
    bwd_offset = cur if strings else 0
    size = cur + len(back)
    header = _CQDB_HEADER.pack(b"CQDB", size, 0, _BYTEORDER, len(strings), bwd_offset)
    return b"".join([header, np.array(refs, dtype="<u4").tobytes(), *records, *tables, back])


def _read_cqdb(buf, begin, count, what):
    """The ``count`` strings of the CQDB at ``begin``, by id (through the id -> record array)."""
    if begin + _CQDB_DATA > len(buf):
        raise ValueError(f"the {what} dictionary lies outside the file")
    chunk, size, _, order, n_ids, bwd = _CQDB_HEADER.unpack_from(buf, begin)
    if chunk != b"CQDB" or order != _BYTEORDER or begin + size > len(buf):
        raise ValueError(f"the {what} dictionary is not a valid CQDB chunk")
    if n_ids < count or (count and not bwd) or bwd + 4 * count > size:
        raise ValueError(f"the {what} dictionary holds fewer than {count} entries")
    strings = []
    for i, offset in enumerate(np.frombuffer(buf, "<u4", count, begin + bwd).tolist()):
        if not _CQDB_DATA <= offset <= size - 9:
            raise ValueError(f"the {what} dictionary's entry {i} lies outside it")
        rid, length = struct.unpack_from("<II", buf, begin + offset)
        raw = bytes(buf[begin + offset + 8:begin + offset + 8 + length])
        if rid != i or length < 1 or offset + 8 + length > size or raw[-1:] != b"\0":
            raise ValueError(f"the {what} dictionary's entry {i} is corrupt")
        strings.append(raw[:-1].decode("utf-8", errors="surrogateescape"))
    return strings


# -------------------------------------------------------------------- model

def _refs(chunk_id, begin, lists, n_slots):
    """A feature-reference chunk starting at file offset ``begin`` (4-aligned)."""
    body_start = begin + _CHUNK.size + 4 * n_slots
    offsets = np.zeros(n_slots, dtype=np.int64)
    parts, cur = [], body_start
    for i, ids in enumerate(lists):
        offsets[i] = cur
        part = np.concatenate([[ids.shape[0]], ids]).astype("<u4").tobytes()
        parts.append(part)
        cur += len(part)
    head = _CHUNK.pack(chunk_id, cur - begin, n_slots) + offsets.astype("<u4").tobytes()
    return head + b"".join(parts)


def write_model(path, labels, attributes, state, transition):
    """Write a CRFsuite model file.

    Parameters
    ----------
    path : str or path-like
    labels : list of str
    attributes : list of str
        Only attributes with at least one state feature (CRFsuite's files
        keep no others).
    state : tuple of three 1-D arrays
        Attribute ids, label ids and weights of the state features, sorted
        by attribute id.
    transition : ndarray of float64 of shape (n_labels, n_labels)
        Zero entries are left out, as CRFsuite does.

    Returns
    -------
    int
        The size of the file in bytes.
    """
    L = len(labels)
    attr, lab, weight = (np.asarray(v) for v in state)
    ti, tj = np.nonzero(transition)
    features = np.zeros(ti.shape[0] + attr.shape[0], dtype=_FEATURE)
    features["type"][:ti.shape[0]] = 1
    features["src"] = np.concatenate([ti, attr])
    features["dst"] = np.concatenate([tj, lab])
    features["weight"] = np.concatenate([transition[ti, tj], weight])
    feat = _CHUNK.pack(b"FEAT", _CHUNK.size + features.nbytes, features.shape[0])
    feat += features.tobytes()
    off_labels = _HEADER.size + len(feat)
    label_db = _cqdb(labels)
    off_attrs = off_labels + len(label_db)
    attr_db = _cqdb(attributes)
    off_labelrefs = -(-(off_attrs + len(attr_db)) // 4) * 4
    pad1 = b"\0" * (off_labelrefs - off_attrs - len(attr_db))
    # Transition features are ids 0..n_trans-1 in row order: label i's are a slice.
    starts = np.searchsorted(ti, np.arange(L + 1))
    label_refs = _refs(b"LFRF", off_labelrefs,
                       [np.arange(starts[i], starts[i + 1]) for i in range(L)], L + 2)
    off_attrrefs = -(-(off_labelrefs + len(label_refs)) // 4) * 4
    pad2 = b"\0" * (off_attrrefs - off_labelrefs - len(label_refs))
    bounds = np.searchsorted(attr, np.arange(len(attributes) + 1)) + ti.shape[0]
    attr_refs = _refs(b"AFRF", off_attrrefs,
                      [np.arange(bounds[a], bounds[a + 1]) for a in range(len(attributes))],
                      len(attributes))
    size = off_attrrefs + len(attr_refs)
    header = _HEADER.pack(b"lCRF", size, b"FOMC", _VERSION, features.shape[0], L,
                          len(attributes), _HEADER.size, off_labels, off_attrs, off_labelrefs,
                          off_attrrefs)
    content = b"".join([header, feat, label_db, attr_db, pad1, label_refs, pad2, attr_refs])
    with open(path, "wb") as f:
        f.write(content)
    return size


def _ref_lists(buf, begin, chunk_id, count, n_features, what):
    """The feature-id lists of a reference chunk, as CRFsuite's tagger reads them."""
    if begin + _CHUNK.size > len(buf):
        raise ValueError(f"the {what} references lie outside the file")
    cid, _, num = _CHUNK.unpack_from(buf, begin)
    if cid != chunk_id or num < count or begin + _CHUNK.size + 4 * count > len(buf):
        raise ValueError(f"the {what} references are not a valid {chunk_id.decode()} chunk")
    lists = []
    for i, offset in enumerate(np.frombuffer(buf, "<u4", count, begin + _CHUNK.size).tolist()):
        if offset + 4 > len(buf):
            raise ValueError(f"the {what} references of entry {i} lie outside the file")
        (n,) = struct.unpack_from("<I", buf, offset)
        if offset + 4 + 4 * n > len(buf):
            raise ValueError(f"the {what} references of entry {i} lie outside the file")
        ids = np.frombuffer(buf, "<u4", n, offset + 4).astype(np.intp)
        if n and ids.max() >= n_features:
            raise ValueError(f"the {what} references of entry {i} name a missing feature")
        lists.append(ids)
    return lists


def read_model(path):
    """Read a CRFsuite model file, as CRFsuite's tagger does.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    CRFsuiteModel
        State features by attribute references (weights of a repeated
        (attribute, label) pair add up), transitions by label references
        (a repeated pair: the last one, as CRFsuite's tagger).

    Raises
    ------
    ValueError
        If the file is not a CRFsuite 0.12 first-order model, is truncated,
        or its parts are inconsistent or non-finite (the message says which
        part).
    """
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) <= _HEADER.size:
        raise ValueError(f"{path} is not a CRFsuite model file: too short ({len(buf)} bytes)")
    (magic, size, mtype, version, _, L, A, off_feat, off_labels, off_attrs,
     off_labelrefs, off_attrrefs) = _HEADER.unpack_from(buf)
    if magic != b"lCRF" or mtype != b"FOMC":
        raise ValueError(f"{path} is not a CRFsuite first-order CRF model file "
                         f"(magic {magic!r}, type {mtype!r}).")
    if version != _VERSION:
        raise ValueError(f"{path} has CRFsuite model version {version}; only {_VERSION} "
                         "(CRFsuite 0.12) is supported.")
    if size != len(buf):
        raise ValueError(f"{path} is truncated or padded: the header states {size} bytes, "
                         f"the file has {len(buf)}.")
    # The count is the chunk's: CRFsuite leaves the header's num_features at 0.
    if off_feat + _CHUNK.size > len(buf):
        raise ValueError(f"{path}: the features chunk lies outside the file")
    cid, chunk_size, n_feat = _CHUNK.unpack_from(buf, off_feat)
    if cid != b"FEAT" or chunk_size != _CHUNK.size + _FEATURE.itemsize * n_feat \
            or off_feat + chunk_size > len(buf):
        raise ValueError(f"{path}: the features chunk is corrupt")
    feats = np.frombuffer(buf, _FEATURE, n_feat, off_feat + _CHUNK.size)
    if not np.isfinite(feats["weight"]).all():
        raise ValueError(f"{path}: a feature weight is NaN or infinite")
    labels = _read_cqdb(buf, off_labels, L, "label")
    attributes = _read_cqdb(buf, off_attrs, A, "attribute")
    transition = np.zeros((L, L))
    for i, ids in enumerate(_ref_lists(buf, off_labelrefs, b"LFRF", L, n_feat, "label")):
        f = feats[ids]
        if np.any(f["type"] != 1) or np.any(f["dst"] >= L):
            raise ValueError(f"{path}: label {i} references a feature that is not a transition")
        transition[i, f["dst"].astype(np.intp)] = f["weight"]  # last one wins, as CRFsuite
    lists = _ref_lists(buf, off_attrrefs, b"AFRF", A, n_feat, "attribute")
    ids = np.concatenate(lists) if lists else np.zeros(0, dtype=np.intp)
    f = feats[ids]
    if np.any(f["type"] != 0) or np.any(f["dst"] >= L):
        raise ValueError(f"{path}: an attribute references a feature that is not a state "
                         "feature of a known label")
    attr = np.repeat(np.arange(A, dtype=np.intp), [x.shape[0] for x in lists])
    state = (attr, f["dst"].astype(np.intp), f["weight"].astype(np.float64))
    return CRFsuiteModel(labels, attributes, state, transition)
