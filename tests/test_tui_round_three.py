"""A researcher's day, round three (issue 36): Setup never edits behind your back, messages
that match the numbers, and keys that go where you expect. Driven with Textual's Pilot."""

from __future__ import annotations

import json
import tomllib

import pytest

from w2c_tui.tui.app import W2cApp
from w2c_tui.tui.screens.setup import SetupScreen
from w2c_tui.tui.widgets.provider_list import ProviderList

from test_tui_day_of_work import setup_ready, wait_for

SIZE = (100, 30)

CONFIG = """\
[run]
workdir_base = "./workdir"

[models]
target_model = "sim-small"
judge_model = "sim-judge"

[providers.main]
base_url = "http://127.0.0.1:9/v1"
default = true

[mlflow]
enabled = false
"""


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    (tmp_path / "config.toml").write_text(CONFIG)
    return tmp_path


def status_text(app) -> str:
    """The status line and, above it, the changes since the last save."""
    screen = app.screen
    return f'{screen.query_one("#setup-changes").render()} {screen.query_one("#setup-status").render()}'


def changes_line(app):
    line = app.screen.query_one("#setup-changes")
    return str(line.render()) if line.display else ""


async def open_editor(app, pilot):
    app.screen.query_one(ProviderList).focus()
    await pilot.press("e")
    await wait_for(pilot, lambda: app.screen.__class__.__name__ == "ProviderEditor")
    return app.screen


# -- 2. the provider editor ---------------------------------------------------------------------
async def test_enter_on_the_default_checkbox_applies_and_changes_nothing(folder):
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        await setup_ready(app, pilot)
        editor = await open_editor(app, pilot)
        editor.query_one("#p-default").focus()
        await pilot.press("enter")  # the button says "Apply  enter": it applies, it does not tick
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        assert app.workspace.loaded.settings.providers["main"].default is True
        assert not app.workspace.unsaved_setup
        assert any("provider main unchanged" in str(n.message) for n in app._notifications)
        await pilot.press("ctrl+s")
        await pilot.pause(0.3)
    assert (folder / "config.toml").read_text() == CONFIG  # nothing the user did not change


async def test_space_ticks_the_box_and_its_state_reads_in_plain_text(folder):
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        await setup_ready(app, pilot)
        editor = await open_editor(app, pilot)
        box = editor.query_one("#p-default")
        on = box.render().plain
        box.focus()
        await pilot.press("space")
        assert box.value is False and app.screen is editor  # ticked off, dialog still open
        off = box.render().plain
        assert on != off  # not only a colour
        assert "X" in on and "X" not in off


async def test_the_providers_panel_says_which_provider_is_the_default(folder):
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        await setup_ready(app, pilot)
        option = app.screen.query_one(ProviderList).get_option_at_index(0)
        assert "main default" in str(option.prompt).split("\n")[0]


# -- 2. text fields: no select-all on focus, undo, what changed --------------------------------
async def test_tab_into_a_field_keeps_its_text_and_puts_the_cursor_at_the_end(folder):
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        setup = await setup_ready(app, pilot)
        target = setup.query_one("#target")
        target.focus()
        await pilot.press("tab")  # into judge, as a user tabs through the form
        judge = setup.query_one("#judge")
        assert app.focused is judge
        await pilot.press("e")
        assert judge.value == "sim-judgee"  # typed at the end, not over the whole value
        assert judge.cursor_position == len(judge.value)


async def test_ctrl_z_restores_the_field_and_the_status_names_the_changes(folder):
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        setup = await setup_ready(app, pilot)
        assert changes_line(app) == ""
        setup.query_one("#judge").focus()
        await pilot.press("backspace", "backspace", "x")
        setup.query_one("#target-temperature").focus()
        await pilot.press("5")
        await pilot.pause(0.3)
        assert changes_line(app) == "2 changes since save: judge_model, target_temperature"
        assert "✓ ready" in status_text(app)
        await pilot.press("ctrl+z")  # the temperature as it was
        await wait_for(pilot, lambda: setup.query_one("#target-temperature").value == "0.0")
        assert setup.query_one("#judge").value == "sim-judx"
        await pilot.press("ctrl+z")  # the judge as it was: one step for the keys typed into it
        await wait_for(pilot, lambda: setup.query_one("#judge").value == "sim-judge")
        await pilot.pause(0.3)
        assert changes_line(app) == ""
        assert not app.workspace.unsaved_setup


