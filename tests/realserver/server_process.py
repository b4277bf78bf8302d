"""A real server of these tests as a child process: started on a free loopback port, ready
once GET /v1/models answers 200, stopped with every process it started."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx


@dataclass
class ServerProcess:
    base_url: str  # ends in /v1
    model: str
    process: subprocess.Popen | None  # None: a server started by someone else
    log: Path
    start_seconds: float
    args: tuple[str, ...] = ()

    @property
    def root(self) -> str:
        return self.base_url.removesuffix("/v1")

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(
    name: str,
    command: Callable[[int], list[str]],
    model: str,
    log: Path,
    *,
    env: Mapping[str, str],
    timeout: float,
    cwd: Path | None = None,
    args: tuple[str, ...] = (),
) -> ServerProcess:
    """`command(port)` started in a session of its own, its output in `log` (a file, not a pipe:
    a server logs a lot and a full pipe would block it); RuntimeError with the log's end when
    it exits or does not answer within `timeout` seconds."""
    port = free_port()
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(
            command(port), stdout=out, stderr=subprocess.STDOUT, env=dict(env), cwd=cwd, start_new_session=True
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    while time.monotonic() - started < timeout and process.poll() is None:
        try:
            if httpx.get(f"{base_url}/models", timeout=5).status_code == 200:
                return ServerProcess(base_url, model, process, log, time.monotonic() - started, args)
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    stop(process)
    tail = log.read_text(errors="replace")[-3000:]
    raise RuntimeError(
        f"{name} did not answer /v1/models within {timeout:.0f} s (exit {process.returncode}); its log ends:\n{tail}"
    )


def stop(process: subprocess.Popen | None, grace: float = 30) -> None:
    """Stop the server and what it started (its process group: vLLM runs its engine apart)."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=grace)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
