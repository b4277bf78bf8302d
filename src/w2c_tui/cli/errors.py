"""The CLI's exit codes and its user-facing error: one home every command imports.

Exit codes: 0 success, 1 the run did not finish and a resume can (examples failed, it was
stopped), 2 anything the user must fix first (config, data, arguments, unreachable provider,
a pipeline stopped by HTTP 401/403/404) with one readable message that never says "resume",
130 stopped by Ctrl-C or SIGTERM before it began (the shell's code for an interrupt).
"""

from __future__ import annotations

EXIT_OK, EXIT_INCOMPLETE, EXIT_BAD_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """A user-facing error: printed as one line, exit code 2."""
