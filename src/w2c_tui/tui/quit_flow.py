"""What happens between ctrl+q and the app closing: nothing is lost without a question.

Unsaved Setup edits ask Save / Discard / Cancel; a running launch asks whether to cancel it.
A confirmed quit cancels the launches and waits for their workers to end, so the checkpoints
are closed as after `c` on the Monitor (finished rows stay; the same run key resumes them).
Runs in an app worker because the dialogs are awaited.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App

    from w2c_tui.tui.workspace import Workspace

CANCEL_WAIT_SECONDS = 30.0  # a stuck request is abandoned by its own timeout well before this


async def confirm_then_quit(app: "App", workspace: "Workspace") -> None:
    from w2c_tui.tui.screens.confirm import quit_running_dialog, quit_unsaved_dialog

    if workspace.unsaved_setup:
        answer = await app.push_screen_wait(quit_unsaved_dialog())
        if answer == "s":
            if not await _save_setup(app):
                return  # the form has errors or the write failed: the notification says which
        elif answer != "d":
            return
    running = workspace.running_launches()
    if running:
        answer = await app.push_screen_wait(quit_running_dialog(len(running)))
        if answer != "q":
            return
        for record in running:
            record.cancel()
        app.notify("Cancelling the running launch before quitting…", timeout=CANCEL_WAIT_SECONDS)
        deadline = time.monotonic() + CANCEL_WAIT_SECONDS
        while any(not record.ended for record in running) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
    app.exit(0)


async def _save_setup(app: "App") -> bool:
    from w2c_tui.tui.screens.setup import SetupScreen

    await app.switch_mode("setup")
    setup = next((screen for screen in app.screen_stack if isinstance(screen, SetupScreen)), None)
    return setup is not None and await setup.save_and_wait()
