"""Round 4, pages (groups ``hangs``, ``silent_loss``): pages that made extraction quadratic, and text
on screen that the extractor dropped."""

from __future__ import annotations
