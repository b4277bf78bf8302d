"""One writer per session: an advisory lock file, `session.lock`, in the session folder.

The lock is an exclusive `flock` on that file, not the file's existence: the kernel drops a
flock when its holder dies, however it dies, so a crash never leaves a session locked, and
no pid has to be trusted (pids are reused; a pid says nothing about another host). flock
also conflicts between two open files of one process, so two launches inside the app are
kept apart too, which POSIX `fcntl` record locks would not do. The file's content (pid,
host, start time) is for people: the message to a second writer, and the audit event when
a file left by a dead writer is taken over. A clean release deletes the file, so a file
found unlocked means its writer did not end cleanly.

The file is opened without following a link (O_NOFOLLOW) and must be a regular file with
one name: a `session.lock` that is a symbolic link, a device, a pipe or a hard link to
another file is refused (`LockFileRefused`), never written through.

Where flock is unavailable (no `fcntl`, or a file system that refuses it) the content is
used instead: a lock of a live pid on this host, or of another host, is respected.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
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


class LockFileRefused(OSError):
    """`session.lock` is not a plain file of ours (a link, a device, …): nothing was written to it."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(errno.EPERM, f"{path} is {what}, not a lock file; remove it, then run again")
        self.filename = str(path)


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
            fd = _open_lock_file(self.path)
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


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _open_lock_file(path: Path) -> int:
    """The lock file, opened for writing only if it is a regular file with one name (LockFileRefused otherwise)."""
    try:
        # O_NONBLOCK: a FIFO put there must not block the open; O_NOFOLLOW: a link is not followed.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0), 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise LockFileRefused(path, "a symbolic link") from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise LockFileRefused(path, "not a regular file") from None
        raise
    found = os.fstat(fd)
    what = None if stat.S_ISREG(found.st_mode) else "not a regular file"
    if what is None and found.st_nlink > 1:
        what = "a hard link to another file"  # writing the owner would overwrite that file too
    if what is not None:
        _close_quietly(fd)
        raise LockFileRefused(path, what)
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return fd


def owner_record() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(), "started_at": utc_now()}


def read_lock(root: Path) -> dict[str, Any] | None:
    """The owner written in a session's lock file (held or stale), for display."""
    try:  # not through a link: its target's text is nobody's owner record
        fd = os.open(Path(root) / LOCK_FILE, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return _read_owner(fd)
    except OSError:
        return None
    finally:
        _close_quietly(fd)


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
