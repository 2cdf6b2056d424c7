"""The one base of every error a user can put right (a bad setting, dataset, run folder, index ...).

The command line prints such an error as one line, labelled, and exits with its code, instead of a
traceback; each command catches only what it adds to (a resume hint), not every kind one by one. Each
error keeps its old base too (``ValueError``, ``OSError`` ...), so library callers that catch those
still do.
"""

from __future__ import annotations

import tempfile
from pathlib import Path


class UserError(Exception):
    """Something the user can put right; ``label`` starts its line, ``exit_code`` ends the process."""

    label: str = "error"
    exit_code: int = 2


class OutputError(UserError, OSError):
    """A place an output goes to cannot be written."""


def writable_folder(folder: Path, what: str) -> Path:
    """``folder``, made if missing and shown to take a file. Every command checks where its output goes
    before the work that makes it, so an unwritable place costs one line, not the work and a traceback.
    A trial file, not the permission bits: root passes those, and /sys or a path under a file pass no one."""
    above = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if above is not None and not above.is_dir():
        raise OutputError(f"cannot write {what}: {above} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise OutputError(f"cannot write {what}: {exc.strerror or exc}") from None
    return folder


def writable_file(path: Path, what: str) -> Path:
    """``path`` can be written as a file: not a folder, in a folder that takes files."""
    if path.is_dir():
        raise OutputError(f"cannot write {what}: it is a folder")
    writable_folder(path.parent, what)
    return path
