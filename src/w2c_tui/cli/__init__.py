"""The `w2c-tui` command: the app by default, subcommands for servers and scripts.

Exit codes and the user-facing error live in `cli/errors.py`; command modules import them
from there, never from this face (which imports the commands).
"""

from __future__ import annotations

import argparse
import sys

from w2c_tui import __version__
from w2c_tui.cli.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, CliError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print usage and exit 2 itself
        self.print_usage(sys.stderr)
        raise CliError(message)


def build_parser() -> argparse.ArgumentParser:
    # Every start builds the whole parser, so a command module imports only what its argparse
    # set-up needs; what the command runs is imported inside its handler (tests/test_cli_startup.py).
    from w2c_tui.cli import data_cmd, mlflow_cmd, probe_cmd, run_cmd, sessions_cmd, sim_cmd

    parser = _Parser(prog="w2c-tui", description="Run and browse When2Call evaluations against OpenAI-compatible APIs.")
    parser.add_argument("--version", action="version", version=f"w2c-tui {__version__}")
    from w2c_tui.cli.common import path_argument

    parser.add_argument(
        "--config", metavar="FILE", type=path_argument, help="configuration file (default: ./config.toml if present)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    run_cmd.register(sub)
    sessions_cmd.register(sub)
    sim_cmd.register(sub)
    probe_cmd.register(sub)
    data_cmd.register(sub)
    mlflow_cmd.register(sub)
    from w2c_tui.cli import judge_check_cmd

    judge_check_cmd.register(sub)
    from w2c_tui.cli import prefer_cmd

    prefer_cmd.register(sub)
    from w2c_tui.cli import compare_cmd

    compare_cmd.register(sub)
    from w2c_tui.cli import export_cmd

    export_cmd.register(sub)
    _describe(parser)
    return parser


def _describe(parser: argparse.ArgumentParser) -> None:
    """Each subcommand's `--help` opens with the line the command list shows for it."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        for name, command in action.choices.items():
            if not command.description and helps.get(name):
                text = helps[name]
                command.description = text[0].upper() + text[1:] + "."
            _describe(command)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except CliError as exc:
        return _error_line(f"w2c-tui: error: {exc}")
    if args.command is None:
        return _handled(lambda: _open_app(args))
    from w2c_tui.cli.output import guarded_output, write_failure

    # A subcommand prints through the guarded streams (cli/output.py): no control character
    # reaches the terminal, and a reader that left does not change the exit code.
    with guarded_output() as (out, _):
        code = _handled(lambda: int(args.handler(args) or 0))
    failure = write_failure(out)
    if failure:
        _error_line(failure)
        return code or EXIT_BAD_INPUT
    return code


def _handled(call) -> int:
    """The exit code of `call()`; what the user must fix is one line on stderr, never a traceback."""
    try:
        return call()
    except CliError as exc:
        return _error_line(f"w2c-tui: error: {exc}")
    except ValueError as exc:
        if not _is_config_error(exc):
            raise
        return _error_line(f"w2c-tui: config error: {exc}")
    except KeyboardInterrupt:
        print("w2c-tui: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the app's own terminal went away; no traceback for that
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a file the system refused (a name too long, a full disk): say which
        from w2c_tui.cli.common import short_path

        where = f"{short_path(str(exc.filename))}: " if exc.filename else ""
        return _error_line(f"w2c-tui: error: {where}{exc.strerror or exc}")


def _error_line(line: str) -> int:
    from w2c_tui.printable import one_line

    print(one_line(line), file=sys.stderr)
    return EXIT_BAD_INPUT


def _is_config_error(exc: ValueError) -> bool:
    """Whether `exc` is a ConfigError, without importing the config package (pydantic) to ask:
    only code that loaded it can have raised one, and `--help` must not pay for it."""
    errors = sys.modules.get("w2c_tui.config.errors")
    return errors is not None and isinstance(exc, errors.ConfigError)


def _open_app(args: argparse.Namespace) -> int:
    from w2c_tui.tui.app import run_app

    return run_app(config_path=args.config)


def entry() -> None:
    import os

    from w2c_tui.runtime import tune_gc

    # w2c-tui does no linear algebra (numpy here is bincounts and multinomial draws), and the
    # OpenBLAS thread pool started by `import numpy` spins for ~50 ms CPU (`compare`, `show`).
    # A value the user set wins. Set before anything imports numpy; inherited by child processes.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    tune_gc()
    sys.exit(main())

