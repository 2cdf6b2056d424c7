"""Round 4, processes (group ``hangs``): a model server that never answers, and children that must end
with their parent (`serve` stopped with SIGTERM)."""

from __future__ import annotations
