"""Security of pages (group ``security``): chat-template markers hidden in markup, enumerated attribute
values spelled as a browser reads them, and pages that fall back to the flat extractor."""

from __future__ import annotations
