"""Keys that mean one thing: a letter or a digit typed into a field is text, and help lists every key."""

from __future__ import annotations

from textual.widgets import Input

from w2c_tui.config import load_config
from w2c_tui.tui.app import W2cApp
from w2c_tui.tui.screens.compare import CompareScreen
from w2c_tui.tui.screens.help import SECTIONS, HelpScreen
from w2c_tui.tui.screens.monitor import MonitorScreen
from w2c_tui.tui.screens.provider_editor import ProviderEditor
from w2c_tui.tui.screens.session_view import SessionViewScreen
from w2c_tui.tui.screens.sessions import SessionsScreen
from w2c_tui.tui.screens.setup import SetupScreen
from w2c_tui.tui.screens.trace import TraceScreen
from w2c_tui.tui.widgets.row_list import RowList

from test_tui_flow import wait_for


def app_on_setup(tmp_path, monkeypatch) -> W2cApp:
    monkeypatch.chdir(tmp_path)
    return W2cApp(loaded=load_config(None, environ={}), poll_monitor=False)


async def setup_ready(app, pilot) -> SetupScreen:
    await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and app.screen._clean_values is not None)
    return app.screen


async def test_keys_typed_into_a_field_are_text_not_actions(tmp_path, monkeypatch):
    app = app_on_setup(tmp_path, monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        setup = await setup_ready(app, pilot)
        for widget_id in ("run-key", "http-max-retries"):
            field = setup.query_one(f"#{widget_id}", Input)
            field.focus()
            await pilot.pause()
            field.value = "day2"
            field.cursor_position = len(field.value)  # after the focus, which selects the whole text
            await pilot.pause()
            await pilot.press("j", "3", "t", "a", "question_mark")
            await pilot.pause(0.3)
            assert field.value == "day2j3ta?"
            assert app.current_mode == "setup" and app.screen is setup  # no tab switch, no editor, no help
            assert not any(w.group in ("launch", "probe") for w in app.workers)  # no judge-check, no test
            # While typing, the footer shows the letter and digit keys as unavailable.
            assert app.check_action("tab", ("sessions",)) is None
            assert setup.check_action("test_provider", ()) is None and setup.check_action("check_judge", ()) is None

        # escape leaves the field: the same keys act again.
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is None
        assert app.check_action("tab", ("sessions",)) is True and setup.check_action("check_judge", ()) is True
        await pilot.press("3")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen))
        await pilot.press("1")
        await wait_for(pilot, lambda: app.screen is setup)


async def test_the_tab_bar_still_switches_while_a_field_has_focus(tmp_path, monkeypatch):
    app = app_on_setup(tmp_path, monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        setup = await setup_ready(app, pilot)
        setup.query_one("#run-key", Input).focus()
        await pilot.pause()
        await app.run_action("switch_mode('sessions')")  # what a click on the tab bar runs
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen))


# How help writes a binding's key.
SHOWN = {
    "question_mark": "?",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "delete": "del",
    "slash": "/",
    "up": "↑",
    "down": "↓",
    "pageup": "pgup",
    "pagedown": "pgdn",
    "shift+f6": "⇧f6",
}


def test_help_lists_every_key():
    listed = {token for _, keys in SECTIONS for key, _ in keys for token in key.replace("↑↓", "↑ ↓").split()}
    owners = (
        W2cApp, SetupScreen, MonitorScreen, SessionsScreen, SessionViewScreen, TraceScreen, CompareScreen,
        ProviderEditor, RowList, HelpScreen,
    )
    missing = []
    for owner in owners:
        for binding in owner.BINDINGS:
            for key in binding.key.split(","):
                if key.startswith("ctrl+") and key not in ("ctrl+p", "ctrl+q", "ctrl+r", "ctrl+s"):
                    continue
                if owner is HelpScreen and key == "q":  # help closes with q too, as its border says of escape
                    continue
                if SHOWN.get(key, key) not in listed:
                    missing.append(f"{owner.__name__}: {key}")
    assert missing == []


async def test_sweeps_are_added_and_removed_from_the_keyboard(tmp_path, monkeypatch):
    from textual.widgets import Button

    app = app_on_setup(tmp_path, monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        setup = await setup_ready(app, pilot)
        setup.query_one("#add-sweep", Button).focus()
        await pilot.pause()
        for _ in range(2):
            await pilot.press("enter")
            await pilot.pause(0.3)
        assert app.is_running and len(setup._read_values().sweeps) == 2
        assert app.workspace.unsaved_setup
        setup.query(".sweep-remove").first(Button).focus()
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(setup._read_values().sweeps) == 1)
        assert app.is_running
