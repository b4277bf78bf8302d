"""The one output point of the CLI's text: stdout and stderr while a subcommand runs.

Everything a command prints passes through `GuardedStream`:

- control characters are removed (`printable`): a server's `model`, `system_fingerprint` or
  `Server` header, or a configured model name, never reaches the terminal as an escape
  sequence, whichever command prints it (`run`, `sessions`, `show`, `compare`, `export`);
- a reader that left (`w2c-tui run … | head`, `| true`) is not an error: what is left to
  print is dropped and the command goes on, so its exit code and its lines on stderr are
  those of what it did, never turned into success;
- a stream that cannot be written (stdout on a full disk, `> /dev/full`) is remembered and
  said in one line on stderr when the command ends (exit 2 if it would have been 0).

The progress display's own cursor movements go to `raw` (they are ours, not text).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator, TextIO

from w2c_tui.printable import printable


class GuardedStream:
    """A text stream that prints only printable text and never raises on a broken or full output."""

    def __init__(self, raw: TextIO, name: str) -> None:
        self.raw = raw
        self.name = name
        self._carriage_return = name == "stderr"  # `data download` redraws its progress line with \r
        self.reader_left = False
        self.failure: OSError | None = None

    def write(self, text: str) -> int:
        if not self.reader_left and self.failure is None:
            with self._guard():
                self.raw.write(printable(text, carriage_return=self._carriage_return))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.reader_left and self.failure is None:
            with self._guard():
                self.raw.flush()

    def isatty(self) -> bool:
        try:
            return self.raw.isatty()
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:  # fileno, encoding, errors, …
        return getattr(self.raw, name)

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except BrokenPipeError:
            self.reader_left = True
            self._silence()
        except OSError as exc:
            self.failure = exc
            self._silence()

    def _silence(self) -> None:
        """Point the descriptor at /dev/null: what the interpreter still flushes at exit goes nowhere,
        instead of ending the process with "Exception ignored … BrokenPipeError" and status 120."""
        try:
            fd = self.raw.fileno()
        except (OSError, ValueError, AttributeError):
            return  # not a file (a test's capture): nothing is flushed at exit
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)


@contextlib.contextmanager
def guarded_output() -> Iterator[tuple[GuardedStream, GuardedStream]]:
    """sys.stdout and sys.stderr guarded for the time of one command; restored after it."""
    saved = sys.stdout, sys.stderr
    out, err = GuardedStream(saved[0], "stdout"), GuardedStream(saved[1], "stderr")
    sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
    try:
        yield out, err
    finally:
        out.flush()
        err.flush()
        sys.stdout, sys.stderr = saved


def write_failure(stream: GuardedStream) -> str | None:
    """One line for an output that could not be written, or None."""
    exc = stream.failure
    if exc is None:
        return None
    return f"w2c-tui: error: cannot write to {stream.name} ({exc.strerror or exc}); nothing more was printed"
