"""Token usage and its cost, summed from call records (one place, used live and from disk).

An *answered* request is an HTTP attempt that got a usable 2xx answer (the record has a
status in 200-299 and no error). Each is counted once, whatever pipeline stage sent it:
target, judge and judge repair calls, /completions scoring calls and /tokenize calls.

- A generation call (/chat/completions, /completions) whose answer carries `usage` adds its
  `prompt_tokens` and `completion_tokens`.
- A generation call without `usage` is counted in `requests_without_usage`: its tokens are
  unknown, never guessed, so a total with unknown requests is a lower bound.
- A call whose usage counts cannot be true (negative, fractional, text, NaN, above 10^8 a
  request: `usage_values.py`) is counted the same way, as unknown, and also in
  `requests_implausible_usage`, so that it is said; its counts are never summed or priced.
- Other endpoints (/tokenize, /models) generate nothing and bill nothing: they count as
  requests with 0 tokens unless they report usage themselves.

Failed attempts (429s, 5xx, timeouts, unreadable answers) are not answered requests; their
cost, if a provider bills them, is not in these sums.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from w2c_tui.usage_values import UsageCounts, read_usage
from w2c_tui.store.call_files import iter_calls

GENERATION_ENDPOINTS = ("/chat/completions", "/completions")
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "requests", "requests_without_usage", "requests_implausible_usage")
TARGET, JUDGE = "target", "judge"


@dataclass
class Usage:
    """Sums over answered requests."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    requests_without_usage: int = 0
    requests_implausible_usage: int = 0  # of those without usage: counts that cannot be true

    def add_answer(self, endpoint: str | None, usage: Any) -> str | None:
        """Count one answered request; returns what made its usage implausible, if it was."""
        return self.add_counts(endpoint, read_usage(usage))

    def add_counts(self, endpoint: str | None, counts: UsageCounts) -> str | None:
        """`add_answer` with the usage already read (`usage_values.read_usage`)."""
        self.requests += 1
        if counts.known:
            self.prompt_tokens += counts.prompt
            self.completion_tokens += counts.completion
        elif counts.problem is not None:
            self.requests_without_usage += 1
            self.requests_implausible_usage += 1
        elif endpoint in GENERATION_ENDPOINTS:
            self.requests_without_usage += 1
        return counts.problem

    def add(self, other: "Usage") -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.requests += other.requests
        self.requests_without_usage += other.requests_without_usage
        self.requests_implausible_usage += other.requests_implausible_usage

    def as_dict(self) -> dict[str, int]:
        """The stored form; `requests_implausible_usage` only when there were any (the usual files keep their shape)."""
        return {key: getattr(self, key) for key in USAGE_KEYS if key != "requests_implausible_usage" or self.requests_implausible_usage}

    @classmethod
    def from_dict(cls, data: Any) -> "Usage":
        """Read back a stored `usage` object; anything not a non-negative integer counts 0."""
        data = data if isinstance(data, dict) else {}
        return cls(**{key: _count(data.get(key)) for key in USAGE_KEYS})


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def is_answered(record: Mapping[str, Any]) -> bool:
    status = record.get("status")
    return record.get("error") is None and isinstance(status, int) and 200 <= status < 300


def role_of(record: Mapping[str, Any]) -> str:
    """target or judge: the pipeline stage of the call ("judge", "judge_repair" are the judge's)."""
    stage = record.get("pipeline")
    return JUDGE if isinstance(stage, str) and stage.startswith("judge") else TARGET


