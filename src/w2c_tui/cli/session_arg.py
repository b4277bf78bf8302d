"""A session named on the command line (`show`, `compare`): its folder, its fingerprint, or a
run key that holds one session, each looked up under the workdir's runs/."""

from __future__ import annotations

import argparse
from pathlib import Path

from w2c_tui.cli.common import workdir_of
from w2c_tui.cli.errors import CliError

SHOWN_CANDIDATES = 6  # an ambiguous name lists this many of its sessions, then how many more


def session_folder(args: argparse.Namespace, text: str) -> Path:
    """The folder `text` names. A folder that exists, or a path, is taken as it is (its own error
    follows when it is no session); a bare word is a fingerprint (any run key) or a run key of
    one session. Several matches: CliError listing them (exit 2)."""
    path = Path(text)
    if path.exists() or "/" in text or not text.strip() or text in (".", ".."):
        return path
    try:
        runs = workdir_of(args) / "runs"
    except Exception:  # noqa: BLE001 - no usable config: the folder's own error message follows
        return path
    by_fingerprint = sorted(p for p in runs.glob(f"*/sessions/{_literal(text)}") if p.is_dir())
    run_dir = _run_folder(runs, text)
    in_run_key = sorted(p for p in (run_dir / "sessions").glob("*") if p.is_dir()) if run_dir is not None else []
    if by_fingerprint and not in_run_key:
        found, what = by_fingerprint, f"fingerprint {text} is in {len(by_fingerprint)} run keys"
    elif in_run_key and not by_fingerprint:
        found, what = in_run_key, f"run key {text} has {len(in_run_key)} sessions"
    else:
        found = by_fingerprint + in_run_key
        what = f"{text} is both a run key and a fingerprint"
    if len(found) == 1:
        return found[0]
    if not found:
        return path
    listed = ", ".join(str(p) for p in found[:SHOWN_CANDIDATES])
    more = f" and {len(found) - SHOWN_CANDIDATES} more" if len(found) > SHOWN_CANDIDATES else ""
    raise CliError(f"{what} ({listed}{more}): name one of these folders")


def _run_folder(runs: Path, key: str) -> Path | None:
    """The folder of run key `key` as a launch names it (store/layout.py's sanitising), if it exists."""
    from w2c_tui.store.layout import RunKeyError, sanitize_run_key

    try:
        folder = runs / sanitize_run_key(key)
    except RunKeyError:
        return None
    return folder if folder.is_dir() else None


def _literal(text: str) -> str:
    """`text` as a glob pattern that matches only itself."""
    from glob import escape

    return escape(text)
