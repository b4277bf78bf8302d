"""The `[SIMULATED]` mark of a command's stdout summary: one rule for `run`, `judge-check`,
`prefer` and `prefer-check`, the one `show` reads (`SessionInfo.simulated`): the manifest says
the embedded simulator answered, or the server identity recorded from the first answer is a
standalone `w2c-tui sim`'s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

MARK = "  [SIMULATED]"


def simulated_mark(session: Any) -> str:
    """MARK when the session's answers are simulated, else "" (a SessionInfo or a session folder)."""
    if isinstance(session, (str, Path)):
        from w2c_tui.session.reader import read_session

        session = read_session(Path(session))
    return MARK if session.simulated else ""
