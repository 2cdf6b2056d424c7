"""The README is run as written by new users: every command and option it names must exist."""

from __future__ import annotations

import re

import pytest
import typer

from agentic_rag.cli import app
from testkit import REPO

README = (REPO / "README.md").read_text()


def _commands() -> dict:
    group = typer.main.get_command(app)
    found = {}
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):  # a sub-app (typer may vendor its own click)
            found.update({f"{name} {sub}": c for sub, c in cmd.commands.items()})
        else:
            found[name] = cmd
    return found


def _uses() -> list[str]:
    """Each command line the README shows: in code blocks after `agentic-rag`, and the commands table."""
    lines = re.findall(r"agentic-rag ([a-z0-9][^\n`|]*)", README)
    table = re.findall(r"^\| `([a-z][^`]*)` \|", README, flags=re.M)
    return [u.strip() for u in lines + table if not u.startswith("COMMAND")]


USES = _uses()


def test_the_readme_commands_table_lists_every_command_of_the_cli():
    """A command the table leaves out is one a new user never hears of; one it names that the CLI
    lacks fails below. ``prepare squad2\\|rgb\\|nq`` names three."""
    table = re.findall(r"^\| `([a-z][^`]*)` \|", README, flags=re.M)
    commands, listed = _commands(), set()
    for row in table:
        name, _, rest = row.replace("\\|", "|").partition(" ")
        subs = [f"{name} {sub}" for sub in rest.split(" ")[0].split("|")]  # a sub-command, or an argument
        listed |= set(subs) if all(sub in commands for sub in subs) else {name}
    assert listed == set(commands)


@pytest.mark.parametrize("use", USES)
def test_every_command_and_option_in_the_readme_exists(use):
    commands = _commands()
    words = use.split()
    name = " ".join(words[:2]) if " ".join(words[:2]) in commands else words[0]
    alternatives = [n for n in commands if n.startswith(name.split("\\|")[0].split()[0])]
    assert name in commands or alternatives, f"`agentic-rag {use}`: no command {name!r}"
    names = [name] if name in commands else [f"{words[0]} {sub}" for sub in words[1].replace("\\", "").split("|")]
    for command in names:
        assert command in commands, f"`agentic-rag {use}`: no command {command!r}"
        options = {opt for p in commands[command].params for opt in p.opts}
        for option in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", use):
            assert option in options, f"`agentic-rag {use}`: {command} has no option {option}"


def test_every_file_the_readme_points_to_exists():
    root = REPO
    paths = set(re.findall(r"`((?:docs|benchmarks|examples|agentic_rag|graphs|prompts|scripts)/[\w./-]+)`", README))
    assert paths and not [p for p in sorted(paths) if not (root / p.rstrip("/")).exists()]


# a figure that is a rule or a fixed size, not a measurement that drifts with every re-run
FIXED_FIGURES = {"30 s",  # the CRAG kit's per-question limit
                 "1.1 GB"}  # the size of the 1.5B generator's PyPI parts (pinned by hash)


def test_the_readme_types_no_measured_figure_and_stays_short():
    """Times, memory and ratios drift with every benchmark re-run: the README points at the benchmark
    file instead (benchmarks/README.md is generated from them)."""
    typed = re.findall(r"\b\d[\d.,]* ?(?:s|ms|seconds?|minutes?|GB|MB|x|%)(?![\w-])", README)
    assert [f for f in typed if f not in FIXED_FIGURES] == []
    assert len(README.encode()) < 12_000, "the README is a user's guide: move detail to docs/"
