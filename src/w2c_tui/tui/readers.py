"""Reading one session from disk for the UI: per-UUID rows, call traces, audit events.

Everything here is blocking file work meant for thread workers. Big files are never
loaded whole: call traces and per-choice debug rows are indexed once (uuid -> byte
ranges of its lines) and read back a few lines at a time when a trace is opened.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from w2c_tui.labels import LABELS
from w2c_tui.store.audit import read_events, resolved_events, summarize
from w2c_tui.store.browse import SessionInfo, read_session
from w2c_tui.store.checkpoints import PRIMARY_FILES, predicted_label, primary_file  # noqa: F401 - re-exported
from w2c_tui.store.dataset_lookup import dataset_candidates
from w2c_tui.store.dataset_lookup import load_dataset as _load_dataset
from w2c_tui.store.jsonl import read_keyed
from w2c_tui.store.layout import LOGPROB_DEBUG, TARGET_RESPONSES

# Audit event type -> the short marker shown in the examples table.
EVENT_MARKERS = {
    "judge_json_parse_failed_first": "judge-retry",
    "judge_json_parse_failed_second_fallback_to_cannot_answer": "judge→can",
    "all_logprobs_-inf_string_fallback": "lp→string",
    "token_prefix_mismatch_lcp_split": "lcp",
    "missing_prediction_uuid": "missing",
    "invalid_label_coercion_to_cannot_answer": "coerced",
    "api_call_failed_example_skipped": "api-fail",
}


def row_markers(exp_name: str, row: dict[str, Any] | None) -> set[str]:
    """Fallback markers readable from the checkpoint row itself (older sessions lack events)."""
    if not row:
        return set()
    found = set()
    if row.get("judge_fallback_to_cannot_answer"):
        found.add("judge→can")
    elif row.get("judge_used_retry"):
        found.add("judge-retry")
    if row.get("mode") == "string_fallback":
        found.add("lp→string")
    if row.get("used_lcp_split") is True:
        found.add("lcp")
    return found


# ---------------------------------------------------------------------------------------
# Per-UUID rows


@dataclass
class ExampleRow:
    uuid: str
    gold: str | None
    predictions: dict[str, str | None]
    markers: tuple[str, ...]
    search_text: str

    def is_correct(self, exp_name: str) -> bool | None:
        predicted = self.predictions.get(exp_name)
        if predicted is None or self.gold is None:
            return None
        return predicted == self.gold


@dataclass
class SessionRows:
    """Everything the examples table, the charts and the compare screen need."""

    info: SessionInfo
    exp_names: list[str]
    rows: list[ExampleRow]
    primary: dict[str, dict[str, dict[str, Any]]]
    events_by_uuid: dict[str, list[dict[str, Any]]]
    examples: dict[str, Any]  # uuid -> data.Example, when the dataset file was found
    dataset_path: Path | None
    audit_summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    _by_uuid: dict[str, ExampleRow] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_uuid = {r.uuid: r for r in self.rows}

    def row(self, uuid: str) -> ExampleRow | None:
        return self._by_uuid.get(uuid)


def _dataset_candidates(info: SessionInfo) -> list[Path]:
    return dataset_candidates(info.manifest, info.paths.root)


def load_dataset(info: SessionInfo, uuids: set[str]) -> tuple[dict[str, Any], Path | None]:
    """The session's examples (question, tools, answers) from the first dataset that has them."""
    return _load_dataset(info.manifest, info.paths.root, uuids)


def load_session_rows(root: Path | SessionInfo) -> SessionRows:
    """Read one session's predictions and audit events into per-UUID rows. Blocking."""
    info = root if isinstance(root, SessionInfo) else read_session(Path(root))
    exp_names = [p.exp_name for p in info.pipelines] or info.paths.exp_names()
    primary: dict[str, dict[str, dict[str, Any]]] = {}
    for exp_name in exp_names:
        path = primary_file(info.paths.root, exp_name)
        primary[exp_name] = read_keyed(path) if path else {}

    events_by_uuid: dict[str, list[dict[str, Any]]] = defaultdict(list)
    summaries: dict[str, dict[str, Any]] = {}
    resolved_ids: set[int] = set()
    for exp_name in exp_names:
        events = read_events(info.paths.audit_file(exp_name))
        obtained = primary[exp_name].keys()
        resolved_at = resolved_events(events, obtained)
        for index, event in enumerate(events):
            uuid = event.get("uuid")
            if isinstance(uuid, str):
                events_by_uuid[uuid].append(event)
                if index in resolved_at:
                    resolved_ids.add(id(event))
        # From the events and rows on disk, so a resume's resolutions show even in older sessions.
        summaries[exp_name] = summarize(events, obtained)

    uuids = set().union(*(rows.keys() for rows in primary.values())) if primary else set()
    examples, dataset_path = load_dataset(info, uuids)
    uuids |= set(examples)

    rows = []
    for uuid in sorted(uuids):
        example = examples.get(uuid)
        gold = example.correct_answer if example is not None else None
        predictions: dict[str, str | None] = {}
        markers: set[str] = set()
        for exp_name in exp_names:
            row = primary[exp_name].get(uuid)
            if gold is None and row and row.get("gold_label") in LABELS:
                gold = row["gold_label"]
            predictions[exp_name] = predicted_label(exp_name, row)
            markers |= row_markers(exp_name, row)
        for event in events_by_uuid.get(uuid, ()):
            if id(event) in resolved_ids:
                continue  # a resume obtained the answer: history, not a marker
            marker = EVENT_MARKERS.get(str(event.get("fallback_type")))
            if marker:
                markers.add(marker)
        question = example.question if example is not None else ""
        rows.append(ExampleRow(uuid, gold, predictions, tuple(sorted(markers)), f"{uuid} {question}".lower()))
    return SessionRows(info, exp_names, rows, primary, dict(events_by_uuid), examples, dataset_path, summaries)