@dataclass
class UsageBook:
    """Usage of one pipeline (or a whole session): in total and per model, with each model's role."""

    total: Usage = field(default_factory=Usage)
    by_model: dict[str, Usage] = field(default_factory=dict)
    roles: dict[str, set[str]] = field(default_factory=dict)

    def add_record(self, record: Mapping[str, Any]) -> str | None:
        """Count one call record if it is an answered request; returns what made its usage
        implausible when it did (those tokens count as unknown), else None."""
        if not is_answered(record):
            return None
        endpoint, counts = record.get("endpoint"), read_usage(record.get("usage"))  # read once for both sums
        model = str(record.get("model") or "?")
        problem = self.total.add_counts(endpoint, counts)
        by_model = self.by_model.get(model)
        if by_model is None:
            by_model = self.by_model[model] = Usage()
        by_model.add_counts(endpoint, counts)
        roles = self.roles.get(model)
        if roles is None:
            roles = self.roles[model] = set()
        roles.add(role_of(record))
        return problem

    def merge(self, other: "UsageBook") -> None:
        self.total.add(other.total)
        for model, usage in other.by_model.items():
            self.by_model.setdefault(model, Usage()).add(usage)
            self.roles.setdefault(model, set()).update(other.roles.get(model, set()))

    def models_dict(self) -> dict[str, dict[str, Any]]:
        """model -> its sums and role ("target", "judge", or "target+judge" when it was both)."""
        return {
            model: {"role": "+".join(sorted(self.roles.get(model, {TARGET}), key=[TARGET, JUDGE].index)), **usage.as_dict()}
            for model, usage in sorted(self.by_model.items())
        }

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> "UsageBook | None":
        """The book a metrics.json stored (`usage` and `usage_by_model`), None when it has none."""
        if not isinstance(metrics.get("usage"), dict):
            return None
        book = cls(Usage.from_dict(metrics["usage"]))
        models = metrics.get("usage_by_model")
        for model, data in (models if isinstance(models, dict) else {}).items():
            book.by_model[str(model)] = Usage.from_dict(data)
            role = data.get("role") if isinstance(data, dict) else None
            book.roles[str(model)] = set(role.split("+")) & {TARGET, JUDGE} if isinstance(role, str) else {TARGET}
        return book


def book_of_records(records: Iterable[Mapping[str, Any]]) -> UsageBook:
    book = UsageBook()
    for record in records:
        book.add_record(record)
    return book


def book_of_trace(path: Path) -> UsageBook:
    """Usage from one pipeline's call trace (llm_calls/<exp>.jsonl and its packed .zst or older .gz, every launch).

    Lines that do not parse (a torn last line) are skipped: that attempt's answer was never
    fully recorded. Only top-level fields are read, so an old `.gz`'s compact records are not decoded.
    """
    return book_of_records(iter_calls(Path(path), decode=False))


# -- cost ------------------------------------------------------------------------------------

COST_DECIMALS = 6  # a millionth of the currency: below any bill, and no float noise in metrics.json


@dataclass(frozen=True)
class Price:
    input_per_million: float
    output_per_million: float


def cost_of(book: UsageBook, prices: Mapping[str, Price]) -> dict[str, Any] | None:
    """What the tokens cost at `prices` (model -> price per million tokens), None when no model used is priced.

    input = prompt_tokens x input_per_million / 1e6, output likewise; unpriced models are
    listed, not priced at 0, and `lower_bound` says when a priced model has requests
    without usage (their tokens, hence their cost, are unknown).
    """
    priced = [m for m in book.by_model if m in prices]
    if not priced:
        return None
    input_cost = sum(book.by_model[m].prompt_tokens * prices[m].input_per_million for m in priced) / 1e6
    output_cost = sum(book.by_model[m].completion_tokens * prices[m].output_per_million for m in priced) / 1e6
    return {
        "input": round(input_cost, COST_DECIMALS),
        "output": round(output_cost, COST_DECIMALS),
        "total": round(input_cost + output_cost, COST_DECIMALS),
        "priced_models": sorted(priced),
        "unpriced_models": sorted(m for m in book.by_model if m not in prices),
        "lower_bound": any(book.by_model[m].requests_without_usage for m in priced),
    }


def usage_metrics(book: UsageBook, prices: Mapping[str, Price]) -> dict[str, Any]:
    """The metrics.json keys: `usage`, `usage_by_model`, and `cost` when priced."""
    entry: dict[str, Any] = {"usage": book.total.as_dict(), "usage_by_model": book.models_dict()}
    cost = cost_of(book, prices)
    if cost is not None:
        entry["cost"] = cost
    return entry


