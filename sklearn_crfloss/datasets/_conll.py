"""Readers, writers and loaders for CoNLL column-format corpora."""

import gzip
import hashlib
import http.client
import logging
import numbers
import os
import re
import tempfile
import zipfile
import zlib

from sklearn.datasets import fetch_file

from .._utils import fill_doc, StrOptions, validate_call

logger = logging.getLogger(__name__)

DATA_HOME_ENV = "SKLEARN_CRFLOSS_DATA"
_DOCSTART = "-DOCSTART-"
# What str.split() treats as whitespace among ASCII characters.
_ASCII_WS = " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
_ASCII_WS_RE = re.compile("[" + re.escape(_ASCII_WS) + "]+")
_CHUNK = 1 << 20
# Passed to sklearn.datasets.fetch_file: attempts after a network error, and
# the seconds between them.
_N_RETRIES = 3
_RETRY_DELAY = 1

_CONLL2000_URL = "https://www.clips.uantwerpen.be/conll2000/chunking/"
_NLTK_CONLL2002_URL = (
    "https://raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/"
    "corpora/conll2002.zip"
)

# Remote sources of every file: relative path under the data home ->
# (url, archive kind, member inside a zip archive, sha256 of the final file).
# The sha256 are those of the decompressed text files.
_REMOTE_FILES = {
    "conll2000/train.txt": (
        _CONLL2000_URL + "train.txt.gz",
        "gzip",
        None,
        "91a468bf9858eacaed720a4cd8aa3503c89cc81c4bcf5ac3159110d0b626deea",
    ),
    "conll2000/test.txt": (
        _CONLL2000_URL + "test.txt.gz",
        "gzip",
        None,
        "55f3557ae56e40c754a2c98a8926c963632d9b991f61713257fb22848ad4a246",
    ),
    "conll2002/esp.train": (
        _NLTK_CONLL2002_URL,
        "zip",
        "conll2002/esp.train",
        "a20d95cab7d88a19a86f8c1ad6329325c99fbd9529ed978cbd7e31d4b01b4008",
    ),
    "conll2002/esp.testa": (
        _NLTK_CONLL2002_URL,
        "zip",
        "conll2002/esp.testa",
        "85c17793b77881c53d19017d9d0f1e6fb98b7ddcab54a5f24b05ed1793103c87",
    ),
    "conll2002/esp.testb": (
        _NLTK_CONLL2002_URL,
        "zip",
        "conll2002/esp.testb",
        "1f8f7a392c6d4979a5592a5794eed43d7869b46da6851bbcde99714149f1d016",
    ),
}


# --------------------------------------------------------------------------
# Reading and writing
# --------------------------------------------------------------------------


def _read_text(path, encoding, fallback_encoding):
    try:
        with open(path, encoding=encoding) as f:
            return f.read()
    except UnicodeDecodeError:
        if fallback_encoding is None:
            raise
        logger.info(
            "%s is not valid %s; reading it as %s", path, encoding, fallback_encoding
        )
        with open(path, encoding=fallback_encoding) as f:
            return f.read()


def _split_ws(line):
    """Split on runs of ASCII whitespace, as read_conll does with sep=None."""
    if line.isascii():
        return line.split()
    return _ASCII_WS_RE.split(line.strip(_ASCII_WS))


