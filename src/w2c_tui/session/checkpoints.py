"""Which checkpoint holds a pipeline's predictions, and the label of one of its rows.

Shared by `show`, the TUI and the reading of the earlier suite's sessions, whose files
carry the same names (operations guide §11). What each kind writes is stated once, in
the registry of kinds (`session/kinds.py`); this module only finds the files on disk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from w2c_tui.session import kinds
from w2c_tui.store.jsonl import read_keyed
from w2c_tui.store.layout import AUDIT_FILE

# The built-in kinds' primary files, for readers written before the registry.
PRIMARY_FILES = {kind.name: kind.primary_file_name() for kind in kinds.kinds()}


def primary_file(session_root: Path, exp_name: str) -> Path | None:
    """The checkpoint whose rows are the pipeline's predictions (older sessions included)."""
    folder = Path(session_root) / "checkpoints" / exp_name
    name = kinds.primary_file_name(exp_name)
    if (folder / name).exists():
        return folder / name
    # An older or unusual layout: the one JSONL file that is not audit or debug output.
    not_primary = {AUDIT_FILE, *kinds.secondary_file_names(exp_name)}
    candidates = sorted(p for p in folder.glob("*.jsonl") if p.name not in not_primary) if folder.is_dir() else []
    return candidates[0] if len(candidates) == 1 else None


def primary_rows(session_root: Path, exp_name: str) -> dict[str, dict[str, Any]]:
    """uuid -> last row of the pipeline's primary checkpoint ({} when there is none)."""
    path = primary_file(session_root, exp_name)
    return read_keyed(path) if path else {}


def predicted_label(exp_name: str, row: dict[str, Any] | None) -> str | None:
    """The prediction of a primary row, as our pipelines define it (docs/metrics.md §1)."""
    return kinds.label_of(exp_name, row)
