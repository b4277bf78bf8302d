"""MLflow tracking of a session: one parent run, one child run per pipeline or sweep.

mlflow is imported only inside these functions (it costs over a second), and callers run
them in a thread. Tracking never fails an evaluation: every error becomes an audit event
and the next resume (or `w2c-tui mlflow sync`) logs what is missing. `mlflow_ids.json`
maps the session to its runs, so a resumed session logs into the same runs.

A packed call trace that cannot be read whole is uploaded as it is (the files are the
evidence), its child run tagged `w2c.trace_damaged` with the one-line reason, and the
reasons listed in `damaged_traces` (`mlflow sync` prints them and exits 1). Only regular files
are uploaded from a pipeline's folders: a FIFO or a device there would hold the upload for ever;
what was left out is listed in `skipped_files` and tagged `w2c.skipped_files`.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from w2c_tui.readable_file import unreadable_reason
from w2c_tui.store.jsonl import read_json
from w2c_tui.store.layout import SessionPaths
from w2c_tui.store.session import read_manifest, read_mlflow_ids, write_mlflow_ids

if TYPE_CHECKING:  # pydantic loads with the first sync, not with this module (the CLI's --help)
    from w2c_tui.session.models import Metrics

_PARAM_LIMIT = 6000  # MLflow rejects longer parameter values


def default_tracking_uri(workdir: Path) -> str:
    return f"sqlite:///{Path(workdir).resolve() / 'mlflow.db'}"


def artifact_root(workdir: Path) -> str:
    return (Path(workdir).resolve() / "mlartifacts").as_uri()


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Keep MLflow's and alembic's own printing off the terminal (and off the TUI)."""
    for name in ("mlflow", "alembic", "sqlalchemy", "urllib3"):
        logging.getLogger(name).setLevel(logging.ERROR)
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        yield


_METRIC_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /]")


def flatten_metrics(metrics: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """Numeric leaves of metrics.json as MLflow metric names (a.b.c); None is skipped."""
    flat: dict[str, float] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, bool):
            flat[name] = float(value)
        elif isinstance(value, (int, float)):
            flat[name] = float(value)
        elif isinstance(value, dict):
            flat.update(flatten_metrics(value, f"{name}."))
    # MLflow takes letters, digits, _ - . space / in a name: a sweep's "=" or a model's ":"
    # (usage_by_model.llama3:8b) becomes "_".
    return {_METRIC_NAME_UNSAFE.sub("_", k): v for k, v in flat.items() if v == v}  # drop NaN


def flatten_params(config: dict[str, Any], prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten_params(value, f"{name}."))
        else:
            text = value if isinstance(value, str) else json.dumps(value)
            flat[name] = text[:_PARAM_LIMIT]
    return flat


