"""Running the sim: `serve()` in the current event loop, or `SimServer` in a thread.

    with SimServer(SimSettings(latency_ms=50)) as sim:
        httpx.get(f"{sim.base_url}/models")      # base_url = "http://127.0.0.1:PORT/v1"
        sim.stats()                                # same JSON as GET /sim/stats
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

import uvicorn

from w2c_tui.sim.app import SimState, create_app
from w2c_tui.sim.faults import SimulatedDrop
from w2c_tui.sim.settings import SimSettings

# Settings that keep per-request overhead small under many concurrent connections.
_FAST = {"log_level": "warning", "access_log": False, "limit_concurrency": None, "backlog": 2048, "lifespan": "off"}


class _QuietDrops(logging.Filter):
    """Hides uvicorn's traceback for connections the sim drops on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not _is_drop(exc)


def _is_drop(exc: BaseException | None) -> bool:
    if isinstance(exc, SimulatedDrop):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_drop(e) for e in exc.exceptions)
    return False


def _quiet_drops() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _QuietDrops) for f in logger.filters):
        logger.addFilter(_QuietDrops())


class _Server(uvicorn.Server):
    """uvicorn.Server that releases sleeping "slow" faults before waiting for connections."""

    def __init__(self, config: uvicorn.Config, state: SimState) -> None:
        super().__init__(config)
        self.sim_state = state

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.sim_state.stopping.set()
        await super().shutdown(sockets)


def bind_socket(host: str, port: int) -> socket.socket:
    """A bound socket (port 0: a free one), listening already: a client that connects as soon
    as the URL is printed waits in the backlog until uvicorn accepts, instead of being refused."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Name the protocol: asyncio turns Nagle off (TCP_NODELAY) only on accepted sockets whose
    # proto is IPPROTO_TCP; with proto 0 every kept-alive response waits ~40 ms for an ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    sock.listen(2048)  # uvicorn's own backlog
    return sock


def _url(sock: socket.socket, host: str) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _server(settings: SimSettings, log_config: Any) -> _Server:
    app, state = create_app(settings)
    config = uvicorn.Config(app, log_config=log_config, timeout_graceful_shutdown=2, **_FAST)
    _quiet_drops()
    return _Server(config, state)


async def serve(settings: SimSettings, *, on_ready: Callable[[str], None] | None = None) -> None:
    """Serve until interrupted (Ctrl+C); `on_ready` gets the base URL ending in /v1."""
    sock = bind_socket(settings.host, settings.port)
    server = _server(settings, uvicorn.config.LOGGING_CONFIG)
    if on_ready is not None:
        on_ready(_url(sock, settings.host) + "/v1")
    await server.serve(sockets=[sock])


class SimServer:
    """The sim on a background thread; a context manager (sync or async)."""

    def __init__(self, settings: SimSettings | None = None, **overrides: Any) -> None:
        self.settings = dataclasses.replace(settings or SimSettings(), **overrides)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.root_url = ""

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, e.g. http://127.0.0.1:PORT/v1."""
        return self.root_url + "/v1"

    @property
    def state(self) -> SimState:
        assert self._server is not None, "the sim is not running"
        return self._server.sim_state

    def stats(self) -> dict[str, Any]:
        return self.state.stats.snapshot()

    def start(self, timeout: float = 10.0) -> SimServer:
        sock = bind_socket(self.settings.host, self.settings.port)
        self.root_url = _url(sock, self.settings.host)
        # log_config=None: do not reconfigure the host application's logging.
        self._server = _server(self.settings, None)
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                asyncio.run(self._run(sock, started))
            except BaseException as exc:  # reported to start()
                failure.append(exc)
            finally:
                started.set()

        self._thread = threading.Thread(target=run, name="w2c-tui-sim", daemon=True)
        self._thread.start()
        if not started.wait(timeout) or failure or not self._server.started:
            self.stop()
            raise RuntimeError(f"the sim did not start: {failure[0] if failure else 'timed out'}")
        return self

    async def _run(self, sock: socket.socket, started: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        assert self._server is not None
        watcher = asyncio.create_task(self._signal_when_started(started))
        try:
            await self._server.serve(sockets=[sock])
        finally:
            watcher.cancel()
            sock.close()

    async def _signal_when_started(self, started: threading.Event) -> None:
        assert self._server is not None
        while not self._server.started:
            await asyncio.sleep(0.005)
        started.set()

    def stop(self, timeout: float = 10.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> SimServer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)
