"""Compare's `e`: the comparison table itself (B − A, intervals, McNemar), beside both sessions' tables.

Markdown with the numbers the screen shows (`paired_rows`, full pipeline names) and JSON with
everything `w2c-tui compare --json` gives for the pair (the flipped examples included). Written
with the exports' own atomic writer, into the same folder. Blocking: call from a thread.
"""

from __future__ import annotations

import json
from pathlib import Path

from textual.content import Content

from w2c_tui.analysis.compare import SIGN, PairComparison
from w2c_tui.analysis.export import write_atomic
from w2c_tui.metrics.paired import DEFAULT_RESAMPLES
from w2c_tui.printable import one_line
from w2c_tui.session.reader import SessionInfo


def comparison_markdown(pair: PairComparison, a: SessionInfo, b: SessionInfo, *, seed: int) -> str:
    from w2c_tui.tui.screens.compare import pair_notes, paired_rows

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(one_line(c).replace("|", "\\|") for c in cells) + " |"

    rows = paired_rows(pair, name=str)
    lines = [f"# Comparison: {SIGN}", ""]
    for side, info in (("A", a), ("B", b)):
        simulated = " (simulated)" if info.simulated else ""
        lines.append(f"- {side}: {one_line(info.target_model)}{simulated}, {one_line(info.run_key)}/{info.fingerprint}")
    lines += [
        "",
        f"Δ = {SIGN} on the examples both sessions answered (n); 95% paired bootstrap intervals "
        f"({DEFAULT_RESAMPLES:,} resamples, seed {seed}); exact McNemar p.",
    ]
    if pair.dataset_note:
        lines.append(f"NOTE: {one_line(pair.dataset_note)}")
    lines += ["", line(rows[0]), "|---|" + "---:|" * (len(rows[0]) - 1), *(line(row) for row in rows[1:])]
    notes = [Content.from_markup(note).plain for note in pair_notes(pair)]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def _session(info: SessionInfo) -> dict[str, object]:
    """Which session A (or B) is: the comparison's own JSON names them only `A` and `B`."""
    return {
        "target_model": info.target_model,
        "run_key": info.run_key,
        "fingerprint": info.fingerprint,
        "folder": str(info.paths.root),
        "simulated": info.simulated,
    }


def write_comparison(folder: Path, stem: str, pair: PairComparison, a: SessionInfo, b: SessionInfo, *, seed: int) -> list[Path]:
    """<folder>/<stem>-comparison.md and .json."""
    folder = Path(folder)
    sessions = {f"session_{side}": _session(info) for side, info in (("a", a), ("b", b))}
    document = json.dumps({**sessions, **pair.to_json()}, indent=2, ensure_ascii=False) + "\n"
    return [
        write_atomic(folder / f"{stem}-comparison.md", comparison_markdown(pair, a, b, seed=seed)),
        write_atomic(folder / f"{stem}-comparison.json", document),
    ]
