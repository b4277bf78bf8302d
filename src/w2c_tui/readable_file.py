"""Is a path a file we can read to its end? Asked before opening any input file.

Opening a FIFO blocks until someone writes to it, and /dev/zero never ends: both hang a
run with no word. A path is read only when it is a regular file we may read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def unreadable_reason(path: str | Path) -> str | None:
    """Why `path` cannot be read as a file (a few words), or None when it can."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "not found"
    except OSError as exc:
        return f"cannot be looked at ({exc.strerror or type(exc).__name__})"
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "is a named pipe (FIFO), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    if not stat.S_ISREG(mode):
        return "is not a regular file"
    if not os.access(path, os.R_OK):
        return "is not readable (permission denied)"
    return None