async def test_ctrl_z_undoes_a_provider_edit(folder):
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        setup = await setup_ready(app, pilot)
        editor = await open_editor(app, pilot)
        editor.query_one("#p-max_concurrency").value = "4"
        editor.query_one("#p-max_concurrency").focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        assert app.workspace.loaded.settings.providers["main"].max_concurrency == 4
        await pilot.pause(0.1)
        assert changes_line(app) == "1 change since save: providers.main"
        await pilot.press("ctrl+z")
        await wait_for(pilot, lambda: app.workspace.loaded.settings.providers["main"].max_concurrency == 16)
        assert app.screen is setup and not app.workspace.unsaved_setup


async def test_a_bad_config_file_is_named_and_save_is_not_suggested(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad1.toml").write_text('[models]\njudge_modle = "x"\n')
    app = W2cApp("bad1.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        await setup_ready(app, pilot)
        await pilot.pause(0.3)
        notice = str(app.screen.query_one("#setup-notice").render())
        banner = str(app.screen.query_one("#config-error").render())
        assert "bad1.toml" in notice and "ctrl+s" not in notice
        assert banner.startswith("⚠ bad1.toml could not be used")
        assert "bad1.toml not loaded" in status_text(app)
        assert all("config.toml" not in (n.title or "") for n in app._notifications)


# -- 3. messages that match the numbers ---------------------------------------------------------
JUDGE_CHECK_METRICS = {
    "n_planned": 1200, "n_obtained": 1200, "n_total": 1200, "status": "complete",
    "accuracy": 0.9715, "accuracy_ci95": None, "macro_f1": 0.97, "macro_f1_4": 0.97, "macro_f1_no_direct": 0.98,
    "n_invalid_labels": 12,
    "judge_check": {
        "n_answers": 1200, "n_labelled": 1188, "n_unlabelled": 12, "k": 1, "accuracy": 0.9715,
        "accuracy_ci95": {"low": 0.962, "high": 0.981, "n_boot": 1000, "seed": 42},
    },
}


def test_a_judge_check_says_unlabelled_answers_are_left_out_and_shows_its_interval():
    from w2c_tui.tui.widgets.metric_table import hallucination_markup, summary_rows

    note = hallucination_markup(JUDGE_CHECK_METRICS)
    assert "coerced" not in note and "cannot_answer" not in note
    assert "12 answers not labelled by the judge: left out of every figure (n = 1,188)" in note
    row = summary_rows([("judge_check", "complete", JUDGE_CHECK_METRICS)])[1]
    assert row[3] == ".97 (.96–.98)"  # the proportion with its interval


def test_a_pipeline_says_invalid_labels_are_scored_as_cannot_answer():
    from w2c_tui.tui.widgets.metric_table import hallucination_markup

    metrics = {"n_planned": 10, "n_obtained": 10, "accuracy": 0.5, "n_invalid_labels": 3}
    assert "3 invalid labels scored as cannot_answer" in hallucination_markup(metrics)  # docs/metrics.md §1


def test_outstanding_events_count_warnings_and_errors_not_info_notes():
    from w2c_tui.tui.widgets.metric_table import audit_markup

    summary = {"total_events": 9, "n_uuids_affected": 2, "by_severity": {"info": 6, "warning": 2, "error": 1},
               "by_fallback_type": {"pacing_summary": 6, "judge_json_parse_failed_first": 3}}
    text = audit_markup(summary)
    assert "[b]3[/b] outstanding warnings and errors" in text and "6 info notes" in text
    assert "9" not in text.split("outstanding")[0]


async def test_the_examples_table_shows_the_label_we_made(tmp_path, monkeypatch):
    from w2c_tui.config import LoadedConfig
    from w2c_tui.config.schema import Settings
    from w2c_tui.testing.synthetic_session import write_session
    from w2c_tui.tui.screens.session_view import SessionViewScreen
    from w2c_tui.tui.widgets.row_list import RowList

    monkeypatch.chdir(tmp_path)
    session = write_session(tmp_path / "workdir", n_examples=24, seed=1, pipelines=("llm_judge",))
    settings = Settings.model_validate({"run": {"workdir_base": str(tmp_path / "workdir")}, "mlflow": {"enabled": False}})
    app = W2cApp(loaded=LoadedConfig(settings, None, tmp_path, {}), start_mode="sessions")
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_session(session.root)
        await wait_for(pilot, lambda: isinstance(app.screen, SessionViewScreen) and app.screen.data is not None)
        await pilot.press("x")
        table = app.screen.query_one("#example-rows", RowList)
        await wait_for(pilot, lambda: table.row_count == 24)
        fallback = [column.title for column in table.columns].index("fallback")
        cells = [row[fallback][0] for row in table._rows if row[fallback][0]]
        assert "unreadable" in cells  # whole: `judge-retry judge→can` was cut to `judge-retr…`
        assert table.columns[fallback].width >= len("unreadable")
        await pilot.press("f")  # fallback only: the row on screen
        await wait_for(pilot, lambda: table.row_count < 24)
        await pilot.pause(0.2)
        shown = [strip.text for strip in table.render_lines(table.region.reset_offset)]
        assert any("unreadable" in line for line in shown)


# -- 7. keys ----------------------------------------------------------------------------------------
def two_sessions(tmp_path):
    from w2c_tui.config import LoadedConfig
    from w2c_tui.config.schema import Settings
    from w2c_tui.testing.synthetic_session import write_session

    workdir = tmp_path / "workdir"
    a = write_session(workdir, n_examples=12, pipelines=("mcq",))
    b = write_session(workdir, fingerprint="7ac2e9a10b5e0002", target_model="qwen3-32b", n_examples=12, seed=2, pipelines=("mcq",))
    settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}, "mlflow": {"enabled": False}})
    return LoadedConfig(settings, None, tmp_path, {}), a, b


