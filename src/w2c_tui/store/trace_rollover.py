"""A call trace that stays small on disk while the run goes on.

The open trace `llm_calls/<exp>.jsonl` is written plain (cheap per call). Once it passes
`ROLL_BYTES` it is renamed to the next closed segment (`<exp>.jsonl.seg<n>`), a fresh open
file takes the following calls, and the segment is packed into the `.zst` in the background
(`call_files.TracePacker`, in a thread of the run's process) and removed, so the plain part
stays near `ROLL_BYTES` plus what packing has not caught up with. Calls of one example may fall in two segments; readers
take the packed files, the segments and the open file in order (`call_files`).

Segments are packed one at a time, oldest first, and a segment is removed only after its
packed copy is synced: a kill loses no call, and the next launch packs the segments left
behind (`BackgroundPacking.adopt`) before any new one.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from w2c_tui.store.call_files import SEGMENT_MARK, TracePacker, pack_calls, segment_path, segment_paths
from w2c_tui.store.jsonl import JsonlAppender

ROLL_BYTES = 32 << 20  # 32 MB: ~80 mcq_logprob examples; 0 = never roll over (pack at the end only)


class BackgroundPacking:
    """Packs the closed segments of every trace of a run, one at a time, in the order they closed.

    One thread takes them in order. It holds the interpreter lock only to split a segment into
    lines and group them by example; zstd compresses without it, so the event loop goes on.
    """

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trace-pack")
        self._lock = threading.Lock()
        self._packers: dict[Path, TracePacker] = {}
        self._queued: set[Path] = set()
        self._failed: set[Path] = set()  # traces whose packing stopped: the end of the run packs them in order
        self.errors: list[str] = []

    def packer(self, path: Path) -> TracePacker:
        with self._lock:
            packer = self._packers.get(path)
            if packer is None:
                packer = self._packers[path] = TracePacker(path)
            return packer

    def adopt(self, path: Path) -> None:
        """Queue the segments a killed run left (before any segment of this run)."""
        for segment in segment_paths(path):
            self.submit(path, segment)

    def submit(self, path: Path, segment: Path, writer: JsonlAppender | None = None) -> None:
        with self._lock:
            if segment in self._queued:
                return
            self._queued.add(segment)
        try:
            self._executor.submit(self._pack, Path(path), segment, writer)
        except RuntimeError:  # already drained: the segment waits for pack_all or the next launch
            if writer is not None:
                writer.close()

    def _pack(self, path: Path, segment: Path, writer: JsonlAppender | None) -> None:
        if writer is not None:
            writer.close()  # its sync is done here, off the event loop
        if path in self._failed:
            return  # a later segment must not be packed before the one that failed
        try:
            self.packer(path).pack_file(segment)
        except Exception as exc:  # noqa: BLE001 - the segment stays whole and readable; pack_all retries it
            self._failed.add(path)
            self.errors.append(f"{segment.name}: {exc}")

    def drain(self) -> None:
        """Wait for the queued segments (blocking: call it in a thread)."""
        self._executor.shutdown(wait=True)

    def pack_all(self, path: Path) -> None:
        """After `drain`: pack what is left plain of the trace, oldest first."""
        pack_calls(path, packer=self.packer(path))


class RollingTrace:
    """One pipeline's open trace: whole plain lines, rolled over to a packed segment past `roll_bytes`.

    Safe to share between asyncio tasks and threads (one lock around append and rollover).
    """

    def __init__(self, path: Path, packing: BackgroundPacking, *, roll_bytes: int | None = None) -> None:
        self.path = Path(path)
        self.roll_bytes = ROLL_BYTES if roll_bytes is None else roll_bytes
        self._packing = packing
        self._lock = threading.Lock()
        left = segment_paths(self.path)
        packing.adopt(self.path)  # a killed run's segments go before this run's
        self._next = _number(left[-1]) + 1 if left else 1
        self._writer = JsonlAppender(self.path)

    def append(self, row: dict[str, Any]) -> None:
        with self._lock:
            self._writer.append(row)
            if self.roll_bytes > 0:
                self._maybe_roll()

    def _maybe_roll(self) -> None:
        try:
            if self._writer.size < self.roll_bytes:  # counted by the writer: no stat per call
                return
            segment = segment_path(self.path, self._next)
            os.rename(self.path, segment)
        except OSError:
            return  # keep writing the open file: it is packed at the end instead
        try:
            fresh = JsonlAppender(self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.rename(segment, self.path)  # no new file could be made: go on with this one
            return
        self._next += 1
        closed, self._writer = self._writer, fresh
        self._packing.submit(self.path, segment, closed)

    def close(self) -> None:
        with self._lock:
            self._writer.close()


def _number(segment: Path) -> int:
    return int(segment.name.rsplit(SEGMENT_MARK, 1)[1])
