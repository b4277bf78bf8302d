"""Delete one session folder, only when it is a session of this workdir that nobody is writing.

The session's own lock is taken first, so a launch writing it (in this process or another)
makes the delete fail with SessionLockedError instead of pulling files from under it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from w2c_tui.store.lock import SessionLock


class NotASessionError(ValueError):
    """The folder is not runs/<RUN_KEY>/sessions/<FP> under the workdir: nothing is deleted."""


def delete_session(root: str | Path, workdir: str | Path) -> None:
    """Remove `root` and everything in it. Raises NotASessionError, SessionLockedError or OSError."""
    root = Path(root).resolve()
    runs = (Path(workdir) / "runs").resolve()
    if root.parent.name != "sessions" or root.parent.parent.parent != runs or not root.is_dir():
        raise NotASessionError(f"{root} is not a session folder under {runs}; nothing was deleted")
    lock = SessionLock(root)
    lock.acquire()
    try:
        shutil.rmtree(root)
    finally:
        lock.release()
