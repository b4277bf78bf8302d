"""One path for failed background work: a notification, and the traceback in <workdir>/logs/tui.log."""

from __future__ import annotations

from w2c_tui.config import load_config
from w2c_tui.session import reader as reader_module
from w2c_tui.tui.app import W2cApp
from w2c_tui.tui.background import log_path
from w2c_tui.tui.screens.sessions import SessionsScreen
from w2c_tui.tui.screens.setup import SetupScreen

from test_tui_flow import wait_for


def notifications(app) -> list[tuple[str, str, str]]:
    return [(n.title, str(n.message), n.severity) for n in app._notifications]


async def test_a_failing_worker_is_notified_and_logged_with_its_traceback(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)

    def broken(*args, **kwargs):
        raise RuntimeError("boom while scanning")

    monkeypatch.setattr(reader_module, "list_sessions", broken)  # the workspace imports it when it scans
    app = W2cApp(loaded=load_config(None, environ={}), poll_monitor=False)
    log = log_path(app.workspace.loaded.workdir)
    async with app.run_test(size=(120, 30)) as pilot:
        # The start-up scan (an app worker) fails: the app says so and keeps running.
        await wait_for(pilot, lambda: any("boom while scanning" in m for _, m, _ in notifications(app)))
        title, message, severity = next(n for n in notifications(app) if "boom while scanning" in n[1])
        assert (title, severity) == ("scan failed", "error")
        assert "RuntimeError: boom while scanning" in message and str(log) in message
        assert isinstance(app.screen, SetupScreen)

        # A screen's thread worker takes the same path.
        await pilot.press("3")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen))
        await wait_for(pilot, lambda: any(t == "sessions failed" for t, _, _ in notifications(app)))

    text = log.read_text(encoding="utf-8")
    assert "worker 'scan' failed: RuntimeError: boom while scanning" in text
    assert "worker 'sessions' failed" in text
    assert "Traceback (most recent call last)" in text and "in broken" in text
    # Nothing reached the terminal the TUI owns.
    out, err = capfd.readouterr()
    assert "boom while scanning" not in out + err


async def test_an_unwritable_log_still_notifies(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = W2cApp(loaded=load_config(None, environ={}), poll_monitor=False)
    log = log_path(app.workspace.loaded.workdir)
    log.parent.parent.mkdir(parents=True, exist_ok=True)
    log.parent.write_text("a file where the logs folder would be")  # the log cannot be written
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        app.report_failure("probe", KeyError("no such field"))
        await pilot.pause()
        [(title, message, severity)] = [n for n in notifications(app) if n[0] == "probe failed"]
        assert "KeyError" in message and "could not be written" in message and severity == "error"
