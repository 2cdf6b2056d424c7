"""The one base of every error a user can put right (a bad setting, dataset, run folder, index ...), and
where outputs go: checked before the work that makes them, written never through a link, a stream named
by the user written into rather than replaced, a folder replaced only when this project wrote it, and a
full or read-only disk under an SQLite file reported as the ``OSError`` it is.

The command line prints such an error as one line, labelled, and exits with its code, instead of a
traceback; each command catches only what it adds to (a resume hint), not every kind one by one. Each
error keeps its old base too (``ValueError``, ``OSError`` ...), so library callers that catch those
still do.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import stat
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator


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


def named_path(raw: str | Path | None, option: str) -> Path | None:
    """The path typed after ``option``, or None when none was. ``Path("")`` is the current folder, so an
    empty value (an unset variable in ``--out "$OUT"``) is refused rather than read as "write here"."""
    if raw is None:
        return None
    if not str(raw).strip():
        raise OutputError(f"{option} is empty: give a path")
    return Path(raw)


# --- a file the user names for an output: a stream is written into, never replaced --------------------------
# `--html /dev/stdout` names a link in /dev to this process's output: the whole-file write below would rename a
# file over it, and /dev/stdout would be a regular file for every later process. What a user can mean by naming
# a device is a stream; any other device, and any new name among the devices, is refused.
SYSTEM_FOLDERS = (Path("/dev"), Path("/proc"))  # their entries are devices and processes, never a place for a file


def output_file(raw: str | Path | None, option: str) -> Path | None:
    """The file named after ``option`` (``--html``, ``--out``) for an output, or None; checked before the work
    that makes it. A name ending in '/' or naming a folder is refused (a file is never put in a folder's
    place, nor guessed inside it); a stream (``is_stream``) is taken as it is; any other device, or a new
    name in /dev or /proc, is refused; a file must be in a folder that takes one (``writable_folder``)."""
    path = named_path(raw, option)
    if path is None:
        return None
    what = f"{option} {raw}"
    if str(raw).endswith(("/", os.sep)) or path.is_dir():
        raise OutputError(f"cannot write {what}: it names a folder; give the name of a file")
    if is_stream(path):
        return path
    _not_a_device(path, what)
    writable_folder(path.parent, what)
    return path


def is_stream(path: Path) -> bool:
    """Whether ``path``, links followed, is a stream to write into rather than a file to replace: a FIFO, the
    null device, or this process's own standard output or error (``/dev/stdout``, ``/proc/self/fd/2``: a
    terminal, a pipe, or the file a shell redirected it to)."""
    try:
        found = os.stat(path)
    except OSError:
        return False
    if stat.S_ISFIFO(found.st_mode):
        return True
    if stat.S_ISCHR(found.st_mode) and found.st_rdev == os.stat(os.devnull).st_rdev:
        return True
    return _own_descriptor(found) is not None


def _own_descriptor(found: os.stat_result) -> int | None:
    """1 or 2 when ``found`` is what this process's standard output or error is, else None."""
    for fd in (1, 2):
        try:
            own = os.fstat(fd)
        except OSError:  # a closed descriptor
            continue
        if (own.st_dev, own.st_ino) == (found.st_dev, found.st_ino):
            return fd
    return None


