"""Tests of sklearn_crfloss.datasets.

The real corpora are read from the folder named by the environment variable
SKLEARN_CRFLOSS_DATA (CI: ../shared/data).  Downloads are tested without
network access: sklearn.datasets.fetch_file fetches archives built from the
real files from an HTTP server on 127.0.0.1, and any other host is refused.
"""

import functools
import gzip
import hashlib
import http.server
import io
import os
import shutil
import socket
import threading
import zipfile
from collections import Counter
from urllib.error import URLError

import pytest

from sklearn_crfloss.datasets import (
    get_data_home,
    load_conll2000,
    load_conll2002,
    read_conll,
    write_conll,
)
from sklearn_crfloss.datasets import _conll

ENV = "SKLEARN_CRFLOSS_DATA"


def _data_home():
    data_home = os.environ.get(ENV)
    if not data_home:
        pytest.fail(
            f"The environment variable {ENV} is not set; point it at the data "
            "folder (../shared/data from the checkout) to run these tests."
        )
    if not os.path.isdir(data_home):
        pytest.fail(f"{ENV}={data_home!r} is not a folder.")
    return data_home


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


_LOOPBACK = ("127.0.0.1", "localhost")


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Fail any test that tries to reach a host other than 127.0.0.1; no retries."""
    real_getaddrinfo = socket.getaddrinfo

    def guarded(host, *args, **kwargs):
        if host not in _LOOPBACK:
            raise AssertionError(f"test tried to reach the network: {host}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    monkeypatch.setenv("no_proxy", "*")  # urllib must not send 127.0.0.1 to a proxy
    monkeypatch.setattr(_conll, "_N_RETRIES", 0)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def remote(tmp_path):
    """An HTTP server on 127.0.0.1 of a fresh folder: yields (folder, base URL)."""
    folder = tmp_path / "remote"
    folder.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(folder))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                                  daemon=True)
        thread.start()
        yield folder, f"http://127.0.0.1:{server.server_address[1]}/"
        server.shutdown()
        thread.join()


# --------------------------------------------------------------------------
# read_conll
# --------------------------------------------------------------------------


def test_read_conll_format_details(tmp_path):
    text = (
        "-DOCSTART- -X- O\n"
        "\n"
        "He PRP B-NP \n"  # trailing whitespace
        "reckons\tVBZ  B-VP\r\n"  # tabs, runs of spaces, CRLF
        "\n"
        "\n"  # several blank lines: no empty sentence
        "   \n"
        "the DT B-NP\n"
        "-DOCSTART- -X- O\n"  # DOCSTART without a blank line before it
        "\n"
        "current JJ I-NP\n"
        "account NN I-NP"  # no final newline / blank line
    )
    path = tmp_path / "small.txt"
    path.write_bytes(text.encode("utf-8"))
    X, y = read_conll(path)
    assert X == [
        [("He", "PRP"), ("reckons", "VBZ")],
        [("the", "DT")],
        [("current", "JJ"), ("account", "NN")],
    ]
    assert y == [["B-NP", "B-VP"], ["B-NP"], ["I-NP", "I-NP"]]
    # str path and file objects give the same result.
    assert read_conll(str(path)) == (X, y)
    assert read_conll(io.StringIO(text)) == (X, y)
    assert read_conll(io.BytesIO(text.encode("utf-8"))) == (X, y)


def test_read_conll_empty_file(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("\n\n-DOCSTART- -X- O\n\n", encoding="utf-8")
    assert read_conll(path) == ([], [])


def test_read_conll_column_mismatch_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("a A B-NP\nb B I-NP\n\nc C\n", encoding="utf-8")
    with pytest.raises(ValueError) as excinfo:
        read_conll(path)
    msg = str(excinfo.value)
    assert str(path) in msg
    assert "line 4" in msg
    assert "expected 3 columns" in msg and "found 2" in msg


def test_read_conll_label_column(tmp_path):
    path = tmp_path / "lab.txt"
    path.write_text("B-NP He PRP\nB-VP reckons VBZ\n", encoding="utf-8")
    X, y = read_conll(path, label_column=0)
    assert X == [[("He", "PRP"), ("reckons", "VBZ")]]
    assert y == [["B-NP", "B-VP"]]
    X, y = read_conll(path, label_column=1)
    assert X == [[("B-NP", "PRP"), ("B-VP", "VBZ")]]
    assert y == [["He", "reckons"]]
    X, y = read_conll(path, label_column=None)
    assert X == [[("B-NP", "He", "PRP"), ("B-VP", "reckons", "VBZ")]]
    assert y is None
    with pytest.raises(ValueError, match="label_column=3 is out of range"):
        read_conll(path, label_column=3)


def test_read_conll_sep(tmp_path):
    path = tmp_path / "tab.txt"
    path.write_text("New York\tNNP\tB-LOC\nis\tVBZ\tO\n", encoding="utf-8")
    X, y = read_conll(path, sep="\t")
    assert X == [[("New York", "NNP"), ("is", "VBZ")]]
    assert y == [["B-LOC", "O"]]


def test_read_conll_fallback_encoding(tmp_path):
    # U+0085 (NEL) inside a latin-1 token must not split the line.
    text = "Espa\xf1a NC B-LOC\nx\x85y Fz O\n\n"
    path = tmp_path / "latin1.txt"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(UnicodeDecodeError):
        read_conll(path)
    X, y = read_conll(path, fallback_encoding="latin-1")
    assert X == [[("Espa\xf1a", "NC"), ("x\x85y", "Fz")]]
    assert y == [["B-LOC", "O"]]
    X2, _ = read_conll(path, encoding="latin-1")
    assert X2 == X


# --------------------------------------------------------------------------
# write_conll
# --------------------------------------------------------------------------

X_SMALL = [[("He", "PRP"), ("reckons", "VBZ")], [("España", "NC")]]
Y_SMALL = [["B-NP", "B-VP"], ["B-LOC"]]


def test_write_conll_round_trip(tmp_path):
    path = tmp_path / "out.txt"
    write_conll(path, X_SMALL, Y_SMALL)
    assert path.read_text(encoding="utf-8") == (
        "He PRP B-NP\nreckons VBZ B-VP\n\nEspaña NC B-LOC\n\n"
    )
    assert read_conll(path) == (X_SMALL, Y_SMALL)
    # Tab separator: columns may contain spaces.
    X_tab = [[("New York", "NNP"), ("is", "VBZ")]]
    y_tab = [["B-LOC", "O"]]
    write_conll(path, X_tab, y_tab, sep="\t")
    assert read_conll(path, sep="\t") == (X_tab, y_tab)
    # Non-ASCII whitespace stays inside tokens.
    X_nbsp = [[("1\xa0000", "Z"), ("x\x85y", "Fz")]]
    y_nbsp = [["O", "O"]]
    write_conll(path, X_nbsp, y_nbsp)
    assert read_conll(path) == (X_nbsp, y_nbsp)
    # Without labels.
    buf = io.StringIO()
    write_conll(buf, X_SMALL)
    assert read_conll(io.StringIO(buf.getvalue()), label_column=None) == (
        X_SMALL,
        None,
    )


def test_write_conll_y_pred_conlleval_format():
    y_pred = [["B-NP", "I-NP"], ["O"]]
    buf = io.StringIO()
    write_conll(buf, X_SMALL, Y_SMALL, y_pred=y_pred)
    assert buf.getvalue() == (
        "He PRP B-NP B-NP\nreckons VBZ B-VP I-NP\n\nEspaña NC B-LOC O\n\n"
    )
    X, y = read_conll(io.StringIO(buf.getvalue()))
    assert y == y_pred
    assert X == [[("He", "PRP", "B-NP"), ("reckons", "VBZ", "B-VP")],
                 [("España", "NC", "B-LOC")]]  # fmt: skip


def test_write_conll_errors():
    buf = io.StringIO()
    with pytest.raises(ValueError, match="X has 2 sentences but y has 1"):
        write_conll(buf, X_SMALL, Y_SMALL[:1])
    msg = "Sentence 0 has 2 tokens but 1 labels in y_pred"
    with pytest.raises(ValueError, match=msg):
        write_conll(buf, X_SMALL, Y_SMALL, y_pred=[["O"], ["O"]])
    with pytest.raises(ValueError, match="Sentence 1, token 0"):
        write_conll(buf, [[("a", "A")], [("New York", "NNP")]], [["O"], ["B-LOC"]])
    with pytest.raises(ValueError, match="Sentence 0, token 0"):
        write_conll(buf, [[("", "A")]], [["O"]])
    with pytest.raises(ValueError, match="Sentence 0, token 1"):
        write_conll(buf, [[("a", "A"), (" b", "B")]], [["O", "O"]])
    with pytest.raises(ValueError, match="Sentence 0, token 0"):
        write_conll(buf, [[("a\tb", "A")]], [["O"]], sep="\t")
    with pytest.raises(ValueError, match="Sentence 0, token 0"):
        write_conll(buf, [[("a\nb", "A")]], [["O"]], sep="\t")
    with pytest.raises(ValueError, match="sep must be"):
        write_conll(buf, X_SMALL, Y_SMALL, sep="")
    assert buf.getvalue() == ""  # nothing written on error


def test_write_conll_reproduces_real_file(tmp_path):
    src = os.path.join(_data_home(), "conll2000", "test.txt")
    X, y = read_conll(src)
    out = tmp_path / "test.txt"
    write_conll(out, X, y)
    assert _sha256(out) == _sha256(src)


# --------------------------------------------------------------------------
# get_data_home
# --------------------------------------------------------------------------


def test_get_data_home(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path / "from_env"))
    assert get_data_home(tmp_path / "arg") == str(tmp_path / "arg")
    assert get_data_home() == str(tmp_path / "from_env")
    monkeypatch.delenv(ENV)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home() == os.path.join(str(tmp_path), "sklearn_crfloss_data")
    assert get_data_home("~/elsewhere") == os.path.join(str(tmp_path), "elsewhere")
    # Nothing is created.
    assert sorted(os.listdir(tmp_path)) == []


# --------------------------------------------------------------------------
# Real data
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "loader, args, n_sentences, n_tokens",
    [
        (load_conll2000, ("train",), 8936, 211727),
        (load_conll2000, ("test",), 2012, 47377),
        # The data README states 8,322 / 1,914 / 1,516 sentences for the
        # CoNLL-2002 files, one fewer each than the files contain: every file
        # has exactly as many blank lines as sentences (8,323 / 1,915 /
        # 1,517), no consecutive blank lines, no -DOCSTART- lines, and the
        # token totals match the README.  The counts below are those of the
        # files (and the usual published figures for CoNLL-2002 Spanish).
        (load_conll2002, ("esp", "train"), 8323, 264715),
        (load_conll2002, ("esp", "testa"), 1915, 52923),
        (load_conll2002, ("esp", "testb"), 1517, 51533),
    ],
)
def test_real_data_counts(loader, args, n_sentences, n_tokens):
    X, y = loader(*args, data_home=_data_home(), download_if_missing=False)
    assert len(X) == len(y) == n_sentences
    assert sum(len(s) for s in X) == n_tokens
    assert [len(s) for s in X] == [len(labels) for labels in y]
    assert all(
        isinstance(tok, tuple)
        and len(tok) == 2
        and isinstance(tok[0], str)
        and isinstance(tok[1], str)
        for sent in X
        for tok in sent
    )
    assert all(isinstance(label, str) for labels in y for label in labels)


def test_real_data_via_environment_variable(monkeypatch):
    monkeypatch.setenv(ENV, _data_home())
    X, y = load_conll2000("test", download_if_missing=False)
    assert X[0][:3] == [("Rockwell", "NNP"), ("International", "NNP"), ("Corp.", "NNP")]
    assert y[0][:3] == ["B-NP", "I-NP", "I-NP"]


def test_conll2000_labels():
    _, y = load_conll2000("train", data_home=_data_home(), download_if_missing=False)
    labels = set(label for labels in y for label in labels)
    assert len(labels) == 22
    assert "O" in labels
    types = {label[2:] for label in labels if label != "O"}
    assert types == {
        "NP", "VP", "PP", "ADVP", "ADJP", "SBAR", "PRT", "CONJP", "INTJ",
        "LST", "UCP",
    }  # fmt: skip
    assert all(label == "O" or label[:2] in ("B-", "I-") for label in labels)


def test_conll2000_pos_task():
    """task='pos': the words as (word,) tokens, the POS column as labels."""
    X, y = load_conll2000("test", task="pos", data_home=_data_home(),
                          download_if_missing=False)
    Xc, _ = load_conll2000("test", data_home=_data_home(), download_if_missing=False)
    assert X[0][:3] == [("Rockwell",), ("International",), ("Corp.",)]
    assert y[0][:3] == ["NNP", "NNP", "NNP"]
    assert [[(w,) for w, _ in s] for s in Xc] == X
    assert [[p for _, p in s] for s in Xc] == y
    _, y_train = load_conll2000("train", task="pos", data_home=_data_home(),
                                download_if_missing=False)
    assert len(y_train) == 8936 and len({t for s in y_train for t in s}) == 44
    with pytest.raises(ValueError, match="task"):
        load_conll2000("test", task="ner", data_home=_data_home())


def test_conll2002_labels():
    X, y = load_conll2002(
        "esp", "train", data_home=_data_home(), download_if_missing=False
    )
    counts = Counter(label for labels in y for label in labels)
    assert set(counts) == {
        "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG",
        "B-MISC", "I-MISC",
    }  # fmt: skip
    assert X[0][:3] == [("Melbourne", "NP"), ("(", "Fpa"), ("Australia", "NP")]


def test_hardcoded_checksums_match_data():
    data_home = _data_home()
    for relpath, (_, _, _, checksum) in _conll._REMOTE_FILES.items():
        assert _sha256(os.path.join(data_home, relpath)) == checksum, relpath


def test_official_urls():
    urls = {rel: spec[0] for rel, spec in _conll._REMOTE_FILES.items()}
    assert urls["conll2000/train.txt"] == (
        "https://www.clips.uantwerpen.be/conll2000/chunking/train.txt.gz"
    )
    assert urls["conll2000/test.txt"] == (
        "https://www.clips.uantwerpen.be/conll2000/chunking/test.txt.gz"
    )
    assert urls["conll2002/esp.testb"] == (
        "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/"
        "corpora/conll2002.zip"
    )


def test_invalid_arguments(tmp_path):
    with pytest.raises(ValueError, match="'subset' parameter of load_conll2000") as excinfo:
        load_conll2000("dev", data_home=tmp_path)
    assert "'train'" in str(excinfo.value) and "'test'" in str(excinfo.value)
    with pytest.raises(ValueError, match="'subset' parameter of load_conll2002") as excinfo:
        load_conll2002("esp", "test", data_home=tmp_path)
    assert all(f"'{s}'" in str(excinfo.value) for s in ("train", "testa", "testb"))
    with pytest.raises(ValueError, match="'ned'.*not supported"):
        load_conll2002("ned", "train", data_home=tmp_path)
    with pytest.raises(ValueError, match="'download_if_missing' parameter"):
        load_conll2000("test", data_home=tmp_path, download_if_missing="no")
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------
# Downloads (offline: file:// URLs)
# --------------------------------------------------------------------------


def _serve(monkeypatch, remote, names):
    """Point the remote table at the server: {relpath: file name in its folder}."""
    _, base_url = remote
    table = dict(_conll._REMOTE_FILES)
    for relpath, name in names.items():
        _, kind, member, checksum = table[relpath]
        table[relpath] = (base_url + name, kind, member, checksum)
    monkeypatch.setattr(_conll, "_REMOTE_FILES", table)


def _gzip_of(src, dst, corrupt=False):
    with open(src, "rb") as f:
        data = f.read()
    if corrupt:
        data = data.replace(b"Rockwell", b"Rockwelt", 1)
    with gzip.open(dst, "wb") as f:
        f.write(data)
    return dst


def _zip_of(data_home, dst, corrupt=None):
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in ("esp.train", "esp.testa", "esp.testb"):
            with open(os.path.join(data_home, "conll2002", name), "rb") as f:
                data = f.read()
            if name == corrupt:
                data = data[:-2]  # drop the final blank line
            zf.writestr(f"conll2002/{name}", data)
    return dst


def _files_under(folder):
    return sorted(
        os.path.relpath(os.path.join(root, name), folder)
        for root, _, names in os.walk(folder)
        for name in names
    )


def test_download_conll2000_gzip(tmp_path, monkeypatch, remote):
    real = os.path.join(_data_home(), "conll2000", "test.txt")
    _gzip_of(real, remote[0] / "test.txt.gz")
    _serve(monkeypatch, remote, {"conll2000/test.txt": "test.txt.gz"})
    home = tmp_path / "home"
    X, y = load_conll2000("test", data_home=home)
    assert len(X) == 2012 and sum(map(len, X)) == 47377
    # The decompressed file is in place, verified, and nothing else is left.
    assert _files_under(home) == [os.path.join("conll2000", "test.txt")]
    assert os.listdir(home / "conll2000") == ["test.txt"]  # no temporary folder
    assert _sha256(home / "conll2000" / "test.txt") == _sha256(real)
    # The second call reads the local file (the remote one is gone).
    os.remove(remote[0] / "test.txt.gz")
    assert load_conll2000("test", data_home=home) == (X, y)


def test_download_conll2000_checksum_mismatch(tmp_path, monkeypatch, remote):
    real = os.path.join(_data_home(), "conll2000", "test.txt")
    _gzip_of(real, remote[0] / "test.txt.gz", corrupt=True)
    _serve(monkeypatch, remote, {"conll2000/test.txt": "test.txt.gz"})
    home = tmp_path / "home"
    with pytest.raises(OSError, match="'conll2000/test.txt' has sha256") as excinfo:
        load_conll2000("test", data_home=home)
    assert "was deleted" in str(excinfo.value)
    assert repr(str(home / "conll2000" / "test.txt")) in str(excinfo.value)
    assert _files_under(home) == []  # no final file, no temporary file


def test_download_not_a_gzip(tmp_path, monkeypatch, remote):
    (remote[0] / "test.txt.gz").write_text("this is not gzip data\n", encoding="utf-8")
    _serve(monkeypatch, remote, {"conll2000/test.txt": "test.txt.gz"})
    home = tmp_path / "home"
    with pytest.raises(OSError, match="not a valid gzip archive"):
        load_conll2000("test", data_home=home)
    assert _files_under(home) == []


def test_download_conll2002_zip(tmp_path, monkeypatch, remote):
    data_home = _data_home()
    _zip_of(data_home, remote[0] / "conll2002.zip")
    _serve(
        monkeypatch,
        remote,
        {f"conll2002/esp.{s}": "conll2002.zip" for s in ("train", "testa", "testb")},
    )
    home = tmp_path / "home"
    X, y = load_conll2002("esp", "testa", data_home=home)
    assert len(X) == 1915 and sum(map(len, X)) == 52923
    # One download fetches all missing Spanish files of the archive.
    assert _files_under(home) == [
        os.path.join("conll2002", name)
        for name in ("esp.testa", "esp.testb", "esp.train")
    ]
    for name in ("esp.train", "esp.testa", "esp.testb"):
        assert _sha256(home / "conll2002" / name) == _sha256(
            os.path.join(data_home, "conll2002", name)
        )


def test_download_conll2002_only_missing_files(tmp_path, monkeypatch, remote):
    # A file already in place is neither downloaded again nor replaced.
    _zip_of(_data_home(), remote[0] / "conll2002.zip")
    _serve(
        monkeypatch,
        remote,
        {f"conll2002/esp.{s}": "conll2002.zip" for s in ("train", "testa", "testb")},
    )
    home = tmp_path / "home"
    (home / "conll2002").mkdir(parents=True)
    (home / "conll2002" / "esp.train").write_text("mine O\n", encoding="utf-8")
    X, _ = load_conll2002("esp", "testb", data_home=home)
    assert len(X) == 1517
    assert (home / "conll2002" / "esp.train").read_text(encoding="utf-8") == "mine O\n"
    assert (home / "conll2002" / "esp.testa").is_file()


def test_download_conll2002_checksum_mismatch(tmp_path, monkeypatch, remote):
    _zip_of(_data_home(), remote[0] / "conll2002.zip", corrupt="esp.testb")
    _serve(
        monkeypatch,
        remote,
        {f"conll2002/esp.{s}": "conll2002.zip" for s in ("train", "testa", "testb")},
    )
    home = tmp_path / "home"
    with pytest.raises(OSError, match="'conll2002/esp.testb' has sha256"):
        load_conll2002("esp", "testb", data_home=home)
    files = _files_under(home)
    assert os.path.join("conll2002", "esp.testb") not in files
    assert all(f.startswith(os.path.join("conll2002", "esp.")) for f in files)


def test_download_zip_without_the_member(tmp_path, monkeypatch, remote):
    with zipfile.ZipFile(remote[0] / "conll2002.zip", "w") as zf:
        zf.writestr("conll2002/ned.train", "Dat O\n")
    _serve(monkeypatch, remote, {"conll2002/esp.testa": "conll2002.zip"})
    home = tmp_path / "home"
    with pytest.raises(OSError, match="not a valid zip archive holding the expected files"):
        load_conll2002("esp", "testa", data_home=home)
    assert _files_under(home) == []


def test_truncated_local_file_is_refused(tmp_path, monkeypatch):
    # A local file is checked against its sha256 before it is read: a
    # truncated copy names the file instead of loading fewer sentences.
    real = os.path.join(_data_home(), "conll2002", "esp.testb")
    home = tmp_path / "home"
    (home / "conll2002").mkdir(parents=True)
    with open(real, "rb") as f:
        data = f.read()
    truncated = home / "conll2002" / "esp.testb"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="is corrupt or truncated") as excinfo:
        load_conll2002("esp", "testb", data_home=home, download_if_missing=False)
    assert repr(str(truncated)) in str(excinfo.value)
    # Through the environment variable, and with downloads allowed, the same.
    monkeypatch.setenv(ENV, str(home))
    with pytest.raises(ValueError, match="esp.testb' is corrupt or truncated"):
        load_conll2002("esp", "testb")
    # The complete file is read; a later truncation is caught at the next load.
    truncated.write_bytes(data)
    X, _ = load_conll2002("esp", "testb")
    assert len(X) == 1517 and load_conll2002("esp", "testb")[0] == X
    truncated.write_bytes(data[:-2])
    with pytest.raises(ValueError, match="corrupt or truncated"):
        load_conll2002("esp", "testb")


def test_missing_file_without_download(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    home = tmp_path / "home"
    with pytest.raises(FileNotFoundError) as excinfo:
        load_conll2000("train", data_home=home, download_if_missing=False)
    msg = str(excinfo.value)
    assert repr(str(home / "conll2000" / "train.txt")) in msg
    assert ENV in msg
    assert not home.exists()  # nothing created without a download

    with pytest.raises(FileNotFoundError) as excinfo:
        load_conll2002("esp", "testa", data_home=home, download_if_missing=False)
    assert repr(str(home / "conll2002" / "esp.testa")) in str(excinfo.value)
    assert ENV in str(excinfo.value)


def test_download_failure_offline(tmp_path, monkeypatch):
    # The official URLs, with name resolution failing as it does offline.
    def offline(host, *args, **kwargs):
        raise socket.gaierror(-3, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", offline)
    home = tmp_path / "home"
    with pytest.raises(OSError) as excinfo:
        load_conll2000("train", data_home=home)
    msg = str(excinfo.value)
    assert "https://www.clips.uantwerpen.be/conll2000/chunking/train.txt.gz" in msg
    assert repr(str(home / "conll2000" / "train.txt")) in msg
    assert ENV in msg
    assert "name resolution" in msg
    assert isinstance(excinfo.value.__cause__, URLError)
    assert _files_under(home) == []  # the temporary file was removed

    with pytest.raises(OSError) as excinfo:
        load_conll2002("esp", "testb", data_home=home)
    assert repr(str(home / "conll2002" / "esp.testb")) in str(excinfo.value)
    assert _files_under(home) == []


def test_download_failure_missing_remote_file(tmp_path, monkeypatch, remote):
    _serve(monkeypatch, remote, {"conll2000/test.txt": "test.txt.gz"})
    home = tmp_path / "home"
    with pytest.raises(OSError, match=r"Downloading http://127\.0\.0\.1:\d+/test\.txt\.gz "
                                      r"failed \(HTTP Error 404") as excinfo:
        load_conll2000("test", data_home=home)
    assert ENV in str(excinfo.value)
    assert _files_under(home) == []


def test_download_is_retried(tmp_path, monkeypatch, remote):
    # fetch_file tries again after a network error (here a 503), _N_RETRIES times.
    _gzip_of(os.path.join(_data_home(), "conll2000", "test.txt"), remote[0] / "test.txt.gz")
    _serve(monkeypatch, remote, {"conll2000/test.txt": "test.txt.gz"})
    monkeypatch.setattr(_conll, "_N_RETRIES", 1)
    monkeypatch.setattr(_conll, "_RETRY_DELAY", 0)
    requests = []

    def fail_first(handler):
        requests.append(handler.path)
        if len(requests) == 1:
            handler.send_error(503)
            return None
        return http.server.SimpleHTTPRequestHandler.do_GET(handler)

    monkeypatch.setattr(_QuietHandler, "do_GET", fail_first)
    with pytest.warns(UserWarning, match="Retry downloading"):
        X, _ = load_conll2000("test", data_home=tmp_path / "home")
    assert len(X) == 2012 and requests == ["/test.txt.gz"] * 2


def test_existing_file_is_used_without_download(tmp_path, monkeypatch):
    # A file put in place by hand is read as is (no download, no checksum).
    def no_download(*args, **kwargs):
        raise AssertionError("no download expected")

    monkeypatch.setattr(_conll, "fetch_file", no_download)
    home = tmp_path / "home"
    (home / "conll2000").mkdir(parents=True)
    shutil.copy(os.path.join(_data_home(), "conll2000", "test.txt"), home / "conll2000")
    X, _ = load_conll2000("test", data_home=home)
    assert len(X) == 2012
