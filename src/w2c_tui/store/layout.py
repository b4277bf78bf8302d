"""Where a session's files live (names as the operations guide, so older sessions open too).

    <workdir>/runs/<RUN_KEY>/sessions/<FINGERPRINT>/
        manifest.json  mlflow_ids.json  session_summary.json
        checkpoints/<exp_name>/   *.jsonl, audit_fallbacks.jsonl, _DONE.json
        artifacts_local/<exp_name>/   metrics.json, audit_summary.json, llm_calls/<exp_name>.jsonl[.zst|.gz]
"""

from __future__ import annotations

import hashlib
import re
import secrets
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

MAX_RUN_KEY_LENGTH = 120

AUDIT_FILE = "audit_fallbacks.jsonl"
DONE_FILE = "_DONE.json"
MANIFEST_FILE = "manifest.json"
MLFLOW_IDS_FILE = "mlflow_ids.json"
METRICS_FILE = "metrics.json"
AUDIT_SUMMARY_FILE = "audit_summary.json"
SUMMARY_FILE = "session_summary.json"  # what listing a session needs, with its inputs' sizes, mtimes, inodes

# Checkpoint files of each pipeline (operations guide §11).
TARGET_RESPONSES = "target_responses.jsonl"
JUDGE_DECISIONS = "judge_decisions.jsonl"
MCQ_PREDICTIONS = "mcq_predictions.jsonl"
LOGPROB_PREDICTIONS = "mcq_logprob_predictions.jsonl"
LOGPROB_DEBUG = "debug_per_choice.jsonl"
JUDGE_CHECK_LABELS = "judge_check_labels.jsonl"  # one row per (example, reference answer)
PREFERENCE_CALLS = "preference_calls.jsonl"  # prefer and prefer_check: one row per (pair, judge call)


class RunKeyError(ValueError):
    pass


_UNSAFE = re.compile(r"[^A-Za-z0-9._ \-+=@,()]+")


def sanitize_run_key(value: str) -> str:
    """A run key that is safe as one folder name.

    Path separators, control characters and other unusual characters become '_';
    '..' cannot survive, leading dots are dropped, and the length is bounded: a longer key is
    cut and ends in a short hash of the whole (so it names its own folder). Applying it twice
    gives the same name.
    """
    text = unicodedata.normalize("NFKC", value or "")
    text = "".join("_" if unicodedata.category(ch).startswith("C") else ch for ch in text)
    text = _UNSAFE.sub("_", text.replace("/", "_").replace("\\", "_"))
    while ".." in text:
        text = text.replace("..", "_")
    text = re.sub(r"_{2,}", "_", text.strip(" ."))
    if len(text) > MAX_RUN_KEY_LENGTH:
        # Cut, and 8 hex digits of the whole key after it: two long keys sharing their first
        # characters keep a folder each (a key within the bound keeps the folder it always had).
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
        text = f"{text[: MAX_RUN_KEY_LENGTH - len(digest) - 1].rstrip(' .')}-{digest}"
    text = text.strip(" .")
    if not text or set(text) <= {"_"}:
        raise RunKeyError(f"run key {value!r} has no usable characters; use letters, digits, '-' or '_'")
    return text


def generate_run_key(now: datetime | None = None) -> str:
    now = now or datetime.now()
    return f"run-{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def stability_exp_name(method: str, k: int, temperature: float) -> str:
    return f"stability_{method}_k={k}_T={temperature}"


@dataclass(frozen=True)
class SessionPaths:
    root: Path

    @classmethod
    def under(cls, workdir: Path, run_key: str, fingerprint: str) -> "SessionPaths":
        return cls(Path(workdir) / "runs" / sanitize_run_key(run_key) / "sessions" / fingerprint)

    @property
    def fingerprint(self) -> str:
        return self.root.name

    @property
    def run_key(self) -> str:
        return self.root.parent.parent.name

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST_FILE

    @property
    def mlflow_ids(self) -> Path:
        return self.root / MLFLOW_IDS_FILE

    def checkpoints(self, exp_name: str) -> Path:
        return self.root / "checkpoints" / exp_name

    def artifacts(self, exp_name: str) -> Path:
        return self.root / "artifacts_local" / exp_name

    def checkpoint_file(self, exp_name: str, filename: str) -> Path:
        return self.checkpoints(exp_name) / filename

    def audit_file(self, exp_name: str) -> Path:
        return self.checkpoints(exp_name) / AUDIT_FILE

    def done_file(self, exp_name: str) -> Path:
        return self.checkpoints(exp_name) / DONE_FILE

    def metrics_file(self, exp_name: str) -> Path:
        return self.artifacts(exp_name) / METRICS_FILE

    def calls_file(self, exp_name: str) -> Path:
        """The open call trace; packed into `<name>.zst` when the run ends (`<name>.gz` before; read them with `store.call_files`)."""
        return self.artifacts(exp_name) / "llm_calls" / f"{exp_name}.jsonl"

    def exp_names(self) -> list[str]:
        folder = self.root / "checkpoints"
        return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
