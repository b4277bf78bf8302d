"""Which checkpoint holds a pipeline's predictions, and the label of one of its rows.

Shared by `show`, the TUI and the reading of the earlier suite's sessions, whose files
carry the same names (operations guide §11).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from w2c_tui.store.jsonl import read_keyed
from w2c_tui.store.layout import (
    AUDIT_FILE,
    JUDGE_DECISIONS,
    LOGPROB_DEBUG,
    LOGPROB_PREDICTIONS,
    MCQ_PREDICTIONS,
    TARGET_RESPONSES,
)

PRIMARY_FILES = {"llm_judge": JUDGE_DECISIONS, "mcq": MCQ_PREDICTIONS, "mcq_logprob": LOGPROB_PREDICTIONS}
_NOT_PRIMARY = {AUDIT_FILE, LOGPROB_DEBUG, TARGET_RESPONSES}


def primary_file(session_root: Path, exp_name: str) -> Path | None:
    """The checkpoint whose rows are the pipeline's predictions (older sessions included)."""
    folder = Path(session_root) / "checkpoints" / exp_name
    name = PRIMARY_FILES.get(exp_name) or f"{exp_name}.jsonl"
    if (folder / name).exists():
        return folder / name
    # An older or unusual layout: the one JSONL file that is not audit or debug output.
    candidates = sorted(p for p in folder.glob("*.jsonl") if p.name not in _NOT_PRIMARY) if folder.is_dir() else []
    return candidates[0] if len(candidates) == 1 else None


def primary_rows(session_root: Path, exp_name: str) -> dict[str, dict[str, Any]]:
    """uuid -> last row of the pipeline's primary checkpoint ({} when there is none)."""
    path = primary_file(session_root, exp_name)
    return read_keyed(path) if path else {}


def predicted_label(exp_name: str, row: dict[str, Any] | None) -> str | None:
    """The prediction of a primary row, as our pipelines define it (docs/metrics.md §1)."""
    if row is None:
        return None
    if exp_name.startswith("stability_"):
        value = row.get("mode_label")
    elif exp_name == "mcq_logprob":
        value = row.get("predicted_label_raw", row.get("predicted_label"))
    else:
        value = row.get("predicted_label")
    return value if isinstance(value, str) else None
