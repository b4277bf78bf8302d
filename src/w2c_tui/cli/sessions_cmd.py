"""`w2c-tui sessions` and `w2c-tui show`: read what runs wrote."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from w2c_tui.cli import CliError
from w2c_tui.cli.common import add_config_argument, fmt, workdir_of


def register(sub: argparse._SubParsersAction) -> None:
    listing = sub.add_parser("sessions", help="list sessions under the workdir")
    add_config_argument(listing)
    listing.add_argument("--workdir", metavar="W", help="workdir (default: [run] workdir_base)")
    listing.add_argument("--json", action="store_true", help="one JSON document instead of a table")
    listing.set_defaults(handler=sessions)

    show_parser = sub.add_parser("show", help="metrics of one session, per pipeline")
    show_parser.add_argument("session_dir", metavar="SESSION_DIR")
    show_parser.add_argument("--json", action="store_true", help="the metrics as JSON")
    show_parser.set_defaults(handler=show)


def sessions(args: argparse.Namespace) -> int:
    from w2c_tui.store.browse import list_sessions

    found = list_sessions(workdir_of(args))
    if args.json:
        print(json.dumps([s.summary() for s in found], indent=2))
        return 0
    if not found:
        print(f"no sessions under {workdir_of(args)}")
        return 0
    print(f"{'run key':<28} {'fingerprint':<16} {'target model':<28} {'status':<8} {'n':>5}  created")
    for s in found:
        print(
            f"{s.run_key[:28]:<28} {s.fingerprint:<16} {s.target_model[:28]:<28} {s.status:<8} "
            f"{fmt(s.n_examples):>5}  {s.created_at[:19]}{'  [sim]' if s.simulated else ''}"
        )
    return 0


def show(args: argparse.Namespace) -> int:
    from w2c_tui.store.browse import read_session

    root = Path(args.session_dir)
    if not root.is_dir():
        raise CliError(f"{root}: no such session folder (expected runs/<RUN_KEY>/sessions/<FINGERPRINT>)")
    info = read_session(root)
    if info.manifest is None and not info.pipelines:
        raise CliError(f"{root}: not a session folder (no manifest.json and no checkpoints/)")
    if args.json:
        print(json.dumps({"session": info.summary(), "metrics": {p.exp_name: p.metrics for p in info.pipelines}}, indent=2))
        return 0
    print(f"session {info.fingerprint}  run {info.run_key}  target {info.target_model}  status {info.status}")
    for p in info.pipelines:
        m = p.metrics or {}
        line = (
            f"  {p.exp_name:<34} {p.status:<8} n={fmt(m.get('n_examples'))} acc {fmt(m.get('accuracy'))} "
            f"macro_f1 {fmt(m.get('macro_f1'))} f1_4 {fmt(m.get('macro_f1_4'))} f1_no_direct {fmt(m.get('macro_f1_no_direct'))}"
        )
        if "stability_at_k" in m:
            line += f" stability@k {fmt(m.get('stability_at_k'))} consistency {fmt(m.get('mean_consistency_at_k'))}"
        print(line)
        for variant, vm in (m.get("variants") or {}).items():
            print(f"      {variant:<12} acc {fmt(vm.get('accuracy'))} macro_f1 {fmt(vm.get('macro_f1'))}")
    return 0
