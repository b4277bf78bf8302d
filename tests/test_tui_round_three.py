"""A researcher's day, round three (issue 36): Setup never edits behind your back, messages
that match the numbers, and keys that go where you expect. Driven with Textual's Pilot."""

from __future__ import annotations

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
    return str(app.screen.query_one("#setup-status").render())


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
        assert "since save" not in status_text(app)
        setup.query_one("#judge").focus()
        await pilot.press("backspace", "backspace", "x")
        setup.query_one("#target-temperature").focus()
        await pilot.press("5")
        await pilot.pause(0.3)
        status = status_text(app)
        assert "2 changes since save: judge_model, target_temperature" in status
        await pilot.press("ctrl+z")  # the temperature as it was
        await wait_for(pilot, lambda: setup.query_one("#target-temperature").value == "0.0")
        assert setup.query_one("#judge").value == "sim-judx"
        await pilot.press("ctrl+z")  # the judge as it was: one step for the keys typed into it
        await wait_for(pilot, lambda: setup.query_one("#judge").value == "sim-judge")
        await pilot.pause(0.3)
        assert "since save" not in status_text(app)
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
        assert "providers.main" in status_text(app)
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