def _not_a_device(path: Path, what: str) -> None:
    """Refuse a device that is not a stream (a disk, /dev/zero, a watchdog: written to, it would be driven),
    and any other name among the devices: a file there would replace a device or a link to one."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise OutputError(f"cannot write {what}: it is a device, not a file or a stream")
    if _in_system_folder(path.parent):
        raise OutputError(f"cannot write {what}: it is in a folder of devices ({path.parent}); only a stream there "
                          "is written, /dev/stdout or /dev/null")


def _in_system_folder(folder: Path) -> bool:
    """Whether ``folder`` (links followed) is /dev or /proc or under them, on their own filesystem: /dev/shm,
    a filesystem of its own, takes files."""
    real = Path(os.path.realpath(folder))
    for top in SYSTEM_FOLDERS:
        if real == top or top in real.parents:
            existing = next(p for p in (real, *real.parents) if p.exists())
            return os.stat(existing).st_dev == os.stat(top).st_dev
    return False


def write_output(path: Path, data: str | bytes) -> Path:
    """Write an output to the file ``output_file`` took: into it when it is a stream (opened, never created or
    replaced, so /dev/stdout and a link to a FIFO stay what they are), else as a whole file (``replace_file``)."""
    path = Path(path)
    if not is_stream(path):
        _not_a_device(path, str(path))
        return replace_file(path, data)
    own = _own_descriptor(os.stat(path))
    if own is not None:
        # this process's own output is written through its descriptor: a second opening of the file a shell's
        # `>` made would write from its start, and the command's next line over the output
        sys.stdout.flush()
        sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND) if own is None else own
    with os.fdopen(fd, "wb", closefd=own is None) as fh:
        fh.write(_bytes(data))
    return path


def _bytes(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


# --- folders a command replaces or empties: only this project's own -----------------------------------------
MARK_BYTES = 8_000_000  # a mark file is small JSON (an index's manifest, a run's config); a larger one is no mark


@dataclass(frozen=True)
class FolderMark:
    """How a folder this project wrote is told from one it did not: a JSON object file in it (an index's
    manifest.json, a run's config.json) holding these keys. A name alone is no mark: a web app has a
    manifest.json, a folder of notes a report.md."""

    what: str  # "an index folder", as the refusal says it
    file: str  # "manifest.json"
    keys: frozenset[str]
    before_mark: frozenset[str] = frozenset()  # what the project leaves in a folder before its mark (a run's lock)

    def marks(self, folder: Path) -> bool:
        path = Path(folder) / self.file
        try:
            if path.is_symlink() or path.stat().st_size > MARK_BYTES:
                return False
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            return False
        return isinstance(data, dict) and self.keys <= data.keys()


def replaceable_folder(folder: Path, mark: FolderMark, option: str = "--out") -> Path:
    """``folder``, which a command is about to replace or empty, refused in one line unless it is missing,
    empty, or ``mark`` shows this project wrote it. Checked before the work too, so a refusal costs nothing."""
    folder = Path(folder)
    if not folder.exists():
        return folder
    if folder.is_dir() and (all(p.name in mark.before_mark for p in folder.iterdir()) or mark.marks(folder)):
        return folder
    raise OutputError(f"{folder} exists and is not {mark.what} (it holds no {mark.file} of this project's); choose "
                      f"another {option}, or empty it yourself (nothing was overwritten)")


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
            fh.write(_bytes(data))
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


# --- storage: a full, failing or read-only disk -------------------------------------------------------------
# SQLite reports what a plain file reports as an OSError (ENOSPC, EIO, EROFS) as an error of its own, naming no
# file. Raised as the OSError it is, naming the file, it takes a command's one storage path (cli.common's
# ``storage_errors``): one line saying what failed, where, and what is kept.
_SQLITE_STORAGE = {13: errno.ENOSPC, 10: errno.EIO, 8: errno.EROFS, 14: errno.EACCES}  # FULL, IOERR, READONLY, CANTOPEN


@contextmanager
def sqlite_storage(path: str | Path) -> Iterator[None]:
    """SQLite's storage errors in the block (a full disk, an I/O error, a read-only file, one that cannot be
    opened) raised as ``OSError`` naming ``path``; any other SQLite error as it is."""
    try:
        yield
    except sqlite3.Error as exc:
        code = _SQLITE_STORAGE.get(getattr(exc, "sqlite_errorcode", 0) & 0xFF)  # the primary result code
        if code is None:
            raise
        raise OSError(code, str(exc), str(path)) from exc