def read_conll(
    path, *, encoding="utf-8", fallback_encoding=None, sep=None, label_column=-1
):
    """Read a corpus in CoNLL column format.

    The format has one token per line with its columns (e.g. word, POS tag,
    label) separated by whitespace, and a blank line after each sentence.
    Lines starting with ``-DOCSTART-`` (document separators of the CoNLL-2002
    and CoNLL-2003 files; leading whitespace allowed) are skipped and end the
    current sentence; runs of blank lines, blank lines right after
    ``-DOCSTART-``, trailing whitespace, Windows (CRLF) and old Mac (CR)
    line ends, a UTF-8 byte-order mark and a missing final blank line are
    tolerated.  Empty sentences are never returned.

    Parameters
    ----------
    path : str, os.PathLike or file-like
        The file to read, or a file object opened for reading (text, or
        binary, which is then decoded with ``encoding``).
    encoding : str, default="utf-8"
        Encoding of the file.
    fallback_encoding : str or None, default=None
        If not None, the encoding to retry with when decoding with
        ``encoding`` fails, e.g. ``"latin-1"`` for the original CoNLL-2002
        distribution.  If None, the :class:`UnicodeDecodeError` propagates.
    sep : str or None, default=None
        Column separator.  None splits on runs of ASCII whitespace (spaces,
        tabs, ...); non-ASCII whitespace such as U+00A0 or U+0085 stays
        inside tokens.  Otherwise :meth:`str.split` with ``sep`` is applied
        to the line stripped of trailing ASCII whitespace.
    label_column : int or None, default=-1
        Index of the label column (negative values count from the end).  The
        other columns, in their order, form the token tuples.  If None, all
        columns form the token tuples and ``y`` is None (unlabelled data).

    Returns
    -------
    X : list of list of tuple of str
        The sentences, of length n_sentences; each a list of n_tokens token
        tuples of the non-label columns, e.g. ``(word, POS)``.
    y : list of list of str or None
        The label sequences, of length n_sentences, each of length n_tokens;
        None if ``label_column`` is None.

    Raises
    ------
    ValueError
        If a line has a different number of columns than the first token line
        (the message names the file and the line number), if
        ``label_column`` is out of range, or if the lines have a single
        column and ``label_column`` is not None (the tokens would have no
        columns).
    TypeError
        If ``label_column`` is not an int or None.
    UnicodeDecodeError
        If the file cannot be decoded and ``fallback_encoding`` is None.

    See Also
    --------
    write_conll : The inverse operation.
    load_conll2000, load_conll2002 : Read the CoNLL data sets with it.

    Examples
    --------
    >>> import io
    >>> from sklearn_crfloss.datasets import read_conll
    >>> text = "He PRP B-NP\\nreckons VBZ B-VP\\n\\nRockwell NNP B-NP\\n"
    >>> X, y = read_conll(io.StringIO(text))
    >>> X
    [[('He', 'PRP'), ('reckons', 'VBZ')], [('Rockwell', 'NNP')]]
    >>> y
    [['B-NP', 'B-VP'], ['B-NP']]
    """
    if label_column is not None and (isinstance(label_column, bool)
                                     or not isinstance(label_column, numbers.Integral)):
        raise TypeError(f"label_column must be an int (a column index) or None, got "
                        f"{label_column!r} of type {type(label_column).__name__}.")
    if hasattr(path, "read"):
        name = getattr(path, "name", "<file object>")
        text = path.read()
        if isinstance(text, bytes):
            try:
                text = text.decode(encoding)
            except UnicodeDecodeError:
                if fallback_encoding is None:
                    raise
                text = text.decode(fallback_encoding)
        # Windows and old Mac line ends, as open() reads them from a path.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    else:
        name = os.fspath(path)
        text = _read_text(path, encoding, fallback_encoding)
    text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark is no part of the first token
    # Split on "\n" only: str.splitlines would also break on characters such
    # as U+0085 or U+001C that may occur inside tokens.
    lines = text.split("\n")

    X, y = [], []
    tokens, labels = [], []
    n_columns = None
    label_idx = None
    for lineno, line in enumerate(lines, start=1):
        line = line.rstrip(_ASCII_WS)
        if not line or line.lstrip(_ASCII_WS).startswith(_DOCSTART):
            if tokens:
                X.append(tokens)
                y.append(labels)
                tokens, labels = [], []
            continue
        if sep is not None:
            fields = line.split(sep)
        elif line.isascii():
            fields = line.split()
        else:  # keep non-ASCII whitespace (U+00A0, U+0085, ...) in tokens
            fields = _ASCII_WS_RE.split(line.lstrip(_ASCII_WS))
        if n_columns is None:
            n_columns = len(fields)
            first_line = lineno
            if label_column is not None:
                if not -n_columns <= label_column < n_columns:
                    raise ValueError(
                        f"{name}, line {lineno}: label_column={label_column} is "
                        f"out of range for lines with {n_columns} column(s)."
                    )
                if n_columns == 1:
                    raise ValueError(
                        f"{name}, line {lineno}: the lines have a single column, which "
                        f"label_column={label_column} would take as the label, leaving "
                        "tokens without columns. Pass label_column=None to read "
                        "unlabelled tokens, or check sep."
                    )
                label_idx = label_column % n_columns
        elif len(fields) != n_columns:
            raise ValueError(
                f"{name}, line {lineno}: expected {n_columns} columns (as on "
                f"line {first_line}), found {len(fields)}: {line!r}"
            )
        if label_idx is None:
            tokens.append(tuple(fields))
        else:
            labels.append(fields.pop(label_idx))
            tokens.append(tuple(fields))
    if tokens:
        X.append(tokens)
        y.append(labels)
    if label_column is None:
        return X, None
    return X, y


