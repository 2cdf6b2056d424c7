"""Artefacts that try to run code, take a key or inject markup: a run folder's checkpoints holding a call,
a dataset whose labels carry table breaks and HTML, a pickled .npz, the per-request settings a served
graph's client must not choose. The tests feed them to the library, the reliability benchmark to real
processes."""

from __future__ import annotations

import re
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import numpy as np

# EXT_CONSTRUCTOR_POS_ARGS of LangGraph's msgpack: (module, name, args) is built as module.name(*args)
_CALL_EXT = 1


def poison_checkpoints(path: Path, command: str, channel: str = "question") -> int:
    """Replace every stored value of ``channel`` in a checkpoints.sqlite by a call of ``os.system(command)``
    as LangGraph's msgpack encodes a constructor; the number of values replaced."""
    import ormsgpack

    call = ormsgpack.packb(ormsgpack.Ext(_CALL_EXT, ormsgpack.packb(("os", "system", [command]))))
    with sqlite3.connect(path) as conn:
        return conn.execute("UPDATE blobs SET type = 'msgpack+zlib', value = ? WHERE channel = ?",
                            (zlib.compress(call), channel)).rowcount
