"""Round 4, rows and records (groups ``silent_loss``, ``hangs``, ``actionable_errors``): line separators in
rows, a piped dataset, numeric ids, dropped spans, a record that exhausts memory, unwritable outputs."""

from __future__ import annotations
