"""`w2c-tui mlflow-ui`'s server: MLflow's UI in a process group of its own, stopped whole.

`mlflow ui` starts uvicorn, a job runner and workers; a TERM to the first of them leaves
the rest serving the port. So the command starts it as the leader of a new process group
and, on TERM, INT, HUP or any exit, stops that group: TERM, then KILL what is left after
STOP_SECONDS. Its address is said "ready" only once the server answers on loopback (a
first start takes a minute and more while MLflow sets its store up).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import subprocess
import time
from typing import Callable

POLL_SECONDS = 0.25
STOP_SECONDS = 10.0


class _Stopped(Exception):
    """The user (or a service manager) stopped the command."""


def serve(command: list[str], port: int, say: Callable[[str], None], *, poll_seconds: float = POLL_SECONDS) -> int:
    """Run `command` (a server on 127.0.0.1:`port`) until it ends or we are stopped; 0 when stopped,
    else its exit code. Its whole process group is gone when this returns."""
    url = f"http://127.0.0.1:{port}"

    def stop(signum, frame) -> None:
        raise _Stopped

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    process: subprocess.Popen | None = None
    try:
        process = subprocess.Popen(command, start_new_session=True)
        say(f"MLflow UI starting at {url} … (ctrl+c stops it)")
        while process.poll() is None:
            if answers(port):
                say(f"MLflow UI ready: {url}")
                return process.wait()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=poll_seconds)
        say(f"MLflow UI ended before it answered (exit {process.returncode}); its messages are above")
        return process.returncode or 1
    except (_Stopped, KeyboardInterrupt):
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if process is not None:
            stop_group(process)


def answers(port: int) -> bool:
    """Whether a server answers HTTP on 127.0.0.1:`port` (any status: it is up)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        connection.request("GET", "/")
        connection.getresponse()
        return True
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def stop_group(process: subprocess.Popen, grace: float = STOP_SECONDS) -> None:
    """TERM the process group `process` leads, KILL what is left after `grace` seconds."""
    group = process.pid  # start_new_session: the leader's pid is the group's id
    _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.1)
        if process.returncode is not None and not _group_alive(group):
            return
    _signal_group(group, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)


def _signal_group(group: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
