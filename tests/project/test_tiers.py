"""The quick tier (``-m "not system"``) starts no process: a test that does is marked ``system`` (or lives
in tests/system/, or is a ``model`` test, which conftest.py marks so too)."""

from __future__ import annotations

import ast
from pathlib import Path

from testkit import REPO

STARTS_A_PROCESS = ("subprocess", "Popen", "multiprocessing")


def _marks(node: ast.FunctionDef) -> set[str]:
    return {ast.unparse(d).split("(")[0].rsplit(".", 1)[-1] for d in node.decorator_list}


def unmarked_process_tests(tests: Path) -> list[str]:
    """Tests outside ``tests/system/`` whose body starts a process and that carry no system or model mark."""
    offenders = []
    for path in sorted(tests.rglob("test_*.py")):
        if (tests / "system") in path.parents:
            continue
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        module_marked = any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
                            and "system" in ast.unparse(n.value) for n in tree.body)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
                        {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
                if names & set(STARTS_A_PROCESS) and not module_marked and not _marks(node) & {"system", "model"}:
                    offenders.append(f"{path.relative_to(tests)}::{node.name}")
    return offenders


def test_a_test_that_starts_a_process_is_in_the_system_tier():
    offenders = unmarked_process_tests(REPO / "tests")
    assert not offenders, "mark these @pytest.mark.system (they start a process):\n" + "\n".join(offenders)


def test_the_check_finds_an_unmarked_one_and_passes_a_marked_one(tmp_path):
    (tmp_path / "system").mkdir()
    (tmp_path / "system" / "test_a.py").write_text("def test_x():\n    subprocess.run([])\n")
    (tmp_path / "test_b.py").write_text("import pytest\n\n@pytest.mark.system\ndef test_marked():\n    subprocess.run([])\n\n"
                                        "def test_bare():\n    subprocess.run([])\n\ndef test_pure():\n    assert 1\n")
    assert unmarked_process_tests(tmp_path) == ["test_b.py::test_bare"]
