"""The one base of every error a user can put right (a bad setting, dataset, run folder, index ...).

The command line prints such an error as one line, labelled, and exits with its code, instead of a
traceback; each command catches only what it adds to (a resume hint), not every kind one by one. Each
error keeps its old base too (``ValueError``, ``OSError`` ...), so library callers that catch those
still do.
"""

from __future__ import annotations


class UserError(Exception):
    """Something the user can put right; ``label`` starts its line, ``exit_code`` ends the process."""

    label: str = "error"
    exit_code: int = 2
