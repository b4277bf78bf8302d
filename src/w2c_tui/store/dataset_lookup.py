"""Find the When2Call file a session was run on (its manifest says where; the bundled copy last)."""

from __future__ import annotations

import threading
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
    return SessionDataset(manifest, session_root).lookup(uuids)


class SessionDataset:
    """One session's When2Call examples; each candidate file is parsed at most once.

    A session's readers all ask it (the per-UUID rows, the earlier suite's recomputed
    metrics of every pipeline), so the dataset is resolved once per opened session.
    Thread-safe: the Session view reads its summary and its rows in two workers.
    """

    def __init__(self, manifest: dict[str, Any] | None, session_root: Path) -> None:
        self._manifest = manifest
        self._root = Path(session_root)
        self._parsed: dict[Path, dict[str, Any] | None] = {}
        self._lock = threading.Lock()

    def _examples(self, candidate: Path) -> dict[str, Any] | None:
        from w2c_tui.data import DataError, load_examples

        if candidate not in self._parsed:
            examples = None
            if candidate.is_file():
                try:
                    examples = {e.uuid: e for e in load_examples(candidate)}
                except (DataError, OSError):
                    examples = None
            self._parsed[candidate] = examples
        return self._parsed[candidate]

    def lookup(self, uuids: set[str]) -> tuple[dict[str, Any], Path | None]:
        """uuid -> Example from the first candidate file that has any of `uuids` (all when empty)."""
        with self._lock:
            for candidate in dataset_candidates(self._manifest, self._root):
                examples = self._examples(candidate)
                if examples is None:
                    continue
                if not uuids:
                    return dict(examples), candidate
                found = {u: examples[u] for u in uuids if u in examples}
                if len(found) < len(uuids):  # a judge-check's rows: one per reference answer, <uuid>#<label>
                    from w2c_tui.store.judge_checks import reference_examples

                    found.update(reference_examples(uuids - found.keys(), examples))
                if found:
                    return found, candidate
        return {}, None
