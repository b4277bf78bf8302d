"""A day of work in the app (issue 16, points 1, 2 and 6): nothing lost without a question, the
Monitor with several launches, and what people expect to find.

Driven with Textual's Pilot in a temporary folder; launches run on the simulated endpoint.
"""

from __future__ import annotations

import time
import tomllib
from pathlib import Path

import pytest

from w2c_tui.config import LoadedConfig, load_config, save_settings
from w2c_tui.config.schema import Settings
from w2c_tui.testing.synthetic_session import write_session
from w2c_tui.tui.app import W2cApp
from w2c_tui.tui.screens.confirm import ConfirmScreen
from w2c_tui.tui.screens.monitor import MonitorScreen
from w2c_tui.tui.screens.session_view import SessionViewScreen
from w2c_tui.tui.screens.sessions import SessionsScreen
from w2c_tui.tui.screens.setup import SetupScreen
from w2c_tui.tui.widgets.example_browser import ExampleBrowser
from w2c_tui.tui.widgets.launch_list import LaunchList
from w2c_tui.tui.widgets.provider_list import ProviderList
from w2c_tui.tui.widgets.row_list import RowList
from w2c_tui.tui.widgets.session_monitor import SessionMonitor

from configs import table

SIZE = (100, 30)

CONFIG = """\
# my settings
[run]
workdir_base = "./workdir"
run_key = "day"

[models]
target_model = "sim-small"

[data]
n_per_label = 2

[pipelines]
do_llm_judge = false
do_mcq = true
do_mcq_logprob = false

[mlflow]
enabled = false
"""


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    return tmp_path


async def wait_for(pilot, condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.05)


async def setup_ready(app, pilot) -> SetupScreen:
    await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and app.screen._clean_values is not None)
    return app.screen


async def set_field(pilot, setup: SetupScreen, widget_id: str, value: str) -> None:
    setup.query_one(f"#{widget_id}").value = value
    await pilot.pause()


# -- 1. lost work ---------------------------------------------------------------------------
async def test_quit_without_edits_closes_at_once(folder):
    (folder / "config.toml").write_text(CONFIG)
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        await setup_ready(app, pilot)
        assert not app.workspace.unsaved_setup
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: app._exit, timeout=5)
        assert not isinstance(app.screen, ConfirmScreen)


async def test_unsaved_setup_edits_ask_save_discard_cancel(folder):
    (folder / "config.toml").write_text(CONFIG)
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        setup = await setup_ready(app, pilot)
        await set_field(pilot, setup, "n-per-label", "7")
        assert app.workspace.unsaved_setup

        # Cancel: the dialog closes, the app and the edit stay.
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "Save" in str(app.screen.query_one("#choice-s").label)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        assert not app._exit and setup.query_one("#n-per-label").value == "7"
        await pilot.press("ctrl+q")  # escape cancels too
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        assert not app._exit

        # Save: written (comments kept), then the app closes.
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("s")
        await wait_for(pilot, lambda: app._exit, timeout=10)
    text = (folder / "config.toml").read_text()
    assert text.startswith("# my settings")
    assert tomllib.loads(text)["data"]["n_per_label"] == 7


async def test_discard_quits_without_writing(folder):
    (folder / "config.toml").write_text(CONFIG)
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        setup = await setup_ready(app, pilot)
        await set_field(pilot, setup, "target", "qwen2.5-7b-instruct")
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("d")
        await wait_for(pilot, lambda: app._exit, timeout=5)
    assert (folder / "config.toml").read_text() == CONFIG


async def test_save_clears_the_unsaved_mark(folder):
    (folder / "config.toml").write_text(CONFIG)
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        setup = await setup_ready(app, pilot)
        await set_field(pilot, setup, "n-per-label", "4")
        assert app.workspace.unsaved_setup
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not app.workspace.unsaved_setup, timeout=10)
        assert tomllib.loads((folder / "config.toml").read_text())["data"]["n_per_label"] == 4


async def test_removing_a_provider_asks_first(folder):
    (folder / "config.toml").write_text(CONFIG + "\n" + table("providers.local", {"base_url": "http://127.0.0.1:9/v1"}))
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        await setup_ready(app, pilot)
        app.screen.query_one(ProviderList).focus()
        await pilot.press("delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        assert list(app.workspace.loaded.settings.providers) == ["local"]

        app.screen.query_one(ProviderList).focus()
        await pilot.press("delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.workspace.loaded.settings.providers)
        assert app.workspace.unsaved_setup  # removed from the form only, until saved
    assert "[providers.local]" in (folder / "config.toml").read_text()


async def test_deleting_a_session_asks_first(folder):
    workdir = folder / "workdir"
    write_session(workdir, n_examples=8)
    kept = write_session(workdir, fingerprint="7ac2e9a10b5e0002", target_model="qwen3-32b", n_examples=8, seed=2)
    settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}, "mlflow": {"enabled": False}})
    app = W2cApp(loaded=LoadedConfig(settings, None, folder, {}), start_mode="sessions")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen) and len(app.screen.sessions) == 2)
        screen = app.screen
        tree = screen.query_one("#sessions-tree")
        await wait_for(pilot, lambda: tree.cursor_node is not None and tree.cursor_node.data is not None)
        doomed = tree.cursor_node.data.paths.root
        await pilot.press("delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen))
        assert doomed.is_dir()

        await pilot.press("delete")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: len(screen.sessions) == 1, timeout=10)
        assert not doomed.exists()
        assert screen.sessions[0].paths.root != doomed


