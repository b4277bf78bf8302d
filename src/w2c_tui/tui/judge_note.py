"""How the Session view shows a session's judge: the judge-check it links to, and warnings.

The lookup reads other sessions' files (judge_check/link.py): call `session_judge_note`
in a thread worker, then show `judge_note_markup` on the UI thread.
"""

from __future__ import annotations

from typing import Any

from textual.markup import escape

from w2c_tui.session.reader import SessionInfo
from w2c_tui.judge_check.text import figures_lines
from w2c_tui.judge_check.link import JudgeNote, judge_note


def session_judge_note(info: SessionInfo) -> JudgeNote | None:
    """The judge link of a session whose pipelines use a judge (disk: run in a worker)."""
    return judge_note(info.paths.root, info.manifest_json, [p.exp_name for p in info.pipelines])


def judge_note_markup(note: JudgeNote | None) -> str:
    """"judge checked: κ 0.93 on 1,200 answers, <session>" and/or a warning; "" for no judge."""
    if note is None:
        return ""
    lines = [f"[$success]✓[/] {escape(note.check.text())}"] if note.check and not note.warning else []
    if note.check and note.warning:
        lines.append(f"[$warning]{escape(note.check.text())}[/]")
    if note.warning:
        lines.append(f"[b $warning]warning:[/] {escape(note.warning)}")
    return "\n".join(lines)


def judge_figures_markup(metrics: dict[str, Any]) -> str:
    """The judge-check figures of a judge_check pipeline ("" for any other pipeline)."""
    figures = (metrics or {}).get("judge_check")
    if not isinstance(figures, dict):
        return ""
    return "[b]Judge check[/b]\n" + "\n".join(escape(line) for line in figures_lines(figures))
