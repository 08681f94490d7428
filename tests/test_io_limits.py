"""Hostile model files: every stated size is checked before it is allocated.

Each file is about 2 KB and states a size it does not hold: an input width
of 10**10 (checksum recomputed), an ``.npy`` header of shape (10**11,), a
``model.json`` nested 200,000 deep, a member with an unknown compression
method, a member whose zip directory entry claims a gigabyte. Each gets a
clear ValueError; and under a memory limit (``RLIMIT_AS``) that allows 10
times the file's size plus the arrays it really holds (plus a fixed
allowance for the allocator), none of them runs out of memory.
"""

import io
import json
import os
import struct
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

from sklearn_crfloss import CRFTagger
from sklearn_crfloss._io._native_format import _checksum
from sklearn_crfloss.io import load_model, save_model


def _small_model(path):
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(4, 3)) for _ in range(3)]
    y = [["a", "b", "a", "b"]] * 3
    save_model(CRFTagger(max_iter=20).fit(X, y), path)
    return X


def _members(path):
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def _write(path, members, method=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression=method) as z:
        for name, data in members.items():
            z.writestr(name, data)


def _resealed(members, document):
    """The members with a changed model.json whose checksum is recomputed (anyone can)."""
    arrays = {n[:-4]: np.load(io.BytesIO(d), allow_pickle=False)
              for n, d in members.items() if n.endswith(".npy")}
    document["checksum"] = _checksum(document, arrays)
    return {**members, "model.json": json.dumps(document).encode()}


def _set_method(data, name, method):
    """The zip bytes with member ``name``'s compression method patched in both headers."""
    data = bytearray(data)
    encoded = name.encode()
    for signature, method_at, name_at in ((b"PK\x03\x04", 8, 30), (b"PK\x01\x02", 10, 46)):
        start = 0
        while (start := data.find(signature, start)) >= 0:
            if data[start + name_at:start + name_at + len(encoded)] == encoded:
                struct.pack_into("<H", data, start + method_at, method)
            start += 4
    return bytes(data)


def _hostile_files(folder):
    """``{description: path}`` of the hostile files, each built from a small valid model."""
    valid = folder / "valid.crfl"
    _small_model(valid)
    members = _members(valid)
    files = {}

    document = json.loads(members["model.json"])
    document["estimator"]["features"]["n_input"] = 10**10
    document["estimator"]["features"]["n_features"] = 10**10
    document["estimator"]["n_features_in"] = 10**10
    _write(folder / "width.crfl", _resealed(members, document))
    files["n_input 10**10"] = folder / "width.crfl"

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10**11,)})
    _write(folder / "npy.crfl", {**members, "transition.npy": header.getvalue() + bytes(64)})
    files["npy shape (10**11,)"] = folder / "npy.crfl"

    deep = b'{"format": "sklearn-crfloss-model", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    _write(folder / "deep.crfl", {**members, "model.json": deep})
    files["json 200,000 deep"] = folder / "deep.crfl"

    (folder / "method.crfl").write_bytes(_set_method(valid.read_bytes(), "start.npy", 99))
    files["compression method 99"] = folder / "method.crfl"

    (folder / "lzma.crfl").write_bytes(_set_method(valid.read_bytes(), "start.npy", 14))
    files["compression method lzma"] = folder / "lzma.crfl"

    with zipfile.ZipFile(folder / "bomb.crfl", "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    data = bytearray((folder / "bomb.crfl").read_bytes())
    at = data.find(b"PK\x01\x02")  # the first entry of the zip directory
    struct.pack_into("<I", data, at + 24, 10**9)  # its uncompressed size: a gigabyte
    (folder / "bomb.crfl").write_bytes(bytes(data))
    files["directory states 10**9 bytes"] = folder / "bomb.crfl"
    return valid, files


MATCHES = {"n_input 10**10": "dense weights", "npy shape (10**11,)": "shape",
           "json 200,000 deep": "nests", "compression method 99": "compression method 99",
           "compression method lzma": "compression method 14",
           "directory states 10**9 bytes": "bytes"}


def test_hostile_files_get_a_clear_value_error(tmp_path):
    valid, files = _hostile_files(tmp_path)
    load_model(valid)
    for what, path in files.items():
        assert path.stat().st_size < 4096, what
        with pytest.raises(ValueError, match=MATCHES[what]):
            load_model(path)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc/self/statm are Linux's")
def test_hostile_files_allocate_little(tmp_path):
    """Under RLIMIT_AS = now + 10 x file size + its real arrays + 32 MiB, only ValueErrors."""
    valid, files = _hostile_files(tmp_path)
    script = textwrap.dedent("""
        import os, resource, sys, zipfile
        import numpy as np
        from sklearn_crfloss.io import load_model
        valid, paths = sys.argv[1], sys.argv[2:]
        load_model(valid)  # imports and first allocations done
        pages = int(open("/proc/self/statm").read().split()[0])
        now = pages * os.sysconf("SC_PAGE_SIZE")
        for path in paths:
            with zipfile.ZipFile(valid) as z:
                arrays = sum(i.file_size for i in z.infolist() if i.filename.endswith(".npy"))
            limit = now + 10 * os.path.getsize(path) + arrays + (32 << 20)
            resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
            try:
                load_model(path)
                print("loaded")
            except ValueError:
                print("ValueError")
            except MemoryError:
                print("MemoryError")
        load_model(valid)
        print("valid")
    """)
    out = subprocess.run([sys.executable, "-c", script, str(valid), *map(str, files.values())],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ValueError"] * len(files) + ["valid"], out.stdout
