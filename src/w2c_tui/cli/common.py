"""Small pieces shared by the subcommands.

Imported while the argument parser is built, so it imports nothing heavy: the config
package (pydantic) loads only when a command reads the configuration.
"""

from __future__ import annotations

import argparse
import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from w2c_tui.config import LoadedConfig


SHOWN_PATH_CHARACTERS = 60  # a path in a message is cut to this: one readable line


def short_path(text: str) -> str:
    """A path as a message shows it: the start of a very long one, and its length."""
    if len(text) <= SHOWN_PATH_CHARACTERS:
        return text
    return f"{text[:SHOWN_PATH_CHARACTERS]}… ({len(text):,} characters)"


def path_argument(text: str) -> str:
    """argparse type of a path the user names: one the system cannot even look up (a name too
    long, a loop of links) is refused here, in one line, rather than by the first `exists()`."""
    try:
        os.stat(text)
    except ValueError:  # an embedded NUL
        raise argparse.ArgumentTypeError(f"{short_path(text)!r}: not a usable path") from None
    except OSError as exc:
        if exc.errno in (errno.ENAMETOOLONG, errno.ELOOP):
            raise argparse.ArgumentTypeError(f"{short_path(text)}: {exc.strerror}; name an existing folder or file") from None
    return text


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def temperature(text: str) -> float:
    """An argparse type: a sampling temperature, 0 to 2."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"must be between 0 and 2, got {value}")
    return value


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", metavar="FILE", type=path_argument, default=argparse.SUPPRESS,
        help="configuration file (default: ./config.toml if present)",
    )


def load(args: argparse.Namespace) -> LoadedConfig:
    from w2c_tui.config import load_config

    return load_config(getattr(args, "config", None))


def workdir_of(args: argparse.Namespace) -> Path:
    if getattr(args, "workdir", None):
        return Path(args.workdir)
    return load(args).workdir
