"""RunState: live counters of a running session, cheap to read several times a second.

The engine and the API client write into it; the TUI and the headless progress printer
take `snapshot()`s on a timer instead of receiving one message per example.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Callable

from w2c_tui.labels import LABELS
from w2c_tui.status import QUEUED, RUNNING, session_status
from w2c_tui.store.usage import LiveUsage

_LATENCY_WINDOW = 2000  # most recent latencies kept for p50/p95
_RATE_WINDOW_SECONDS = 10.0


@dataclass
class PipelineProgress:
    exp_name: str
    total: int = 0
    done: int = 0  # rows checkpointed, including those found on resume
    resumed: int = 0  # of `done`, rows found on disk when this launch started (not done now)
    failed: int = 0
    failure_causes: Counter = field(default_factory=Counter)  # why examples failed: cause -> count
    last_failure: str = ""  # the latest failed example's reason, in the server's words
    status: str = "queued"  # queued, running, then a w2c_tui.status word (complete, partial, cancelled, failed)
    message: str = ""
    started_at: float | None = None
    finished_at: float | None = None
    correct: int = 0
    scored: int = 0
    answers: int = 0  # readable chat answers the pipeline got (target and judge alike)
    empty_answers: int = 0  # of those, answers with no text and no tool call (content null)
    cut_answers: int = 0  # of the empty ones, those that stopped at max_tokens (finish_reason length)
    forced_labels: int = 0  # rows whose judge gave no readable label (llm_judge: left out, or cannot_answer by judge_unreadable_as), at finalize
    confusion: list[list[int]] = field(default_factory=lambda: [[0] * 4 for _ in LABELS])
    _finish_times: deque = field(default_factory=lambda: deque(maxlen=4096), repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

    def record(self, gold: str, predicted: str | None, *, resumed: bool = False) -> None:
        """One row done; `resumed` rows were found on disk, so they count as done but not in the rate."""
        self.done += 1
        if resumed:
            self.resumed += 1
        else:
            self._finish_times.append(self.clock())
        if predicted in LABELS and gold in LABELS:
            self.scored += 1
            self.correct += predicted == gold
            self.confusion[LABELS.index(gold)][LABELS.index(predicted)] += 1

    def rate(self, now: float) -> float:
        """Examples done in this launch per second, over the last 10 s (or since this pipeline started)."""
        recent = [t for t in self._finish_times if now - t <= _RATE_WINDOW_SECONDS]
        if not recent:
            return 0.0
        since = self.started_at if self.started_at is not None else recent[0]
        span = now - max(now - _RATE_WINDOW_SECONDS, since)
        if span < 1.0:
            return 0.0  # under a second of work says nothing yet (and would divide by ~0)
        return len(recent) / span

    def eta_seconds(self, now: float) -> float | None:
        """Seconds left at the current rate; None when not running or no rate yet."""
        rate = self.rate(now)
        if self.status != "running" or rate <= 0:
            return None
        return max(self.total - self.done - self.failed, 0) / rate

    def accuracy(self) -> float | None:
        return self.correct / self.scored if self.scored else None

    def macro_f1(self) -> float | None:
        """Macro-F1 over labels present in gold or predictions (the reported `macro_f1`)."""
        if not self.scored:
            return None
        f1s = []
        for i, _ in enumerate(LABELS):
            tp = self.confusion[i][i]
            gold = sum(self.confusion[i])
            pred = sum(row[i] for row in self.confusion)
            if gold == 0 and pred == 0:
                continue
            f1s.append(2 * tp / (gold + pred) if gold + pred else 0.0)
        return sum(f1s) / len(f1s) if f1s else None


class RunState:
    """Thread-safe counters; the API client calls the `on_*` observer methods."""

    def __init__(self, label: str = "", *, clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self._clock = clock  # injected by tests of the rate and ETA arithmetic
        self.session_dir: str = ""
        self.simulated = False
        self.started = clock()
        self.finished: float | None = None
        self.pipelines: dict[str, PipelineProgress] = {}
        self._lock = threading.Lock()
        self.in_flight = 0
        self.requests = 0
        self.errors = 0  # requests that ended without a usable answer (a cancel is not one)
        self.cancelled_requests = 0
        self.retries: Counter[str] = Counter()
        self.usage = LiveUsage()  # answered requests and tokens per pipeline and model (store/usage.py)
        self.waits: dict[str, tuple[str, float]] = {}  # provider -> (cause, until monotonic)
        self.max_concurrency = 0
        # provider -> live pacing (limit, in flight, 429s, waits): the session's client.pacing
        self.pacing_source: Callable[[], dict[str, dict[str, Any]]] | None = None
        self._latencies: deque[float] = deque(maxlen=_LATENCY_WINDOW)
        self._request_times: deque[float] = deque(maxlen=20000)
        self.events: deque[dict[str, Any]] = deque(maxlen=1000)
        self.event_count = 0
        self.compat: list[str] = []
        self.empty_answers = 0
        # Answers that are no answer (a web page, a redirect, a string for an object), by kind,
        # with the first one's message: said once per kind, never once per request.
        self.bad_answers: Counter[str] = Counter()
        self.bad_answer_messages: dict[str, str] = {}
        self.mlflow_ids: dict[str, Any] | None = None
        self.first_request_at: float | None = None
        # queued -> evaluating -> tracking (MLflow) -> finished
        self.phase = "queued"
        self.last_request_at: float | None = None

    # -- pipelines ---------------------------------------------------------------
    def pipeline(self, exp_name: str) -> PipelineProgress:
        with self._lock:
            if exp_name not in self.pipelines:
                self.pipelines[exp_name] = PipelineProgress(exp_name, clock=self._clock)
            return self.pipelines[exp_name]

    def add_event(self, event: dict[str, Any]) -> None:
        with self._lock:
            self.events.append(event)
            self.event_count += 1

    # -- API observer ------------------------------------------------------------
    def on_request_start(self, provider: str) -> None:
        with self._lock:
            self.in_flight += 1
            if self.first_request_at is None:
                self.first_request_at = self._clock()

    def on_request_end(self, provider: str, latency_ms: float, ok: bool) -> None:
        now = self._clock()
        with self._lock:
            self.in_flight -= 1
            self.requests += 1
            self.last_request_at = now
            self._request_times.append(now)
            self._latencies.append(latency_ms / 1000.0)
            if not ok:
                self.errors += 1

    def on_request_cancelled(self, provider: str) -> None:
        """Stopped by a cancel before an answer: not an error, not a finished request."""
        with self._lock:
            self.in_flight -= 1
            self.cancelled_requests += 1

    def on_retry_wait(self, provider: str, cause: str, seconds: float, ctx: Any = None) -> None:
        with self._lock:
            self.retries[cause] += 1
            self.waits[provider] = (cause, self._clock() + seconds)

    def on_chat_answer(self, exp_name: str | None, empty: bool, *, cut: bool = False) -> None:
        with self._lock:
            progress = self.pipelines.get(exp_name) if exp_name else None
            if progress is not None:
                progress.answers += 1
                progress.empty_answers += empty
                progress.cut_answers += cut
            self.empty_answers += empty

    def on_bad_answer(self, kind: str, message: str) -> None:
        with self._lock:
            self.bad_answers[kind] += 1
            self.bad_answer_messages.setdefault(kind, message)

    def on_compat(self, provider: str, kind: str, details: str) -> None:
        with self._lock:
            self.compat.append(f"{provider}: {kind}")

    # -- reading -----------------------------------------------------------------
    def _status(self) -> str:
        """The session's one status word: `running` until the launch ends, then the word its
        files say (w2c_tui.status: the worst of its pipelines', a refused one counting as failed)."""
        if self.finished is None:
            return RUNNING
        ended = [p.status for p in self.pipelines.values() if p.status != QUEUED]
        return session_status(ended)

    def snapshot(self) -> dict[str, Any]:
        now = self._clock()
        usage = self.usage.snapshot()  # its own lock: tokens in and out are its totals
        with self._lock:
            latencies = sorted(self._latencies)
            recent = sum(1 for t in self._request_times if now - t <= _RATE_WINDOW_SECONDS)
            window = min(_RATE_WINDOW_SECONDS, max(now - self.started, 1e-6))
            waits = {
                provider: {"cause": cause, "seconds_left": round(until - now, 1)}
                for provider, (cause, until) in self.waits.items()
                if until > now
            }
            pipelines = {}
            for name, p in self.pipelines.items():
                rate = p.rate(now)
                pipelines[name] = {
                    "exp_name": name,
                    "total": p.total,
                    "done": p.done,
                    "resumed": p.resumed,
                    "failed": p.failed,
                    "status": p.status,
                    "message": p.message,
                    "last_failure": p.last_failure,
                    "rate": rate,
                    "eta_seconds": p.eta_seconds(now),
                    "accuracy": p.accuracy(),
                    "macro_f1": p.macro_f1(),
                    "confusion": [row[:] for row in p.confusion],
                    "answers": p.answers,
                    "empty_answers": p.empty_answers,
                    "cut_answers": p.cut_answers,
                    "forced_labels": p.forced_labels,
                }
            return {
                "label": self.label,
                "session_dir": self.session_dir,
                "simulated": self.simulated,
                "elapsed": (self.finished or now) - self.started,
                "finished": self.finished is not None,
                "status": self._status(),
                "phase": self.phase,
                "in_flight": self.in_flight,
                "max_concurrency": self.max_concurrency,
                "requests": self.requests,
                "errors": self.errors,
                "cancelled_requests": self.cancelled_requests,
                "requests_per_second": recent / window,
                "request_window_seconds": (
                    (self.last_request_at or now) - self.first_request_at if self.first_request_at else 0.0
                ),
                "latency_p50": _quantile(latencies, 0.5),
                "latency_p95": _quantile(latencies, 0.95),
                "retries": dict(self.retries),
                "retries_total": sum(self.retries.values()),
                "waits": waits,
                "tokens_in": usage["total"]["prompt_tokens"],
                "tokens_out": usage["total"]["completion_tokens"],
                "usage": usage,
                "pacing": self.pacing_source() if self.pacing_source is not None else {},
                "pipelines": pipelines,
                "event_count": self.event_count,
                "recent_events": list(self.events)[-50:],
                "compat": list(self.compat),
                "empty_answers": self.empty_answers,
                "bad_answers": dict(self.bad_answers),
                "bad_answer_messages": dict(self.bad_answer_messages),
            }


def _quantile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]
