"""Every name that the API reference (``doc/api.rst``) lists is public where it says.

The page names its public modules with ``currentmodule`` (and ``automodule``)
directives and lists names under ``autosummary`` (or ``autoclass``,
``autofunction``, ...). Each listed name must be importable from the module in
force at that point, and be in that module's ``__all__`` when it has one: a
name moved or renamed in the package without the page, or the page without
the package, fails here rather than as a missing page in the docs build.
"""

import importlib
import re
from pathlib import Path

import pytest

API_RST = Path(__file__).resolve().parent.parent / "doc" / "api.rst"
# The page lists far more names than this; fewer means the parser missed them.
MIN_NAMES = 30

_DIRECTIVE = re.compile(r"^\.\.\s+([\w:-]+)::\s*(\S*)\s*$")
_AUTO_OBJECT = {"autoclass", "autofunction", "autodata", "autoexception", "automethod",
                "autoattribute"}


def _api_entries(text):
    """``(module, name, line)`` of every name listed, and ``(module, line)`` of each module.

    ``currentmodule`` and ``automodule`` set the module in force; a name under
    ``autosummary`` is one indented line that is not an option (``:toctree:``);
    an ``autoclass``-like directive names one object, possibly dotted from the
    package (``sklearn_crfloss.losses.LOSSES``).
    """
    names, modules = [], []
    current, in_summary = None, False
    for number, line in enumerate(text.splitlines(), start=1):
        match = _DIRECTIVE.match(line)
        if match:
            directive, argument = match.groups()
            in_summary = directive == "autosummary"
            if directive in ("currentmodule", "module", "py:currentmodule", "automodule"):
                current = argument
                modules.append((argument, number))
            elif directive in _AUTO_OBJECT:
                module, _, name = argument.rpartition(".")
                names.append((module or current, name, number))
            continue
        if not in_summary:
            continue
        if not line.strip():
            continue
        if not line[:1].isspace():  # the block ends at the first unindented line
            in_summary = False
            continue
        entry = line.strip()
        if entry.startswith(":"):  # an option of the directive
            continue
        names.append((current, entry.lstrip("~"), number))
    return names, modules


NAMES, MODULES = _api_entries(API_RST.read_text(encoding="utf-8"))


def test_parser_found_the_listed_names():
    assert len(NAMES) > MIN_NAMES, (
        f"only {len(NAMES)} names parsed from {API_RST}: the parser no longer reads its structure")
    assert all(module for module, _, _ in NAMES), "names listed before any currentmodule"
    assert len({module for module, _ in MODULES}) > 5


def test_parser_reads_summary_blocks():
    text = """
.. currentmodule:: pkg.mod

.. autosummary::
   :toctree: generated/
   :nosignatures:

   First
   second

Prose after the block.

   indented prose in a quote

.. autoclass:: pkg.other.Third
"""
    names, modules = _api_entries(text)
    assert [(m, n) for m, n, _ in names] == [
        ("pkg.mod", "First"), ("pkg.mod", "second"), ("pkg.other", "Third")]
    assert [m for m, _ in modules] == ["pkg.mod"]


@pytest.mark.parametrize("module", sorted({m for m, _ in MODULES}))
def test_documented_module_imports(module):
    importlib.import_module(module)


@pytest.mark.parametrize(("module", "name", "line"), NAMES,
                         ids=[f"{module}.{name}" for module, name, _ in NAMES])
def test_documented_name_is_public(module, name, line):
    where = f"doc/api.rst:{line}"
    imported = importlib.import_module(module)
    head = name.split(".")[0]
    assert hasattr(imported, head), f"{where}: {module} has no {head}"
    obj = imported
    for part in name.split("."):
        obj = getattr(obj, part)
    public = getattr(imported, "__all__", None)
    if public is not None:
        assert head in public, f"{where}: {head} is not in {module}.__all__"
