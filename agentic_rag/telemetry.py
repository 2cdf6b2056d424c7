"""Per-round JSONL telemetry: one line per BAUG decision, appended and flushed at once.

The fields are the design's (anchors_proposed, anchors_selected, path_count, pruned_count,
new_hits_ratio, anchor_coverage, overlap_est, faith_est, tokens_left, tokens_used, stop_reason,
latency_ms) plus the question id, round, action and reason code, so a run can be replayed and
plotted without re-running the model.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

_LOCK = threading.Lock()


def telemetry_path(settings, system: str) -> Path:
    if settings.TELEMETRY_PATH is not None:
        return Path(settings.TELEMETRY_PATH)
    return Path(settings.ARTIFACTS_DIR) / "telemetry" / f"{system}.jsonl"


def write_row(path: Path, row: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(row, ensure_ascii=False, default=str)
    with _LOCK, open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()


def read_rows(path: Path) -> list[dict[str, Any]]:
    if not Path(path).is_file():
        return []
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