class LiveUsage:
    """Thread-safe books per pipeline, filled from every call record while a session runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._books: dict[str, UsageBook] = {}
        self.implausible: dict[str, str] = {}  # exp_name -> its first implausible usage, for the end of a run

    def add_record(self, record: Mapping[str, Any]) -> str | None:
        """Count one record; returns what was wrong with its usage the first time a pipeline's is implausible."""
        exp_name = str(record.get("exp_name") or "_unattributed")
        with self._lock:
            book = self._books.get(exp_name)
            if book is None:
                book = self._books[exp_name] = UsageBook()
            first = not book.total.requests_implausible_usage
            problem = book.add_record(record)
            if problem is not None:
                self.implausible.setdefault(exp_name, problem)
            return problem if first else None

    def snapshot(self) -> dict[str, Any]:
        """{"total": usage, "by_model": model -> usage with role, "pipelines": exp_name -> usage}."""
        with self._lock:
            session = UsageBook()
            pipelines = {}
            for exp_name, book in self._books.items():
                session.merge(book)
                pipelines[exp_name] = book.total.as_dict()
        return {"total": session.total.as_dict(), "by_model": session.models_dict(), "pipelines": pipelines}

    def book(self, exp_name: str) -> UsageBook:
        """A copy of one pipeline's book (empty before its first answered call)."""
        copy = UsageBook()
        with self._lock:
            if exp_name in self._books:
                copy.merge(self._books[exp_name])
        return copy


# -- a finished session ----------------------------------------------------------------------

def session_usage(metrics_by_exp: Mapping[str, Mapping[str, Any] | None], manifest: Mapping[str, Any] | None) -> dict[str, Any]:
    """Actual usage of a session's pipelines (from their metrics.json) beside the launch's estimate.

    {"pipelines": exp_name -> usage, "total": usage, "by_model": model -> usage with role,
     "cost": {"input", "output", "total", "unpriced_models", "lower_bound"} summed over priced pipelines (or None),
     "seconds": the longest pipeline's elapsed_seconds, "estimate": the manifest's `estimate` (or None)}.
    A pipeline finished before usage was recorded has none: it is left out, never guessed.
    """
    session = UsageBook()
    pipelines: dict[str, dict[str, int]] = {}
    cost: dict[str, Any] | None = None
    for exp_name, metrics in metrics_by_exp.items():
        book = UsageBook.from_metrics(metrics) if isinstance(metrics, Mapping) else None
        if book is None:
            continue
        session.merge(book)
        pipelines[exp_name] = book.total.as_dict()
        priced = metrics.get("cost")
        if isinstance(priced, dict):
            cost = cost or {"input": 0.0, "output": 0.0, "total": 0.0, "unpriced_models": [], "lower_bound": False}
            for key in ("input", "output", "total"):
                value = priced.get(key)
                cost[key] = round(cost[key] + (value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0), COST_DECIMALS)
            unpriced = priced.get("unpriced_models") if isinstance(priced.get("unpriced_models"), list) else []
            cost["unpriced_models"] = sorted(set(cost["unpriced_models"]) | {str(m) for m in unpriced})
            cost["lower_bound"] = cost["lower_bound"] or bool(priced.get("lower_bound"))
    estimate = (manifest or {}).get("estimate")
    seconds = [m.get("elapsed_seconds") for m in metrics_by_exp.values() if isinstance(m, Mapping)]
    seconds = [s for s in seconds if isinstance(s, (int, float)) and not isinstance(s, bool)]
    return {
        "seconds": max(seconds) if seconds else None,  # the pipelines run at once: the longest one
        "pipelines": pipelines,
        "total": session.total.as_dict() if pipelines else None,
        "by_model": session.models_dict(),
        "cost": cost,
        "estimate": estimate if isinstance(estimate, dict) else None,
    }
