"""Places to write that are not a plain folder on a roomy disk, made for real: a tiny tmpfs (full, or
mounted read-only), a FIFO with a reader at its other end, a character device in a test's own folder.

Mounting and making devices need root; where this process may not, ``PlaceRefused`` says so and a test
skips, naming why, instead of faking the fault.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

NULL_DEVICE = (1, 3)  # Linux's major and minor numbers of /dev/null
ZERO_DEVICE = (1, 5)  # and of /dev/zero: a character device that is neither null nor a terminal


class PlaceRefused(RuntimeError):
    """This process may not make the place (not root, no tmpfs, no mknod in a container)."""


@contextmanager
def tmpfs(folder: Path, kib: int = 1024, read_only: bool = False) -> Iterator[Path]:
    """``folder`` with a tmpfs of ``kib`` KiB mounted on it for the block, unmounted after (lazily, so a
    file some test left open cannot keep it)."""
    folder.mkdir(parents=True, exist_ok=True)
    options = f"size={kib}k" + (",ro" if read_only else "")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        raise PlaceRefused(f"cannot mount a tmpfs on {folder}: {done.stderr.strip() or done.returncode}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def fill(folder: Path) -> Path:
    """Take every free byte of the filesystem holding ``folder``: the next write there fails with ENOSPC."""
    filler = folder / ".filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    finally:
        os.close(fd)
    return filler


def char_device(path: Path, numbers: tuple[int, int] = NULL_DEVICE) -> Path:
    """A character device node at ``path`` (by default one that is /dev/null)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(*numbers))
    except PermissionError as exc:
        raise PlaceRefused(f"cannot make a device node: {exc}") from None
    return path


@contextmanager
def fifo_reader(path: Path, timeout_s: float = 60.0) -> Iterator[list[bytes]]:
    """A FIFO at ``path`` and a thread reading all it is sent; the list holds what was read once the block
    ends. A writer that never opens the FIFO leaves the reader waiting: the end of the block releases it."""
    os.mkfifo(path)
    got: list[bytes] = []

    def read() -> None:
        with open(path, "rb") as fh:
            got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield got
    finally:
        reader.join(timeout=0.5)
        if reader.is_alive() and stat.S_ISFIFO(os.lstat(path).st_mode):  # nobody wrote: end the reader's wait
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            reader.join(timeout=timeout_s)
        # (a FIFO replaced by a file leaves its reader waiting on a name that is gone: a daemon thread)
