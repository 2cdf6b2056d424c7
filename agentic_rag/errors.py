"""The one base of every error a user can put right (a bad setting, dataset, run folder, index ...), and
where outputs go: checked before the work that makes them, and written never through a link.

The command line prints such an error as one line, labelled, and exits with its code, instead of a
traceback; each command catches only what it adds to (a resume hint), not every kind one by one. Each
error keeps its old base too (``ValueError``, ``OSError`` ...), so library callers that catch those
still do.
"""

from __future__ import annotations

import os
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


# --- writing outputs: never through a link ------------------------------------------------------------
# A folder a command writes into may come from elsewhere (a run folder shared or unpacked from an archive),
# and a link in it would turn "write the report" into "overwrite the file it points to". Whole files are
# written beside their name and renamed over it (the link itself is replaced, its target untouched, and a
# reader never sees half a file); a file that is appended to cannot be, so a link there is refused.


def no_links(folder: Path, what: str) -> None:
    """Refuse, in one line, a folder a command is about to write into that holds a link among its files."""
    links = sorted(p for p in Path(folder).iterdir() if p.is_symlink()) if Path(folder).is_dir() else []
    if links:
        raise OutputError(f"cannot write {what}: {links[0]} is a link (to {os.readlink(links[0])}); a command never "
                          "writes through a link: remove it, or write elsewhere")


def replace_file(path: Path, data: str | bytes) -> Path:
    """Write ``data`` as the file ``path`` by a temporary file renamed over it."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def save_figure(fig, path: Path, **options) -> Path:
    """A matplotlib figure saved as ``replace_file`` writes (savefig itself opens the path, links followed)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format=Path(path).suffix.lstrip(".") or "png", **options)
    return replace_file(path, buf.getvalue())


def open_for_append(path: Path) -> int:
    """A descriptor that appends to ``path`` (created if missing), refused for a link."""
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError:
        if Path(path).is_symlink():
            raise OutputError(f"cannot append to {path}: it is a link (to {os.readlink(path)}); a command never "
                              "writes through a link: remove it, or write elsewhere") from None
        raise
