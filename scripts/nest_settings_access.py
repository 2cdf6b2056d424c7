"""Rewrite flat settings reads (``settings.RETRIEVAL_K``) to the nested form (``settings.retrieval.RETRIEVAL_K``).

Settings live in sections (agentic_rag/configuration.py); a flat read still works through a read-only
alias, so this is a tidy-up, not a fix, and it can run at any time: after a merge that brought flat
reads back, or on an extension's own code. What it rewrites, and nothing else:

- ``<expr>.NAME`` read as an attribute, where NAME is a setting's flat name (FIELD_SECTIONS) and
  ``<expr>`` is not already a section (``settings.retrieval``, or a variable named like one) nor a name
  the file imports; strings, dict keys, keyword arguments (``replace(RETRIEVAL_K=3)``) are never touched;
- ``Settings.model_fields`` and ``type(<...settings...>).model_fields`` (a field by flat name) to
  ``.flat_fields()``, since ``model_fields`` now lists the sections.

A line carrying the comment ``keep-flat`` is left as it is (tests of the alias itself). An assignment to
a flat name is reported, not rewritten (the alias is read-only), and so is a stand-in built by flat names
(``SimpleNamespace(EMBEDDING_MODEL=...)``), which nested reads cannot see through. The edit is deterministic and
idempotent, made in the source text at the attribute's position (formatting and comments kept), and
checked: the rewritten file must parse to the original tree plus the section attributes.

    python scripts/nest_settings_access.py            # rewrite agentic_rag/ graphs/ scripts/ examples/ tests/
    python scripts/nest_settings_access.py --check    # list what would change; exit 1 if anything would
    python scripts/nest_settings_access.py path ...   # other files or folders
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agentic_rag.configuration import FIELD_SECTIONS, SECTIONS  # noqa: E402

DEFAULT_ROOTS = ("agentic_rag", "graphs", "scripts", "examples", "tests")
# where the sections are defined: its own code reads them by section already
SKIPPED = {REPO / "agentic_rag" / "configuration.py"}
PRAGMA = "keep-flat"


@dataclass(frozen=True)
class Edit:
    line: int  # 1-based
    col: int  # byte offset in the line's UTF-8 text
    old: str  # the bytes replaced ("" for an insertion)
    new: str


def _imported_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _is_section(expr: ast.expr) -> bool:
    return (isinstance(expr, ast.Attribute) and expr.attr in SECTIONS) or (isinstance(expr, ast.Name) and expr.id in SECTIONS)


def _settings_class(expr: ast.expr) -> bool:
    """``Settings`` or ``type(<an expression ending in settings>)``: where ``model_fields`` meant the flat fields."""
    if isinstance(expr, ast.Name):
        return expr.id == "Settings"
    return (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "type"
            and len(expr.args) == 1 and ast.unparse(expr.args[0]).lower().endswith("settings"))


def find_edits(source: str) -> tuple[list[Edit], list[int]]:
    """The edits that nest ``source``'s flat reads, and the lines that assign to a flat name."""
    tree = ast.parse(source)
    lines = source.splitlines()
    imported = _imported_names(tree)
    edits, stores = [], []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.end_lineno is None or node.end_col_offset is None:
            continue
        if PRAGMA in lines[node.end_lineno - 1]:
            continue
        col = node.end_col_offset - len(node.attr.encode())  # where the attribute's name starts
        if node.attr in FIELD_SECTIONS:
            receiver = node.value
            if _is_section(receiver) or (isinstance(receiver, ast.Name) and receiver.id in imported | {"Settings"}):
                continue
            if not isinstance(node.ctx, ast.Load):
                stores.append(node.end_lineno)
                continue
            edits.append(Edit(node.end_lineno, col, "", f"{FIELD_SECTIONS[node.attr]}."))
        elif node.attr == "model_fields" and isinstance(node.ctx, ast.Load) and _settings_class(node.value):
            edits.append(Edit(node.end_lineno, col, "model_fields", "flat_fields()"))
    return sorted(set(edits), key=lambda e: (e.line, e.col)), sorted(stores)


def stand_ins(source: str) -> list[int]:
    """Lines that build a settings stand-in by flat names (``SimpleNamespace(EMBEDDING_MODEL=...)``): code
    that reads it by section would fail, so it is reported for a real ``Settings`` to replace it."""
    return sorted(node.lineno for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "SimpleNamespace"
                  and any(k.arg in FIELD_SECTIONS for k in node.keywords))


def apply(source: str, edits: list[Edit]) -> str:
    lines = source.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: (e.line, e.col), reverse=True):
        raw = lines[edit.line - 1].encode()
        assert raw[edit.col: edit.col + len(edit.old.encode())] == edit.old.encode(), edit
        lines[edit.line - 1] = (raw[: edit.col] + edit.new.encode() + raw[edit.col + len(edit.old.encode()):]).decode()
    return "".join(lines)


class _Flatten(ast.NodeTransformer):
    """The inverse of the rewrite, to check it: ``x.section.NAME`` -> ``x.NAME``, ``flat_fields()`` -> ``model_fields``."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        inner = node.value
        if node.attr in FIELD_SECTIONS and isinstance(inner, ast.Attribute) and inner.attr == FIELD_SECTIONS[node.attr]:
            return ast.Attribute(value=inner.value, attr=node.attr, ctx=node.ctx)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "flat_fields" and not node.args and not node.keywords:
            return ast.Attribute(value=func.value, attr="model_fields", ctx=ast.Load())
        return node


def rewrite(source: str) -> tuple[str, int, list[int]]:
    """(the rewritten source, edits made, lines assigning to a flat name); raises if the check fails."""
    edits, stores = find_edits(source)
    if not edits:
        return source, 0, stores
    new = apply(source, edits)
    before = ast.dump(_Flatten().visit(ast.parse(source)))
    after = ast.dump(_Flatten().visit(ast.parse(new)))
    if before != after:
        raise ValueError("the rewrite changed more than the settings reads")
    return new, len(edits), stores


def python_files(paths: list[Path]) -> list[Path]:
    out = []
    for path in paths:
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return [p for p in out if p.resolve() not in SKIPPED]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, help="files or folders (default: the repo's code folders)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    args = ap.parse_args(argv)
    paths = args.paths or [REPO / root for root in DEFAULT_ROOTS]
    changed = total = 0
    for path in python_files(paths):
        source = path.read_text()
        try:
            new, count, stores = rewrite(source)
        except (SyntaxError, ValueError) as exc:
            print(f"{path}: not rewritten: {exc}", file=sys.stderr)
            return 2
        for line in stores:
            print(f"{path}:{line}: assigns to a flat settings name (read-only): set it on its section", file=sys.stderr)
        for line in stand_ins(source):
            print(f"{path}:{line}: a settings stand-in with flat names; nested reads of it fail: build a Settings "
                  "(Settings.model_validate({'section': {...}}))", file=sys.stderr)
        if count:
            changed, total = changed + 1, total + count
            print(f"{path}: {count} read{'s' if count > 1 else ''}")
            if not args.check:
                path.write_text(new)
    verb = "would change" if args.check else "changed"
    print(f"{total} settings reads in {changed} files {verb}" if total else "every settings read is nested")
    return 1 if args.check and total else 0


if __name__ == "__main__":
    sys.exit(main())
