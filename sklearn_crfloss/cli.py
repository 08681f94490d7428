"""The ``crfloss`` command: CRF++'s ``crf_learn`` and ``crf_test`` with this package's losses.

``crfloss learn TEMPLATE TRAIN MODEL`` trains a CRF on a file in CRF++'s
data format with a CRF++ (or Wapiti) feature template, ``crfloss tag -m
MODEL FILE ...`` tags files as ``crf_test`` does (``-v1``/``-v2``
marginals, ``-n`` n-best lists), and ``crfloss eval FILE`` prints the
conlleval report of a tagged file. The same commands run as ``python -m
sklearn_crfloss``. See :doc:`/user_guide/crfpp` and ``crfloss --help``.

Data format (CRF++'s and Wapiti's): one token per line, its columns
separated by spaces or tabs, the label in the last column when training, a
blank line after each sentence. Files are read as bytes and decoded as
UTF-8 with Python's ``surrogateescape`` error handler: bytes that are not
UTF-8 (a Latin-1 or EUC-JP file, say) become lone surrogates, which every
step keeps as they are, and are written back as the same bytes, so tags
and columns round-trip byte for byte whatever the encoding, as in CRF++.
Lines that start with ``-DOCSTART-`` (CoNLL document separators) end a
sentence and are skipped, as ``read_conll`` does.

The model file is :func:`sklearn_crfloss.io.save_model`'s: a
:class:`~sklearn.pipeline.Pipeline` of
:class:`~sklearn_crfloss.features.TemplateFeatures` (holding the template)
and :class:`~sklearn_crfloss.CRFTagger`, which ``load_model`` reads back
for use from Python.
"""

import argparse
import io
import os
import sys
import textwrap
import warnings

import numpy as np
from sklearn.pipeline import Pipeline

from ._tagger import CRFTagger
from ._version import __version__
from .datasets import read_conll
from .features import TemplateFeatures
from .io import load_model, save_model
from .losses import LOSSES
from .metrics import segment_report, token_accuracy
from .priors import PRIORS
from .solvers import SOLVERS

__all__ = ["build_parser", "main"]

_ENCODING = ("utf-8", "surrogateescape")
#: ``-a`` of crf_learn: the prior (or loss) it selects.
_ALGORITHMS = {"CRF": {"prior": "l2"}, "CRF-L2": {"prior": "l2"}, "CRF-L1": {"prior": "l1"},
               "MIRA": {"loss": "mira"}}

_DESCRIPTION = """\
Linear-chain CRFs from the command line, with CRF++'s file formats and flags:
the training and test files of crf_learn and crf_test (whitespace-separated
columns, label last, a blank line between sentences), CRF++ and Wapiti
feature templates, and crf_test's output. The model file holds the template.
"""

_EPILOG = """\
examples:
  crfloss learn template train.txt model          # crf_learn template train.txt model
  crfloss learn -c 4.0 -f 3 -a CRF-L1 template train.txt model
  crfloss learn --loss softmax_margin template train.txt model
  crfloss tag -m model test.txt > tagged.txt       # crf_test -m model test.txt
  crfloss tag -v1 -m model test.txt                # with marginal probabilities
  crfloss tag -n 5 -m model test.txt               # the 5 best labellings
  crfloss eval tagged.txt                          # conlleval < tagged.txt
  python -m sklearn_crfloss learn ...              # the same command
"""


class _Refused(argparse.Action):
    """A CRF++ flag this command does not support: a clear error, not a silent no-op."""

    def __init__(self, option_strings, dest, why, nargs=0, **kwargs):
        self.why = why
        super().__init__(option_strings, dest, nargs=nargs, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} is not supported: {self.why}")


