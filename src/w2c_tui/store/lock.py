"""One writer per session: an advisory lock file, `session.lock`, in the session folder.

The lock is an exclusive `flock` on that file, not the file's existence: the kernel drops a
flock when its holder dies, however it dies, so a crash never leaves a session locked, and
no pid has to be trusted (pids are reused; a pid says nothing about another host). flock
also conflicts between two open files of one process, so two launches inside the app are
kept apart too, which POSIX `fcntl` record locks would not do. The file's content (pid,
host, start time) is for people: the message to a second writer, and the audit event when
a file left by a dead writer is taken over. A clean release deletes the file, so a file
found unlocked means its writer did not end cleanly.

Where flock is unavailable (no `fcntl`, or a file system that refuses it) the content is
used instead: a lock of a live pid on this host, or of another host, is respected.
"""

from __future__ import annotations

import errno
import json
import os
import socket
from pathlib import Path
from typing import Any

from w2c_tui.store.audit import utc_now

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux or macOS
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = "session.lock"


class SessionLockedError(RuntimeError):
    """Another launch is writing the session; the message says who and since when."""

    def __init__(self, root: Path, owner: dict[str, Any]) -> None:
        self.owner = owner
        who = f"pid {owner.get('pid', '?')} on host {owner.get('host', '?')} since {owner.get('started_at', '?')}"
        super().__init__(f"session {root} is being written by {who}; wait for it or stop it")


class SessionLock:
    def __init__(self, root: Path) -> None:
        self.path = Path(root) / LOCK_FILE
        self._fd: int | None = None
        self.taken_over: dict[str, Any] | None = None  # owner of a stale lock file we replaced

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> dict[str, Any] | None:
        """Take the lock or raise SessionLockedError; returns the stale owner taken over, if any."""
        if self._fd is not None:
            raise RuntimeError("lock already held")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                locked = _try_flock(fd)
                previous = _read_owner(fd)
                if locked is False:
                    raise SessionLockedError(self.path.parent, previous or {})
                if locked is None and previous and _looks_alive(previous):
                    raise SessionLockedError(self.path.parent, previous)
                if not _same_file(fd, self.path):
                    os.close(fd)  # the holder released (deleted) it meanwhile: lock the new file
                    continue
            except BaseException:
                _close_quietly(fd)
                raise
            break
        self._fd = fd
        self.taken_over = previous or None
        _write_owner(fd, owner_record())
        return self.taken_over

    def release(self) -> None:
        """Delete the file while still holding the lock, then unlock (by closing)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if _same_file(fd, self.path):
                self.path.unlink()
        except OSError:
            pass
        _close_quietly(fd)

    def __enter__(self) -> "SessionLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def owner_record() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(), "started_at": utc_now()}


def read_lock(root: Path) -> dict[str, Any] | None:
    """The owner written in a session's lock file (held or stale), for display."""
    try:
        text = (Path(root) / LOCK_FILE).read_text(encoding="utf-8")
    except OSError:
        return None
    return _parse_owner(text)


def _try_flock(fd: int) -> bool | None:
    """True: locked; False: someone else holds it; None: this file system cannot flock."""
    if fcntl is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        return None  # ENOLCK, EOPNOTSUPP, ...


def _read_owner(fd: int) -> dict[str, Any] | None:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    return _parse_owner(b"".join(chunks).decode("utf-8", "replace"))


def _parse_owner(text: str) -> dict[str, Any] | None:
    if not text.strip():
        return None
    try:
        owner = json.loads(text)
    except ValueError:
        return {"unreadable": text[:200]}
    return owner if isinstance(owner, dict) else {"unreadable": text[:200]}


def _write_owner(fd: int, owner: dict[str, Any]) -> None:
    data = (json.dumps(owner, sort_keys=True) + "\n").encode("utf-8")
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, data)
    os.fsync(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _looks_alive(owner: dict[str, Any]) -> bool:
    """Without flock: another host's lock is respected; on this host, its pid must exist."""
    if owner.get("host") != socket.gethostname():
        return True
    pid = owner.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
