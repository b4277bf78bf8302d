"""The Setup screen's first frame: the visible panels (Providers, Data, Models, Run) each as one
plain Static summing up what config.toml holds, replaced by the real panels right after that
frame is drawn.

A Static is cheap to style and lay out; the form's ~110 widgets (inputs, radio sets, selects,
the providers list) cost the first paint about as much as everything else. The summaries come
from config.toml read raw (`ConfigGlance`): validating it loads pydantic, after the first frame.
"""

from __future__ import annotations

from textual.markup import escape
from textual.widgets import Static

from w2c_tui.tui.config_glance import ConfigGlance


def _panel(panel_id: str, title: str, lines: list[str]) -> Static:
    preview = Static("\n".join(lines), id=f"{panel_id}-preview", classes="panel panel-preview")
    preview.border_title = title
    return preview


def providers_preview(glance: ConfigGlance) -> Static:
    names = [f"  {escape(name)}" for name in glance.providers]
    preview = _panel("providers-panel", "Providers", names or ["  (none: the simulated endpoint)"])
    preview.border_subtitle = "t test · e edit · a add"
    return preview


def data_preview(glance: ConfigGlance) -> Static:
    source = escape(glance.data_path) if glance.data_path else "bundled (300)"
    size = "all examples" if glance.use_full_dataset else f"{escape(glance.n_per_label)} per label"
    return _panel("data-panel", "Data", [source, size, f"seed {escape(glance.subsample_seed)}"])


def models_preview(glance: ConfigGlance) -> Static:
    return _panel(
        "models-panel",
        "Models",
        [f"target {escape(glance.target) or '—'}", f"judge  {escape(glance.judge) or '—'}", f"family {escape(glance.family)}"],
    )


def run_preview(glance: ConfigGlance) -> Static:
    return _panel("run-panel", "Run", [f"run key {escape(glance.run_key) or '(new)'}"])
