"""The ``crfloss`` command: CRF++'s files, flags and output, through the installed entry point.

CI installs the wheel, which puts the ``crfloss`` script next to the
interpreter; the tests then run that script and ``python -m
sklearn_crfloss`` in subprocesses. In a development checkout (PYTHONPATH,
no installation) the script does not exist: the tests check that the
package is indeed not installed and run the entry point's target
(``sklearn_crfloss.cli:main``) in a subprocess instead.
"""

import importlib.metadata
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from sklearn_crfloss import CRFTagger
from sklearn_crfloss.cli import main
from sklearn_crfloss.datasets import get_data_home, read_conll
from sklearn_crfloss.features import CONLL2000_TEMPLATE, TemplateFeatures
from sklearn_crfloss.io import load_model
from sklearn_crfloss.metrics import segment_f1_score

TRAIN = """\
He PRP B-NP
reckons VBZ B-VP
the DT B-NP
current JJ I-NP
account NN I-NP
deficit NN I-NP
. . O

The DT B-NP
deficit NN I-NP
narrowed VBD B-VP
. . O

Confidence NN B-NP
in IN B-PP
the DT B-NP
pound NN I-NP
is VBZ B-VP
widely RB I-VP
expected VBN I-VP
. . O
"""
TEMPLATE = "# words and tags\nU00:%x[0,0]\nU01:%x[-1,0]\nU10:%x[0,1]\nU11:%x[-1,1]/%x[0,1]\n\nB\n"


def _installed_entry_point():
    """Whether an installed sklearn-crfloss declares the ``crfloss`` console script."""
    try:
        dist = importlib.metadata.distribution("sklearn-crfloss")
    except importlib.metadata.PackageNotFoundError:
        return False
    return any(ep.name == "crfloss" and ep.group == "console_scripts" for ep in dist.entry_points)


def _crfloss_script():
    """The command line that runs the ``crfloss`` script (or its target, uninstalled)."""
    script = shutil.which("crfloss", path=str(Path(sys.executable).parent)) or \
        shutil.which("crfloss")
    if _installed_entry_point():
        assert script is not None, "sklearn-crfloss is installed but its crfloss script is not"
        return [script]
    import sklearn_crfloss

    assert "site-packages" not in Path(sklearn_crfloss.__file__).parts, (
        "sklearn_crfloss is imported from an installed copy without the crfloss script")
    return [sys.executable, "-c", "import sys; from sklearn_crfloss.cli import main; "
                                  "sys.exit(main())"]


MODULE = [sys.executable, "-m", "sklearn_crfloss"]


def _run(command, *args, check=True):
    out = subprocess.run([*command, *map(str, args)], capture_output=True, timeout=600)
    if check:
        assert out.returncode == 0, out.stderr.decode(errors="replace")
    return out


def test_help_from_both_entry_points(capsys):
    for command in (MODULE, _crfloss_script()):
        text = _run(command, "--help").stdout.decode()
        assert "examples:" in text and "crfloss learn template train.txt model" in text
        for sub in ("learn", "tag", "eval"):
            assert sub in text
    with pytest.raises(SystemExit):
        main(["learn", "--help"])
    learn = capsys.readouterr().out
    for flag in ("-c FLOAT", "-f INT", "-a {CRF,CRF-L1,CRF-L2,MIRA}", "-p INT", "--loss",
                 "--prior", "--solver", "--tag-scheme"):
        assert flag in learn
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("crfloss ")


@pytest.fixture
def toy(tmp_path):
    (tmp_path / "train.txt").write_text(TRAIN)
    (tmp_path / "template").write_text(TEMPLATE)
    return tmp_path


