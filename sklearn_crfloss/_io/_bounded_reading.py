"""Reading the members of a model file with every size checked before it is allocated.

A model file states sizes in three places: the zip directory (each member's
compressed and uncompressed size), the ``.npy`` headers (dtype and shape)
and ``model.json`` (counts of labels, attributes, input columns). None of
them is trusted before it is checked against what the file can really hold:

- only the members ``save_model`` writes are read: stored or deflated
  (other compression methods, encryption and ``..`` in names are refused);
- a member may decompress to at most ``MAX_DEFLATE_RATIO`` times its
  compressed size (deflate's own limit is 1032:1), and to at most
  ``MAX_JSON_BYTES`` (``model.json``) or ``MAX_ARRAY_BYTES`` (an array);
- an ``.npy`` header's shape and dtype must give exactly the bytes the zip
  directory states for the member, and those bytes are read in chunks into
  a buffer that grows only with the data really present;
- ``model.json`` may nest at most ``MAX_JSON_DEPTH`` arrays and objects,
  checked on the text before it is parsed;
- every error of ``zipfile``, ``zlib`` and the ``.npy`` reader is a
  :class:`ValueError`.

The counts of ``model.json`` that allocate without an array behind them
(the input width of a model trained on arrays) are checked by the caller
with :func:`check_dense_size`.
"""

import json
import re
import zipfile
import zlib

import numpy as np

__all__ = ["MAX_ARRAY_BYTES", "MAX_DEFLATE_RATIO", "MAX_DENSE_RATIO", "MAX_JSON_BYTES",
           "MAX_JSON_DEPTH", "check_dense_size", "read_array_member", "read_json_member",
           "ZIP_ERRORS"]

#: Largest ``model.json`` (decompressed), in bytes.
MAX_JSON_BYTES = 1 << 30
#: Deepest nesting of JSON arrays and objects in ``model.json``.
MAX_JSON_DEPTH = 64
#: Largest array member (decompressed), in bytes.
MAX_ARRAY_BYTES = 1 << 36
#: Largest ratio of a member's decompressed to compressed size (deflate reaches 1032).
MAX_DEFLATE_RATIO = 1100
#: Largest ratio of a dense weight matrix implied by a bare count (the input
#: width of array input) to the bytes of content the file really holds.
MAX_DENSE_RATIO = 64
_NPY_HEADER_BYTES = 10_000
_CHUNK = 1 << 20
#: What zipfile, zlib and numpy's reader raise on a damaged or unsupported member.
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, KeyError,
              NotImplementedError, RuntimeError, UnicodeDecodeError, json.JSONDecodeError,
              RecursionError, OverflowError)
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _bad(path, message):
    return ValueError(f"{path} is not a valid sklearn-crfloss model file: {message}")


def _member(z, name, path, limit):
    """The ZipInfo of ``name``, checked: method, encryption, stated sizes."""
    info = z.getinfo(name)
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise _bad(path, f"member {name!r} uses compression method {info.compress_type}; "
                         "model files are stored or deflated")
    if info.flag_bits & 0x1:
        raise _bad(path, f"member {name!r} is encrypted")
    ratio = 1 if info.compress_type == zipfile.ZIP_STORED else MAX_DEFLATE_RATIO
    if info.file_size > limit:
        raise _bad(path, f"member {name!r} states {info.file_size} bytes, more than the "
                         f"limit of {limit}")
    if info.file_size > ratio * info.compress_size + 1024:
        raise _bad(path, f"member {name!r} states {info.file_size} bytes from "
                         f"{info.compress_size} compressed bytes, which no "
                         f"{'stored' if ratio == 1 else 'deflated'} member holds")
    return info


def _read_exactly(f, n, name, path):
    """``n`` bytes of ``f`` into a bytearray that grows with the data present; no more after."""
    buf = bytearray()
    while len(buf) < n:
        chunk = f.read(min(_CHUNK, n - len(buf)))
        if not chunk:
            raise _bad(path, f"member {name!r} ends after {len(buf)} of its {n} bytes")
        buf += chunk
    if f.read(1):
        raise _bad(path, f"member {name!r} holds more than its stated {n} bytes")
    return buf


def _json_depth(text):
    """Deepest nesting of arrays and objects in JSON ``text`` (bytes), strings skipped."""
    skeleton = np.frombuffer(_STRING.sub(b"", text), dtype=np.uint8)
    step = (np.isin(skeleton, (ord("["), ord("{"))).astype(np.int64)
            - np.isin(skeleton, (ord("]"), ord("}"))))
    return int(np.cumsum(step).max(initial=0))


def read_json_member(z, name, path):
    """The parsed JSON document of member ``name``, its size and depth checked first."""
    info = _member(z, name, path, MAX_JSON_BYTES)
    with z.open(info) as f:
        text = bytes(_read_exactly(f, info.file_size, name, path))
    depth = _json_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise _bad(path, f"{name} nests {depth} levels of arrays and objects; the limit is "
                         f"{MAX_JSON_DEPTH}")
    return json.loads(text.decode("utf-8"))


def read_array_member(z, name, path):
    """The array of ``.npy`` member ``name``, its header checked against the member's size.

    Raises
    ------
    ValueError
        If the header is not an ``.npy`` header of a non-object dtype, or its
        shape and dtype do not give exactly the member's stated size, or
        that size is above ``MAX_ARRAY_BYTES``, or the data is shorter.
    """
    info = _member(z, name, path, MAX_ARRAY_BYTES)
    with z.open(info) as f:
        try:
            version = np.lib.format.read_magic(f)
            read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                           (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read_header is None:
                raise _bad(path, f"member {name!r} has .npy format version {version}")
            shape, fortran, dtype = read_header(f, max_header_size=_NPY_HEADER_BYTES)
        except ValueError as exc:
            raise _bad(path, f"member {name!r}: {exc}") from None
        if dtype.hasobject or dtype.itemsize == 0 or not all(
                isinstance(n, int) and n >= 0 for n in shape):
            raise _bad(path, f"member {name!r} has dtype {dtype} and shape {shape}; model "
                             "files hold arrays of numbers")
        nbytes = dtype.itemsize * int(np.prod(shape, dtype=object))  # Python ints: no overflow
        data_bytes = info.file_size - f.tell()
        if nbytes != data_bytes:
            raise _bad(path, f"member {name!r}: its header states shape {shape} of {dtype} "
                             f"({nbytes} bytes), the member holds {data_bytes} bytes of data")
        buf = _read_exactly(f, nbytes, name, path)
    a = np.frombuffer(buf, dtype=dtype) if nbytes else np.empty(0, dtype=dtype)
    return a.reshape(shape, order="F" if fortran else "C")


def check_dense_size(n_rows, n_columns, content_bytes, where):
    """ValueError if a dense float64 matrix stated by bare counts outgrows the file's content.

    Parameters
    ----------
    n_rows, n_columns : int
        The counts of ``model.json`` (e.g. the input width and the number of labels).
    content_bytes : int
        The bytes of ``model.json`` and of the arrays the file really holds.
    where : str
        Names the record in the message.
    """
    size = 8 * n_rows * n_columns
    if size > MAX_DENSE_RATIO * content_bytes:
        raise ValueError(
            f"Inconsistent model file: {where} states {n_rows} x {n_columns} dense weights "
            f"({size} bytes), more than {MAX_DENSE_RATIO} times the {content_bytes} bytes of "
            "content the file holds.")
