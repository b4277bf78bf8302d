"""The sessions a reader has open: each read once, the last few kept (thread-safe).

A session's summary (`SessionInfo`) and its rows (`SessionData`) are built from the same
`SessionInfo`, so its manifest, checkpoints and dataset are read once per session even
when two thread workers ask at the same time (the Session view loads both at once).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from w2c_tui.session.reader import SessionInfo, read_session
from w2c_tui.session.data import SessionData

DEFAULT_SIZE = 4


class OpenSessions:
    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.size = size
        self._infos: OrderedDict[Path, SessionInfo] = OrderedDict()
        self._data: OrderedDict[Path, SessionData] = OrderedDict()
        self._lock = threading.Lock()  # guards the two maps
        self._loading: dict[Path, threading.Lock] = {}  # one reader per session at a time

    def _session_lock(self, key: Path) -> threading.Lock:
        with self._lock:
            return self._loading.setdefault(key, threading.Lock())

    def _keep(self, cache: OrderedDict, key: Path, value: object) -> None:
        with self._lock:
            cache[key] = value
            cache.move_to_end(key)
            while len(cache) > self.size:
                cache.popitem(last=False)

    def info(self, path: str | Path, *, warm: bool = True) -> SessionInfo:
        """The session's summary; `warm`: its lazy metrics computed too (see SessionInfo.warm). Blocking."""
        key = Path(path).resolve()
        with self._session_lock(key):
            info = self._infos.get(key)
            if info is None:
                info = read_session(key)
            if warm:
                info.warm()
            self._keep(self._infos, key, info)
            return info

    def data(self, path: str | Path) -> SessionData:
        """The session's rows and indexes. Blocking."""
        key = Path(path).resolve()
        info = self.info(key, warm=False)
        with self._session_lock(key):
            data = self._data.get(key)
            if data is None:
                data = SessionData.load(info)
            self._keep(self._data, key, data)
            return data

    def forget(self, path: str | Path) -> None:
        """Drop a session that changed on disk (a launch wrote to it)."""
        key = Path(path).resolve()
        with self._lock:
            self._infos.pop(key, None)
            self._data.pop(key, None)

    def clear(self) -> None:
        """Drop every open session (the user asked to read the workdir again)."""
        with self._lock:
            self._infos.clear()
            self._data.clear()
