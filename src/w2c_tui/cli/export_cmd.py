"""`w2c-tui export SESSION… --format md|csv|latex|json [--out FILE] [--per-example]`.

Prints the table, or writes it to --out atomically (an existing regular file is replaced whole,
never left half-written, and keeps its mode: a 0600 file stays 0600; a link, a device, a folder or a path inside a session folder is
refused: see `analysis.export.safe_target`). The numbers are those of `w2c-tui show --json`;
see analysis/export.py. A session named twice is exported once (said on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from w2c_tui.cli.common import path_argument
from w2c_tui.cli.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("export", help="metrics of sessions as a Markdown, LaTeX, CSV or JSON table")
    parser.add_argument("session_dirs", metavar="SESSION_DIR", nargs="+", type=path_argument)
    parser.add_argument("--format", dest="fmt", choices=("md", "csv", "latex", "json"), default="md", help="table format (default: md)")
    parser.add_argument(
        "--out", metavar="FILE", type=path_argument,
        help="write here instead of stdout: a new file, or an existing regular file replaced whole (atomically); "
        "never a link, a device or a path inside a session folder (except its exports/ folder)",
    )
    parser.add_argument(
        "--per-example", action="store_true",
        help="one row per example (uuid, source, gold, each pipeline's label, correct, log-prob scores); csv or json",
    )
    parser.set_defaults(handler=export)


def _read(root: Path):
    from w2c_tui.session.reader import NotASession, open_session

    try:
        info = open_session(root)
    except NotASession as exc:
        raise CliError(str(exc)) from None
    if info.damaged:  # exported as far as it reads, as `show` shows it; said once, on stderr
        print(f"w2c-tui: warning: {root}: damaged: {'; '.join(info.damaged)}", file=sys.stderr)
    return info


def export(args: argparse.Namespace) -> int:
    from w2c_tui.analysis import export as exporting

    if args.per_example and args.fmt not in ("csv", "json"):
        raise CliError(f"--per-example is written as csv or json, not {args.fmt}")
    out = Path(args.out) if args.out else None
    if out is not None and out.is_dir():
        raise CliError(f"{out}: is a folder; --out takes a file name")
    try:
        if out is not None:
            exporting.safe_target(out)  # refused before any session is read
        roots, again = exporting.unique_roots([Path(d) for d in args.session_dirs])
        for root in again:
            print(f"w2c-tui: note: {root} is named more than once; exported once", file=sys.stderr)
        infos = [_read(root) for root in roots]
        if args.per_example:
            from w2c_tui.session.rows import load_session_rows

            text = exporting.render_examples([load_session_rows(info) for info in infos], args.fmt)
        else:
            text = exporting.render(exporting.summary_records(infos), args.fmt)
        if out is None:
            sys.stdout.write(text)
            return 0
        exporting.write_atomic(out, text)
    except exporting.ExportError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        where = out if out is not None else (exc.filename or "export")
        raise CliError(f"{where}: cannot write ({exc.strerror or exc})") from None
    print(out)
    return 0