def write_conll(
    path_or_file, X, y=None, *, y_pred=None, sep=" ", encoding="utf-8"
):
    """Write sentences in CoNLL column format.

    Each token is written on one line: its columns, then the label from ``y``
    (if given), then the predicted label from ``y_pred`` (if given), separated
    by ``sep``; a blank line follows each sentence.  Non-str entries are
    converted with :class:`str`.  With ``y`` and
    ``y_pred`` the output is the input format of the ``conlleval.pl``
    evaluation script (its last two columns are the gold and the predicted
    label).  ``read_conll(path)`` reads back ``X, y`` from a file written
    with ``y_pred=None`` and the default ``sep``.

    Parameters
    ----------
    path_or_file : str, os.PathLike or file-like
        The file to write (overwritten), or a text file object opened for
        writing.
    X : list of list of tuple of str
        The sentences, each a list of token tuples, e.g. ``(word, POS)``.
    y : list of list of str or None, default=None
        The gold labels, one list per sentence, of the sentence's length.
    y_pred : list of list of str or None, default=None
        Predicted labels, one list per sentence, of the sentence's length.
    sep : str, default=" "
        Column separator.
    encoding : str, default="utf-8"
        Encoding of the file if ``path_or_file`` is a path.

    Raises
    ------
    ValueError
        If ``y`` or ``y_pred`` do not have the same number of sentences as
        ``X``, a sentence's labels are not as many as its tokens, a
        sentence is empty (CoNLL files cannot hold one), or if a
        column would not read back with :func:`read_conll` (with
        ``sep=None`` for the default ``sep=" "``, else with the same
        ``sep``): e.g. a column containing ``sep`` or a line break, a
        first column starting with ``-DOCSTART-`` (read as a document
        separator), or, with the default ``sep``, an empty column or one
        containing ASCII whitespace.

    See Also
    --------
    read_conll : The inverse operation.

    Examples
    --------
    >>> import io
    >>> from sklearn_crfloss.datasets import write_conll
    >>> f = io.StringIO()
    >>> write_conll(f, [[("He", "PRP"), ("reckons", "VBZ")]],
    ...             [["B-NP", "B-VP"]], y_pred=[["B-NP", "I-NP"]])
    >>> print(f.getvalue(), end="")
    He PRP B-NP B-NP
    reckons VBZ B-VP I-NP
    <BLANKLINE>
    """
    n = len(X)
    columns = [("y", y), ("y_pred", y_pred)]
    columns = [(name, seqs) for name, seqs in columns if seqs is not None]
    for name, seqs in columns:
        if len(seqs) != n:
            raise ValueError(
                f"X has {n} sentences but {name} has {len(seqs)} label sequences."
            )
    if not isinstance(sep, str) or not sep or "\n" in sep or "\r" in sep:
        raise ValueError(
            f"sep must be a non-empty str without line breaks, got {sep!r}."
        )

    lines = []
    for i, sent in enumerate(X):
        if len(sent) == 0:
            raise ValueError(
                f"Sentence {i} is empty: the CoNLL format has no empty sentence (a blank "
                "line ends a sentence, so it would read back as one sentence fewer and "
                "misalign every sentence after it). Leave it out (with its labels)."
            )
        extra = [seqs[i] for _, seqs in columns]
        for (name, _), labels in zip(columns, extra):
            if len(labels) != len(sent):
                raise ValueError(
                    f"Sentence {i} has {len(sent)} tokens but {len(labels)} "
                    f"labels in {name}."
                )
        for j, tok in enumerate(sent):
            if isinstance(tok, str):
                fields = [tok]
            else:
                fields = [str(v) for v in tok]
            fields.extend(str(labels[j]) for labels in extra)
            line = sep.join(fields)
            # The line must read back as the same fields: with sep=None for
            # the default sep=" ", else with the same sep.
            if sep == " ":
                back = _split_ws(line)
            else:
                back = line.rstrip(_ASCII_WS).split(sep)
            if (
                back != fields
                or "\n" in line
                or "\r" in line
                or not line.strip(_ASCII_WS)
            ):
                raise ValueError(
                    f"Sentence {i}, token {j}: the columns {fields!r} cannot be "
                    f"written with sep={sep!r} so that read_conll reads them "
                    "back (a column is empty, contains the separator, "
                    "whitespace or a line break)."
                )
            if line.lstrip(_ASCII_WS).startswith(_DOCSTART):
                raise ValueError(
                    f"Sentence {i}, token {j}: a line starting with {_DOCSTART!r} "
                    f"({line!r:.60}) is read back by read_conll as a document "
                    "separator, not as a token."
                )
            lines.append(line)
        lines.append("")
    text = "\n".join(lines) + ("\n" if lines else "")

    if hasattr(path_or_file, "write"):
        path_or_file.write(text)
    else:
        with open(path_or_file, "w", encoding=encoding, newline="\n") as f:
            f.write(text)


