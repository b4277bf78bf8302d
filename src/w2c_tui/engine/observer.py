"""Bridges the API client to a session: call traces on disk, counters in RunState."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

from w2c_tui.api.compat import CHAT_ENDPOINT
from w2c_tui.api.results import finish_reason, is_empty_answer
from w2c_tui.api.trace import CallContext
from w2c_tui.engine.pacing import PacingAudit
from w2c_tui.engine.state import RunState
from w2c_tui.store.audit import AuditLog
from w2c_tui.store.call_files import pack_calls, segment_paths
from w2c_tui.store.layout import SessionPaths
from w2c_tui.store.trace_rollover import BackgroundPacking, RollingTrace

GENERATION_ENDPOINTS = ("/chat/completions", "/completions")  # not /models or /tokenize


class SessionObserver:
    """Receives every attempt (already redacted) and writes it to llm_calls/<exp>.jsonl."""

    def __init__(self, paths: SessionPaths, state: RunState) -> None:
        self.paths = paths
        self.state = state
        self._traces: dict[str, RollingTrace] = {}
        self._packing = BackgroundPacking()  # packs rolled-over segments while the run goes on
        self._closed_traces: list[Path] = []  # their rest is packed by `pack_traces` once the run is over
        self.audit_logs: dict[str, AuditLog] = {}  # exp_name -> its audit log, filled by the runner
        self._target: str | None = None
        self._on_target_answer: Callable[[str, str, Any, Any], None] | None = None
        self._answered: set[str] = set()  # exp_names that got their first target answer
        self._pacing_audit = PacingAudit()

    def watch_target(self, model: str, callback: Callable[[str, str, Any, Any], None]) -> None:
        """Call `callback(exp_name, endpoint, body, headers)` for each pipeline's first answer of `model`."""
        self._target, self._on_target_answer = model, callback

    def on_response(self, provider: str, endpoint: str, model: str | None, data: Any, headers: Any, ctx: Any) -> None:
        if endpoint == CHAT_ENDPOINT:
            empty = is_empty_answer(data)
            cut = empty and finish_reason(data) == "length"  # e.g. a reasoning model spent max_tokens thinking
            self.state.on_chat_answer(getattr(ctx, "exp_name", None), empty, cut=cut)
        callback = self._on_target_answer
        if callback is None or model != self._target or endpoint not in GENERATION_ENDPOINTS:
            return
        exp_name = getattr(ctx, "exp_name", None) or "_unattributed"
        if exp_name in self._answered:
            return
        self._answered.add(exp_name)
        callback(exp_name, endpoint, data, headers)

    def on_attempt(self, record: dict[str, Any]) -> None:
        exp_name = record.get("exp_name") or "_unattributed"
        writer = self._traces.get(exp_name)
        if writer is None:
            writer = self._traces[exp_name] = RollingTrace(self.paths.calls_file(exp_name), self._packing)
        writer.append(record)
        # The same sums finalize reads back from this trace; counts that cannot be true are said once.
        implausible = self.state.usage.add_record(record)
        audit = self.audit_logs.get(exp_name) if implausible else None
        if audit is not None:
            audit.emit(
                "usage_implausible_counted_unknown",
                stage="request",
                severity="warning",
                details={"provider": record.get("provider"), "usage": implausible, "counted_as": "tokens unknown"},
            )

    def on_retry_wait(self, provider: str, cause: str, seconds: float, ctx: Any = None) -> None:
        self.state.on_retry_wait(provider, cause, seconds, ctx)

    def on_request_start(self, provider: str) -> None:
        self.state.on_request_start(provider)

    def on_request_end(self, provider: str, latency_ms: float, ok: bool) -> None:
        self.state.on_request_end(provider, latency_ms, ok)

    def on_request_cancelled(self, provider: str) -> None:
        self.state.on_request_cancelled(provider)

    def on_limit_change(self, provider: str, change: dict[str, Any], ctx: CallContext | None) -> None:
        audit = self.audit_logs.get(ctx.exp_name) if ctx and ctx.exp_name else None
        self._pacing_audit.on_change(audit, provider, change)

    def on_compat(self, provider: str, kind: str, details: str, ctx: CallContext | None) -> None:
        self.state.on_compat(provider, kind, details)
        # Every later request to this provider is changed too, so the audit says when and why.
        audit = self.audit_logs.get(ctx.exp_name) if ctx and ctx.exp_name else None
        if audit is not None:
            audit.emit(
                "provider_parameter_workaround",
                uuid=ctx.uuid,
                stage="request",
                details={"provider": provider, "workaround": kind, "reason": details},
            )

    def finish_interrupted_packing(self, exp_names: Iterable[str]) -> None:
        """Pack, in the background, the plain trace parts a killed launch left (segments first)."""
        for exp_name in exp_names:
            path = self.paths.calls_file(exp_name)
            if segment_paths(path) or path.is_file():
                self._packing.adopt(path)
                if path not in self._closed_traces:
                    self._closed_traces.append(path)  # its open file too, once this run is over

    def close(self) -> None:
        for writer in self._traces.values():
            writer.close()
        self._closed_traces.extend(w.path for w in self._traces.values() if w.path not in self._closed_traces)
        self._traces.clear()

    def pack_traces(self) -> list[str]:
        """Pack what is left plain of the closed traces into `.jsonl.zst`, after the segments
        packed during the run (blocking: run it in a thread). A trace that cannot be packed
        stays readable as it is; what went wrong is returned, one line a file."""
        self._packing.drain()
        problems = list(self._packing.errors)
        while self._closed_traces:
            path = self._closed_traces.pop()
            try:
                pack_calls(path, packer=self._packing.packer(path))
            except Exception as exc:  # noqa: BLE001 - the plain files stay whole and readable; the next launch packs them
                problems.append(f"{path.name}: {exc}")
        return problems