class MlflowSink:
    def __init__(self, tracking_uri: str, experiment_name: str, artifact_location: str | None = None) -> None:
        self.tracking_uri = tracking_uri
        self.experiment_name = experiment_name
        self.artifact_location = artifact_location
        self._client = None
        self.damaged_traces: list[str] = []  # of the last sync: one line per damaged packed trace
        self.skipped_files: list[str] = []  # of the last sync: one line per entry that is no regular file

    @property
    def client(self):
        if self._client is None:
            with quiet():
                from mlflow.tracking import MlflowClient

                self._client = MlflowClient(tracking_uri=self.tracking_uri)
        return self._client

    def experiment_id(self) -> str:
        with quiet():
            found = self.client.get_experiment_by_name(self.experiment_name)
            if found is not None:
                return found.experiment_id
            return self.client.create_experiment(self.experiment_name, artifact_location=self.artifact_location)

    def _existing(self, run_id: str | None) -> bool:
        if not run_id:
            return False
        try:
            with quiet():
                run = self.client.get_run(run_id)
            return run.info.lifecycle_stage == "active"
        except Exception:  # noqa: BLE001 - a run missing from this store is simply not reusable
            return False

    def sync_session(self, paths: SessionPaths, exp_names: list[str] | None = None) -> dict[str, Any]:
        """Create or reuse the runs of a session and log everything on disk into them."""
        from mlflow.entities import Metric, Param, RunTag

        from w2c_tui.session.models import Metrics
        from w2c_tui.store.call_files import trace_damage

        manifest = read_manifest(paths) or {}
        ids = read_mlflow_ids(paths)
        self.damaged_traces = []
        self.skipped_files = []
        with quiet():
            experiment_id = self.experiment_id()
            parent = ids.get("parent_run_id")
            if not self._existing(parent) or ids.get("tracking_uri") not in (None, self.tracking_uri):
                run = self.client.create_run(
                    experiment_id,
                    run_name=f"{manifest.get('target_model', '?')} · {paths.fingerprint}",
                    tags=self._session_tags(paths, manifest),
                )
                parent = run.info.run_id
                ids = {"parent_run_id": parent, "child_run_ids": {}, "logged": {}}
                params = {
                    "fingerprint": paths.fingerprint,
                    "run_key": paths.run_key,
                    "dataset_sha256": str((manifest.get("dataset") or {}).get("sha256", "")),
                    "dataset_size_bytes": str((manifest.get("dataset") or {}).get("size_bytes", "")),
                    **{f"config.{k}": v for k, v in flatten_params(manifest.get("config") or {}).items()},
                }
                items = [Param(k, v) for k, v in params.items()]
                for start in range(0, len(items), 100):
                    self.client.log_batch(parent, params=items[start:start + 100])
            ids.update(tracking_uri=self.tracking_uri, experiment_id=experiment_id, parent_run_id=parent)
            write_mlflow_ids(paths, ids)
            self.client.log_artifact(parent, str(paths.manifest))

            for exp_name in exp_names or paths.exp_names():
                metrics = read_json(paths.metrics_file(exp_name))
                if metrics is None:
                    continue
                child = ids["child_run_ids"].get(exp_name)
                if not self._existing(child):
                    run = self.client.create_run(
                        experiment_id,
                        run_name=exp_name,
                        tags={"mlflow.parentRunId": parent, "exp_name": exp_name, **self._session_tags(paths, manifest)},
                    )
                    child = run.info.run_id
                    ids["child_run_ids"][exp_name] = child
                    write_mlflow_ids(paths, ids)
                flat = flatten_metrics(metrics)
                # A real timestamp: on a resume the newest value is the one MLflow shows.
                now_ms = int(time.time() * 1000)
                entries = [Metric(k, v, now_ms, 0) for k, v in flat.items()]
                for start in range(0, len(entries), 500):
                    self.client.log_batch(child, metrics=entries[start:start + 500])
                document = Metrics.of(metrics)
                self.client.log_batch(child, tags=self._coverage_tags(document))
                damage = trace_damage(paths.calls_file(exp_name))
                if damage:
                    self.damaged_traces.append(f"{exp_name}: {damage}")
                    self.client.set_tag(child, "w2c.trace_damaged", damage[:_PARAM_LIMIT])
                skipped: list[str] = []
                for folder, dest in ((paths.checkpoints(exp_name), "checkpoints"), (paths.artifacts(exp_name), "artifacts")):
                    for path, where in regular_files(folder, dest, skipped):
                        self.client.log_artifact(child, str(path), artifact_path=where)
                if skipped:
                    self.skipped_files += [f"{exp_name}: {line}" for line in skipped]
                    self.client.set_tag(child, "w2c.skipped_files", "; ".join(skipped)[:_PARAM_LIMIT])
                ids.setdefault("logged", {})[exp_name] = bool(document.complete)
                write_mlflow_ids(paths, ids)
                if document.complete:
                    self.client.set_terminated(child, "FINISHED")
            self._log_session_usage(parent, paths, manifest)
            if ids.get("logged") and all(ids["logged"].values()):
                self.client.set_terminated(parent, "FINISHED")
        return ids

    def _log_session_usage(self, parent: str, paths: SessionPaths, manifest: dict[str, Any]) -> None:
        """The session's usage and cost over all its pipelines, as metrics of the parent run."""
        from mlflow.entities import Metric

        from w2c_tui.store.usage import session_usage

        summary = session_usage({e: read_json(paths.metrics_file(e)) for e in paths.exp_names()}, manifest)
        flat = flatten_metrics({"usage": summary["total"] or {}, "cost": summary["cost"] or {}})
        now_ms = int(time.time() * 1000)
        if flat:
            self.client.log_batch(parent, metrics=[Metric(k, v, now_ms, 0) for k, v in flat.items()])

    @staticmethod
    def _coverage_tags(metrics: Metrics) -> list:
        """Beside the metrics: how many answers they are over, and the pipeline's status word."""
        from mlflow.entities import RunTag

        from w2c_tui.status import COMPLETE, PARTIAL, normalize

        obtained, planned = metrics.coverage
        status = normalize(metrics.status) if metrics.status else (COMPLETE if metrics.complete else PARTIAL)
        return [
            RunTag("complete", str(bool(metrics.complete))),
            RunTag("w2c.status", status),
            RunTag("w2c.n_obtained", str(obtained)),
            RunTag("w2c.n_planned", str(planned)),
            RunTag("w2c.obtained", f"{obtained}/{planned}"),
        ]

    @staticmethod
    def _session_tags(paths: SessionPaths, manifest: dict[str, Any]) -> dict[str, str]:
        providers = manifest.get("providers") or {}
        return {
            "w2c.run_key": paths.run_key,
            "w2c.fingerprint": paths.fingerprint,
            "w2c.target_model": str(manifest.get("target_model", "")),
            "w2c.judge_model": str(manifest.get("judge_model", "")),
            "w2c.template_family": str(manifest.get("template_family", "")),
            "w2c.providers": ",".join(sorted(providers)),
            "w2c.simulated": str(bool(manifest.get("simulated"))),
            "w2c.session_dir": str(paths.root),
        }


def regular_files(folder: Path, dest: str, skipped: list[str]) -> Iterator[tuple[Path, str]]:
    """(file, its artifact folder) for each regular file under `folder`, a link to one included;
    any other entry (a FIFO, a device, a socket, a link to one or to a folder) would hang or
    loop the upload: its `dest/...` name and what it is go into `skipped` instead."""
    for top, folders, names in os.walk(folder):
        here = Path(top)
        where = "/".join((dest, *here.relative_to(folder).parts))
        for name in folders:
            if (here / name).is_symlink():  # os.walk does not enter it; the upload would
                skipped.append(f"{where}/{name}: is a link to a folder, not followed")
        for name in sorted(names):
            reason = unreadable_reason(here / name)
            if reason is None:
                yield here / name, where
            else:
                skipped.append(f"{where}/{name}: {reason}; not uploaded")


def run_url(ui_base: str, ids: dict[str, Any]) -> str | None:
    """Link to the parent run in an MLflow UI at `ui_base`."""
    if not ids.get("parent_run_id") or not ids.get("experiment_id"):
        return None
    return f"{ui_base.rstrip('/')}/#/experiments/{ids['experiment_id']}/runs/{ids['parent_run_id']}"