# --------------------------------------------------------------------------
# Data home and downloads
# --------------------------------------------------------------------------


def get_data_home(data_home=None):
    """Return the folder of the data sets of sklearn_crfloss.

    The folder is, in order of precedence, ``data_home``, the value of the
    environment variable ``SKLEARN_CRFLOSS_DATA``, or
    ``~/sklearn_crfloss_data``; ``~`` is expanded.  The folder is not
    created here: the loaders create it only when they download a file.

    Parameters
    ----------
    data_home : str, os.PathLike or None, default=None
        The folder to use.  If None, use ``SKLEARN_CRFLOSS_DATA`` or
        ``~/sklearn_crfloss_data``.

    Returns
    -------
    data_home : str
        The path of the data folder (it may not exist).

    Examples
    --------
    >>> from sklearn_crfloss.datasets import get_data_home
    >>> get_data_home("/tmp/crf_data")
    '/tmp/crf_data'
    """
    if data_home is None:
        data_home = os.environ.get(DATA_HOME_ENV) or os.path.join(
            "~", "sklearn_crfloss_data"
        )
    return os.path.expanduser(os.fspath(data_home))


def _missing_message(relpath, path, what):
    return (
        f"{what} file {relpath!r} was not found at {path!r}. Put the file at "
        f"exactly that path, or set the environment variable {DATA_HOME_ENV} "
        f"(or pass data_home=...) to a folder that contains {relpath}"
    )


def _install(src, relpath, path, tmp):
    """Copy binary stream ``src`` to ``path`` through folder ``tmp``, verifying sha256.

    ``tmp`` is a temporary folder next to ``path`` (same file system, so the
    final rename is atomic) that the caller removes, with the copy if it
    does not match.
    """
    checksum = _REMOTE_FILES[relpath][3]
    part = os.path.join(tmp, os.path.basename(path))
    with open(part, "wb") as out:
        digest = _sha256(src, out)
    if digest != checksum:
        raise OSError(
            f"The downloaded file {relpath!r} has sha256 {digest}, but "
            f"{checksum} was expected; the file was deleted. The download "
            "may be corrupted or the remote file may have changed. You can put "
            f"a correct copy at {path!r} by hand."
        )
    os.replace(part, path)


