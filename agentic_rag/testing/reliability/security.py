"""Security (group ``security``): a run folder whose checkpoints carry code, a served-graph client that names
endpoints, keys or paths, dataset text that reaches the markdown reports, and pickled .npz files."""

from __future__ import annotations
