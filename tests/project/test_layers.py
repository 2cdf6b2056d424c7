"""The package's layers: imports flow one way, entry points -> graphs/ -> roles -> core (docs/architecture.md).

Read from the source (AST), so nothing heavy is imported: every import of a module of agentic_rag/
counts, function-local ones and ``importlib.import_module("...")`` with a literal name included.
A *unit* is a subpackage of agentic_rag (``baug``) or one of its top-level modules (``runner``).
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from testkit import REPO

ROOT = REPO
PACKAGE = ROOT / "agentic_rag"

# Bottom to top: a unit may import units of its own layer and of the layers below it, never above.
# (Inside a layer, the cycle test keeps the imports one way.) Read from docs/architecture.md's table, the
# one place the layers are written down: a row per layer, each unit in backticks (graphs/ is not a unit).
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _layers_of_the_doc() -> list[tuple[str, set[str]]]:
    rows = [line.split("|")[1:3] for line in ARCHITECTURE.read_text(encoding="utf-8").splitlines()
            if line.startswith("| ") and not line.startswith(("| layer", "| ---"))]
    return [(name.strip(), set(re.findall(r"`([a-z_]+)`", units))) for name, units in rows]


LAYERS: list[tuple[str, set[str]]] = _layers_of_the_doc()
# Only the entry points sit above graphs/ and may import it; the rest of the library is handed the
# graphs (graphs/__init__.py registers its factory with agentic_rag.runner).
ENTRY_POINTS = {"cli", "crag_adapter"}
APP_PACKAGE = "graphs"

MAX_LINES = 500
# Modules allowed over MAX_LINES (by path from the checkout), each with why it is still one concern.
MAX_LISTED_LINES = 600  # even a module that is one concern is split past this
LONG_MODULES = {
    "agentic_rag/configuration/sections.py": "the settings' declarations: one per setting, by section, each with its "
                                             "unit and meaning, and the checks a single section's values must pass",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _unit(module: str) -> str | None:
    """The unit a dotted module name belongs to; ``APP_PACKAGE`` for graphs/; None outside both."""
    parts = module.split(".")
    if parts[0] == APP_PACKAGE:
        return APP_PACKAGE
    if parts[0] != "agentic_rag" or len(parts) < 2:
        return None
    return parts[1].removesuffix(".py")


def _imported(path: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of everything a module imports, at any depth of its code."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            # ``from agentic_rag import baug`` imports the unit ``baug``
            out += [(node.lineno, f"{name}.{alias.name}" if name == "agentic_rag" else name) for alias in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.append((node.lineno, node.args[0].value))
    return out


def _edges() -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) -> where: "module.py:line imports name"."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        src = _unit(_module_name(path))
        if src is None:
            continue
        for line, name in _imported(path):
            dst = _unit(name)
            if dst is not None and dst != src:
                edges[(src, dst)].append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    return edges


def _units() -> set[str]:
    return {p.name.removesuffix(".py") for p in PACKAGE.iterdir()
            if (p.suffix == ".py" and p.name != "__init__.py") or (p.is_dir() and (p / "__init__.py").is_file())}


def _cycles(edges) -> list[list[str]]:
    """The strongly connected components of more than one unit (Tarjan)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _rank() -> dict[str, int]:
    return {unit: i for i, (_, units) in enumerate(LAYERS) for unit in units}


def test_every_unit_is_placed_in_a_layer():
    placed = set().union(*(units for _, units in LAYERS))
    assert _units() - placed == set(), "a new package or module: add it to docs/architecture.md's table"
    assert placed - _units() == set(), "docs/architecture.md's table names a unit that no longer exists"


def test_no_import_cycle_between_packages():
    edges = _edges()
    problems = []
    for component in _cycles(edges):
        inside = [f"  {a} -> {b}: {edges[(a, b)][0]}" for a in component for b in component if (a, b) in edges]
        problems.append(f"cycle between {', '.join(component)}:\n" + "\n".join(inside))
    assert not problems, "\n".join(problems)


def test_imports_only_go_down_the_layers():
    rank = _rank()
    upward = [f"{a} ({LAYERS[rank[a]][0]}) imports {b} ({LAYERS[rank[b]][0]}): {where[0]}"
              for (a, b), where in sorted(_edges().items())
              if b != APP_PACKAGE and a in rank and b in rank and rank[b] > rank[a]]
    assert not upward, "\n".join(upward)


def test_only_the_entry_points_import_graphs():
    offenders = [w for (a, b), where in sorted(_edges().items()) if b == APP_PACKAGE and a not in ENTRY_POINTS
                 for w in where]
    assert not offenders, "the library is handed its graphs (agentic_rag.runner.register_graphs):\n" + "\n".join(offenders)


def test_nothing_imports_an_entry_point():
    offenders = [w for (a, b), where in sorted(_edges().items()) if b in ENTRY_POINTS for w in where]
    assert not offenders, "\n".join(offenders)


def _sized_modules() -> list[Path]:
    """The modules the line limit holds for: every Python file of the checkout (a script is a thin caller
    of the package, and a test module one subject)."""
    return sorted([*PACKAGE.rglob("*.py"), *(ROOT / APP_PACKAGE).rglob("*.py"), *(ROOT / "scripts").glob("*.py"),
                   *(ROOT / "tests").rglob("*.py")])