def _subparser(commands, name, summary, description, run, files=None):
    """A sub-command's parser: its description wrapped, the examples after the options.

    ``files``: the help of a ``FILE ...`` positional argument (None: none).
    """
    p = commands.add_parser(name, help=summary, epilog=_EPILOG,
                            description=textwrap.fill(description, 79),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    if files is not None:
        p.add_argument("files", nargs="*", metavar="FILE", help=files)
    p.set_defaults(run=run)
    return p


def _add_learn(commands):
    p = _subparser(
        commands, "learn", "train a model (crf_learn)",
        "Train a CRF on TRAIN with the feature template TEMPLATE and write MODEL (the "
        "package's model file, holding the template). CRF++'s flags keep their meaning; the "
        "defaults are the package's (CRFTagger()), so that the model equals the Python API's.",
        _learn)
    p.add_argument("template", metavar="TEMPLATE", help="CRF++ or Wapiti template file")
    p.add_argument("train", metavar="TRAIN", help="training file ('-': standard input)")
    p.add_argument("model", metavar="MODEL", help="model file to write")
    crfpp = p.add_argument_group("CRF++'s flags (crf_learn)")
    crfpp.add_argument("-f", "--freq", type=int, default=1, metavar="INT",
                       help="keep attributes seen in at least INT tokens (min_freq; default 1)")
    crfpp.add_argument("-m", "--maxiter", type=int, default=None, metavar="INT",
                       help="maximum number of iterations (max_iter; default the package's)")
    crfpp.add_argument("-c", "--cost", type=float, default=1.0, metavar="FLOAT",
                       help="C, the inverse prior strength: loss + ||w||^2 / (2C) as in CRF++ "
                            "(default 1.0)")
    crfpp.add_argument("-e", "--eta", type=float, default=None, metavar="FLOAT",
                       help="stopping tolerance (tol: relative improvement over the last 10 "
                            "iterations; default the package's 1e-5)")
    crfpp.add_argument("-a", "--algorithm", choices=sorted(_ALGORITHMS), default="CRF",
                       help="CRF or CRF-L2: L2 prior; CRF-L1: L1 prior (OWL-QN); MIRA: the "
                            "MIRA loss (default CRF)")
    crfpp.add_argument("-p", "--thread", type=int, default=None, metavar="INT",
                       help="threads of the inference kernels (n_jobs; 0: all cores)")
    crfpp.add_argument("-H", "--shrinking-size", action=_Refused, nargs=1,
                       why="MIRA here has no shrinking; leave it out")
    crfpp.add_argument("-t", "--textmodel", action=_Refused,
                       why="the model file is a zip of JSON and .npy arrays, readable as is")
    crfpp.add_argument("-C", "--convert", action=_Refused,
                       why="there are no text models to convert")
    crfpp.add_argument("-M", "--mmap", action=_Refused, why="no precompiled training files")
    ours = p.add_argument_group("sklearn-crfloss options")
    ours.add_argument("--loss", choices=sorted(LOSSES), default=None,
                      help="training loss (default cll; overrides -a MIRA)")
    ours.add_argument("--prior", choices=sorted(PRIORS), default=None,
                      help="prior (default l2; overrides -a)")
    ours.add_argument("--solver", choices=sorted(SOLVERS), default=None,
                      help="solver (default: the loss's own choice)")
    ours.add_argument("--tag-scheme", choices=["iob2", "iobes", "bilou"], default=None,
                      help="train in this label scheme (labels are converted and back)")
    ours.add_argument("--random-state", type=int, default=None, metavar="INT",
                      help="seed of the online solvers")
    ours.add_argument("-q", "--quiet", action="store_true",
                      help="no progress display (default: one line per iteration)")


def _add_tag(commands):
    p = _subparser(
        commands, "tag", "tag files (crf_test)",
        "Tag the sentences of FILE (standard input if none) with MODEL and write them as "
        "crf_test does: the input columns, tab-separated, then the predicted label; a blank "
        "line after each sentence.", _tag, files="files to tag ('-': standard input)")
    p.add_argument("-m", "--model", required=True, metavar="FILE", help="model file")
    p.add_argument("-v", "--verbose", type=int, default=0, metavar="INT",
                   help="1: '# P(y|x)' before each sentence and label/marginal; 2: also "
                        "every label's marginal")
    p.add_argument("-n", "--nbest", type=int, default=0, metavar="INT",
                   help="print the INT most probable labellings, each after '# k P(y|x)'")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write to FILE instead of standard output")
    p.add_argument("-c", "--cost-factor", type=float, default=1.0, metavar="FLOAT",
                   help="must be 1.0 (the model is used as trained)")


def _add_eval(commands):
    _subparser(
        commands, "eval", "conlleval report of a tagged file",
        "Print the conlleval report of FILE (standard input if none): the gold label in the "
        "second-to-last column, the predicted one in the last, as 'crfloss tag' writes them "
        "for a test file that has its labels.", _eval,
        files="tagged files ('-': standard input)")


def build_parser():
    """The argument parser of the ``crfloss`` command.

    Returns
    -------
    argparse.ArgumentParser
        With the sub-commands ``learn``, ``tag`` and ``eval``.
    """
    parser = argparse.ArgumentParser(
        prog="crfloss", description=_DESCRIPTION, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"crfloss {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_learn(commands)
    _add_tag(commands)
    _add_eval(commands)
    return parser


# ------------------------------------------------------------------ files

def _read_text(path):
    """The text of a file (or of standard input for ``'-'``), byte for byte recoverable."""
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    return data.decode(*_ENCODING)


def _read_sentences(path, label_column):
    """``(X, y)`` of a file in CRF++'s format (``read_conll`` on the decoded text)."""
    return read_conll(io.StringIO(_read_text(path), newline=""), label_column=label_column)


def _write_text(text, output):
    data = text.encode(*_ENCODING)
    if output is None or output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        with open(output, "wb") as f:
            f.write(data)


# --------------------------------------------------------------- commands

def _learn(args):
    X, y = _read_sentences(args.train, -1)
    if not X:
        raise ValueError(f"{args.train}: no sentences to train on")
    params = dict(_ALGORITHMS[args.algorithm])
    params.update({k: v for k, v in (("loss", args.loss), ("prior", args.prior)) if v})
    if args.eta is not None:
        params["tol"] = args.eta
    crf = CRFTagger(C=args.cost, min_freq=args.freq, max_iter=args.maxiter,
                    n_jobs=-1 if args.thread == 0 else args.thread, solver=args.solver,
                    tag_scheme=args.tag_scheme, random_state=args.random_state,
                    verbose=0 if args.quiet else 1, **params)
    model = Pipeline([("features", TemplateFeatures(_read_text(args.template))), ("crf", crf)])
    if not args.quiet:
        n_tokens = sum(len(s) for s in X)
        print(f"crfloss {__version__}: {len(X)} sentences, {n_tokens} tokens from "
              f"{args.train}", flush=True)
    model.fit(X, y)
    save_model(model, args.model)
    if not args.quiet:
        print(f"model written to {args.model}", flush=True)
    return 0


def _probability(p):
    """A probability as CRF++ prints it (C++ streams' default: 6 significant digits)."""
    return f"{p:.6g}"


def _sentence_lines(tokens, labels, marginals, classes, verbose):
    """The lines of one tagged sentence, as crf_test's ``toString`` writes them."""
    lines = []
    index = {c: j for j, c in enumerate(classes)}
    for t, (token, label) in enumerate(zip(tokens, labels)):
        line = "\t".join(token) + "\t" + str(label)
        if verbose >= 1:
            line += "/" + _probability(marginals[t, index[label]])
        if verbose >= 2:
            line += "".join(f"\t{c}/{_probability(marginals[t, j])}"
                            for j, c in enumerate(classes))
        lines.append(line)
    return lines + [""]


def _tag_text(model, X, verbose, nbest):
    """crf_test's output for the sentences ``X`` (token tuples with all their columns)."""
    features = model[:-1].transform(X) if len(model) > 1 else X
    crf = model[-1]
    classes = [str(c) for c in crf.classes_.tolist()]
    out = []
    marginals = crf.predict_marginals(features) if verbose >= 1 else [None] * len(X)
    if nbest >= 1:
        for tokens, marg, ranked in zip(X, marginals, crf.predict_nbest(features, n_best=nbest)):
            for k, (labels, log_p) in enumerate(ranked):
                out.append(f"# {k} {_probability(np.exp(log_p))}")
                out += _sentence_lines(tokens, labels, marg, classes, verbose)
        return "\n".join(out) + ("\n" if out else "")
    y_pred = crf.predict(features)
    log_p = crf.sequence_log_proba(features, y_pred) if verbose >= 1 else None
    for i, (tokens, labels, marg) in enumerate(zip(X, y_pred, marginals)):
        if verbose >= 1:
            out.append(f"# {_probability(np.exp(log_p[i]))}")
        out += _sentence_lines(tokens, labels, marg, classes, verbose)
    return "\n".join(out) + ("\n" if out else "")


def _tag(args):
    if args.cost_factor != 1.0:
        raise ValueError("-c/--cost-factor other than 1.0 is not supported: the model is used "
                         "as trained (retrain with another -c instead)")
    if args.verbose < 0 or args.nbest < 0:
        raise ValueError("-v and -n take a non-negative integer")
    model = load_model(args.model)
    if not isinstance(model, Pipeline):  # a bare tagger: its input is feature dicts, not columns
        raise ValueError(f"{args.model} holds a {type(model).__name__}, not a pipeline with its "
                         "template; train it with 'crfloss learn' or save a Pipeline of "
                         "TemplateFeatures and a tagger with save_model")
    chunks = []
    for path in args.files or ["-"]:
        X, _ = _read_sentences(path, None)
        chunks.append(_tag_text(model, X, args.verbose, args.nbest))
    _write_text("".join(chunks), args.output)
    return 0


def _conlleval_text(y_true, y_pred):
    """conlleval's report (its layout and rounding) of label sequences."""
    report = segment_report(y_true, y_pred, output_dict=True)
    total = report["micro avg"]
    n_tokens = sum(len(s) for s in y_true)
    accuracy = token_accuracy(y_true, y_pred) if n_tokens else 0.0
    lines = [f"processed {n_tokens} tokens with {total['support']} phrases; found: "
             f"{total['n_pred']} phrases; correct: {total['tp']}.",
             f"accuracy: {100 * accuracy:6.2f}%; precision: {100 * total['precision']:6.2f}%; "
             f"recall: {100 * total['recall']:6.2f}%; FB1: {100 * total['f1-score']:6.2f}"]
    for name, row in report.items():
        if name.endswith(" avg"):
            continue
        lines.append(f"{name:>17}: precision: {100 * row['precision']:6.2f}%; "
                     f"recall: {100 * row['recall']:6.2f}%; FB1: {100 * row['f1-score']:6.2f}"
                     f"  {row['n_pred']}")
    return "\n".join(lines) + "\n"


def _eval(args):
    y_true, y_pred = [], []
    for path in args.files or ["-"]:
        X, _ = _read_sentences(path, None)
        if X and len(X[0][0]) < 2:
            raise ValueError(f"{path}: conlleval needs two label columns (gold, then predicted)")
        y_true += [[tok[-2] for tok in sent] for sent in X]
        y_pred += [[tok[-1] for tok in sent] for sent in X]
    _write_text(_conlleval_text(y_true, y_pred), None)
    return 0


def main(argv=None):
    """Run the ``crfloss`` command.

    Parameters
    ----------
    argv : list of str or None, default=None
        The arguments after the command name; None: ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success, 1 when the input or a file is
        invalid (the message goes to standard error), 2 for a usage error
        (from argparse, which exits).
    """
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            if getattr(args, "quiet", False):
                warnings.simplefilter("ignore")
            return args.run(args)
    except (ValueError, TypeError, OSError) as exc:
        print(f"crfloss {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
