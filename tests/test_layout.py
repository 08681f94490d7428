"""The package's layout rules, read off the source with ``ast``.

The rules (doc/user_guide/architecture.rst): private modules live in stage
folders; modules form a DAG; no module imports another module's private
name or another stage's private module (a stage's ``__init__`` exports are
its interface) or reads another object's private attributes; no module or
function grows past a size a reader can hold;
the estimator is not passed down to helpers; no code outside ``losses/``,
``priors.py`` and ``solvers/`` asks a loss, prior or solver for its type or
probes it for an attribute (their declared records say what they can do).
Each check lists what breaks it, so a failure names the place.
"""

import ast
import io
import tokenize
from collections import defaultdict
from pathlib import Path

import pytest

import sklearn_crfloss

PACKAGE = Path(sklearn_crfloss.__file__).parent
NAME = "sklearn_crfloss"
ROOT_PRIVATE_ALLOWED = {"_tagger.py", "_version.py", "__main__.py"}  # __main__: python -m
MAX_MODULE_LINES = 900
MAX_FUNCTION_CODE_LINES = 120
# Where loss, prior and solver classes are defined (and may be inspected).
COMPONENT_PACKAGES = (f"{NAME}.losses", f"{NAME}.priors", f"{NAME}.solvers")
ESTIMATOR_ARGUMENTS = {"est", "estimator", "crf", "tagger"}
# scikit-learn's protocols that take an estimator by definition.
SKLEARN_PROTOCOLS = {"validate_params", "check_scorer_call"}
# A probed object named for a component kind, and the package that defines that kind.
COMPONENT_WORDS = {"loss": f"{NAME}.losses", "prior": f"{NAME}.priors",
                   "solver": f"{NAME}.solvers"}


