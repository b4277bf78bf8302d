"""Read sessions back from disk for `sessions`, `show` and the TUI (ours and the earlier suite's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from w2c_tui.status import COMPLETE, FAILED, PARTIAL, normalize, session_status
from w2c_tui.store import earlier_suite
from w2c_tui.store.dataset_lookup import SessionDataset
from w2c_tui.store.jsonl import read_json
from w2c_tui.store.layout import METRICS_FILE, SessionPaths

_UNSET: Any = object()


class PipelineInfo:
    """One pipeline of a session; for the earlier suite's, `metrics` are ours recomputed on first use."""

    def __init__(
        self,
        exp_name: str,
        done: bool,
        metrics: dict[str, Any] | None = _UNSET,
        *,
        paths: SessionPaths | None = None,
        manifest: dict[str, Any] | None = None,
        origin: str = earlier_suite.ORIGIN_OURS,
        stored: dict[str, Any] | None = None,
        planned: Callable[[], set[str]] | None = None,
        dataset: SessionDataset | None = None,
    ) -> None:
        self.exp_name = exp_name
        self.done = done
        self.paths = paths
        self.manifest = manifest
        self.origin = origin
        self.stored = stored  # the earlier suite's own {"header", "metrics"}
        self._planned = planned  # earlier suite: the UUIDs its session was run on
        self._dataset = dataset  # the session's, shared by its pipelines
        self._metrics = metrics
        self._rows: dict[str, dict[str, Any]] | None = None
        self._audit: dict[str, Any] | None = None

    @property
    def rows(self) -> dict[str, dict[str, Any]]:
        """uuid -> row of the primary checkpoint (read once)."""
        if self._rows is None:
            from w2c_tui.store.checkpoints import primary_rows

            self._rows = primary_rows(self.paths.root, self.exp_name) if self.paths else {}
        return self._rows

    @property
    def metrics(self) -> dict[str, Any] | None:
        if self._metrics is _UNSET:
            self._metrics = None
            if self.origin == earlier_suite.ORIGIN_EARLIER and self.paths is not None:
                planned = self._planned() if self._planned else None
                self._metrics = earlier_suite.recompute(
                    self.manifest, self.paths, self.exp_name, self.rows, planned, examples_from=self._dataset
                )
        return self._metrics

    @property
    def status(self) -> str:
        if self.done:
            return COMPLETE
        stored = (self._metrics or {}).get("status") if self._metrics is not _UNSET else None
        return normalize(stored) if stored else PARTIAL

    @property
    def n_planned(self) -> int | None:
        if self.origin == earlier_suite.ORIGIN_EARLIER:
            return len(self._planned()) if self._planned else len(self.rows)
        from w2c_tui.metrics.compute import coverage

        return coverage(self.metrics)[1]

    @property
    def comparison(self) -> list[dict[str, Any]]:
        """Earlier suite only: its stored metrics against ours recomputed."""
        if self.origin != earlier_suite.ORIGIN_EARLIER:
            return []
        return earlier_suite.compare(self.stored, self.metrics)

    @property
    def audit_summary(self) -> dict[str, Any]:
        """Audit counts from the events and rows on disk: outstanding, and resolved by a resume."""
        if self._audit is None:
            from w2c_tui.store.audit import read_events, summarize

            events = read_events(self.paths.audit_file(self.exp_name)) if self.paths else []
            self._audit = summarize(events, self.rows.keys())
        return self._audit