# ---------------------------------------------------------------------------------------
# Line indexes for big JSONL files

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
                    match = _UUID.search(line)
                    uuid = match.group(1).decode("utf-8", "replace") if match else _uuid_by_json(line)
                    if uuid:
                        spans[uuid].append((offset, length))
                    if call_stats:
                        # The last occurrence: "latency_ms" and "status" come after the request body.
                        lat = _last(_LATENCY, line)
                        if lat is not None:
                            try:
                                latencies.append(float(lat))
                            except ValueError:
                                pass
                        status = _last(_STATUS, line)
                        statuses[status.decode() if status else "?"] += 1
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


# ---------------------------------------------------------------------------------------
# One example's whole story


@dataclass
class PipelineTrace:
    exp_name: str
    row: dict[str, Any] | None
    target: dict[str, Any] | None = None  # llm_judge: the target's answer
    choices: list[dict[str, Any]] = field(default_factory=list)  # mcq_logprob: per-choice debug rows
    calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class TraceDetail:
    uuid: str
    gold: str | None
    example: Any | None
    pipelines: list[PipelineTrace]
    events: list[dict[str, Any]]


class SessionData:
    """One open session: its rows plus lazily built indexes, shared by its screens."""

    def __init__(self, rows: SessionRows) -> None:
        self.rows = rows
        self.info = rows.info
        self._lock = threading.Lock()
        self._call_indexes: dict[str, LineIndex] = {}
        self._debug_index: LineIndex | None = None
        self._targets: dict[str, dict[str, Any]] | None = None

    @classmethod
    def load(cls, root: Path | SessionInfo) -> "SessionData":
        return cls(load_session_rows(root))

    def call_index(self, exp_name: str) -> LineIndex:
        with self._lock:
            index = self._call_indexes.get(exp_name)
            if index is None:
                index = LineIndex.build(self.info.paths.calls_file(exp_name), call_stats=True)
                self._call_indexes[exp_name] = index
            return index

    def debug_index(self) -> LineIndex:
        with self._lock:
            if self._debug_index is None:
                path = self.info.paths.checkpoint_file("mcq_logprob", LOGPROB_DEBUG)
                self._debug_index = LineIndex.build(path)
            return self._debug_index

    def target_responses(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            if self._targets is None:
                self._targets = read_keyed(self.info.paths.checkpoint_file("llm_judge", TARGET_RESPONSES))
            return self._targets

    def index_all_calls(self) -> None:
        """Warm every call index (in the background, before the user opens a trace)."""
        for exp_name in self.rows.exp_names:
            self.call_index(exp_name)

    def latencies_ms(self) -> list[float]:
        values: list[float] = []
        for exp_name in self.rows.exp_names:
            values.extend(self.call_index(exp_name).latencies_ms)
        return values

    def trace(self, uuid: str) -> TraceDetail:
        """Everything recorded about one example. Blocking: a few seeks per file."""
        rows = self.rows
        example_row = rows.row(uuid)
        pipelines = []
        for exp_name in rows.exp_names:
            trace = PipelineTrace(exp_name, rows.primary.get(exp_name, {}).get(uuid))
            if exp_name == "llm_judge":
                trace.target = self.target_responses().get(uuid)
            if exp_name == "mcq_logprob":
                # Resumed runs may have written a UUID twice: keep the last row per choice.
                latest = {str(r.get("answer_name")): r for r in self.debug_index().rows(uuid)}
                trace.choices = list(latest.values())
            trace.calls = self.call_index(exp_name).rows(uuid)
            pipelines.append(trace)
        events = sorted(rows.events_by_uuid.get(uuid, []), key=lambda e: str(e.get("ts_utc", "")))
        return TraceDetail(
            uuid=uuid,
            gold=example_row.gold if example_row else None,
            example=rows.examples.get(uuid),
            pipelines=pipelines,
            events=events,
        )


def stability_entropies(rows: SessionRows) -> dict[str, list[float]]:
    """Normalised entropy of every example, per stability sweep."""
    found: dict[str, list[float]] = {}
    for exp_name in rows.exp_names:
        if not exp_name.startswith("stability_"):
            continue
        values = [r.get("normalized_entropy") for r in rows.primary.get(exp_name, {}).values()]
        found[exp_name] = [float(v) for v in values if isinstance(v, (int, float))]
    return found