def _fetch(requested, relpaths, data_home, what):
    """Download the archive of the files ``relpaths`` and extract them into data_home.

    ``requested`` is the file the caller asked for (used in messages). The
    archive is fetched by :func:`sklearn.datasets.fetch_file` into a
    temporary folder, removed with whatever it holds on the way out.
    """
    url, kind = _REMOTE_FILES[requested][:2]
    folder = os.path.join(data_home, os.path.dirname(relpaths[0]))
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=folder) as tmp:
        logger.info("Downloading %s to %s", url, folder)
        try:
            archive = fetch_file(url, folder=tmp, n_retries=_N_RETRIES, delay=_RETRY_DELAY)
        except (OSError, ValueError, http.client.HTTPException) as exc:
            path = os.path.join(data_home, requested)
            raise OSError(
                f"Downloading {url} failed ({exc}). "
                + _missing_message(requested, path, what)
                + f", or retry when {url} can be reached."
            ) from exc
        try:
            if kind == "gzip":
                (relpath,) = relpaths
                with gzip.open(archive, "rb") as src:
                    _install(src, relpath, os.path.join(data_home, relpath), tmp)
            else:
                with zipfile.ZipFile(archive) as zf:
                    for relpath in relpaths:
                        with zf.open(_REMOTE_FILES[relpath][2]) as src:
                            _install(src, relpath, os.path.join(data_home, relpath), tmp)
        except (EOFError, gzip.BadGzipFile, zipfile.BadZipFile, KeyError, zlib.error) as exc:
            raise OSError(
                f"The file downloaded from {url} is not a valid {kind} archive "
                f"holding the expected files ({exc})."
            ) from exc


def _sha256(src, out=None):
    """sha256 hex digest of binary stream ``src``, read in blocks (copied to ``out`` if given)."""
    h = hashlib.sha256()
    for block in iter(lambda: src.read(_CHUNK), b""):
        h.update(block)
        if out is not None:
            out.write(block)
    return h.hexdigest()


def _check_local(relpath, path):
    """Raise a ValueError if the local file ``path`` does not have ``relpath``'s sha256.

    Checked at every load (hashing costs little next to parsing).
    """
    checksum = _REMOTE_FILES[relpath][3]
    with open(path, "rb") as f:
        digest = _sha256(f)
    if digest != checksum:
        converted = _converted_copy(path, checksum)
        if converted:
            raise ValueError(
                f"The local file {path!r} is {relpath!r} {converted}: its content is "
                "right but its bytes differ from the distributed file (sha256 "
                f"{digest}, {checksum} expected). Convert it back (e.g. dos2unix), "
                "or delete it to download it again."
            )
        raise ValueError(
            f"The local file {path!r} is corrupt or truncated ({os.path.getsize(path)} bytes): "
            f"its sha256 is {digest}, but {checksum} is expected for {relpath!r}. "
            "Delete it to download it again, or put a correct copy in its place."
        )


def _converted_copy(path, checksum):
    """How the file at ``path`` differs from the text of ``checksum``, if only by conversions.

    A byte-order mark, CRLF or CR line ends: the words that say so (e.g.
    ``'with Windows (CRLF) line ends'``), or '' if undoing them does not
    give the expected sha256.
    """
    with open(path, "rb") as f:
        data = f.read()
    found = []
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
        found.append("a UTF-8 byte-order mark")
    if b"\r\n" in data:
        data = data.replace(b"\r\n", b"\n")
        found.append("Windows (CRLF) line ends")
    if b"\r" in data:
        data = data.replace(b"\r", b"\n")
        found.append("old Mac (CR) line ends")
    if not found or hashlib.sha256(data).hexdigest() != checksum:
        return ""
    return "with " + " and ".join(found)


def _ensure_files(relpath, data_home, download_if_missing, what):
    """Return the local path of ``relpath``, downloading it if needed.

    A file already in place is checked against its sha256 (ValueError if
    it does not match).
    """
    data_home = get_data_home(data_home)
    path = os.path.join(data_home, relpath)
    if os.path.exists(path):
        _check_local(relpath, path)
        return path
    if not download_if_missing:
        raise FileNotFoundError(
            _missing_message(relpath, path, what)
            + ", or call with download_if_missing=True to download it."
        )
    # Fetch every missing file that comes from the same source at once.
    source = _REMOTE_FILES[relpath][0]
    todo = [
        rel
        for rel, spec in _REMOTE_FILES.items()
        if spec[0] == source and not os.path.exists(os.path.join(data_home, rel))
    ]
    _fetch(relpath, todo, data_home, what)
    return path