def _modules():
    """``{module name: (path, is_package, ast tree, source)}`` of every .py file."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        source = path.read_text(encoding="utf-8")
        out[".".join(parts)] = (path, is_package, ast.parse(source), source)
    return out


MODULES = _modules()


def _imports(name, *, top_level_only):
    """``(target module, imported names, line)`` of the package-internal imports of a module."""
    _, is_package, tree, _ = MODULES[name]
    nodes = tree.body if top_level_only else ast.walk(tree)
    if top_level_only:  # also imports under a top-level `if`/`try`
        nodes = [n for stmt in tree.body for n in ast.walk(stmt)
                 if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    out = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == NAME or target.startswith(NAME + "."):
                names = [a.name for a in node.names]
                # `from package import submodule` imports the submodule
                subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
                out.append((target, names, node.lineno))
                out.extend((s, [], node.lineno) for s in subs)
        elif isinstance(node, ast.Import):
            out.extend((a.name, [], node.lineno) for a in node.names
                       if a.name.startswith(NAME + "."))
    return out


def _stage(name):
    """The first component below the package (the stage), or None for a root module."""
    parts = name.split(".")
    if len(parts) == 1:
        return None
    if len(parts) == 2 and not MODULES[name][1]:
        return None
    return parts[1]


def test_no_private_module_in_package_root():
    bad = sorted(p.name for p in PACKAGE.glob("_*.py")
                 if p.name not in ROOT_PRIVATE_ALLOWED | {"__init__.py"})
    assert not bad, f"private modules directly in {PACKAGE.name}/: {bad}"


def test_no_import_cycles():
    graph = defaultdict(set)
    for name in MODULES:
        own_ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        for target, _, _ in _imports(name, top_level_only=True):
            parts = target.split(".")
            for i in range(1, len(parts) + 1):  # a module import runs its packages first
                node = ".".join(parts[:i])
                if node in MODULES and node != name and node not in own_ancestors:
                    graph[name].add(node)
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(MODULES):
        if node not in state:
            visit(node, [])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_import_of_private_names():
    bad = []
    for name in MODULES:
        for target, names, line in _imports(name, top_level_only=False):
            bad += [f"{name}:{line} {target}.{n}" for n in names
                    if n.startswith("_") and not n.startswith("__")]
    assert not bad, "imports of another module's private name:\n" + "\n".join(bad)


def test_stages_meet_only_through_their_init():
    bad = []
    for name in MODULES:
        mine = _stage(name)
        for target, _, line in _imports(name, top_level_only=False):
            parts = target.split(".")
            if (len(parts) >= 3 and parts[1] != mine and f"{NAME}.{parts[1]}" in MODULES
                    and MODULES[f"{NAME}.{parts[1]}"][1] and parts[2].startswith("_")):
                bad.append(f"{name}:{line} imports {target}")
    assert not bad, "imports of another stage's private module:\n" + "\n".join(bad)


def test_module_sizes():
    bad = [f"{name}: {source.count(chr(10))} lines" for name, (_, _, _, source) in MODULES.items()
           if source.count("\n") > MAX_MODULE_LINES]
    assert not bad, f"modules over {MAX_MODULE_LINES} lines: {bad}"


def _code_lines(source, node):
    """Lines of ``node`` holding code: not blank, not only a comment, not a docstring."""
    docstrings = set()
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if (isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    code = set()
    segment = "\n".join(source.split("\n")[node.lineno - 1:node.end_lineno])
    for tok in tokenize.generate_tokens(io.StringIO(segment).readline):
        if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER):
            for line in range(tok.start[0], tok.end[0] + 1):
                code.add(line + node.lineno - 1)
    return len(code - docstrings)


def test_function_sizes():
    bad = []
    for name, (_, _, tree, source) in MODULES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = _code_lines(source, node)
                if n > MAX_FUNCTION_CODE_LINES:
                    bad.append(f"{name}.{node.name} (line {node.lineno}): {n} lines of code")
    assert not bad, f"functions over {MAX_FUNCTION_CODE_LINES} lines of code:\n" + "\n".join(bad)


def _component_classes():
    """``{class name: defining package}`` of the classes of ``losses/``, ``priors.py``, ``solvers/``.

    The losses, priors and solvers, their bases and the solvers' states; not
    the helper types a caller builds (costs, monitors, held-out scores).
    """
    import inspect

    from sklearn_crfloss import losses, priors, solvers
    from sklearn_crfloss.losses import BaseLoss
    from sklearn_crfloss.priors import BasePrior
    from sklearn_crfloss.solvers import BaseSolver, OnlineState, SGDState

    kinds = (BaseLoss, BasePrior, BaseSolver, OnlineState, SGDState)
    names = {}
    for module in (losses, priors, solvers):
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, kinds):
                names.setdefault(obj.__name__, set()).add(module.__name__)
    return names


def _terminal_name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _terminal_name(node.func)
    if isinstance(node, ast.Subscript):
        return _terminal_name(node.value)
    return ""


def test_no_type_checks_on_components():
    """Outside their packages, loss, prior and solver classes are only constructed or subclassed.

    Any other use of the class object (``isinstance``, ``type(x) is``, a set
    or dict of classes to look a type up in) asks for a type where the
    component's declared record should answer.
    """
    classes = _component_classes()
    bad = []
    for name in MODULES:
        tree = MODULES[name][2]
        allowed = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                allowed.add(id(node.func))
            elif isinstance(node, ast.ClassDef):
                allowed.update(id(base) for base in node.bases)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                    and node.id in classes and id(node) not in allowed
                    and not name.startswith(tuple(classes[node.id]))):
                bad.append(f"{name}:{node.lineno} {node.id}")
    assert not bad, "type checks on loss, prior or solver classes:\n" + "\n".join(bad)


def test_no_capability_probes_on_components():
    bad = []
    for name in MODULES:
        for node in ast.walk(MODULES[name][2]):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr") and node.args):
                target = _terminal_name(node.args[0]).lower()
                if any(word in target and not name.startswith(package)
                       for word, package in COMPONENT_WORDS.items()):
                    bad.append(f"{name}:{node.lineno} {node.func.id}({ast.unparse(node.args[0])}, "
                               f"{ast.unparse(node.args[1]) if len(node.args) > 1 else ''})")
    assert not bad, "getattr/hasattr probes on losses, priors or solvers:\n" + "\n".join(bad)


def test_estimator_not_passed_down():
    """No helper in a private stage takes the estimator: it takes the values it needs.

    Exempt: the model-file stage ``_io`` (it writes an estimator), and
    scikit-learn's protocols (parameter validation, a scorer's call).
    """
    bad = []
    for name in MODULES:
        if _stage(name) is None or not _stage(name).startswith("_") or _stage(name) == "_io":
            continue
        for node in ast.walk(MODULES[name][2]):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                hits = [a.arg for a in args if a.arg in ESTIMATOR_ARGUMENTS]
                if node.name in SKLEARN_PROTOCOLS:
                    continue
                if hits:
                    bad.append(f"{name}:{node.lineno} {node.name}({', '.join(hits)})")
    assert not bad, "helpers that take the estimator:\n" + "\n".join(bad)


@pytest.mark.parametrize("check", [test_no_private_module_in_package_root])
def test_checks_can_fail(check, monkeypatch, tmp_path):
    """The root-module check fails on a package root holding a stray private module."""
    (tmp_path / "_stray.py").write_text("")
    (tmp_path / "__init__.py").write_text("")
    monkeypatch.setattr(f"{__name__}.PACKAGE", tmp_path)
    with pytest.raises(AssertionError, match="_stray.py"):
        check()


# Private attributes that other modules may read: the tuple and frame APIs,
# scikit-learn's parameter-validation protocol.
LIBRARY_PRIVATE_ATTRIBUTES = {"_replace", "_getframe", "_parameter_constraints",
                              "_validate_params"}
# The estimator family's own state: the model-file stage writes and rebuilds
# a CRFTagger (its vectoriser, its fitted attributes set at once) and a
# LOPTagger builds its pool (a CRFTagger) and trains its experts on
# vectorised data.
ESTIMATOR_STATE = {"_features", "_set_fitted", "_fit_vectorized"}
ESTIMATOR_FAMILY = {f"{NAME}.lop", f"{NAME}.io", f"{NAME}._io._native_format"}


def _own_private_names(tree):
    """Underscore names a module defines: its functions, classes, methods and ``self._x``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_no_reads_of_other_objects_private_attributes():
    """A module reads underscore attributes only of objects of its own classes.

    ``x._name`` is allowed when ``x`` is ``self``/``cls`` or ``_name`` is
    defined in the same module (an object of one of its own classes).
    """
    bad = []
    for name, (_, _, tree, _) in MODULES.items():
        own = _own_private_names(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                continue
            receiver = node.value
            if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls"):
                continue
            if isinstance(receiver, ast.Call) and _terminal_name(receiver.func) == "super":
                continue
            if node.attr in own or node.attr in LIBRARY_PRIVATE_ATTRIBUTES:
                continue
            if name in ESTIMATOR_FAMILY and node.attr in ESTIMATOR_STATE:
                continue
            bad.append(f"{name}:{node.lineno} {ast.unparse(node)}")
    assert not bad, "reads of another object's private attributes:\n" + "\n".join(bad)
