"""Structured audit events (`audit_fallbacks.jsonl`) and their summary (guide §9, §12)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from w2c_tui.store.jsonl import BadLine, JsonlAppender, StorageError, iter_rows
from w2c_tui.store.layout import SessionPaths
from w2c_tui.timestamps import utc_now

SEVERITIES = ("info", "warning", "error")

# Event types that replace a model's answer with one we chose; counted as "forced".
# A missing prediction is not one: it is left out of the headline metrics (metrics/compute.py).
FORCED_TYPES = frozenset(
    {
        "judge_json_parse_failed_second_fallback_to_cannot_answer",
        "all_logprobs_-inf_string_fallback",
        "invalid_label_coercion_to_cannot_answer",
    }
)

# Event types that say "no answer for this UUID yet": a later row for the UUID (a resume)
# resolves them. They stay in the file as history; summaries count them as resolved.
RESOLVABLE_TYPES = frozenset({"missing_prediction_uuid", "api_call_failed_example_skipped"})


@dataclass(frozen=True)
class AuditContext:
    """The common fields every event of one pipeline carries."""

    run_key: str
    session_fingerprint: str
    exp_name: str
    api_seed: int


class AuditLog:
    """Appends events for one pipeline; `listeners` see each event as it is written."""

    def __init__(self, path: Path, context: AuditContext) -> None:
        self.path = Path(path)
        self.context = context
        self._appender: JsonlAppender | None = None
        self.listeners: list[Callable[[dict[str, Any]], None]] = []
        self._bad_lines_seen: set[tuple[Path, int]] = set()  # a file is read more than once per launch
        self.write_error: StorageError | None = None

    @classmethod
    def of_pipeline(
        cls, paths: SessionPaths, exp_name: str, api_seed: int, listener: Callable[[dict[str, Any]], None] | None = None
    ) -> AuditLog:
        """The log of one pipeline of a session: its file, and the fields the folder names (run key,
        fingerprint) on every event; `listener` (a live view) sees each event as it is written."""
        log = cls(paths.audit_file(exp_name), AuditContext(paths.run_key, paths.fingerprint, exp_name, api_seed))
        if listener is not None:
            log.listeners.append(listener)
        return log

    def emit(
        self,
        fallback_type: str,
        *,
        uuid: str | None = None,
        pipeline: str | None = None,
        stage: str = "",
        severity: str = "warning",
        details: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        event = {
            "ts_utc": utc_now(),
            "run_key": self.context.run_key,
            "session_fingerprint": self.context.session_fingerprint,
            "exp_name": self.context.exp_name,
            "api_seed": self.context.api_seed,
            "uuid": uuid,
            "pipeline": pipeline or self.context.exp_name,
            "stage": stage,
            "fallback_type": fallback_type,
            "severity": severity if severity in SEVERITIES else "warning",
            "details": details or {},
        }
        try:
            if self._appender is None:
                self._appender = JsonlAppender(self.path)
            self._appender.append(event)
        except StorageError as exc:
            # Events are often written while handling another failure; a full disk must not
            # replace that failure. The first write error is kept for whoever ends the run.
            self.write_error = self.write_error or exc
        for listener in self.listeners:
            listener(event)
        return event

    def bad_line_reporter(self, stage: str = "resume") -> Callable[[BadLine], None]:
        """A callback for readers: a torn or corrupt checkpoint line becomes an event (once per launch)."""

        def report(bad: BadLine) -> None:
            if (bad.path, bad.line) in self._bad_lines_seen:
                return
            self._bad_lines_seen.add((bad.path, bad.line))
            self.emit(
                "checkpoint_line_torn" if bad.torn else "checkpoint_line_corrupt",
                stage=stage,
                severity="warning",
                details={"file": bad.path.name, "line": bad.line, "reason": bad.reason},
            )

        return report

    def close(self) -> None:
        if self._appender is not None:
            self._appender.close()
            self._appender = None


def read_events(path: Path) -> list[dict[str, Any]]:
    return list(iter_rows(path))


def resolved_events(events: list[dict[str, Any]], obtained: Iterable[str]) -> set[int]:
    """Positions in `events` of the events a later row has superseded.

    For a UUID that has a row now: every `missing_prediction_uuid` and
    `api_call_failed_example_skipped` event, and every other event written no later than
    the last of those (it belongs to an attempt that produced no row, e.g. a judge retry
    before the request failed). Events after it describe the row that exists and stay.
    """
    have = set(obtained)
    last_gap: dict[str, str] = {}
    for event in events:
        uuid = event.get("uuid")
        if uuid in have and str(event.get("fallback_type")) in RESOLVABLE_TYPES:
            last_gap[uuid] = max(last_gap.get(uuid, ""), str(event.get("ts_utc") or ""))
    found = set()
    for index, event in enumerate(events):
        uuid = event.get("uuid")
        if uuid not in last_gap:
            continue
        if str(event.get("fallback_type")) in RESOLVABLE_TYPES or str(event.get("ts_utc") or "") <= last_gap[uuid]:
            found.add(index)
    return found


def summarize(events: Iterable[dict[str, Any]], obtained: Iterable[str] | None = None) -> dict[str, Any]:
    """Counts of guide §12 over the events still outstanding, plus what resumes resolved.

    `obtained` are the UUIDs that have a row in the pipeline's checkpoint now; events a
    later row superseded (`resolved_events`) are history: counted in `resolved_by_resume`
    and left out of the other counts. Without `obtained` every event counts.
    """
    events = list(events)
    resolved_at = resolved_events(events, obtained or ())
    outstanding = [e for i, e in enumerate(events) if i not in resolved_at]
    resolved = Counter(str(events[i].get("fallback_type")) for i in resolved_at)
    summary = _counts(outstanding)
    summary["resolved_by_resume"] = dict(sorted(resolved.items()))
    summary["n_resolved_events"] = sum(resolved.values())
    summary["n_outstanding_missing"] = sum(
        1 for e in outstanding if e.get("fallback_type") == "missing_prediction_uuid"
    )
    summary["history_total_events"] = len(events)
    return summary


def _counts(events: list[dict[str, Any]]) -> dict[str, Any]:
    by_type: Counter[str] = Counter()
    by_stage: Counter[str] = Counter()
    by_severity: Counter[str] = Counter()
    uuids: set[str] = set()
    forced_uuids: set[str] = set()
    forced = 0
    for event in events:
        kind = str(event.get("fallback_type") or "unknown")
        by_type[kind] += 1
        by_stage[str(event.get("stage") or "")] += 1
        by_severity[str(event.get("severity") or "")] += 1
        uuid = event.get("uuid")
        if uuid:
            uuids.add(uuid)
        if kind in FORCED_TYPES:
            forced += 1
            if uuid:
                forced_uuids.add(uuid)
    return {
        "total_events": len(events),
        "n_uuids_affected": len(uuids),
        "by_fallback_type": dict(sorted(by_type.items())),
        "by_stage": dict(sorted(by_stage.items())),
        "by_severity": dict(sorted(by_severity.items())),
        "forced_fallback_events": forced,
        "forced_fallback_uuids": len(forced_uuids),
    }
