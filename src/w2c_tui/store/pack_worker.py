"""A child process that packs closed call-trace segments, so packing runs on another core.

Packing a segment is reading its lines, grouping them by example and compressing them
with zstd, which is C code (~0.5 ms of CPU for a 445 KB echo, ~0.02 ms for a chat record);
a child keeps even that off the process whose event loop makes the calls. The run starts
one worker (`PackWorker`) and sends it one job at a time as a JSON line on stdin,
`["segment", trace, segment]`; the worker packs it (`call_files.TracePacker`, one per
trace, kept between jobs so the `.zst` is read once, not once a segment) and answers
`["ok"]` or `["error", reason]`. It ends when its stdin closes (also when the run's process
dies: it finishes the segment at hand first).

    python -m w2c_tui.store.pack_worker
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

from w2c_tui.store.call_files import TracePacker


class PackWorker:
    """The run's side: starts the child on the first job; `pack` blocks until it is done (call it in a thread)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None

    def pack(self, trace: Path, segment: Path) -> None:
        """Raises OSError when the child cannot be started or reached, RuntimeError when packing failed."""
        if self._process is None:
            # Its own session: a Ctrl+C meant for the run does not cut a segment short (the run
            # then closes its stdin); stderr discarded: nothing may write over the TUI.
            self._process = subprocess.Popen(
                [sys.executable, "-m", "w2c_tui.store.pack_worker"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True, bufsize=1, start_new_session=True,
            )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(["segment", str(trace), str(segment)]) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise OSError("the packing process ended")
        reply = json.loads(line)
        if reply[0] != "ok":
            raise RuntimeError(reply[1] if len(reply) > 1 else "packing failed")

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.stdin is not None:
                process.stdin.close()
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()  # what it appended is whole or cut off by the next packing
                process.wait()
            if process.stdout is not None:
                process.stdout.close()


def main() -> None:
    packers: dict[str, TracePacker] = {}
    for line in sys.stdin:
        try:
            _, trace, segment = json.loads(line)
            packer = packers.get(trace)
            if packer is None:
                packer = packers[trace] = TracePacker(Path(trace))
            # Packing makes no cycles: the collector has nothing to find (it cost ~10% when
            # lines were parsed to be compacted; they are now copied as they are).
            gc.disable()
            try:
                packer.pack_file(Path(segment))
            finally:
                gc.enable()
            reply = ["ok"]
        except Exception as exc:  # noqa: BLE001 - the segment stays whole; the run packs it at its end
            reply = ["error", f"{type(exc).__name__}: {exc}"]
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