@dataclass
class SessionInfo:
    paths: SessionPaths
    manifest: dict[str, Any] | None
    pipelines: list[PipelineInfo] = field(default_factory=list)
    origin: str = earlier_suite.ORIGIN_OURS
    # Its When2Call examples, resolved once for every reader of this session.
    dataset: SessionDataset = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.dataset = SessionDataset(self.manifest, self.paths.root)

    @property
    def run_key(self) -> str:
        return self.paths.run_key

    @property
    def fingerprint(self) -> str:
        return self.paths.fingerprint

    def _config(self, section: str, key: str) -> Any:
        config = (self.manifest or {}).get("config") or {}
        # The earlier suite's manifest holds a flat sanitized config (config.target_model).
        return (config.get(section) or {}).get(key) or config.get(key)

    @property
    def target_model(self) -> str:
        value = (self.manifest or {}).get("target_model") or self._config("models", "target_model")
        if isinstance(value, list):
            value = ", ".join(value)
        return str(value or "?")

    @property
    def judge_model(self) -> str:
        return str((self.manifest or {}).get("judge_model") or self._config("models", "judge_model") or "")

    @property
    def created_at(self) -> str:
        return str((self.manifest or {}).get("created_at") or "")

    @property
    def refused(self) -> dict[str, str]:
        """Pipelines the capability probe refused (never run, so no folder): name -> reason."""
        refused = (self.manifest or {}).get("refused_pipelines") or {}
        ran = {p.exp_name for p in self.pipelines}
        return {str(k): str(v) for k, v in refused.items() if k not in ran} if isinstance(refused, dict) else {}

    def summary_pipelines(self) -> list[tuple[str, str, dict[str, Any] | None]]:
        """(name, status, metrics) of every pipeline, refused ones included, for summary tables."""
        return [(p.exp_name, p.status, p.metrics) for p in self.pipelines] + [(n, "refused", None) for n in self.refused]

    @property
    def mlflow_ids(self) -> dict[str, Any]:
        """The MLflow run ids written when the session was tracked ({} when it was not)."""
        from w2c_tui.store.session import read_mlflow_ids

        return read_mlflow_ids(self.paths)

    @property
    def simulated(self) -> bool:
        return bool((self.manifest or {}).get("simulated"))

    @property
    def n_examples(self) -> int | None:
        """Examples planned per pipeline."""
        value = (self.manifest or {}).get("n_examples")
        if value is not None:
            return int(value)
        counts = [p.n_planned for p in self.pipelines]
        return max((c for c in counts if isinstance(c, int)), default=None)

    @property
    def status(self) -> str:
        if self.manifest is None and not self.pipelines:
            return FAILED
        return session_status(p.status for p in self.pipelines)

    def warm(self) -> "SessionInfo":
        """Compute what is computed lazily (the earlier suite's metrics), e.g. in a thread worker."""
        for pipeline in self.pipelines:
            pipeline.metrics  # noqa: B018 - evaluated for its cache
        return self

    def summary(self) -> dict[str, Any]:
        return {
            "run_key": self.run_key,
            "fingerprint": self.fingerprint,
            "path": str(self.paths.root),
            "origin": self.origin,
            "target_model": self.target_model,
            "judge_model": self.judge_model,
            "status": self.status,
            "created_at": self.created_at,
            "n_examples": self.n_examples,
            "simulated": self.simulated,
            "pipelines": {p.exp_name: p.status for p in self.pipelines},
        }


def read_session(root: Path) -> SessionInfo:
    paths = SessionPaths(Path(root))
    manifest = read_json(paths.manifest)
    origin = earlier_suite.ORIGIN_EARLIER if earlier_suite.is_earlier_suite(paths, manifest) else earlier_suite.ORIGIN_OURS
    info = SessionInfo(paths, manifest, origin=origin)

    def planned() -> set[str]:
        return set().union(*(p.rows.keys() for p in info.pipelines))

    for exp_name in paths.exp_names():
        done = paths.done_file(exp_name).exists()
        if origin == earlier_suite.ORIGIN_EARLIER:
            pipeline = PipelineInfo(
                exp_name, done, paths=paths, manifest=manifest, origin=origin,
                stored=earlier_suite.read_stored(paths, exp_name), planned=planned, dataset=info.dataset,
            )
        else:
            metrics = read_json(paths.artifacts(exp_name) / METRICS_FILE)
            pipeline = PipelineInfo(exp_name, done, metrics, paths=paths, manifest=manifest)
        info.pipelines.append(pipeline)
    return info


def session_started(root: Path) -> bool:
    """Whether a launch got as far as writing the session's manifest."""
    return SessionPaths(Path(root)).manifest.exists()


def list_sessions(workdir: Path, *, warm: bool = False) -> list[SessionInfo]:
    """Every runs/<RUN_KEY>/sessions/<FP> under the workdir, newest first (`warm`: see SessionInfo.warm)."""
    runs = Path(workdir) / "runs"
    sessions = []
    if runs.is_dir():
        for session_dir in runs.glob("*/sessions/*"):
            if session_dir.is_dir():
                info = read_session(session_dir)
                sessions.append(info.warm() if warm else info)
    sessions.sort(key=lambda s: (s.created_at, s.run_key), reverse=True)
    return sessions
