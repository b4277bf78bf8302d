"""The Setup screen's first frame: the visible panels (Providers, Data, Models, Run) each as one
plain Static summing up what config.toml holds, replaced by the real panels right after that
frame is drawn.

A Static is cheap to style and lay out; the form's ~110 widgets (inputs, radio sets, selects,
the providers list) cost the first paint about as much as everything else.
"""

from __future__ import annotations

from textual.markup import escape
from textual.widgets import Static

from w2c_tui.tui.screens.setup.values import FormValues
from w2c_tui.tui.workspace import Workspace


def _panel(panel_id: str, title: str, lines: list[str]) -> Static:
    preview = Static("\n".join(lines), id=f"{panel_id}-preview", classes="panel panel-preview")
    preview.border_title = title
    return preview


def providers_preview(workspace: Workspace) -> Static:
    names = [f"  {escape(name)}" for name in workspace.loaded.settings.providers]
    preview = _panel("providers-panel", "Providers", names or ["  (none: the simulated endpoint)"])
    preview.border_subtitle = "t test · e edit · a add"
    return preview


def data_preview(values: FormValues) -> Static:
    source = "bundled (300)" if values.use_bundled else escape(values.data_path)
    size = "all examples" if values.use_full_dataset else f"{escape(values.n_per_label)} per label"
    return _panel("data-panel", "Data", [source, size, f"seed {escape(values.subsample_seed)}"])


def models_preview(values: FormValues) -> Static:
    return _panel(
        "models-panel",
        "Models",
        [f"target {escape(values.target) or '—'}", f"judge  {escape(values.judge) or '—'}", f"family {escape(values.family)}"],
    )


def run_preview(values: FormValues) -> Static:
    return _panel("run-panel", "Run", [f"run key {escape(values.run_key) or '(new)'}"])
