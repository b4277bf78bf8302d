"""Which check a judge has: the link a judged session shows to its judge's judge-check.

A session whose judge labels answers (llm_judge, or a sweep of it) is linked to the most
recent *complete* judge-check of the same judge model on the same judge server (the
endpoint identity of the manifests, "simulated" for the built-in endpoint) in the same
workdir; `show` and the TUI print the link, and warn when κ < 0.8 or when there is none.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from w2c_tui.metrics.judge_check import KAPPA_WARNING
from w2c_tui.session import kinds
from w2c_tui.session.judge_sessions import judge_endpoint, sessions_of_judge
from w2c_tui.store.layout import SessionPaths
from w2c_tui.store.jsonl import read_document

JUDGE_CHECK = kinds.JUDGE_CHECK.name  # the kind, its exp_name and its manifest key


@dataclass(frozen=True)
class JudgeCheck:
    """One complete judge-check session, as the link shows it."""

    root: Path
    judge_model: str
    kappa: float | None
    accuracy: float | None
    n_labelled: int
    n_answers: int
    k: int
    finished_at: str

    @property
    def name(self) -> str:
        paths = SessionPaths(self.root)
        return f"{paths.run_key}/{paths.fingerprint}"

    @property
    def low(self) -> bool:
        return self.kappa is None or self.kappa < KAPPA_WARNING

    def text(self) -> str:
        kappa = "–" if self.kappa is None else f"{self.kappa:.2f}"
        return f"judge checked: κ {kappa} on {self.n_labelled:,} answers, {self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "session": str(self.root),
            "judge_model": self.judge_model,
            "kappa": self.kappa,
            "accuracy": self.accuracy,
            "n_labelled": self.n_labelled,
            "n_answers": self.n_answers,
            "k": self.k,
            "finished_at": self.finished_at,
        }


@dataclass(frozen=True)
class JudgeNote:
    """What a judged session says about its judge: the check it links to, and a warning."""

    judge_model: str
    check: JudgeCheck | None
    warning: str | None

    def lines(self) -> list[str]:
        return [line for line in (self.check.text() if self.check else None, self.warning) if line]

    def to_json(self) -> dict[str, Any]:
        return {
            "judge_model": self.judge_model,
            "check": self.check.to_json() if self.check else None,
            "warning": self.warning,
        }


def _read_check(root: Path) -> JudgeCheck | None:
    """The judge-check of one session folder, None unless it finished (every row, _DONE.json)."""
    paths = SessionPaths(root)
    done, _ = read_document(paths.done_file(JUDGE_CHECK))
    metrics, _ = read_document(paths.metrics_file(JUDGE_CHECK))
    manifest, _ = read_document(paths.manifest)
    if done is None or metrics is None or manifest is None or metrics.get("complete") is not True:
        return None
    figures = metrics.get("judge_check")
    if not isinstance(figures, dict):
        return None

    def number(key: str) -> Any:
        value = figures.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    return JudgeCheck(
        root=root,
        judge_model=str(manifest.get("judge_model") or ""),
        kappa=number("kappa"),
        accuracy=number("accuracy"),
        n_labelled=int(number("n_labelled") or 0),
        n_answers=int(number("n_answers") or 0),
        k=int(number("k") or 1),
        finished_at=str(done.get("finished_at") or ""),
    )


def find_judge_checks(workdir: Path, judge_model: str, endpoint: Any) -> list[JudgeCheck]:
    """Complete judge-checks of this judge (model and server) under the workdir, newest first."""
    found = [c for root in sessions_of_judge(workdir, JUDGE_CHECK, judge_model, endpoint) if (c := _read_check(root))]
    found.sort(key=lambda c: c.finished_at, reverse=True)
    return found


def uses_judge(exp_names: list[str]) -> bool:
    """Whether any of these pipelines has a judge label answers (a judge-check itself does not
    count, nor a preference session: its judge compares answers, checked by prefer-check)."""
    used = (kinds.method_kind(exp_name) for exp_name in exp_names)
    return any(kind is not None and kind.uses_judge and kind.selectable and kind.name != JUDGE_CHECK for kind in used)


def judge_note(root: Path, manifest: dict[str, Any] | None, exp_names: list[str]) -> JudgeNote | None:
    """The judge link of a session whose pipelines use a judge; None for any other session."""
    if manifest is None or not uses_judge(exp_names):
        return None
    judge = str(manifest.get("judge_model") or "")
    if not judge:
        return None
    parents = Path(root).resolve().parents  # <workdir>/runs/<RUN_KEY>/sessions/<FINGERPRINT>
    if len(parents) < 4:
        return None
    workdir = parents[3]
    checks = find_judge_checks(workdir, judge, judge_endpoint(manifest))
    check = checks[0] if checks else None
    if check is None:
        warning = f"judge {judge} was never checked: run `w2c-tui judge-check --judge {judge}`"
    elif check.low:
        kappa = "–" if check.kappa is None else f"{check.kappa:.2f}"
        warning = f"judge {judge} agrees with the reference labels at κ {kappa} < {KAPPA_WARNING}: its labels are not reliable"
    else:
        warning = None
    return JudgeNote(judge, check, warning)
