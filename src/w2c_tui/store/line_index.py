"""Line indexes of big JSONL files: uuid -> byte ranges of its lines, read back a few at a time.

Call traces and per-choice debug rows can be large, so they are never loaded whole: one
pass records where each UUID's lines are (and, for call traces, latency and status), and
an opened trace seeks to just those lines.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_UUID = re.compile(rb'"uuid"\s*:\s*"([^"]*)"')
_LATENCY = re.compile(rb'"latency_ms"\s*:\s*([0-9.eE+-]+)')
_STATUS = re.compile(rb'"status"\s*:\s*(\d+|null)')


@dataclass
class LineIndex:
    """uuid -> (offset, length) of each of its lines in one JSONL file."""

    path: Path
    spans: dict[str, list[tuple[int, int]]]
    latencies_ms: list[float]
    statuses: Counter
    n_lines: int

    @classmethod
    def build(cls, path: Path, *, call_stats: bool = False) -> "LineIndex":
        spans: dict[str, list[tuple[int, int]]] = defaultdict(list)
        latencies: list[float] = []
        statuses: Counter = Counter()
        n_lines = 0
        path = Path(path)
        if path.exists():
            offset = 0
            with path.open("rb") as fh:
                for line in fh:
                    length = len(line)
                    n_lines += 1
                    uuid = line_uuid(line)
                    if uuid:
                        spans[uuid].append((offset, length))
                    if call_stats:
                        add_call_stats(line, latencies, statuses)
                    offset += length
        return cls(path, dict(spans), latencies, statuses, n_lines)

    def rows(self, uuid: str) -> list[dict[str, Any]]:
        found = []
        spans = self.spans.get(uuid, [])
        if not spans:
            return found
        with self.path.open("rb") as fh:
            for offset, length in spans:
                fh.seek(offset)
                try:
                    row = json.loads(fh.read(length))
                except ValueError:
                    continue  # a torn line
                if isinstance(row, dict):
                    found.append(row)
        return found


def line_uuid(line: bytes) -> str | None:
    """The row's "uuid" (the first one: it comes before a call record's request body)."""
    match = _UUID.search(line)
    return match.group(1).decode("utf-8", "replace") if match else _uuid_by_json(line)


def add_call_stats(line: bytes, latencies: list[float], statuses: Counter) -> None:
    """Count a call record's latency and status without parsing its (large) bodies."""
    # The last occurrence: "latency_ms" and "status" come after the request body.
    lat = _last(_LATENCY, line)
    if lat is not None:
        try:
            latencies.append(float(lat))
        except ValueError:
            pass
    status = _last(_STATUS, line)
    statuses[status.decode() if status else "?"] += 1


def _last(pattern: re.Pattern[bytes], line: bytes) -> bytes | None:
    # Search only the tail first: these keys sit at the end of a call record.
    tail = line[-400:]
    matches = pattern.findall(tail) or pattern.findall(line)
    return matches[-1] if matches else None


def _uuid_by_json(line: bytes) -> str | None:
    try:
        row = json.loads(line)
    except ValueError:
        return None
    value = row.get("uuid") if isinstance(row, dict) else None
    return value if isinstance(value, str) else None
