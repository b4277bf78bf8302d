"""Background work with one error path: a failed worker becomes a notification and a log entry.

Every TUI worker is declared with `@background(...)` instead of `textual.work`. When its
body raises, the app is told (`report_failure`: a notification naming the log file) and the
traceback is appended to `<workdir>/logs/tui.log`; nothing is printed to the terminal, which
the TUI owns. The error is re-raised so the worker still ends in the ERROR state for any
screen that reacts to it (Setup shows a failed connection test next to its button).
"""

from __future__ import annotations

import functools
import inspect
import threading
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from textual import work

LOG_FILE = Path("logs") / "tui.log"
_write_lock = threading.Lock()  # thread workers may fail at the same time


def log_path(workdir: Path) -> Path:
    return Path(workdir) / LOG_FILE


def log_failure(path: Path, task: str, error: BaseException) -> bool:
    """Append one entry (a header line, then the traceback). False when the file cannot be written."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    entry = f"{stamp} worker '{task}' failed: {type(error).__name__}: {error}\n{text}\n"
    try:
        with _write_lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(entry)
    except OSError:
        return False
    return True


def background(*, group: str, thread: bool = False, exclusive: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`textual.work` (never exiting the app on error) whose failures the app reports."""

    def decorate(method: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(method):

            @functools.wraps(method)
            async def run_async(self: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    return await method(self, *args, **kwargs)
                except Exception as exc:
                    self.app.report_failure(group, exc)
                    raise

            body: Callable[..., Any] = run_async
        else:

            @functools.wraps(method)
            def run_sync(self: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    return method(self, *args, **kwargs)
                except Exception as exc:
                    self.app.report_failure(group, exc)
                    raise

            body = run_sync
        return work(body, thread=thread, exclusive=exclusive, group=group, exit_on_error=False)

    return decorate