async def test_ctrl_s_saves_everywhere_enter_applies_in_the_editor(folder):
    (folder / "config.toml").write_text(CONFIG)
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        await setup_ready(app, pilot)
        app.screen.query_one(ProviderList).focus()
        await pilot.press("a")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "ProviderEditor")
        app.screen.query_one("#p-name").value = "one"
        app.screen.query_one("#p-base_url").value = "http://127.0.0.1:9/v1"
        app.screen.query_one("#p-base_url").focus()
        await pilot.press("enter")  # apply: in the form, not in the file
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        assert list(app.workspace.loaded.settings.providers) == ["one"]
        assert "[providers.one]" not in (folder / "config.toml").read_text()

        app.screen.query_one(ProviderList).focus()
        await pilot.press("e")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "ProviderEditor")
        app.screen.query_one("#p-max_concurrency").value = "4"
        await pilot.press("ctrl+s")  # save: the same meaning as on Setup
        await wait_for(pilot, lambda: "[providers.one]" in (folder / "config.toml").read_text(), timeout=10)
        assert isinstance(app.screen, SetupScreen)
    saved = tomllib.loads((folder / "config.toml").read_text())
    assert saved["providers"]["one"]["max_concurrency"] == 4


# -- 2. the Monitor with several launches -------------------------------------------------------
async def test_monitor_with_three_launches_lists_them_and_shows_one_panel(folder):
    (folder / "config.toml").write_text(CONFIG)
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        await setup_ready(app, pilot)
        for number in range(3):
            app.start_launch(app.workspace.loaded, run_key=f"three-{number}")
            await wait_for(pilot, lambda: len(app.workspace.launches) == number + 1)
        await wait_for(pilot, lambda: all(r.ended for r in app.workspace.launches), timeout=90)
        assert [r.status for r in app.workspace.launches] == ["complete"] * 3
        await wait_for(pilot, lambda: isinstance(app.screen, MonitorScreen))
        monitor = app.screen
        await pilot.pause(0.3)

        launch_list = monitor.query_one(LaunchList)
        assert launch_list.display and launch_list.option_count == 3

        def lines() -> list[str]:
            return [str(launch_list.get_option_at_index(i).prompt) for i in range(3)]

        # Finished launches stay listed, one line each (the list refreshes once a second).
        await wait_for(pilot, lambda: all("complete" in line and "sim-small" in line for line in lines()), timeout=15)
        # One panel on show, the newest launch's; the others are hidden, not stacked.
        panels = list(monitor.query(SessionMonitor))
        assert len(panels) == 3
        assert [p.display for p in panels] == [False, False, True]
        assert monitor.current_panel().session.record.number == 3
        assert monitor.current_panel().size.height >= 15  # not squashed

        # Choosing another launch shows its panel instead.
        launch_list.focus()
        await pilot.press("up")
        await wait_for(pilot, lambda: monitor.current_panel().session.record.number == 2)
        assert [p.display for p in panels] == [False, True, False]
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: monitor.current_panel().session.record.number == 1)

        # Leaving and coming back keeps the choice, never a stale panel.
        await pilot.press("3")
        await wait_for(pilot, lambda: not isinstance(app.screen, MonitorScreen))
        await pilot.press("2")
        await wait_for(pilot, lambda: isinstance(app.screen, MonitorScreen))
        await pilot.pause(0.2)
        assert monitor.current_panel().session.record.number == 1
        assert sum(p.display for p in panels) == 1


