"""Small pieces shared by the subcommands."""

from __future__ import annotations

import argparse
from pathlib import Path

from w2c_tui.config import LoadedConfig, load_config


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS, help="configuration file (default: ./config.toml if present)")


def load(args: argparse.Namespace) -> LoadedConfig:
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
