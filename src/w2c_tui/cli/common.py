"""Small pieces shared by the subcommands.

Imported while the argument parser is built, so it imports nothing heavy: the config
package (pydantic) loads only when a command reads the configuration.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from w2c_tui.config import LoadedConfig


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS, help="configuration file (default: ./config.toml if present)")


def load(args: argparse.Namespace) -> LoadedConfig:
    from w2c_tui.config import load_config

    return load_config(getattr(args, "config", None))


def workdir_of(args: argparse.Namespace) -> Path:
    if getattr(args, "workdir", None):
        return Path(args.workdir)
    return load(args).workdir


def fmt(value: object, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)
