"""Temporary files of ours: `.<name>.<pid>.tmp` beside the file they become, renamed over it
once whole. A kill between the two leaves one behind, whoever was writing (a launch, a
listing); the next writer of that file, or a listing allowed to write there, removes it.

Only names of exactly that shape are touched, never followed (a link is removed as a
link), and only when no live writer can still be using them: their process is gone, or
they are older than `STALE_SECONDS` (a writer renames within milliseconds).
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

STALE_SECONDS = 60.0


def temporary_path(path: Path) -> Path:
    """Where this process writes `path` before renaming it over `path`."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _alive(pid: int) -> bool:
    """The process may still be running (where that cannot be asked safely: yes, and age decides)."""
    if os.name != "posix":
        return True
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OverflowError:  # no process has such a number
        return False
    except OSError:  # EPERM: someone else's process
        return True
    return True


def remove_leftovers(path: Path) -> int:
    """Remove the temporary files of `path` that no live writer holds; how many were removed."""
    path = Path(path)
    prefix, suffix = f".{path.name}.", ".tmp"
    try:
        names = os.listdir(path.parent)
    except OSError:
        return 0
    removed = 0
    for name in names:
        pid = name[len(prefix) : -len(suffix)] if name.startswith(prefix) and name.endswith(suffix) else ""
        if not (pid.isascii() and pid.isdigit()) or int(pid) == os.getpid():
            continue  # not ours, or this process's own (its writer removes it)
        leftover = path.parent / name
        try:
            found = os.lstat(leftover)
            if stat.S_ISDIR(found.st_mode):
                continue
            if _alive(int(pid)) and time.time() - found.st_mtime < STALE_SECONDS:
                continue
            os.unlink(leftover)
        except OSError:
            continue
        removed += 1
    return removed
