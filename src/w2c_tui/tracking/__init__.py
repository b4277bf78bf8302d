"""Experiment tracking (MLflow), optional and never fatal to an evaluation."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from w2c_tui.config.schema import MlflowSettings
from w2c_tui.store.audit import AuditLog
from w2c_tui.store.layout import SessionPaths


def export_mlflow_environment(environ: Mapping[str, str]) -> None:
    """Make `MLFLOW_*` settings from .env visible to MLflow, which reads only the process environment.

    `environ` is the loader's merge (.env overridden by the real environment), so a variable
    already set in the environment keeps its value.
    """
    for key, value in environ.items():
        if key.startswith("MLFLOW_"):
            os.environ.setdefault(key, value)


def sink_for(settings: MlflowSettings, workdir: Path, environ: Mapping[str, str] | None = None):
    # MLflow's own defaults retry a dead server for minutes; a tracking outage should cost
    # seconds, since the next resume or `w2c-tui mlflow sync` catches up anyway.
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
    export_mlflow_environment(environ or {})
    from w2c_tui.tracking.mlflow_sink import MlflowSink, artifact_root, default_tracking_uri

    uri = settings.tracking_uri.strip() or default_tracking_uri(workdir)
    location = None if settings.tracking_uri.strip() else artifact_root(workdir)
    return MlflowSink(uri, settings.experiment_name, location)


def track_session(
    settings: MlflowSettings,
    workdir: Path,
    paths: SessionPaths,
    exp_names: list[str],
    api_seed: int,
    redact=str,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """Log a session to MLflow; on failure write `mlflow_tracking_failed` and return None.

    Blocking: call it in a thread.
    """
    try:
        return sink_for(settings, workdir, environ).sync_session(paths, exp_names)
    except Exception as exc:  # noqa: BLE001 - tracking must never end an evaluation
        message = redact(f"{type(exc).__name__}: {exc}")[:500]
        for exp_name in exp_names:
            log = AuditLog.of_pipeline(paths, exp_name, api_seed)
            log.emit(
                "mlflow_tracking_failed",
                stage="tracking",
                severity="warning",
                details={"error": message, "retry": "resume the session or run `w2c-tui mlflow sync SESSION_DIR`"},
            )
            log.close()
        return None
