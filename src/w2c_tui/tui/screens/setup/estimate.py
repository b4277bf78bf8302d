"""The estimate under the run key: requests, tokens, time at the current limits and cost.

The dataset is read (and its prompts measured) in a thread whenever the data fields change;
the engine's estimate is imported only when the first estimate is drawn, after the first frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.markup import escape
from textual.message import Message

from w2c_tui.config.schema import Settings
from w2c_tui.tui.background import background
from w2c_tui.tui.widgets.item_line import ItemLine
from w2c_tui.tui.workspace import Workspace

if TYPE_CHECKING:
    from w2c_tui.engine.estimate import Estimate


class EstimateView(ItemLine):
    """Owns what it knows of the dataset; says `DatasetRead` once a read ends (the error or "").
    An ItemLine: the per-pipeline counts wrap between pipelines, never inside one."""

    class DatasetRead(Message):
        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    def __init__(self, workspace: Workspace) -> None:
        super().__init__(id="estimate")
        self.workspace = workspace
        self.dataset_error = ""
        self._dataset_key: tuple[Any, ...] | None = None
        self.n_examples: int | None = None  # once read
        self._chars: dict[str, float] | None = None
        self._settings: Settings | None = None  # the form's, as last validated
        # What a launch of these settings would skip (rows already under the run key), once read.
        self._finished: dict[str, dict[str, int]] = {}
        self._finished_key: str | None = None

    def show_for(self, settings: Settings | None) -> None:
        """The estimate of the form's settings (None: the form has errors)."""
        self._settings = settings
        if settings is None:
            self.show("[dim]estimate: fix the fields above[/]")
            return
        data = settings.data
        key = (data.eval_data_path.strip(), data.use_full_dataset, data.n_per_label, data.subsample_seed)
        if key != self._dataset_key:
            self._dataset_key = key
            self.n_examples = None
            # After the next frame: the thread holds the GIL for a while and would delay the first paint.
            self.call_after_refresh(self._load_dataset_size, key)
        finished_key = settings.model_dump_json() if settings.run.run_key.strip() else ""
        if finished_key != self._finished_key:
            self._finished_key = finished_key
            self._finished = {}
            if finished_key:
                self.call_after_refresh(self._load_finished, finished_key, settings)
        self._show(settings)

    def recheck_disk(self) -> None:
        """Read again what the run key holds (a launch may have added rows since): the estimate of a
        run key that just completed says 0 requests. The figures shown stay until the read ends."""
        if self._settings is not None and self._finished_key:  # the key show_for made of these settings
            self._load_finished(self._finished_key, self._settings)

    @background(thread=True, group="estimate-resume")
    def _load_finished(self, key: str, settings: Settings) -> None:
        import dataclasses

        from w2c_tui.engine.resume_estimate import finished_on_disk

        try:
            found = finished_on_disk(dataclasses.replace(self.workspace.loaded, settings=settings))
        except Exception:  # noqa: BLE001 - no plan (a bad path, no model): the field errors say why
            found = {}
        self.app.call_from_thread(self._finished_loaded, key, found)

    def _finished_loaded(self, key: str, found: dict[str, dict[str, int]]) -> None:
        if key == self._finished_key:
            self._finished = found
            if self._settings is not None:
                self._show(self._settings)

    @background(thread=True, group="estimate")
    def _load_dataset_size(self, key: tuple[Any, ...]) -> None:
        from w2c_tui.data import load_examples, select_examples
        from w2c_tui.engine.estimate import prompt_chars_per_method  # the engine loads after the first frame

        path, full, n, seed = key
        try:
            examples = load_examples(self.workspace.loaded.resolve_path(path) if path else None)
            chosen = select_examples(examples, use_full_dataset=full, n_per_label=n, seed=seed)
            chars = prompt_chars_per_method(chosen)
            result: tuple[int | None, dict | None, str] = (len(chosen), chars, "")
        except Exception as exc:  # noqa: BLE001 - a bad path is shown next to the field
            result = (None, None, str(exc))
        self.app.call_from_thread(self._dataset_loaded, key, result)

    def _dataset_loaded(self, key: tuple[Any, ...], result: tuple[int | None, dict | None, str]) -> None:
        if key != self._dataset_key:
            return
        self.n_examples, self._chars, self.dataset_error = result
        self.post_message(self.DatasetRead(self.dataset_error))
        if self._settings is not None:
            self._show(self._settings)

    def _show(self, settings: Settings) -> None:
        if self.dataset_error:
            self.show("[$error]estimate: the dataset cannot be read[/]")
            return
        if self.n_examples is None:
            self.show("[dim]estimate: reading the dataset…[/]")
            return
        self.show(estimate_markup(settings, self.n_examples, self._chars, self._finished))