def test_unsupported_flags_are_refused(toy, capsys):
    for flag in (["-t"], ["-C"], ["-H", "10"]):
        with pytest.raises(SystemExit) as exc:
            main(["learn", *flag, str(toy / "template"), str(toy / "train.txt"),
                  str(toy / "m")])
        assert exc.value.code == 2
        assert f"{flag[0]} is not supported" in capsys.readouterr().err
    assert main(["learn", "-q", str(toy / "template"), str(toy / "train.txt"),
                 str(toy / "m")]) == 0
    assert main(["tag", "-c", "2", "-m", str(toy / "m"), str(toy / "train.txt")]) == 1
    assert "cost-factor" in capsys.readouterr().err
    assert main(["tag", "-m", str(toy / "train.txt"), str(toy / "train.txt")]) == 1
    assert "not a valid sklearn-crfloss model file" in capsys.readouterr().err


def test_learn_maps_crfpp_flags(toy):
    assert main(["learn", "-q", "-c", "4", "-f", "2", "-a", "CRF-L1", "-m", "30", "-e", "1e-3",
                 "-p", "1", str(toy / "template"), str(toy / "train.txt"),
                 str(toy / "m")]) == 0
    model = load_model(toy / "m")
    assert isinstance(model, Pipeline) and model[0].template == TEMPLATE
    params = model[-1].get_params()
    assert (params["C"], params["min_freq"], params["prior"], params["max_iter"], params["tol"],
            params["n_jobs"]) == (4.0, 2, "l1", 30, 1e-3, 1)
    assert main(["learn", "-q", "-a", "MIRA", "--tag-scheme", "iobes", str(toy / "template"),
                 str(toy / "train.txt"), str(toy / "m")]) == 0
    params = load_model(toy / "m")[-1].get_params()
    assert (params["loss"], params["tag_scheme"]) == ("mira", "iobes")


def _tag_lines(toy, *flags):
    assert main(["tag", *flags, "-o", str(toy / "out"), "-m", str(toy / "m"),
                 str(toy / "train.txt")]) == 0
    return (toy / "out").read_text().split("\n")


def test_tag_output_as_crf_test_writes_it(toy):
    assert main(["learn", "-q", str(toy / "template"), str(toy / "train.txt"),
                 str(toy / "m")]) == 0
    X, _ = read_conll(toy / "train.txt", label_column=None)
    model = load_model(toy / "m")
    features = model[0].transform(X)
    crf = model[-1]
    y_pred = crf.predict(features)
    marginals = crf.predict_marginals(features)
    classes = crf.classes_.tolist()

    lines = _tag_lines(toy)  # the input columns, tab-separated, then the label
    assert lines[:8] == ["\t".join(tok) + "\t" + lab for tok, lab in zip(X[0], y_pred[0])] + [""]

    lines = _tag_lines(toy, "-v1")  # '# P(y|x)', then label/marginal
    p = np.exp(crf.sequence_log_proba(features, y_pred))
    assert lines[0] == f"# {p[0]:.6g}"
    word, pos, gold, last = lines[1].split("\t")
    label, prob = last.split("/")
    assert (label, float(prob)) == (y_pred[0][0], float(
        f"{marginals[0][0, classes.index(label)]:.6g}"))

    lines = _tag_lines(toy, "-v2")  # and every label's marginal
    fields = lines[1].split("\t")
    assert len(fields) == 4 + len(classes)
    assert [f.split("/")[0] for f in fields[4:]] == classes
    np.testing.assert_allclose([float(f.split("/")[1]) for f in fields[4:]], marginals[0][0],
                               rtol=1e-5)

    lines = _tag_lines(toy, "-n", "3")  # '# k P(y|x)' before each of the n best
    headers = [line for line in lines if line.startswith("# ")]
    assert [h.split()[1] for h in headers[:3]] == ["0", "1", "2"]
    probs = [float(h.split()[2]) for h in headers[:3]]
    assert probs == sorted(probs, reverse=True) and probs[0] == float(f"{p[0]:.6g}")
    assert lines[1:8] == ["\t".join(tok) + "\t" + lab for tok, lab in zip(X[0], y_pred[0])]


