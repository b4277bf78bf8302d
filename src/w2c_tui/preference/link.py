"""Which check a preference judge has: the link a `prefer` session shows to the newest complete
`prefer-check` of the same judge model on the same judge server in the same workdir, and a
warning when that check's accuracy is under 0.8 or there is none (as judge-check's link).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from w2c_tui.metrics.preference import ACCURACY_WARNING
from w2c_tui.session import kinds
from w2c_tui.session.judge_sessions import judge_endpoint, sessions_of_judge
from w2c_tui.store.jsonl import read_document
from w2c_tui.store.layout import SessionPaths

PREFER = kinds.PREFER.name
PREFER_CHECK = kinds.PREFER_CHECK.name
PREFERENCE_CHECK_KEY = "preference_check"  # the figures' key in metrics.json


@dataclass(frozen=True)
class PreferenceCheck:
    root: Path
    accuracy: float | None
    n_calls: int
    finished_at: str

    @property
    def name(self) -> str:
        paths = SessionPaths(self.root)
        return f"{paths.run_key}/{paths.fingerprint}"

    def text(self) -> str:
        accuracy = "–" if self.accuracy is None else f"{self.accuracy:.2f}"
        return f"preference judge checked: accuracy {accuracy} on {self.n_calls:,} calls, {self.name}"

    def to_json(self) -> dict[str, Any]:
        return {"session": str(self.root), "accuracy": self.accuracy, "n_calls": self.n_calls, "finished_at": self.finished_at}


@dataclass(frozen=True)
class PreferenceNote:
    judge_model: str
    check: PreferenceCheck | None
    warning: str | None

    def lines(self) -> list[str]:
        return [line for line in (self.check.text() if self.check else None, self.warning) if line]

    def to_json(self) -> dict[str, Any]:
        return {"judge_model": self.judge_model, "check": self.check.to_json() if self.check else None, "warning": self.warning}


def _read_check(root: Path) -> PreferenceCheck | None:
    """The prefer-check of one session folder, None unless it finished (every row, _DONE.json)."""
    paths = SessionPaths(root)
    done, _ = read_document(paths.done_file(PREFER_CHECK))
    metrics, _ = read_document(paths.metrics_file(PREFER_CHECK))
    if done is None or metrics is None or metrics.get("complete") is not True:
        return None
    figures = metrics.get(PREFERENCE_CHECK_KEY)
    if not isinstance(figures, dict):
        return None
    accuracy = figures.get("accuracy")
    return PreferenceCheck(
        root=root,
        accuracy=accuracy if isinstance(accuracy, (int, float)) and not isinstance(accuracy, bool) else None,
        n_calls=int(figures.get("n_calls") or 0),
        finished_at=str(done.get("finished_at") or ""),
    )


def find_checks(workdir: Path, judge_model: str, endpoint: Any) -> list[PreferenceCheck]:
    """Complete prefer-checks of this judge (model and server) under the workdir, newest first."""
    found = [c for root in sessions_of_judge(workdir, PREFER_CHECK, judge_model, endpoint) if (c := _read_check(root))]
    found.sort(key=lambda c: c.finished_at, reverse=True)
    return found


def preference_note(root: Path, manifest: dict[str, Any] | None, exp_names: list[str]) -> PreferenceNote | None:
    """The judge link of a `prefer` session; None for any other session."""
    if manifest is None or PREFER not in exp_names:
        return None
    judge = str(manifest.get("judge_model") or "")
    parents = Path(root).resolve().parents  # <workdir>/runs/<RUN_KEY>/sessions/<FINGERPRINT>
    if not judge or len(parents) < 4:
        return None
    checks = find_checks(parents[3], judge, judge_endpoint(manifest))
    check = checks[0] if checks else None
    if check is None:
        warning = f"preference judge {judge} was never checked: run `w2c-tui prefer-check --judge {judge}`"
    elif check.accuracy is None or check.accuracy < ACCURACY_WARNING:
        accuracy = "–" if check.accuracy is None else f"{check.accuracy:.2f}"
        warning = f"preference judge {judge} prefers the right reference answer at {accuracy} < {ACCURACY_WARNING}: its verdicts are not reliable"
    else:
        warning = None
    return PreferenceNote(judge, check, warning)
