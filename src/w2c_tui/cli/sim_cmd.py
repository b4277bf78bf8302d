"""`w2c-tui sim`: the simulated OpenAI-compatible endpoint."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    from w2c_tui.sim import cli as sim_cli

    parser = sub.add_parser("sim", help="serve the simulated OpenAI-compatible endpoint (answers are simulated)")
    sim_cli.add_arguments(parser)
    parser.set_defaults(handler=sim_cli.run_from_args)