def test_files_not_utf8_round_trip_byte_for_byte(tmp_path):
    """Latin-1 bytes in tokens and labels come back as the same bytes."""
    train = TRAIN.replace("pound", "caf\xe9").replace("B-PP", "B-\xc9T").encode("latin-1")
    (tmp_path / "train.txt").write_bytes(train)
    (tmp_path / "template").write_text(TEMPLATE)
    assert main(["learn", "-q", "-c", "100", str(tmp_path / "template"),
                 str(tmp_path / "train.txt"), str(tmp_path / "m")]) == 0
    assert main(["tag", "-o", str(tmp_path / "out"), "-m", str(tmp_path / "m"),
                 str(tmp_path / "train.txt")]) == 0
    out = (tmp_path / "out").read_bytes()
    rows = [line.split(b"\t") for line in out.split(b"\n") if line]
    expected = [line.split() for line in train.split(b"\n") if line]
    assert [r[:3] for r in rows] == expected  # the input columns, byte for byte
    assert [r[3] for r in rows] == [r[2] for r in expected]  # the labels learnt back
    assert b"caf\xe9" in out and b"B-\xc9T" in out


def test_eval_prints_the_conlleval_report(toy, capsysbinary):
    tagged = toy / "tagged"
    tagged.write_text("He PRP B-NP B-NP\nreckons VBZ B-VP B-VP\nthe DT B-NP B-NP\n"
                      "deficit NN I-NP B-NP\n\n")
    assert main(["eval", str(tagged)]) == 0
    report = capsysbinary.readouterr().out.decode()
    assert report.splitlines()[0] == ("processed 4 tokens with 3 phrases; found: 4 phrases; "
                                      "correct: 2.")
    assert report.splitlines()[1] == ("accuracy:  75.00%; precision:  50.00%; recall:  66.67%; "
                                      "FB1:  57.14")
    assert "               NP: precision:  33.33%; recall:  50.00%; FB1:  40.00  3" in report


def test_conll2000_learn_tag_eval_equals_the_python_api(tmp_path):
    """crfloss learn/tag/eval on a CoNLL-2000 prefix gives the Python API's predictions and F1."""
    data = Path(get_data_home()) / "conll2000"
    n_sentences = 1000
    lines, count = [], 0
    with open(data / "train.txt", encoding="utf-8") as f:
        for line in f:
            lines.append(line)
            count += not line.strip()
            if count == n_sentences:
                break
    (tmp_path / "train.txt").write_text("".join(lines), encoding="utf-8")
    (tmp_path / "template").write_text(CONLL2000_TEMPLATE, encoding="utf-8")
    learn = _run(MODULE, "learn", tmp_path / "template", tmp_path / "train.txt",
                 tmp_path / "model")
    assert b"iter" in learn.stdout  # the progress display
    tagged = _run(_crfloss_script(), "tag", "-m", tmp_path / "model", data / "test.txt")
    (tmp_path / "tagged.txt").write_bytes(tagged.stdout)
    report = _run(MODULE, "eval", tmp_path / "tagged.txt").stdout.decode()

    X_train, y_train = read_conll(tmp_path / "train.txt")
    assert len(X_train) == n_sentences
    X_test, y_test = read_conll(data / "test.txt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = Pipeline([("features", TemplateFeatures(CONLL2000_TEMPLATE)),
                        ("crf", CRFTagger())]).fit(X_train, y_train)
    y_pred = api.predict(X_test)
    X_out, _ = read_conll(tmp_path / "tagged.txt", label_column=None)
    assert [[tok[-1] for tok in s] for s in X_out] == y_pred
    assert [[tok[:-1] for tok in s] for s in X_out] == [
        [(*tok, lab) for tok, lab in zip(s, ys)] for s, ys in zip(X_test, y_test)]
    f1 = float(re.search(r"FB1:\s+([\d.]+)", report).group(1))
    assert f1 == round(100 * segment_f1_score(y_test, y_pred), 2)
    assert f1 > 85
