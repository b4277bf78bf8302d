"""`w2c-tui compare A B [C …]`: paired differences (B − A) per pipeline, with intervals and McNemar p."""

from __future__ import annotations

import argparse
import json

from w2c_tui.cli.common import path_argument
from w2c_tui.cli.errors import CliError
from w2c_tui.report.numbers import decimal, shown, signed as signed_number

MAX_FLIPS_SHOWN = 10  # per direction in the text output; --json lists them all


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "compare",
        help="paired comparison of sessions: Δ (B − A) with bootstrap intervals, McNemar p, flipped examples",
    )
    parser.add_argument(
        "sessions", nargs="+", metavar="SESSION", type=path_argument,
        help="two or more sessions (A B [C …]): folders, fingerprints or run keys of one session",
    )
    parser.add_argument("--json", action="store_true", help="the comparison as JSON")
    parser.add_argument(
        "--resamples", type=_whole_number, default=10_000, metavar="N",
        help="bootstrap resamples, 1 to 100000 (default 10000)",
    )
    parser.add_argument("--seed", type=_whole_number, default=0, metavar="S", help="bootstrap seed, 0 to 2^63-1 (default 0)")
    parser.set_defaults(handler=compare)


def compare(args: argparse.Namespace) -> int:
    from w2c_tui.analysis.compare import CompareError, check_settings, compare_sessions, load_sessions
    from w2c_tui.cli.session_arg import session_folder

    if len(args.sessions) < 2:
        raise CliError("compare needs at least two session folders (A B [C …])")
    try:
        check_settings(args.resamples, args.seed)
        roots = [session_folder(args, text) for text in args.sessions]
        comparison = compare_sessions(load_sessions(roots), n_resamples=args.resamples, seed=args.seed)
    except CompareError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(json.dumps(comparison.to_json(), indent=2, ensure_ascii=False))
        return 0
    for line in comparison_lines(comparison):
        print(line)
    return 0


def _whole_number(text: str) -> int:
    """An integer, also written 1e5 (bounds are checked with the comparison's own: analysis/compare.py)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
    if value != value or value in (float("inf"), float("-inf")) or value != int(value):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number")
    return int(value)


def comparison_lines(comparison) -> list[str]:
    from w2c_tui.analysis.compare import COMPARED_EXAMPLES, SIGN

    lines = []
    for ref in comparison.sessions:
        tags = ("  [SIMULATED]" if ref.simulated else "") + (f"  [damaged: {ref.damaged[0]}]" if ref.damaged else "")
        lines.append(f"{ref.name}  {ref.target_model}  {ref.run_key}/{ref.fingerprint}  {ref.root}{tags}")
    lines.append(
        f"Δ = {SIGN}: the session named second minus the one named first (positive: B scores higher). "
        f"95% paired bootstrap intervals, {comparison.n_resamples:,} resamples, seed {comparison.seed}; exact McNemar p."
    )
    lines.append(f"Compared: {COMPARED_EXAMPLES}.")
    several = len(comparison.sessions) > 2
    if several:
        lines.append("Holm p: McNemar p adjusted (Holm) over the pairwise comparisons of each pipeline.")
    for pair in comparison.pairs:
        a, b = pair.a.name, pair.b.name
        lines.append("")
        lines.append(f"{b} − {a}  ({pair.b.target_model} − {pair.a.target_model})")
        if pair.dataset_note:
            lines.append(f"  NOTE: {pair.dataset_note}")
        header = (
            f"  {'pipeline':<28} {'n':>5} {'acc ' + a:>6} {'acc ' + b:>6} {'Δ acc':>7} {'95% CI':>17}"
            f" {'Δ F1':>7} {'95% CI':>17} {'McNemar p':>9}"
        )
        header += f" {'Holm p':>7}" if several else ""
        header += f" {b + '✓' + a + '✗':>5} {a + '✓' + b + '✗':>5}"
        lines.append(header)
        for entry in pair.pipelines.values():
            line = (
                f"  {entry.exp_name:<28} {entry.n_common:>5} {shown(entry.accuracy_a):>6} {shown(entry.accuracy_b):>6}"
                f" {signed_number(entry.delta_accuracy):>7} {_ci(entry.delta_accuracy_ci95):>17}"
                f" {signed_number(entry.delta_macro_f1):>7} {_ci(entry.delta_macro_f1_ci95):>17} {_p(entry.mcnemar_p):>9}"
            )
            line += f" {_p(entry.mcnemar_p_holm):>7}" if several else ""
            line += f" {entry.n_b_right_a_wrong:>5} {entry.n_a_right_b_wrong:>5}"
            lines.append(line)
        for entry in pair.pipelines.values():
            lines.extend(_pipeline_notes(entry, a, b))
        for side, names in ((a, pair.only_in_a), (b, pair.only_in_b)):
            if names:
                lines.append(f"  not compared (only in {side}): {', '.join(names)}")
    for name, rows in comparison.leaderboards.items():
        lines.append("")
        lines.append(f"leaderboard {name} (n = {rows[0].n if rows else 0}: the examples every session answered)")
        for row in rows:
            lines.append(
                f"  {row.session.name}  {row.session.target_model:<32} acc {shown(row.accuracy)} {_ci(row.accuracy_ci95, signed=False)}"
                f"  macro_f1 {shown(row.macro_f1)} {_ci(row.macro_f1_ci95, signed=False)}"
            )
    return lines


def _pipeline_notes(entry, a: str, b: str) -> list[str]:
    """Below the table, per pipeline: the warning, coercions, per-class Δ F1, the flipped examples."""
    notes = [f"  {entry.exp_name}"]
    if entry.warning:
        notes.append(f"    WARNING: {entry.warning}")
    if entry.n_coerced_a or entry.n_coerced_b:
        notes.append(f"    invalid labels scored as cannot_answer: {entry.n_coerced_a} in {a}, {entry.n_coerced_b} in {b}")
    if entry.n_common:
        per_class = "  ".join(f"{label} {signed_number(delta)}" for label, delta in entry.delta_per_class_f1.items())
        notes.append(f"    per-class Δ F1 ({b} − {a}): {per_class}")
    directions = (
        (f"right→wrong ({a} right, {b} wrong)", entry.right_to_wrong),
        (f"wrong→right ({a} wrong, {b} right)", entry.wrong_to_right),
    )
    for title, flips in directions:
        notes.append(f"    {title}: {len(flips)}")
        for d in flips[:MAX_FLIPS_SHOWN]:
            notes.append(f"      {d.uuid}  gold {d.gold:<16}  {a} {d.a:<16}  {b} {d.b}")
        if len(flips) > MAX_FLIPS_SHOWN:
            notes.append(f"      … {len(flips) - MAX_FLIPS_SHOWN} more (--json lists them all)")
    return notes


def _ci(ci: dict | None, *, signed: bool = True) -> str:
    if not ci:
        return "–"
    text = signed_number if signed else decimal
    return f"[{text(ci['low'])}, {text(ci['high'])}]"


def _p(value: float | None) -> str:
    if value is None:
        return "–"
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"