async def test_escape_goes_back_to_the_tab_you_came_from(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    loaded, a, _ = two_sessions(tmp_path)
    app = W2cApp(loaded=loaded, poll_monitor=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await setup_ready(app, pilot)
        await pilot.press("3")
        await wait_for(pilot, lambda: app.current_mode == "sessions")
        await pilot.press("4")
        await wait_for(pilot, lambda: app.current_mode == "compare")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.current_mode == "sessions")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.current_mode == "setup")

        # a session opened from the Monitor (its s) closes back to the Monitor, not to Sessions
        await pilot.press("2")
        await wait_for(pilot, lambda: app.current_mode == "monitor")
        app.open_session(a.root)
        await wait_for(pilot, lambda: type(app.screen).__name__ == "SessionViewScreen")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.current_mode == "monitor")
        assert type(app.screen).__name__ == "MonitorScreen"


async def test_escape_in_a_setup_field_only_leaves_the_field(folder):
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        setup = await setup_ready(app, pilot)
        await pilot.press("3")
        await wait_for(pilot, lambda: app.current_mode == "sessions")
        await pilot.press("1")
        await wait_for(pilot, lambda: app.screen is setup)
        setup.query_one("#judge").focus()
        await pilot.press("escape")
        assert app.screen is setup and app.focused is None
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.current_mode == "sessions")


