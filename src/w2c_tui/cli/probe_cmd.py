"""`w2c-tui probe`: what each target model's server can do for log-probability scoring."""

from __future__ import annotations

import argparse
import json
import sys

from w2c_tui.cli.common import add_config_argument, load
from w2c_tui.cli.errors import EXIT_INCOMPLETE, EXIT_OK


def register(sub) -> None:
    parser = sub.add_parser(
        "probe",
        help="ask each target model's server what it can do for mcq_logprob (a few short requests)",
        description=(
            "Probe prompt log-probabilities (present, aligned with generation), the generated token, BOS, "
            "prompt lists, token-id prompts and the tokenizer endpoint. Exit 0 when every server scores "
            "mcq_logprob exactly, 1 when some would be refused."
        ),
    )
    add_config_argument(parser)
    parser.add_argument("--model", action="append", metavar="NAME", help="model to probe (default: [models] target_model)")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from w2c_tui.cli.errors import CliError

    loaded = load(args)
    models = [m for m in (args.model or loaded.settings.models.target_models) if m.strip()]
    if not models:
        raise CliError("no model to probe: set [models] target_model or pass --model")
    findings = asyncio.run(_probe_all(loaded, models))
    if args.json:
        print(json.dumps([f.to_json() for f in findings], indent=2))
    else:
        for found in findings:
            print(f"{found.model}  ({found.provider}, {found.base_url})")
            print(f"  {found.summary()}")
    if any(f.transient for f in findings):
        print("w2c-tui: some probes did not get an answer; try again", file=sys.stderr)
    return EXIT_OK if all(f.usable for f in findings) else EXIT_INCOMPLETE


async def _probe_all(loaded, models: list[str]) -> list:
    import contextlib

    from w2c_tui.api import route
    from w2c_tui.api.probe import probe_logprobs
    from w2c_tui.engine.endpoint import api_providers

    with contextlib.ExitStack() as stack:
        sim_url = None
        if loaded.embedded:
            from w2c_tui.sim import SimServer, SimSettings

            sim_url = stack.enter_context(SimServer(SimSettings(seed=loaded.settings.run.api_seed))).base_url
        providers = api_providers(loaded, sim_url)
        timeout = loaded.settings.http.timeout_seconds
        return [await probe_logprobs(route(model, providers), model, timeout_seconds=timeout) for model in models]
