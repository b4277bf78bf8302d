"""Usage and cost of a pipeline for metrics.json, summed from its call trace on disk.

The trace is the source of truth, so a resumed session counts the requests of every
launch, not only of the last one. Elapsed time is kept the same way: each launch that ran
the pipeline adds its own time to what metrics.json held before.
"""

from __future__ import annotations

from typing import Any

from w2c_tui.config.schema import Settings
from w2c_tui.store.jsonl import read_json
from w2c_tui.store.layout import SessionPaths
from w2c_tui.store.usage import Price, book_of_trace, usage_metrics


def price_table(settings: Settings) -> dict[str, Price]:
    """The configured `[prices."<model>"]`, as the store's plain prices."""
    return {
        model: Price(price.input_per_million, price.output_per_million) for model, price in settings.prices.items()
    }


def pipeline_usage(
    paths: SessionPaths, exp_name: str, settings: Settings, ran_seconds: float | None = None
) -> dict[str, Any]:
    """`usage`, `usage_by_model`, `cost` (when priced) and `elapsed_seconds` of one pipeline.

    Blocking: reads its trace. `ran_seconds` is this launch's time on it (None: it did not run).
    """
    entry = usage_metrics(book_of_trace(paths.calls_file(exp_name)), price_table(settings))
    before = (read_json(paths.metrics_file(exp_name)) or {}).get("elapsed_seconds")
    before = before if isinstance(before, (int, float)) and not isinstance(before, bool) else None
    if ran_seconds is not None or before is not None:
        entry["elapsed_seconds"] = round((before or 0.0) + (ran_seconds or 0.0), 3)
    return entry
