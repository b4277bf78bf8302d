"""Is a path a file we can read to its end? Asked before opening any input file.

Opening a FIFO blocks until someone writes to it, and /dev/zero never ends: both hang a
run with no word. A path is read only when it is a regular file we may read.
`open_regular` opens it without blocking and then checks what was opened (not the name,
which may be swapped between a check and the open).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO


class NotRegularFile(OSError):
    """What was opened is not a regular file: `reason` says what it is, in a few words."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(reason)
        self.filename = str(path)
        self.reason = reason

    def __str__(self) -> str:
        return f"{Path(self.filename).name}: {self.reason}"


def _kind_reason(mode: int) -> str | None:
    """Why a file of this mode is not read (a few words), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "is a named pipe (FIFO), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return "is not a regular file"


def unreadable_reason(path: str | Path) -> str | None:
    """Why `path` cannot be read as a file (a few words), or None when it can."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "not found"
    except OSError as exc:
        return f"cannot be looked at ({exc.strerror or type(exc).__name__})"
    reason = _kind_reason(mode)
    if reason is not None:
        return reason
    if not os.access(path, os.R_OK):
        return "is not readable (permission denied)"
    return None


def open_regular(path: str | Path, *, follow_links: bool = True, update: bool = False) -> BinaryIO:
    """`path` opened for reading in binary (with `update`, for reading and writing, created when
    absent); FileNotFoundError when absent, NotRegularFile when what it names (through links,
    unless `follow_links` is False) is not a regular file.

    Opened with O_NONBLOCK, so a FIFO cannot hold the open, then checked with fstat on the
    descriptor itself (on a regular file O_NONBLOCK changes nothing)."""
    access = os.O_RDWR | os.O_CREAT if update else os.O_RDONLY
    flags = access | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError:
        if not follow_links and os.path.islink(path):
            raise NotRegularFile(path, "is a symbolic link, not a regular file") from None
        raise
    try:
        reason = _kind_reason(os.fstat(fd).st_mode)
        if reason is not None:
            raise NotRegularFile(path, reason)
        return os.fdopen(fd, "r+b" if update else "rb")
    except BaseException:
        os.close(fd)
        raise
