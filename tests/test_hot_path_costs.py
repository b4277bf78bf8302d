"""Fixed costs taken off the hot path (issue 25) keep what they replaced: file lengths, TLS, prompts."""

from __future__ import annotations

import os
from pathlib import Path

from w2c_tui.prompts.system import tool_lines
from w2c_tui.store.jsonl import JsonlAppender, dumps
from w2c_tui.store.trace_rollover import RollingTrace


def test_the_appender_counts_the_bytes_of_the_file_it_writes(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"uuid": "a"}\n{"uuid": "b", "cut')  # a killed writer's torn tail
    with JsonlAppender(path) as writer:
        assert writer.size == path.stat().st_size  # the repaired tail's newline counted
        for n in range(5):
            writer.append({"uuid": str(n), "text": "é" * n})
            assert writer.size == path.stat().st_size
    expected = b'{"uuid": "a"}\n{"uuid": "b", "cut\n' + b"".join(
        (dumps({"uuid": str(n), "text": "é" * n}) + "\n").encode() for n in range(5)
    )
    assert path.read_bytes() == expected


class _Queued:
    """Packing that only remembers what it was given."""

    def __init__(self) -> None:
        self.segments: list[Path] = []

    def adopt(self, path: Path) -> None:
        pass

    def submit(self, path: Path, segment: Path, writer: JsonlAppender | None = None) -> None:
        self.segments.append(segment)
        if writer is not None:
            writer.close()


def test_the_trace_rolls_over_at_its_size_without_a_stat_per_call(tmp_path, monkeypatch):
    path = tmp_path / "llm_calls" / "mcq.jsonl"
    packing = _Queued()
    trace = RollingTrace(path, packing, roll_bytes=1_000)  # type: ignore[arg-type]

    stats = []
    real_stat = os.stat

    def counted_stat(target, *args, **kwargs):
        stats.append(str(target))
        return real_stat(target, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counted_stat)
    for n in range(30):
        trace.append({"uuid": f"u{n}", "request": "x" * 100})
    monkeypatch.undo()
    trace.close()
    assert str(path) not in stats  # the writer counts what it wrote
    assert packing.segments, "no rollover"
    assert all(segment.stat().st_size >= 1_000 for segment in packing.segments)
    lines = b"".join(s.read_bytes() for s in packing.segments) + path.read_bytes()
    assert lines.count(b"\n") == 30  # every record once, whole


def test_tool_lines_are_the_same_from_the_cache():
    tools = ['{"name":  "a", "d": "é"}', '{"name": "b"}']
    first = tool_lines(tools)
    assert first == '<tool>{"name": "a", "d": "é"}</tool>\n<tool>{"name": "b"}</tool>'
    assert tool_lines(list(reversed(tools))) == "\n".join(reversed(first.split("\n")))
    assert tool_lines(tools) == first and tool_lines([]) == ""
