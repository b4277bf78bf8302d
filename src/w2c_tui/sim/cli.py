"""`w2c-tui sim`: serve the simulated endpoint from the command line."""

from __future__ import annotations

import argparse
import sys

# The server (aiohttp) and asyncio load in run_from_args: `w2c-tui` builds this parser on every start.
from w2c_tui.sim.settings import FAULT_KINDS, IMITATIONS, LOOPBACK_HOSTS, SimSettings

BANNER = "w2c-tui sim: simulated OpenAI-compatible endpoint (answers are simulated, not a real model) at {url}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = SimSettings()
    parser.add_argument("--host", default=defaults.host, help="address to listen on (default %(default)s)")
    parser.add_argument("--port", type=int, default=8765, help="port; 0 picks a free one (default %(default)s)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="response time of a model request, the sim's own work included")
    parser.add_argument("--jitter-ms", type=float, default=0.0, help="latency varies by up to +- this much")
    parser.add_argument("--fault-rate", type=float, default=0.0, help="share of model requests that fail, 0..1")
    parser.add_argument(
        "--fault-kinds",
        default=",".join(FAULT_KINDS),
        help="comma-separated fault kinds to inject (default: all: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for every simulated decision")
    parser.add_argument(
        "--judge-malformed-rate",
        type=float,
        default=defaults.judge_malformed_rate,
        help="share of unparsable judge replies",
    )
    parser.add_argument(
        "--judge-error-rate",
        type=float,
        default=defaults.judge_error_rate,
        help="share of answers the judge labels wrongly, decided by a hash (for judge-check tests)",
    )
    parser.add_argument(
        "--judge-position-bias",
        type=float,
        default=defaults.judge_position_bias,
        help="share of preference requests the judge answers \"1\" whatever the answers, by a hash (prefer-check tests)",
    )
    parser.add_argument("--slow-ms", type=float, default=defaults.slow_ms, help="how long a 'slow' fault waits")
    parser.add_argument(
        "--reject-param",
        action="append",
        default=[],
        metavar="NAME",
        help="answer model requests carrying this field with a 400, as some providers do (repeatable)",
    )
    parser.add_argument(
        "--imitate",
        choices=sorted(IMITATIONS),
        default="vllm",
        help="the /completions echo conventions of this kind of server (default %(default)s; see docs/servers.md)",
    )
    parser.add_argument(
        "--capacity-in-flight", type=int, default=0, metavar="N",
        help="answer 429 with Retry-After beyond N model requests at once (0 = no cap)",
    )
    parser.add_argument(
        "--capacity-rpm", type=int, default=0, metavar="R",
        help="answer 429 with Retry-After beyond R model requests a minute, enforced per second (0 = no cap)",
    )
    parser.add_argument(
        "--capacity-tpm", type=int, default=0, metavar="T",
        help="answer 429 with Retry-After beyond T tokens a minute, enforced per second (0 = no cap)",
    )
    parser.add_argument("--allow-remote", action="store_true", help="allow listening on a non-loopback address")


def settings_from_args(args: argparse.Namespace) -> SimSettings:
    return SimSettings(
        host=args.host,
        port=args.port,
        latency_ms=args.latency_ms,
        jitter_ms=args.jitter_ms,
        fault_rate=args.fault_rate,
        fault_kinds=tuple(k.strip() for k in args.fault_kinds.split(",") if k.strip()),
        seed=args.seed,
        judge_malformed_rate=args.judge_malformed_rate,
        judge_error_rate=args.judge_error_rate,
        judge_position_bias=args.judge_position_bias,
        slow_ms=args.slow_ms,
        rejected_params=tuple(args.reject_param),
        conventions=IMITATIONS[args.imitate],
        capacity_in_flight=args.capacity_in_flight,
        capacity_rpm=args.capacity_rpm,
        capacity_tpm=args.capacity_tpm,
    )


def run_from_args(args: argparse.Namespace) -> int:
    """Serve until Ctrl+C; returns a process exit code."""
    if args.host not in LOOPBACK_HOSTS and not args.allow_remote:
        print(
            f"w2c-tui sim: refusing to listen on {args.host}: it is not a loopback address; "
            "pass --allow-remote if you really want that",
            file=sys.stderr,
        )
        return 2
    try:
        settings = settings_from_args(args)
    except ValueError as exc:
        print(f"w2c-tui sim: {exc}", file=sys.stderr)
        return 2

    def ready(url: str) -> None:
        print(BANNER.format(url=url), flush=True)

    import asyncio

    from w2c_tui.sim.server import serve

    try:
        asyncio.run(serve(settings, on_ready=ready))
    except OSError as exc:
        print(f"w2c-tui sim: cannot listen on {settings.host}:{settings.port}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def main(argv: list[str] | None = None) -> int:
    """Standalone entry point (`python -m w2c_tui.sim.cli`)."""
    parser = argparse.ArgumentParser(prog="w2c-tui sim", description="Serve a simulated OpenAI-compatible endpoint.")
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