# Docstring sections shared by the loaders (filled in by fill_doc).
_LOADER_DOC = dict(
    download_parameters_and_returns="""
data_home : str, os.PathLike or None, default=None
    The data folder; see :func:`get_data_home` (by default
    ``SKLEARN_CRFLOSS_DATA`` or ``~/sklearn_crfloss_data``).
download_if_missing : bool, default=True
    Whether to download a missing file.  If False, a missing file raises
    :class:`FileNotFoundError`.

Returns
-------
X : list of list of tuple of str
    The n_sentences sentences, each a list of n_tokens tuples
    ``(word, POS)``.
y : list of list of str
    The n_sentences label sequences, each of length n_tokens.
""",
    download_errors="""
FileNotFoundError
    If the file is missing and ``download_if_missing`` is False; the
    message gives the exact path where the file is expected.
OSError
    If the download fails (e.g. no internet access; the message gives
    the expected path so that the file can be put there by hand), if the
    archive is damaged, or if a downloaded file does not have the
    expected sha256 (the file is then deleted).
ValueError
    If the file found in the data folder does not have the expected
    sha256 (corrupt or truncated); the message names the file.
""",
)

_LOADER_CONSTRAINTS = {
    "data_home": [str, os.PathLike, None],
    "download_if_missing": ["boolean"],
}


@validate_call(
    {"subset": [StrOptions({"train", "test"})], "task": [StrOptions({"chunking", "pos"})],
     **_LOADER_CONSTRAINTS},
    prefer_skip_nested_validation=True,
)
@fill_doc(**_LOADER_DOC)
def load_conll2000(subset="train", *, task="chunking", data_home=None,
                   download_if_missing=True):
    """Load the CoNLL-2000 text chunking data set, or its part-of-speech tags.

    Wall Street Journal sentences (sections 15-18 for training, 20 for
    testing) with tokens ``(word, POS)`` and IOB2 chunk labels over 11 chunk
    types (e.g. ``B-NP``, ``I-VP``, ``O``) [1]_. With ``task="pos"`` the
    same sentences as a part-of-speech tagging data set: tokens ``(word,)``
    and the Penn Treebank POS tags as labels (44 distinct tags in the
    training part, e.g. ``NN``, ``VBZ``, ``,``; the chunk column is dropped).

    ==================  ===========  ==========
    subset              sentences    tokens
    ==================  ===========  ==========
    ``"train"``         8,936        211,727
    ``"test"``          2,012        47,377
    ==================  ===========  ==========

    The files are read from ``<data_home>/conll2000/train.txt`` and
    ``<data_home>/conll2000/test.txt``.  A missing file is downloaded (if
    ``download_if_missing``) from the official site (gzip) with
    :func:`sklearn.datasets.fetch_file`, decompressed into a temporary file
    next to the final one, checked against its known sha256 and renamed
    into place.  A file already in place is checked against the same
    sha256 before it is read (once per process while its size and
    modification time do not change).

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        The part of the data set to load.
    task : {"chunking", "pos"}, default="chunking"
        ``"chunking"``: tokens ``(word, POS)``, chunk labels. ``"pos"``:
        tokens ``(word,)``, the POS tags as labels.
    {download_parameters_and_returns}

    Raises
    ------
    ValueError
        If ``subset`` is not "train" or "test" or ``task`` is not
        "chunking" or "pos" (or another parameter has the wrong type).
    {download_errors}

    References
    ----------
    .. [1] E. F. Tjong Kim Sang and S. Buchholz, "Introduction to the
       CoNLL-2000 Shared Task: Chunking", CoNLL 2000.
       https://www.clips.uantwerpen.be/conll2000/chunking/

    Examples
    --------
    >>> from sklearn_crfloss.datasets import load_conll2000
    >>> X, y = load_conll2000("test")  # doctest: +SKIP
    >>> X[0][:2], y[0][:2]  # doctest: +SKIP
    ([('Rockwell', 'NNP'), ('International', 'NNP')], ['B-NP', 'I-NP'])
    >>> X, y = load_conll2000("test", task="pos")  # doctest: +SKIP
    >>> X[0][:2], y[0][:2]  # doctest: +SKIP
    ([('Rockwell',), ('International',)], ['NNP', 'NNP'])
    """
    relpath = f"conll2000/{subset}.txt"
    path = _ensure_files(relpath, data_home, download_if_missing, "CoNLL-2000")
    if task == "pos":
        X, _ = read_conll(path)
        return [[(tok[0],) for tok in sent] for sent in X], [[tok[1] for tok in sent] for sent in X]
    return read_conll(path)