async def test_a_new_launch_comes_to_the_front(folder):
    (folder / "config.toml").write_text(CONFIG)
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        await setup_ready(app, pilot)
        app.start_launch(app.workspace.loaded, run_key="first")
        await wait_for(pilot, lambda: app.workspace.launches and app.workspace.launches[0].ended, timeout=60)
        await wait_for(pilot, lambda: isinstance(app.screen, MonitorScreen))
        monitor = app.screen
        for number, run_key in ((2, "second"), (3, "third")):
            # Launched from Setup: the Monitor comes back with the new launch in front, not the
            # panel it showed before (the stale panel of issue 16).
            await app.switch_mode("setup")
            await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
            app.start_launch(app.workspace.loaded, run_key=run_key)
            await wait_for(pilot, lambda: len(app.workspace.launches) == number and app.screen is monitor)
            await wait_for(pilot, lambda: monitor.current_panel() is not None and monitor.current_panel().session.record.number == number)
            await pilot.pause(0.3)
            assert monitor.current_panel().session.record.number == number
            assert monitor.query_one(LaunchList).highlighted == number - 1
            await wait_for(pilot, lambda: app.workspace.launches[number - 1].ended, timeout=60)


# -- 5. 80x24 -------------------------------------------------------------------------------
def footer_fits(app, width: int = 80) -> list[str]:
    """The footer keys of the current screen that do not fit in `width` columns (none, we want)."""
    from textual.widgets._footer import FooterKey

    keys = [key for key in app.screen.query(FooterKey) if key.display]
    assert any("Help" in key.description for key in keys), "no ? Help in the footer"
    return [f"{key.key_display} {key.description}" for key in keys if key.region.right > width or not key.region.width]


async def test_every_screen_keeps_its_footer_whole_at_80x24(folder):
    workdir = folder / "workdir"
    write_session(workdir, n_examples=12)
    write_session(workdir, fingerprint="7ac2e9a10b5e0002", target_model="qwen3-32b", n_examples=12, seed=2)
    settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}, "mlflow": {"enabled": False}})
    app = W2cApp(loaded=LoadedConfig(settings, None, folder, {}), start_mode="setup")
    async with app.run_test(size=(80, 24)) as pilot:
        await setup_ready(app, pilot)
        assert footer_fits(app) == []
        for key, name in (("2", "MonitorScreen"), ("3", "SessionsScreen"), ("4", "CompareScreen")):
            await pilot.press(key)
            await wait_for(pilot, lambda: type(app.screen).__name__ == name)
            await pilot.pause(0.2)
            assert footer_fits(app) == [], name
        await pilot.press("3")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen) and len(app.screen.sessions) == 2)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionViewScreen) and app.screen.data is not None)
        await pilot.pause(0.2)
        assert footer_fits(app) == [], "session view"
        await pilot.press("x")
        table = app.screen.query_one("#example-rows", RowList)
        await wait_for(pilot, lambda: table.row_count > 0)
        table.focus()
        await pilot.pause(0.2)
        assert footer_fits(app) == [], "examples"
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "TraceScreen")
        await pilot.pause(0.2)
        assert footer_fits(app) == [], "trace"


# -- 6. missing where people expect it ----------------------------------------------------------
async def test_examples_show_the_question_and_c_clears_every_filter(folder):
    workdir = folder / "workdir"
    session = write_session(workdir, n_examples=12)
    settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}, "mlflow": {"enabled": False}})
    app = W2cApp(loaded=LoadedConfig(settings, None, folder, {}), start_mode="sessions")
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_session(session.root)
        await wait_for(pilot, lambda: isinstance(app.screen, SessionViewScreen) and app.screen.data is not None)
        view = app.screen
        await pilot.press("x")
        table = view.query_one("#example-rows", RowList)
        await wait_for(pilot, lambda: table.row_count == 12)
        assert table.columns[-1].title == "question"
        rows = view.query_one(ExampleBrowser).session_rows
        first = rows.rows[0]
        assert table._rows[0][-1][0] == " ".join(rows.examples[first.uuid].question.split())
        assert first.uuid and table._rows[0][-1][0]

        # several filters at once, then c puts every one back
        browser = view.query_one(ExampleBrowser)
        await pilot.press("w")
        browser.query_one("#filter-gold").value = first.gold
        browser.query_one("#example-search").value = "zzz-no-such-text"
        await wait_for(pilot, lambda: table.row_count == 0)
        table.focus()
        await pilot.press("c")
        await wait_for(pilot, lambda: table.row_count == 12)
        assert browser.query_one("#example-search").value == ""
        assert not browser.query_one("#filter-wrong").value
        assert str(browser.query_one("#filter-gold").value) == "__any__"


def test_first_save_writes_the_commented_example(tmp_path):
    settings = Settings.model_validate({"data": {"n_per_label": 5}, "http": {"timeout_seconds": 30}})
    path = save_settings(settings, tmp_path / "config.toml")
    text = path.read_text()
    example = (Path(__file__).parents[1] / "config.example.toml").read_text()
    # Every comment of the example is kept word for word, but those inside its sample tables
    # (providers, a stability sweep, prices), which a first save replaces by the user's own.
    samples = "".join(
        example[example.index(start) : example.index(end) if end else None]
        for start, end in (("[providers.jrc]", "[http]"), ("[[stability.sweeps]]", "[mlflow]"), ("\n[prices.", ""))
        if start in example
    )
    comments = [line for line in example.splitlines() if line.startswith("#") and line not in samples]
    assert len(comments) >= 30
    assert [line for line in comments if line not in text] == []
    assert "\n[providers." not in text  # no provider: the simulated endpoint, as before saving
    loaded = load_config(path, environ={})
    assert loaded.settings.model_dump() == settings.model_dump()
    assert loaded.embedded


