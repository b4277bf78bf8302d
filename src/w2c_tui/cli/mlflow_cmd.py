"""`w2c-tui mlflow sync` and `w2c-tui mlflow-ui`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from w2c_tui.cli.common import add_config_argument, load, path_argument, positive_int
from w2c_tui.cli.errors import EXIT_INCOMPLETE, CliError
from w2c_tui.redaction import scrub


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("mlflow", help="MLflow tracking tools")
    actions = parser.add_subparsers(dest="mlflow_command", metavar="ACTION", required=True)
    sync = actions.add_parser(
        "sync",
        help="log a session's metrics and artifacts that are missing in MLflow "
        "(exit 1 when a packed call trace is damaged: uploaded as it is, named on stderr)",
    )
    add_config_argument(sync)
    sync.add_argument("session_dir", metavar="SESSION_DIR", type=path_argument)
    sync.set_defaults(handler=run_sync)

    ui = sub.add_parser("mlflow-ui", help="start the MLflow UI on 127.0.0.1 for the workdir's store")
    add_config_argument(ui)
    ui.add_argument("--port", type=_port, default=5000, help="port on 127.0.0.1 (default 5000)")
    ui.set_defaults(handler=run_ui)


def _port(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a port is 1 to 65535, got {value}")
    return value


def run_sync(args: argparse.Namespace) -> int:
    from w2c_tui.store.layout import SessionPaths
    from w2c_tui.tracking import sink_for
    from w2c_tui.tracking.mlflow_sink import run_url

    loaded = load(args)
    root = Path(args.session_dir)
    if not (root / "manifest.json").is_file():
        raise CliError(f"{root}: not a session folder (no manifest.json)")
    sink = sink_for(loaded.settings.mlflow, loaded.workdir, loaded.environ)
    try:
        ids = sink.sync_session(SessionPaths(root))
    except Exception as exc:  # noqa: BLE001 - shown as one line, not a traceback
        raise CliError(scrub(f"MLflow at {sink.tracking_uri} failed: {type(exc).__name__}: {str(exc)[:300]}")) from None
    print(f"logged to {sink.tracking_uri}: parent run {ids['parent_run_id']}, {len(ids['child_run_ids'])} child runs")
    url = run_url("http://127.0.0.1:5000", ids)
    if url:
        print(url)
    # Uploaded as it is on disk, and tagged; the exit code says the session is not whole.
    for damage in sink.damaged_traces:
        print(f"w2c-tui: warning: {damage} (uploaded as it is; run tagged w2c.trace_damaged)", file=sys.stderr)
    for skipped in sink.skipped_files:  # a FIFO or device in a pipeline's folders: the rest is logged
        print(f"w2c-tui: warning: {skipped} (run tagged w2c.skipped_files)", file=sys.stderr)
    return EXIT_INCOMPLETE if sink.damaged_traces else 0


def run_ui(args: argparse.Namespace) -> int:
    from w2c_tui.tracking.mlflow_sink import artifact_root, default_tracking_uri

    loaded = load(args)
    uri = loaded.settings.mlflow.tracking_uri.strip()
    if uri.startswith(("http://", "https://")):
        print(f"MLflow runs on a server: open {uri}")
        return 0
    workdir = loaded.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    uri = uri or default_tracking_uri(workdir)
    command = [
        sys.executable, "-m", "mlflow", "ui",
        "--backend-store-uri", uri,
        "--default-artifact-root", artifact_root(workdir),
        "--host", "127.0.0.1", "--port", str(args.port),
    ]
    from w2c_tui.tracking.ui import answers, serve

    if answers(args.port):  # "ready" would be another server's word
        raise CliError(f"port {args.port} on 127.0.0.1 already answers (an earlier mlflow-ui?): stop it or pass --port")
    print(f"MLflow UI for {uri}", flush=True)
    return serve(command, args.port, lambda line: print(line, flush=True))
