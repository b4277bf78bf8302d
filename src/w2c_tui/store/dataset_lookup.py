"""Find the When2Call file a session was run on (its manifest says where; the bundled copy last)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def dataset_candidates(manifest: dict[str, Any] | None, session_root: Path) -> list[Path]:
    manifest = manifest or {}
    found: list[Path] = []
    dataset = manifest.get("dataset")
    if isinstance(dataset, dict) and dataset.get("path"):
        found.append(Path(str(dataset["path"])))
    config = manifest.get("config") or {}
    configured = (config.get("data") or {}).get("eval_data_path") or config.get("eval_data_path")
    if configured:
        path = Path(str(configured))
        found.append(path)
        if not path.is_absolute():
            # Relative to where the run was started: try the folders above the workdir.
            found.extend(parent / path for parent in list(Path(session_root).parents)[3:6])
    from w2c_tui.data.when2call import BUNDLED_PATH

    found.append(BUNDLED_PATH)
    return found


def load_dataset(manifest: dict[str, Any] | None, session_root: Path, uuids: set[str]) -> tuple[dict[str, Any], Path | None]:
    """uuid -> Example from the first candidate file that has any of `uuids` (all when empty)."""
    from w2c_tui.data import DataError, load_examples

    for candidate in dataset_candidates(manifest, session_root):
        if not candidate.is_file():
            continue
        try:
            examples = {e.uuid: e for e in load_examples(candidate)}
        except (DataError, OSError):
            continue
        if not uuids or uuids & examples.keys():
            return ({u: examples[u] for u in uuids if u in examples} if uuids else examples), candidate
    return {}, None
