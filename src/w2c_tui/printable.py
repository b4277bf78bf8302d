"""Text that is safe to show: no terminal control characters from a server, a file or a config.

A model name, a `system_fingerprint` or a `Server` header is the server's text: an escape
sequence in it could move the cursor, retitle the window or hide the lines around it. The
CLI's output streams pass everything they print through `printable` (cli/output.py); the
TUI needs nothing (Textual draws text, never sends it to the terminal as it came).
"""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, the C1 controls (0x80–0x9f: CSI is 0x9b), and the
# bidirectional overrides that can make a line read in another order than it is written.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_BUT_CR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_BREAKS = re.compile(r"[\t\n\r\x0b\x0c\x85\u2028\u2029]+")


def printable(text: str, *, carriage_return: bool = False) -> str:
    """`text` without control characters (tab and newline kept; carriage return too when asked:
    a progress line on stderr redraws itself with it, and it can do no more than that)."""
    return (_CONTROL_BUT_CR if carriage_return else _CONTROL).sub("", text)


def one_line(text: str) -> str:
    """`text` on one line: line breaks and tabs become one space, control characters go."""
    return printable(_BREAKS.sub(" ", text))
