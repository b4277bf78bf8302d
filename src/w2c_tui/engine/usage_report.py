"""Usage and cost of a pipeline for metrics.json: what its calls of every launch used.

A resumed session counts the requests of every launch, not only of the last one: the calls
of earlier launches are summed from the pipeline's call trace as this launch finds it
(`usage_before_launch`, read before its first call), this launch's from its live book
(`RunState.usage`, filled from the same records as they are written). A new pipeline's
trace is then never read back: an `mcq_logprob` trace holds hundreds of KB of echo a call.
Elapsed time is kept the same way: each launch that ran the pipeline adds its own time to
what metrics.json held before.
"""

from __future__ import annotations

from typing import Any

from w2c_tui.config.schema import Settings
from w2c_tui.store.call_files import has_trace
from w2c_tui.store.jsonl import read_json
from w2c_tui.store.layout import SessionPaths
from w2c_tui.store.usage import Price, UsageBook, book_of_trace, usage_metrics


def price_table(settings: Settings) -> dict[str, Price]:
    """The configured `[prices."<model>"]`, as the store's plain prices."""
    return {
        model: Price(price.input_per_million, price.output_per_million) for model, price in settings.prices.items()
    }


def usage_before_launch(paths: SessionPaths, exp_name: str) -> UsageBook | None:
    """What the pipeline's calls of earlier launches used (blocking: reads its trace, if any).

    None when the trace cannot be read now: finalize then sums the whole trace instead.
    """
    path = paths.calls_file(exp_name)
    if not has_trace(path):
        return UsageBook()
    try:
        return book_of_trace(path)
    except OSError:
        return None


def pipeline_usage(
    paths: SessionPaths,
    exp_name: str,
    settings: Settings,
    ran_seconds: float | None = None,
    *,
    book: UsageBook | None = None,
) -> dict[str, Any]:
    """`usage`, `usage_by_model`, `cost` (when priced) and `elapsed_seconds` of one pipeline.

    `book`: what every launch's calls used, when known; else the whole trace is read
    (blocking). `ran_seconds` is this launch's time on it (None: it did not run).
    """
    if book is None:
        book = book_of_trace(paths.calls_file(exp_name))
    entry = usage_metrics(book, price_table(settings))
    previous = (read_json(paths.metrics_file(exp_name)) or {}).get("elapsed_seconds")
    previous = previous if isinstance(previous, (int, float)) and not isinstance(previous, bool) else None
    if ran_seconds is not None or previous is not None:
        entry["elapsed_seconds"] = round((previous or 0.0) + (ran_seconds or 0.0), 3)
    return entry