@validate_call(
    {"lang": [str], "subset": [StrOptions({"train", "testa", "testb"})],
     **_LOADER_CONSTRAINTS},
    prefer_skip_nested_validation=True,
)
@fill_doc(**_LOADER_DOC)
def load_conll2002(
    lang="esp", subset="train", *, data_home=None, download_if_missing=True
):
    """Load the Spanish part of the CoNLL-2002 named entity data set.

    EFE news-wire sentences with tokens ``(word, POS)`` and IOB2 entity
    labels (``B-``/``I-`` times ``PER``, ``LOC``, ``ORG``, ``MISC``, and
    ``O``) [1]_, in the version distributed with NLTK's corpus package, which
    adds the POS column that the original shared-task files lack.

    ==================  ===========  ==========
    subset              sentences    tokens
    ==================  ===========  ==========
    ``"train"``         8,323        264,715
    ``"testa"`` (dev)   1,915        52,923
    ``"testb"`` (test)  1,517        51,533
    ==================  ===========  ==========

    The files are read from ``<data_home>/conll2002/esp.train``,
    ``esp.testa`` and ``esp.testb``.  Missing files are downloaded (if
    ``download_if_missing``) from NLTK's ``conll2002.zip`` with
    :func:`sklearn.datasets.fetch_file`, extracted, checked against their
    known sha256 and renamed into place; all the missing files of the
    archive at once.  A file already in place is checked against the same
    sha256 before it is read (once per process while its size and
    modification time do not change).

    Parameters
    ----------
    lang : {"esp"}, default="esp"
        The language.  Only Spanish is supported; the Dutch part (``"ned"``)
        is rejected because no reference checksums are recorded for it (read
        NLTK's ``ned.*`` files with :func:`read_conll` instead).
    subset : {"train", "testa", "testb"}, default="train"
        The part of the data set to load: training, development (testa) or
        test (testb) data.
    {download_parameters_and_returns}

    Raises
    ------
    ValueError
        If ``lang`` is not "esp" or ``subset`` is not one of "train",
        "testa", "testb" (or another parameter has the wrong type).
    {download_errors}

    References
    ----------
    .. [1] E. F. Tjong Kim Sang, "Introduction to the CoNLL-2002 Shared
       Task: Language-Independent Named Entity Recognition", CoNLL 2002.
       https://www.clips.uantwerpen.be/conll2002/ner/

    Examples
    --------
    >>> from sklearn_crfloss.datasets import load_conll2002
    >>> X, y = load_conll2002("esp", "testb")  # doctest: +SKIP
    >>> X[0][:2], y[0][:2]  # doctest: +SKIP
    ([('La', 'DA'), ('Coruña', 'NC')], ['B-LOC', 'I-LOC'])
    """
    if lang != "esp":
        raise ValueError(
            f"lang must be 'esp' (Spanish), got {lang!r}. The Dutch part "
            "('ned') is not supported by this loader; read NLTK's "
            "conll2002/ned.* files with read_conll instead."
        )
    relpath = f"conll2002/{lang}.{subset}"
    path = _ensure_files(relpath, data_home, download_if_missing, "CoNLL-2002")
    return read_conll(path)
