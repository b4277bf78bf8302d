"""Read sessions back from disk for `sessions`, `show` and the TUI (ours and the earlier suite's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from w2c_tui.store.jsonl import read_json
from w2c_tui.store.layout import METRICS_FILE, SessionPaths


@dataclass
class PipelineInfo:
    exp_name: str
    done: bool
    metrics: dict[str, Any] | None

    @property
    def status(self) -> str:
        if self.done:
            return "done"
        return "partial"


@dataclass
class SessionInfo:
    paths: SessionPaths
    manifest: dict[str, Any] | None
    pipelines: list[PipelineInfo] = field(default_factory=list)

    @property
    def run_key(self) -> str:
        return self.paths.run_key

    @property
    def fingerprint(self) -> str:
        return self.paths.fingerprint

    def _config(self, section: str, key: str) -> Any:
        config = (self.manifest or {}).get("config") or {}
        return (config.get(section) or {}).get(key)

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
    def simulated(self) -> bool:
        return bool((self.manifest or {}).get("simulated"))

    @property
    def n_examples(self) -> int | None:
        value = (self.manifest or {}).get("n_examples")
        if value is not None:
            return int(value)
        counts = [p.metrics.get("n_examples") for p in self.pipelines if p.metrics]
        return max((c for c in counts if isinstance(c, int)), default=None)

    @property
    def status(self) -> str:
        if self.manifest is None and not self.pipelines:
            return "failed"
        if not self.pipelines:
            return "empty"
        return "done" if all(p.done for p in self.pipelines) else "partial"

    def summary(self) -> dict[str, Any]:
        return {
            "run_key": self.run_key,
            "fingerprint": self.fingerprint,
            "path": str(self.paths.root),
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
    info = SessionInfo(paths, read_json(paths.manifest))
    for exp_name in paths.exp_names():
        metrics = read_json(paths.artifacts(exp_name) / METRICS_FILE)
        info.pipelines.append(PipelineInfo(exp_name, paths.done_file(exp_name).exists(), metrics))
    return info


def list_sessions(workdir: Path) -> list[SessionInfo]:
    """Every runs/<RUN_KEY>/sessions/<FP> under the workdir, newest first."""
    runs = Path(workdir) / "runs"
    sessions = []
    if runs.is_dir():
        for session_dir in runs.glob("*/sessions/*"):
            if session_dir.is_dir():
                sessions.append(read_session(session_dir))
    sessions.sort(key=lambda s: (s.created_at, s.run_key), reverse=True)
    return sessions
