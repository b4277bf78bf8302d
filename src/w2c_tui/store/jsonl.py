"""Append-only JSONL: whole lines, written per row, fsynced at least once a second.

A killed process loses at most the row it was writing. The reader tolerates what such a
kill leaves behind (a torn last line) and any corrupt line, reporting each instead of
failing.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from w2c_tui import jsoncodec
from w2c_tui.readable_file import NotRegularFile, open_regular
from w2c_tui.redaction import scrub, scrub_bytes
from w2c_tui.store.temporary import remove_leftovers, temporary_path

FSYNC_INTERVAL_SECONDS = 1.0


def dumps(row: dict[str, Any]) -> str:
    """One line of JSON with every known secret scrubbed out (non-finite floats become null)."""
    return scrub(jsoncodec.dumps(row))


def dumps_line(row: dict[str, Any]) -> bytes:
    """`dumps(row)` and a newline, as UTF-8: what `JsonlAppender.append` writes."""
    return scrub_bytes(jsoncodec.dumps_bytes(row)) + b"\n"


class StorageError(OSError):
    """A session file could not be written (disk full, read-only, no permission).

    The user must fix the disk, not the run; rows written before it stay whole, so a
    resume afterwards continues where the run stopped.
    """

    def __init__(self, path: Path, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))
        self.path = Path(path)

    def __str__(self) -> str:
        return f"cannot write {self.path}: {self.strerror}"

    def advice(self, run_key: str) -> str:
        return (
            f"{self}; free space or make the folder writable (or set workdir_base elsewhere), then run "
            f"again with run key '{run_key}' to continue; the rows already written are kept"
        )


class JsonlAppender:
    """One open file; `append` writes a row as a single line.

    Safe to share between asyncio tasks and threads: a lock keeps every line whole. The file
    is unbuffered, so a write that fails (disk full) leaves nothing queued to retry later:
    the part of the line that reached the disk is cut off again and `StorageError` raised.
    """

    def __init__(self, path: Path, *, fsync_interval: float = FSYNC_INTERVAL_SECONDS) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("ab", buffering=0)
        except OSError as exc:
            raise StorageError(self.path, exc) from None
        self._lock = threading.Lock()
        self._fsync_interval = fsync_interval
        self._last_sync = time.monotonic()
        # The file's length, kept here: the one writer (session lock) needs no stat or seek per row.
        self._size = os.fstat(self._fh.fileno()).st_size
        self._repair_torn_tail()

    @property
    def size(self) -> int:
        """Bytes in the file: what was there when it was opened plus every whole line written since."""
        return self._size

    def _repair_torn_tail(self) -> None:
        """Start on a fresh line if a killed writer left half a row without newline."""
        if self._size == 0:
            return
        with self.path.open("rb") as fh:
            fh.seek(self._size - 1)
            if fh.read(1) != b"\n":
                self._write(b"\n")

    def append(self, row: dict[str, Any]) -> None:
        line = dumps_line(row)
        with self._lock:
            self._write(line)
            now = time.monotonic()
            if now - self._last_sync >= self._fsync_interval:
                self._sync_locked()

    def _write(self, data: bytes) -> None:
        start = self._size
        try:
            written = self._fh.write(data)  # almost always the whole line at once
            if written != len(data):
                view = memoryview(data)[written or 0:]
                while view:
                    written = self._fh.write(view)
                    view = view[written or 0:]
        except OSError as exc:
            with contextlib.suppress(OSError):  # leave no half row behind (shrinking works on a full disk)
                self._fh.truncate(start)
                self._fh.seek(start)
            raise StorageError(self.path, exc) from None
        self._size = start + len(data)

    def _sync_locked(self) -> None:
        try:
            os.fsync(self._fh.fileno())
        except OSError as exc:
            raise StorageError(self.path, exc) from None
        self._last_sync = time.monotonic()

    def sync(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._sync_locked()

    def close(self) -> None:
        """Sync and close; closing never fails (a failed sync already raised from `append`)."""
        with self._lock:
            if not self._fh.closed:
                with contextlib.suppress(OSError):
                    os.fsync(self._fh.fileno())
                self._fh.close()

    def __enter__(self) -> "JsonlAppender":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class BadLine:
    path: Path
    line: int
    reason: str
    torn: bool  # the last line, without its newline: a write cut short


def iter_rows(path: Path, on_bad: Callable[[BadLine], None] | None = None) -> Iterator[dict[str, Any]]:
    """Yield every decodable JSON object; report the rest to `on_bad`."""
    path = Path(path)
    try:
        fh = open_regular(path)  # a FIFO or a device raises NotRegularFile (an OSError), never hangs
    except FileNotFoundError:
        return
    with fh:
        data = fh.read()
    lines = data.split(b"\n")
    last = len(lines) - 1
    for index, raw in enumerate(lines):
        if not raw.strip():
            continue
        torn = index == last  # no newline after it
        try:
            row = jsoncodec.loads(raw)
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
        except (ValueError, UnicodeDecodeError) as exc:
            if on_bad is not None:
                on_bad(BadLine(path, index + 1, str(exc)[:200], torn))
            continue
        yield row


def read_keyed(
    path: Path,
    key: str = "uuid",
    on_bad: Callable[[BadLine], None] | None = None,
    on_duplicate: Callable[[str, dict[str, Any], dict[str, Any]], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Rows keyed by `key`, last write wins (resume appends newer rows after older ones).

    `on_duplicate(key, earlier, later)` hears of every key written again, so a caller can
    audit a repeated UUID whose rows disagree (operations guide §11a).
    """
    rows: dict[str, dict[str, Any]] = {}
    for row in iter_rows(path, on_bad):
        value = row.get(key)
        if isinstance(value, str):
            if on_duplicate is not None and value in rows:
                on_duplicate(value, rows[value], row)
            rows[value] = row
    return rows


def json_type_name(value: Any) -> str:
    """How a JSON value's type reads in a reason ("a number", "text", "an object")."""
    if isinstance(value, bool):
        return "true/false"
    return {int: "a number", float: "a number", str: "text", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def read_document(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the JSON object, None), (None, None) when absent, or (None, why it cannot be used)."""
    path = Path(path)
    name = path.name
    try:
        with open_regular(path) as fh:
            data = fh.read()
    except FileNotFoundError:
        return (None, None) if not path.is_symlink() else (None, f"{name}: not a regular file")
    except NotRegularFile:
        return None, f"{name}: not a regular file"
    except OSError as exc:
        return None, f"{name}: unreadable ({exc.strerror or exc})"
    try:
        value = jsoncodec.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None, f"{name}: not JSON"
    if not isinstance(value, dict):
        return None, f"{name}: {json_type_name(value)} where an object belongs"
    return value, None


def read_json(path: Path) -> dict[str, Any] | None:
    """A small JSON document, or None when absent or unreadable (`read_document` says why)."""
    return read_document(path)[0]


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Write via a temporary file and rename, so a reader never sees half a document."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(path)
    remove_leftovers(path)  # of a writer killed before its rename, whoever it was
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(scrub(json.dumps(payload, ensure_ascii=False, indent=2, default=str)) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)  # the document before stays as it was
        raise StorageError(path, exc) from None