async def test_compare_e_exports_the_comparison_table(tmp_path, monkeypatch):
    from w2c_tui.tui.screens.compare import CompareScreen

    monkeypatch.chdir(tmp_path)
    loaded, a, b = two_sessions(tmp_path)
    app = W2cApp(loaded=loaded, poll_monitor=False, start_mode="compare")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        app.screen.choose(str(a.root), str(b.root))
        await wait_for(pilot, lambda: app.screen.pair is not None)
        await pilot.press("e")
        exports = tmp_path / "workdir" / "exports"
        await wait_for(pilot, lambda: any(exports.glob("*-comparison.json")) and any(exports.glob("*-examples.csv")), timeout=10)
        await pilot.pause(0.1)
        table = next(exports.glob("*-comparison.md")).read_text()
        assert "| pipeline | n | acc A→B | Δ acc | 95% CI | Δ F1 | 95% CI | McNemar |" in table
        assert "| mcq | 12 |" in table and "# Comparison: B − A" in table
        document = json.loads(next(exports.glob("*-comparison.json")).read_text())
        assert document["session_b"]["target_model"] == "qwen3-32b" and document["pipelines"]["mcq"]["n_common"] == 12
        note = list(app._notifications)[-1]
        assert note.title == "Exported" and "comparison.md" in str(note.message)


def test_every_binding_is_in_the_footer_or_in_its_screens_help_section():
    from test_tui_keys import SHOWN

    from w2c_tui.tui.screens.compare import CompareScreen
    from w2c_tui.tui.screens.help import SECTIONS
    from w2c_tui.tui.screens.monitor import MonitorScreen
    from w2c_tui.tui.screens.provider_editor import ProviderEditor
    from w2c_tui.tui.screens.session_view import SessionViewScreen
    from w2c_tui.tui.screens.sessions import SessionsScreen
    from w2c_tui.tui.screens.trace import TraceScreen

    sections = {title: {token for keys, _ in rows for token in keys.split()} for title, rows in SECTIONS}
    where = {
        W2cApp: "Everywhere", SetupScreen: "Setup", ProviderEditor: "Setup", MonitorScreen: "Monitor",
        SessionsScreen: "Sessions and one session", SessionViewScreen: "Sessions and one session",
        TraceScreen: "Trace", CompareScreen: "Compare",
    }
    missing = []
    for owner, title in where.items():
        listed = sections[title] | sections["Everywhere"]
        for binding in owner.BINDINGS:
            if binding.show:
                continue  # in the footer
            for key in binding.key.split(","):
                if not {key, SHOWN.get(key, key)} & listed:
                    missing.append(f"{owner.__name__}: {key} ({binding.description})")
    assert missing == []


async def test_f6_jumps_from_panel_to_panel_and_is_in_the_footer(folder):
    from textual.widgets._footer import FooterKey

    app = W2cApp("config.toml")
    async with app.run_test(size=(80, 24)) as pilot:
        setup = await setup_ready(app, pilot)
        assert any(key.key_display == "f6" for key in setup.query(FooterKey) if key.display)
        visited = []
        for _ in range(7):
            await pilot.press("f6")
            panel = next(a for a in app.focused.ancestors if "panel" in a.classes)
            visited.append(panel.id)
        assert visited == ["providers-panel", "data-panel", "models-panel", "run-panel", "http-panel",
                           "pipelines-panel", "stability-panel"]
        await pilot.press("f6")  # round again
        assert setup.query_one("#providers-panel") in app.focused.ancestors
        await pilot.press("shift+f6")
        assert setup.query_one("#stability-panel") in app.focused.ancestors
        await pilot.press("f6", "f6", "f6")
        assert app.focused is setup.query_one("#target")
        await pilot.press("f6")  # in a text field too: f6 is no text
        assert setup.query_one("#run-panel") in app.focused.ancestors
        assert setup.query_one("#target").value == "sim-small"


async def test_the_editor_tells_a_loopback_provider_no_token_is_needed(folder):
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        await setup_ready(app, pilot)
        editor = await open_editor(app, pilot)
        hint = editor.query_one("#field-token_env .field-hint")
        assert "no token needed (loopback)" in str(hint.render())
        url = editor.query_one("#p-base_url")
        url.value = "http://[::1"  # half typed: no crash, no loopback
        await pilot.pause()
        url.value = "https://api.example.org/v1"
        await pilot.pause()
        assert "put TOKEN_MAIN=… in .env" in str(hint.render())