def test_no_module_is_over_the_line_limit():
    long = {p.relative_to(ROOT).as_posix(): n for p in _sized_modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    unexplained = {name: n for name, n in long.items() if name not in LONG_MODULES}
    assert not unexplained, f"over {MAX_LINES} lines: {unexplained}; split it by concern (or justify it in LONG_MODULES)"
    assert set(LONG_MODULES) <= set(long), f"no longer long, drop from LONG_MODULES: {set(LONG_MODULES) - set(long)}"
    too_long = {name: n for name, n in long.items() if n >= MAX_LISTED_LINES}
    assert not too_long, f"{MAX_LISTED_LINES} lines or more, one concern or not: {too_long}; split it"


SCRIPTS, TESTS = ROOT / "scripts", ROOT / "tests"
LOADERS = {"spec_from_file_location", "run_path", "SourceFileLoader", "load_source"}


def _crossings(folder: Path, forbidden_roots: set[str], forbidden_folder: str) -> list[str]:
    """Imports in ``folder``'s modules of a module whose top name is forbidden, and modules loaded from a
    file under ``forbidden_folder`` (``importlib.util.spec_from_file_location(..., ".../scripts/x.py")``)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in LOADERS
                  and forbidden_folder in ast.unparse(node)):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} loads {ast.unparse(node)[:80]}")
            found += [f"{path.relative_to(ROOT)}:{node.lineno} imports {name}" for name in names
                      if name.split(".")[0] in forbidden_roots]
    return found


def test_scripts_import_no_test_module_and_tests_import_no_script():
    """What both need lives in the package (testkit/ for builders): a script imported by a
    test, or a test module imported by a script, ties a benchmark's figures to a test's internals. Nor
    does a script import another: scripts are thin callers of the package, each run on its own."""
    test_modules = {"tests", "conftest", *(p.stem for p in TESTS.rglob("*.py"))}
    script_modules = {"scripts", *(p.stem for p in SCRIPTS.glob("*.py"))}
    offenders = (_crossings(SCRIPTS, test_modules, "tests") + _crossings(TESTS, script_modules, "scripts")
                 + _crossings(SCRIPTS, script_modules, "/scripts/"))
    assert not offenders, "\n".join(offenders)


def test_no_test_module_imports_another_and_the_package_never_imports_the_testkit_or_a_study():
    """A test module is read on its own: what two need lives in testkit/ (or conftest.py's fixtures). The
    package and graphs/ never import testkit/ or studies/, which are not in the wheel."""
    offenders = _crossings(TESTS, {"tests"}, "/tests/")
    for outside in ("testkit", "studies"):
        offenders += _crossings(PACKAGE, {outside}, f"/{outside}/") + _crossings(ROOT / APP_PACKAGE, {outside}, f"/{outside}/")
    assert not offenders, "\n".join(offenders)


def test_the_crossing_check_sees_every_way_in(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("from tests.fakes import ScriptedChat\nimport train_probe\n"
                                   "def f():\n    import scripts.bench_x\n"
                                   "spec = importlib.util.spec_from_file_location('t', ROOT / 'scripts' / 't.py')\n"
                                   "from testkit import fakes\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert [f.split(" ", 1)[0] for f in _crossings(tmp_path, {"tests"}, "tests")] == ["a.py:1"]
    assert sorted(f.split(" ", 1)[0] for f in _crossings(tmp_path, {"train_probe", "scripts"}, "scripts")) == [
        "a.py:2", "a.py:4", "a.py:5"]


def test_the_checks_see_a_cycle_an_upward_import_and_a_hidden_import(tmp_path, monkeypatch):
    """The scan itself: a made-up package with each mistake is caught."""
    pkg = tmp_path / "agentic_rag"
    for name, text in {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "def f():\n    from agentic_rag.high import b  # function-local\n",
        "high/__init__.py": "",
        "high/b.py": "from ..low import a\nimport importlib\nimportlib.import_module('graphs.agent')\n",
    }.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    edges = _edges()
    assert set(edges) == {("low", "high"), ("high", "low"), ("high", APP_PACKAGE)}
    assert _cycles(edges) == [["high", "low"]]


def test_the_graphs_are_handed_down_to_the_runner(monkeypatch):
    import graphs
    from agentic_rag import runner

    assert runner._factory is graphs.get_graph  # registered when graphs/ was imported (tests/conftest.py)
    monkeypatch.setattr(runner, "_factory", None)
    with pytest.raises(RuntimeError, match="import graphs"):
        runner.system_graph("agent")


ROLE_FOLDERS = ("anchors", "workers", "supervisor", "generator", "reader", "baug")


def test_the_architecture_doc_names_every_module_of_every_room():
    """docs/architecture.md's room list is how a newcomer finds a module: each role folder's modules, no
    more and no fewer."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text[text.index("## The rooms"):text.index("## The check")]
    items = {m.group(1): m.group(2) for m in re.finditer(r"^- `([a-z_]+)/`:(.*?)(?=^- |^Shared|\Z)", section, re.S | re.M)}
    assert list(items) == list(ROLE_FOLDERS), "a room of the graph is missing from the doc, or out of graph order"
    for folder, body in items.items():
        named = set(re.findall(r"`([a-z_]+\.py)`", body))
        actual = {p.name for p in (PACKAGE / folder).glob("*.py") if p.name != "__init__.py"}
        assert named == actual, f"{folder}/: the doc names {sorted(named - actual)} that are not there, and not {sorted(actual - named)}"


def test_the_architecture_doc_names_every_module_of_the_training_room():
    """The training room sits beside the graph's rooms; its paragraph names each of its modules, no more and no fewer."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    paragraph = text[text.index("`training/` fits what the graph reads"):text.index("`studies/`, beside the package")]
    named = set(re.findall(r"`([a-z_]+\.py)`", paragraph))
    actual = {p.name for p in (PACKAGE / "training").glob("*.py") if p.name != "__init__.py"}
    assert named == actual, f"training/: the doc names {sorted(named - actual)} that are not there, and not {sorted(actual - named)}"
