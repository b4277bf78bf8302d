"""Every focusable control of every screen pressed with Enter from the keyboard, at 80x24: the app
keeps running (issue 27: a keyboard-only user once crashed the app with `+ sweep`).

Each screen is walked in focus order (the chain is read again after each press: a press may open a
panel with more controls). After a press the test goes back to the screen under test: a dialog or
pushed screen is left with escape, a tab switch is undone. Choices that quit the app are not pressed.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual.widgets import Button

from w2c_tui.config import LoadedConfig, load_config
from w2c_tui.config.schema import Settings
from w2c_tui.testing.synthetic_session import write_session
from w2c_tui.tui.app import W2cApp
from w2c_tui.tui.launches import MonitoredSession

from configs import write_config
from test_tui_snapshots_80x24 import FinishedState
from test_tui_snapshots import FrozenState

SIZE = (80, 24)


async def wait_for(pilot, condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.05)


def quits(widget) -> bool:
    """A dialog choice that ends the app (the test asserts the app still runs)."""
    return isinstance(widget, Button) and "quit" in str(widget.label).lower()


async def back_to(pilot, app, home) -> bool:
    """Return to `home` (escape out of what a press opened); False when `home` is gone."""
    for _ in range(6):
        if app.screen is home:
            return True
        if home not in app.screen_stack:
            if app.current_mode != home_mode(app, home):
                await app.switch_mode(home_mode(app, home))
                await pilot.pause()
                continue
            return False
        await pilot.press("escape")
        await pilot.pause(0.1)
    return app.screen is home


def home_mode(app, home) -> str:
    return next((mode for mode, stack in app._screen_stacks.items() if home in stack), app.current_mode)


def control_name(widget) -> str:
    label = getattr(widget, "label", "")
    return f"{type(widget).__name__}#{widget.id or ''}{'.' + '.'.join(sorted(widget.classes)) if not widget.id else ''} {label}"


async def press_everything(pilot, app, home, *, reopen=None, limit: int = 120) -> list[str]:
    """Focus each focusable widget of `home` not pressed yet, in focus order, and press Enter; the
    names of those pressed. (The chain is read again each time: a press adds or removes controls.)"""
    pressed: list[str] = []
    while len(pressed) < limit:
        if not await back_to(pilot, app, home):
            assert reopen is not None, f"{home} went away after {pressed[-1:]}"
            home = await reopen()
        widget = next((w for w in home.focus_chain if control_name(w) not in pressed and not quits(w)), None)
        if widget is None:
            break
        widget.focus()
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause(0.15)
        name = control_name(widget)
        assert app.is_running, f"the app exited after Enter on {name} of {type(home).__name__}"
        pressed.append(name)
    return pressed


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    return tmp_path


def sessions_app(folder: Path, start_mode: str) -> W2cApp:
    workdir = folder / "workdir"
    write_session(workdir, n_examples=12, stability_k=3, calls_total=60)
    write_session(workdir, fingerprint="7ac2e9a10b5e0002", target_model="qwen3-32b", n_examples=12, seed=2, skill=0.55)
    settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}, "mlflow": {"enabled": False}})
    return W2cApp(loaded=LoadedConfig(settings, None, folder, {}), start_mode=start_mode, poll_monitor=False)


async def test_every_control_of_setup_and_its_dialogs(folder):
    # One example per label, mcq only: a Launch (or Check judge) pressed here is short.
    write_config(folder, data={"n_per_label": 1}, pipelines={"do_llm_judge": False, "do_mcq_logprob": False}, mlflow={"enabled": False})
    app = W2cApp(loaded=load_config(folder / "config.toml", environ={}), poll_monitor=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: type(app.screen).__name__ == "SetupScreen" and app.screen._clean_values is not None)
        setup = app.screen
        pressed = await press_everything(pilot, app, setup)
        assert any("add-sweep" in name for name in pressed) and any("launch" in name for name in pressed)

        # The provider editor, empty (a) and on the built-in endpoint (e).
        for key in ("a", "e"):
            await back_to(pilot, app, setup)
            app.set_focus(None)
            await pilot.press(key)
            await pilot.pause(0.2)
            if app.screen is not setup:

                async def reopen(key=key):
                    await back_to(pilot, app, setup)
                    app.set_focus(None)
                    await pilot.press(key)
                    await wait_for(pilot, lambda: app.screen is not setup)
                    return app.screen

                await press_everything(pilot, app, app.screen, reopen=reopen)
        await back_to(pilot, app, setup)
        # Let a launch started by ▶ Launch end before the app closes.
        await wait_for(pilot, lambda: all(record.ended for record in app.workspace.launches), timeout=60)
        assert app.is_running


async def test_every_control_of_the_monitor_during_and_after_a_run(folder):
    app = sessions_app(folder, "monitor")
    app.workspace.extra_monitored += [
        MonitoredSession("done", "sweep / 3f9a1c0d2b7e4a55 · llama-3.3-70b-instruct", "", FinishedState()),
        MonitoredSession("live", "sweep / 0b5e7c1d2e3f4a5b · gemma-3-27b-it", "", FrozenState()),
    ]
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: getattr(app.screen, "current_panel", lambda: None)() is not None)
        monitor = app.screen
        for _ in range(2):  # the live session, then the finished one
            await press_everything(pilot, app, monitor)
            await back_to(pilot, app, monitor)
            await pilot.press("right_square_bracket")
            await pilot.pause(0.2)
        assert app.is_running


async def test_every_control_of_sessions_session_view_trace_and_compare(folder):
    app = sessions_app(folder, "sessions")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(getattr(app.screen, "sessions", ())) == 2)
        sessions = app.screen
        await press_everything(pilot, app, sessions)

        # A session view, each of its tabs.
        await back_to(pilot, app, sessions)
        paths = sorted(str(p) for p in (folder / "workdir" / "runs" / "synthetic" / "sessions").iterdir())
        for tab in ("metrics", "examples", "agreement", "charts", "manifest"):
            await back_to(pilot, app, sessions)
            app.open_session(paths[0])
            await wait_for(pilot, lambda: type(app.screen).__name__ == "SessionViewScreen" and app.screen.data is not None)
            view = app.screen
            await view.action_tab(tab)
            await pilot.pause(0.3)
            if tab == "examples":
                # First the trace of an example row, as the snapshot test opens it.
                await pilot.press("down", "down", "enter")
                await wait_for(pilot, lambda: type(app.screen).__name__ == "TraceScreen")
                await press_everything(pilot, app, app.screen)
                while app.screen is not view:
                    await pilot.press("escape")
                    await pilot.pause(0.1)
            await press_everything(pilot, app, view)
            while type(app.screen).__name__ != "SessionsScreen":
                await pilot.press("escape")
                await pilot.pause(0.1)

        # Compare with two sessions chosen.
        await app.switch_mode("compare")
        await wait_for(pilot, lambda: len(getattr(app.screen, "sessions", ())) == 2)
        compare = app.screen
        compare.choose(paths[0], paths[1])
        await wait_for(pilot, lambda: compare.data_b is not None)
        await press_everything(pilot, app, compare)

        # Help.
        await back_to(pilot, app, compare)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "HelpScreen")
        await press_everything(pilot, app, app.screen)
        assert app.is_running


async def test_every_choice_of_the_dialogs_that_do_not_quit(folder):
    from w2c_tui.tui.screens.confirm import quit_running_dialog, quit_unsaved_dialog

    app = sessions_app(folder, "sessions")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: len(getattr(app.screen, "sessions", ())) == 2)
        sessions = app.screen
        # The delete prompt: every choice, the last one deletes (a synthetic session).
        for _ in range(3):
            await back_to(pilot, app, sessions)
            await pilot.press("delete")
            await pilot.pause(0.2)
            if type(app.screen).__name__ == "ConfirmScreen":
                await press_everything(pilot, app, app.screen, limit=1)
        for dialog in (quit_unsaved_dialog(), quit_running_dialog(1)):
            await back_to(pilot, app, sessions)
            await app.push_screen(dialog)
            await pilot.pause()
            first = dialog.query(Button).first()
            first.focus()
            await pilot.press("enter")  # Cancel, the safe first choice
            await pilot.pause(0.1)
            assert app.is_running and app.screen is sessions
