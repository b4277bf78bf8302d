"""Find the When2Call file a session was run on (its manifest says where; the bundled copy last)."""

from __future__ import annotations

import dataclasses
import re
import threading
from pathlib import Path
from typing import Any, Callable

from w2c_tui.session.models import Manifest

_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


def dataset_candidates(manifest: Manifest | None, session_root: Path) -> list[Path]:
    found: list[Path] = []
    if manifest is not None and manifest.dataset is not None and manifest.dataset.path:
        found.append(Path(str(manifest.dataset.path)))
    # The earlier suite's manifest holds a flat config (config.eval_data_path).
    configured = manifest.setting("data", "eval_data_path") if manifest is not None else None
    if configured:
        path = Path(str(configured))
        found.append(path)
        if not path.is_absolute():
            # Relative to where the run was started: try the folders above the workdir.
            found.extend(parent / path for parent in list(Path(session_root).parents)[3:6])
    from w2c_tui.data.when2call import BUNDLED_PATH

    found.append(BUNDLED_PATH)
    return found


def load_dataset(manifest: Manifest | None, session_root: Path, uuids: set[str]) -> tuple[dict[str, Any], Path | None]:
    """uuid -> Example from the first candidate file that has any of `uuids` (all when empty)."""
    return SessionDataset(manifest, session_root).lookup(uuids)


def recorded_sha256(manifest: Manifest | None) -> str | None:
    """The dataset's sha256 the manifest recorded at the run (None when it recorded none we can check)."""
    value = manifest.dataset.sha256 if manifest is not None and manifest.dataset is not None else None
    return value.lower() if isinstance(value, str) and _SHA256.fullmatch(value) else None


class DatasetFiles:
    """Parsed When2Call files and their sha256, each read at most once; shared by the sessions
    of one comparison (they often name the same file)."""

    def __init__(self) -> None:
        self._examples: dict[Path, dict[str, Any] | None] = {}
        self._digests: dict[Path, str | None] = {}
        self._lock = threading.Lock()

    def examples(self, candidate: Path) -> dict[str, Any] | None:
        from w2c_tui.data import DataError, load_examples

        with self._lock:
            if candidate not in self._examples:
                examples = None
                if candidate.is_file():
                    try:
                        examples = {e.uuid: e for e in load_examples(candidate)}
                    except (DataError, OSError):
                        examples = None
                self._examples[candidate] = examples
            return self._examples[candidate]

    def sha256(self, candidate: Path) -> str | None:
        from w2c_tui.data.when2call import file_sha256

        with self._lock:
            if candidate not in self._digests:
                try:
                    self._digests[candidate] = file_sha256(candidate)
                except OSError:
                    self._digests[candidate] = None
            return self._digests[candidate]


class SessionDataset:
    """One session's When2Call examples, with the session's own gold labels.

    A session's gold labels are those it was scored with: the `gold_label` its rows stored
    when it ran. The dataset file gives the rest of an example (its question, answers, tools)
    and the gold of rows that stored none. The file is checked against the sha256 the
    manifest recorded: a file changed since the run is used only where the rows hold the
    gold label, and `problem` says so in one line (an example whose gold only the changed
    file knows is left out, never scored with another label).

    A session's readers all ask it (the per-UUID rows, the earlier suite's recomputed
    metrics of every pipeline), so the dataset is resolved once per opened session.
    Thread-safe: the Session view reads its summary and its rows in two workers.
    """

    def __init__(
        self,
        manifest: Manifest | None,
        session_root: Path,
        stored_gold: Callable[[], dict[str, str]] | None = None,
    ) -> None:
        self._manifest = manifest
        self._root = Path(session_root)
        self._stored_gold = stored_gold
        self._gold: dict[str, str] | None = None
        self.files = DatasetFiles()
        self._lock = threading.Lock()
        #: one line when the dataset file is not the one the session ran on (None when it is, or cannot be told)
        self.problem: str | None = None
        #: examples of a changed file whose gold label the session's rows do not hold (left out)
        self.n_without_gold = 0

    def share_files(self, files: DatasetFiles) -> None:
        """Read the dataset files through `files` (one parse for several sessions)."""
        self.files = files

    def _changed(self, candidate: Path) -> str | None:
        """What changed, when `candidate` is not the file the session ran on (None: same, or not recorded)."""
        recorded = recorded_sha256(self._manifest)
        if recorded is None:
            return None
        now = self.files.sha256(candidate)
        if now == recorded:
            return None
        return f"sha256 {str(now)[:12]}… now, {recorded[:12]}… in the session's manifest"

    def _own_gold(self) -> dict[str, str]:
        if self._gold is None:
            try:
                self._gold = dict(self._stored_gold()) if self._stored_gold else {}
            except OSError:
                self._gold = {}
        return self._gold

    def lookup(self, uuids: set[str]) -> tuple[dict[str, Any], Path | None]:
        """uuid -> Example (gold label: the session's own) from the first candidate file that has
        any of `uuids` (all when empty); a file that is the session's own is preferred to a changed one."""
        with self._lock:
            changed: tuple[dict[str, Any], Path, str] | None = None
            for candidate in dataset_candidates(self._manifest, self._root):
                found = self._found(candidate, uuids)
                if not found:
                    continue
                what = self._changed(candidate)
                if what is None:
                    return self._with_own_gold(found), candidate
                changed = changed or (found, candidate, what)
            if changed is None:
                return {}, None
            found, candidate, what = changed
            return self._with_own_gold(found, changed=(candidate, what)), candidate

    def _found(self, candidate: Path, uuids: set[str]) -> dict[str, Any]:
        examples = self.files.examples(candidate)
        if examples is None:
            return {}
        if not uuids:
            return dict(examples)
        found = {u: examples[u] for u in uuids if u in examples}
        if len(found) < len(uuids):  # a judge-check's rows: one per reference answer, <uuid>#<label>
            from w2c_tui.session.answer_keys import reference_examples

            found.update(reference_examples(uuids - found.keys(), examples))
        for key in uuids - found.keys():  # a preference call's row, <uuid>#…#<call>: the example, gold kept
            uuid = key.partition("#")[0]
            if uuid != key and key.rpartition("#")[2].isdigit() and uuid in examples:
                found[key] = dataclasses.replace(examples[uuid], uuid=key)
        return found

    def _with_own_gold(self, found: dict[str, Any], changed: tuple[Path, str] | None = None) -> dict[str, Any]:
        own = self._own_gold()
        kept: dict[str, Any] = {}
        unknown = 0
        for uuid, example in found.items():
            label = own.get(uuid)
            if label is not None and label != example.correct_answer:
                example = dataclasses.replace(example, correct_answer=label)
            elif label is None and changed is not None:
                unknown += 1  # only the changed file knows a gold label for it: not the session's
                continue
            kept[uuid] = example
        if changed is not None:
            path, what = changed
            self.n_without_gold = unknown
            self.problem = f"dataset {path} changed since the run ({what}): " + (
                f"{unknown} example(s) have no gold label of their own in the session's rows, so they cannot be scored"
                if unknown
                else "gold labels are the ones the session's rows stored"
            )
        return kept
