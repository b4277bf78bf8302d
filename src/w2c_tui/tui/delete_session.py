"""Delete a session from the Sessions screen: ask first, refuse one that is being written.

The files go in a thread (a session can hold thousands of call files); the list is read again
afterwards. A session of a running launch is refused before asking, and the session's lock
refuses one another process is writing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from w2c_tui.session.reader import SessionInfo
from w2c_tui.tui.formatting import display_path

if TYPE_CHECKING:
    from textual.screen import Screen

    from w2c_tui.tui.workspace import Workspace


def ask_and_delete(screen: "Screen", workspace: "Workspace", info: SessionInfo, reload: Callable[[], None]) -> None:
    from w2c_tui.tui.screens.confirm import Choice, ConfirmScreen

    root = info.paths.root
    running = {s.session_dir for r in workspace.running_launches() for s in r.sessions}
    if str(root) in running:
        screen.notify("This session is being written by a running launch: cancel it on the Monitor first.", severity="warning", timeout=6)
        return
    question = ConfirmScreen(
        "Delete session",
        f"Delete session {info.fingerprint} ({info.target_model}, run {info.run_key}) and every file in "
        f"{display_path(root)}? This cannot be undone; an MLflow run of it is kept.",
        [Choice("n", "Keep"), Choice("y", "Delete", "error")],
    )

    def answered(answer: str | None) -> None:
        if answer == "y":
            screen.run_worker(lambda: _delete(screen, workspace, info, reload), thread=True, group="delete-session", exit_on_error=False)

    screen.app.push_screen(question, answered)


def _delete(screen: "Screen", workspace: "Workspace", info: SessionInfo, reload: Callable[[], None]) -> None:
    from w2c_tui.store.lock import SessionLockedError
    from w2c_tui.store.remove import NotASessionError, delete_session

    app = screen.app
    try:
        delete_session(info.paths.root, workspace.loaded.workdir)
    except (NotASessionError, SessionLockedError, OSError) as exc:
        app.call_from_thread(screen.notify, f"Not deleted: {exc}", severity="error", timeout=10)
        return
    workspace.open_sessions.forget(str(info.paths.root))
    workspace.sessions_stale = True
    app.call_from_thread(screen.notify, f"Deleted session {info.fingerprint}", timeout=4)
    app.call_from_thread(reload)