def estimate_markup(
    settings: Settings, n_examples: int, chars: dict[str, float] | None, finished: dict[str, dict[str, int]] | None = None
) -> str:
    """Every target model's session, summed (each target runs one session, one after another),
    less what the run key already holds (`finished`: model -> exp_name -> examples on disk)."""
    # Imported here: the engine and the usage formatters are not needed before the first frame.
    from w2c_tui.engine.estimate import estimate, left_after
    from w2c_tui.report.numbers import count, duration, money
    from w2c_tui.tui.formatting import short_exp

    models = settings.models.target_models or [""]
    finished = finished or {}
    full: list[Estimate] = [estimate(settings, n_examples, chars, model) for model in models]
    results = [left_after(r, finished.get(model, {})) for r, model in zip(full, models)]
    first = results[0]
    requests = sum(r.total_requests for r in results)
    prompt = sum(r.total_prompt_tokens for r in results)
    completion = sum(r.total_completion_tokens for r in results)
    most = sum(r.total_completion_tokens_max for r in results)
    seconds = sum(r.total_seconds for r in results)  # one session after another, each with its finishing phase
    planned = sum(r.total_requests for r in full)
    resumed = f"  [dim]resumes {1 - requests / planned:.0%} on disk[/]" if planned and requests < planned else ""
    lines = [
        f"[b]Estimate[/b]  {n_examples:,} examples × {len(models)} model(s){resumed}",
        f"≈ [b]{requests:,}[/b] requests in ≈ [b]{duration(seconds)}[/b]{_limits(first)}",
        f"≈ [b]{count(prompt)}[/b] prompt + [b]{count(completion)}[/b] completion tokens",
    ]
    costs = [r.cost for r in results if r.cost]
    if costs:
        typical = sum(c["typical"] for c in costs)
        at_most = sum(c["at_most"] for c in costs)
        unpriced = sorted({m for c in costs for m in c["unpriced_models"]})
        note = f" [dim]unpriced: {escape(', '.join(unpriced))}[/]" if unpriced else ""
        lines.append(f"cost ≈ [b]{money(typical)}[/b] [dim](≤ {money(at_most)} at max_tokens)[/]{note}")
    else:
        lines.append(f"[dim]cost: no {escape('[prices]')} · completion ≤ {count(most)}[/]")
    # Each model's requests per pipeline (its own resume); three spaces apart, each dimmed on its
    # own: the view wraps between pipelines (ItemLine).
    for model, result in zip(models, results):
        label = f"[dim]{escape(model)}:[/]   " if len(models) > 1 else ""
        lines.append(
            label + "   ".join(f"[dim]{escape(short_exp(name))} {n:,}[/]" for name, n in result.requests.items())
        )
    return "\n".join(lines)


def _limits(result: Estimate) -> str:
    shown = []
    for name, limits in result.limits.items():
        if limits.get("simulated"):
            shown.append("sim: CPU-bound")
            continue
        caps = [f"{limits['max_concurrency']} at once"]
        if limits.get("requests_per_minute"):
            caps.append(f"{limits['requests_per_minute']:,}/min")
        if limits.get("tokens_per_minute"):
            caps.append(f"{limits['tokens_per_minute']:,} tok/min")
        shown.append(f"{name}: {', '.join(caps)}" if len(result.limits) > 1 else ", ".join(caps))
    return f" [dim]({escape('; '.join(shown))})[/]" if shown else ""