def test_first_save_with_a_provider_keeps_the_provider_comments(tmp_path):
    settings = Settings.model_validate(
        {"providers": {"local": {"base_url": "http://127.0.0.1:9/v1", "default": True, "max_concurrency": 4}}}
    )
    text = save_settings(settings, tmp_path / "config.toml").read_text()
    assert "[providers.local]" in text and "[providers.jrc]" not in text and "gemini" not in text
    assert "# Most requests in flight at once to this provider" in text
    assert load_config(tmp_path / "config.toml", environ={}).settings.model_dump() == settings.model_dump()


def test_an_existing_file_is_still_edited_not_replaced(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("# mine\n[data]\nn_per_label = 3\n")
    save_settings(Settings.model_validate({"data": {"n_per_label": 4}}), path)
    assert path.read_text() == "# mine\n[data]\nn_per_label = 4\n"


async def test_first_save_from_the_app_is_commented(folder):
    app = W2cApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await setup_ready(app, pilot)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: (folder / "config.toml").exists(), timeout=10)
    text = (folder / "config.toml").read_text()
    assert "# Most seconds one attempt may take." in text
    assert load_config(folder / "config.toml", environ={}).embedded


async def test_http_settings_are_in_the_setup_form(folder):
    (folder / "config.toml").write_text(CONFIG)
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        setup = await setup_ready(app, pilot)
        assert setup.query_one("#http-timeout").value == "60.0"
        await set_field(pilot, setup, "http-timeout", "-1")
        await wait_for(pilot, lambda: "http-timeout" in setup.errors, timeout=5)
        await set_field(pilot, setup, "http-timeout", "25")
        await set_field(pilot, setup, "http-max-retries", "6")
        await wait_for(pilot, lambda: setup.errors == {}, timeout=5)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: "[http]" in (folder / "config.toml").read_text(), timeout=10)
    http = tomllib.loads((folder / "config.toml").read_text())["http"]
    assert http == {"timeout_seconds": 25.0, "max_retries": 6}


async def test_quitting_during_a_run_asks_then_cancels_it_cleanly(folder):
    from w2c_tui.sim import SimServer, SimSettings
    from w2c_tui.status import RESUMABLE
    from w2c_tui.session.reader import read_session

    config = CONFIG.replace("n_per_label = 2", "n_per_label = 40")
    with SimServer(SimSettings(latency_ms=300)) as server:
        (folder / "config.toml").write_text(config + "\n" + table("providers.slow", {"base_url": server.base_url, "default": True}))
        app = W2cApp("config.toml")
        async with app.run_test(size=SIZE) as pilot:
            await setup_ready(app, pilot)
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: app.workspace.launches)
            record = app.workspace.launches[0]
            state = record.sessions[0].state
            await wait_for(pilot, lambda: sum(p.done for p in state.pipelines.values()) >= 3, timeout=30)

            await pilot.press("ctrl+q")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("k")  # keep running
            await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
            assert record.active and not app._exit

            await pilot.press("ctrl+q")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("q")
            await wait_for(pilot, lambda: app._exit, timeout=30)
            assert record.ended and record.status == "cancelled"
    info = read_session(Path(record.sessions[0].session_dir))
    assert info.status in RESUMABLE
    assert not info.damaged
    assert not (Path(record.sessions[0].session_dir) / "session.lock").exists()  # released: resumable


async def test_adding_a_sweep_from_the_keyboard_keeps_the_app_running(folder):
    """Reach `+ sweep` with shift+tab and press Enter, as a keyboard-only user does: a new row,
    no crash (the form read the new row before it had composed its fields: NoMatches)."""
    app = W2cApp(None)
    async with app.run_test(size=SIZE) as pilot:
        setup = await setup_ready(app, pilot)
        before = len(setup.query(".sweep-row"))
        for _ in range(80):
            await pilot.press("shift+tab")
            if getattr(app.focused, "id", None) == "add-sweep":
                break
        assert getattr(app.focused, "id", None) == "add-sweep"
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(setup.query(".sweep-row")) == before + 1 or not app.is_running)
        await pilot.pause(0.3)
        assert app.is_running and app.screen is setup
        assert len(setup.query(".sweep-row")) == before + 1
        assert [row.read().method for row in setup.query(".sweep-row")][-1]
