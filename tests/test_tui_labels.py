"""Labels that say what they mean (issue 16, point 4).

`n=30` where 300 were run, `F1-dir` unexplained, audit event names cut off, `✓ ready`
beside an error, raw pydantic messages in forms.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from w2c_tui.config.messages import field_message
from w2c_tui.config.schema import Settings
from w2c_tui.session.reader import read_session
from w2c_tui.testing.synthetic_session import write_session
from w2c_tui.tui.screens.sessions import answered_text, session_line
from w2c_tui.tui.screens.setup.values import ProviderValues, apply_form, apply_provider, values_from_settings
from w2c_tui.tui.screens.setup.launch import readiness_markup
from w2c_tui.tui.widgets.event_log import event_line, event_lines
from w2c_tui.tui.widgets.metric_table import SUMMARY_LEGEND

LONG_EVENT = {
    "ts_utc": "2026-01-15T12:03:11.000Z",
    "severity": "warning",
    "fallback_type": "judge_json_parse_failed_second_fallback_to_cannot_answer",
    "uuid": "5e1c0000-aaaa-bbbb-cccc-000000000001",
    "exp_name": "llm_judge",
    "details": {"raw": "x" * 300},
}


# -- n=30 where 300 were run -----------------------------------------------------------------


def test_sessions_line_shows_answered_over_planned_before_the_model(tmp_path: Path):
    session = write_session(tmp_path / "workdir", n_examples=300)
    info = read_session(session.root).warm()
    assert answered_text(info) == "300/300"
    line = session_line(info)
    # The counts come before the model name, so a narrow tree cuts the name, not 300 into 30.
    assert line.index("300/300") < line.index(info.target_model[:20])


def test_sessions_tree_at_80_columns_shows_the_whole_count(tmp_path: Path):
    import asyncio

    from w2c_tui.config import LoadedConfig
    from w2c_tui.tui.app import W2cApp

    workdir = tmp_path / "workdir"
    write_session(workdir, n_examples=300, target_model="a-rather-long-model-name-for-the-tree-3.3-70b-instruct")

    async def run() -> str:
        settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}, "mlflow": {"enabled": False}})
        app = W2cApp(loaded=LoadedConfig(settings, None, tmp_path, {}), start_mode="sessions", poll_monitor=False)
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(200):
                if getattr(app.screen, "sessions", None):
                    break
                await pilot.pause(0.05)
            await pilot.pause()
            return app.export_screenshot()

    svg = asyncio.run(run())
    assert "300/300" in svg.replace("&#160;", " ")


# -- F1-dir explained ---------------------------------------------------------------------------


def test_summary_legend_names_the_metrics_keys():
    for key in ("macro_f1", "macro_f1_4", "macro_f1_no_direct", "F1-dir", "F1₄", "without direct"):
        assert key in SUMMARY_LEGEND
    # The names are those of docs/metrics.md.
    doc = (Path(__file__).parent.parent / "docs" / "metrics.md").read_text(encoding="utf-8")
    assert "`macro_f1_no_direct`" in doc and "`macro_f1_4`" in doc


# -- audit event names never cut off ----------------------------------------------------------


def test_event_lines_wrap_so_the_name_is_whole():
    name = LONG_EVENT["fallback_type"]
    for width in (30, 44, 60, 200):
        lines = event_lines(LONG_EVENT, width)
        assert all(len(line) <= width for line in lines)
        joined = lines[0] + "".join(line[4:] for line in lines[1:])
        assert name in joined, width
    assert event_lines(LONG_EVENT, 500) == [event_line(LONG_EVENT)]
    assert len(event_lines(LONG_EVENT, 44)) <= 4  # the details preview is what gets shortened


async def test_event_log_at_80_columns_shows_whole_names():
    from textual.app import App
    from textual.widgets import Log

    from w2c_tui.tui.widgets.event_log import EventLog

    class Host(App):
        def compose(self):
            yield EventLog()

    app = Host()
    async with app.run_test(size=(48, 12)) as pilot:
        log = app.query_one(EventLog)
        log.add_events([LONG_EVENT], 1)
        await pilot.pause()
        text = "".join(line.rstrip()[4:] if i else line.rstrip() for i, line in enumerate(app.query_one(Log).lines))
    assert LONG_EVENT["fallback_type"] in text


# -- ✓ ready only when nothing says otherwise -----------------------------------------------------


def test_ready_never_beside_an_error():
    assert "✓ ready" in readiness_markup(0)
    assert "✓ ready" not in readiness_markup(2)
    assert "✓ ready" not in readiness_markup(0, dataset_error="no such file")
    failed = readiness_markup(0, failed_checks={"jrc": ["models", "chat"]})
    assert "✓ ready" not in failed and "connection test failed: jrc (models, chat)" in failed
    assert "✓ ready" not in readiness_markup(0, test_error="ConnectError: refused")
    assert "✓ ready" not in readiness_markup(0, config_error="bad key")
    # Log-probabilities missing do not stop a launch: ready, with the note beside it.
    note = readiness_markup(0, failed_checks={"jrc": ["logprobs"]})
    assert "✓ ready" in note and "jrc: no logprobs" in note


async def test_setup_status_after_a_failed_connection_test(tmp_path: Path, monkeypatch):
    from w2c_tui.api.probe import Check, ProbeResult
    from w2c_tui.config import LoadedConfig
    from w2c_tui.tui.app import W2cApp
    from textual.widgets import Static

    monkeypatch.chdir(tmp_path)
    settings = Settings.model_validate(
        {
            "run": {"workdir_base": str(tmp_path / "workdir")},
            "mlflow": {"enabled": False},
            "providers": {"jrc": {"base_url": "http://127.0.0.1:9/v1", "default": True}},
        }
    )

    async def refused(name, base_url, token, model, **kwargs):
        return ProbeResult(name, {"models": Check(False, "connection refused"), "chat": Check(False, "connection refused")})

    monkeypatch.setattr("w2c_tui.api.probe.probe_provider", refused)
    app = W2cApp(loaded=LoadedConfig(settings, None, tmp_path, {}), poll_monitor=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.5)
        status = app.screen.query_one("#setup-status", Static)
        assert "ready" in str(status.render())
        app.screen.action_test_provider()
        for _ in range(100):
            if "jrc" in app.screen.probes:
                break
            await pilot.pause(0.05)
        await pilot.pause()
        shown = str(status.render())
    assert "✓ ready" not in shown and "connection test failed: jrc" in shown


# -- readable form messages ------------------------------------------------------------------------


def test_form_errors_are_one_readable_line_per_field():
    settings = Settings()
    values = values_from_settings(settings)
    _, errors = apply_form(settings, dataclasses.replace(values, max_retries="abc", n_per_label="0"))
    assert errors["http-max-retries"] == "a whole number, e.g. 16 (got 'abc')"
    assert errors["n-per-label"] == "at least 1 (got '0')"
    _, errors = apply_form(settings, dataclasses.replace(values, timeout_seconds="-3", target_temperature="hot"))
    assert errors["http-timeout"] == "more than 0 (got '-3')"
    assert errors["target-temperature"] == "a number, e.g. 0.7 (got 'hot')"
    _, errors = apply_provider(ProviderValues(name="jrc", base_url="https://h/v1", max_concurrency="lots"))
    assert errors == {"max_concurrency": "a whole number, e.g. 16 (got 'lots')"}
    for message in errors.values():
        assert "Input should" not in message and "\n" not in message


def test_field_message_never_echoes_a_token():
    error = {"type": "string_too_short", "loc": ("providers", "jrc", "token"), "input": "", "ctx": {"min_length": 1}}
    assert field_message(error) == "must not be empty"
    error = {"type": "value_error", "loc": ("providers", "jrc", "token"), "input": "sk-secret", "msg": "Value error, bad token"}
    assert field_message(error) == "bad token"
