"""Export finished sessions for a paper or a README: one metrics table, and one row per example.

The metrics table has a row per (session, pipeline) with n, accuracy and macro-F1 with their
95 % bootstrap intervals, the other two macro-F1 variants and the three hallucination rates
with numerator and denominator, and for a stability sweep its stability metrics (JSON and CSV:
k, stability_at_k, mean_consistency_at_k, …, as `show` prints them). A `prefer` session's
row carries B's win rate over A with its SE and interval, ties, position consistency and
label agreement (`preference_*`; Markdown and LaTeX print them as a second table). An
official-format `mcq_logprob` row carries the paper's figures (`official_*`, empty elsewhere;
JSON rows also the `official` block as metrics.json has it; Markdown and LaTeX: a table of
their own; docs/metrics.md §17). Every number is the one `w2c-tui show --json` prints for
that pipeline (`SessionInfo` metrics: metrics.json, or recomputed from the rows when that is
stale). Rounding: JSON and CSV carry the values unrounded, exactly as `show --json`;
Markdown and LaTeX print them with three decimals (Python's `format(x, ".3f")`).

The per-example table: session, uuid, source, gold, and per pipeline its label (as scored:
an invalid label is `cannot_answer`; a judge label that could not be read is `unreadable`,
with no correctness, where the session's `judge_unreadable_as` leaves it out, and
`cannot_answer` where that says so), whether it is correct, and for kinds with log-prob
variants (`mcq_logprob`) the primary variant's score of each choice. An example a pipeline
did not obtain has empty cells for it.

n is the number of answers the figures are computed over (`n_scored`): the answers obtained,
or for a judge-check the answers the judge labelled (its accuracy interval is the one computed
over them, `judge_check.accuracy_ci95`). A session named twice is exported once.

What a cell may hold: Markdown and LaTeX cells are one line without control characters (a
model name with a newline or `|` cannot split a row). CSV cells that a spreadsheet would run
as a formula (text starting with `=`, `+`, `-`, `@`, a tab or a carriage return) get a
leading `'` (OWASP's advice); the numbers this table writes as numbers (an interval's low
end, a negative Δ) are written as numbers and left alone: only text is prefixed.

Files are written atomically (temporary file, then rename): a reader never sees half a table.
`safe_target` decides where: never over anything but a regular file (not a link, device,
pipe or folder), never into a session folder except its `exports/` folder.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from w2c_tui.labels import LABELS
from w2c_tui.printable import one_line
from w2c_tui.report.numbers import decimal
from w2c_tui.session import kinds
from w2c_tui.session.models import Interval, Metrics, Rate, as_metrics
from w2c_tui.session.reader import SessionInfo
from w2c_tui.session.rows import UNREADABLE_MARKER, SessionRows
from w2c_tui.store.temporary import remove_leftovers, temporary_path

FORMATS = ("md", "csv", "latex", "json")
EXPORTS_FOLDER = "exports"
DIGITS = 3

# The metrics shown, as the metrics document declares them (session/models.py: its groups).
HEADLINE = Metrics.group("headline")  # a field with an `interval` adds <key>_ci95_low/_high
HALLUCINATIONS = tuple((field.key.removesuffix("_hallucination_rate"), field.key) for field in Metrics.group("hallucination"))
STABILITY = tuple(field.key for field in Metrics.group("stability"))  # a sweep's, as `show` prints them; empty elsewhere

# A `prefer` session's figures: B's win rate over A, its SE and interval, ties, consistency, agreement.
PREFERENCE = tuple(
    f"preference_{key}" for key in ("win_rate", "se", "ci95_low", "ci95_high", "ties", "position_consistency", "label_agreement")
)

# An official-format mcq_logprob's `official` block (the paper's figures, docs/metrics.md §17),
# flat; empty for every other pipeline. JSON rows also carry the block itself, as metrics.json has it.
OFFICIAL_INTERVALS = ("acc", "acc_norm", "macro_f1")
OFFICIAL = (
    "official_family", "official_n", "official_n_unscored",
    *(f"official_{key}{part}" for key in OFFICIAL_INTERVALS for part in ("", "_ci95_low", "_ci95_high")),
    "official_macro_f1_no_direct",
    *(f"official_tool_hallucination_{part}" for part in ("rate", "numerator", "denominator", "ci95_low", "ci95_high")),
)

#: columns of the metrics table, in order (JSON keys, CSV header)
SUMMARY_COLUMNS = (
    "run_key", "fingerprint", "target_model", "simulated", "pipeline", "status", "n_obtained", "n_planned", "n_scored",
    *(
        column
        for field in HEADLINE
        for column in ((field.key, f"{field.key}_ci95_low", f"{field.key}_ci95_high") if field.interval else (field.key,))
    ),
    *(f"{name}_hallucination_{part}" for name, _ in HALLUCINATIONS for part in ("rate", "numerator", "denominator")),
    *STABILITY,
    *PREFERENCE,
    *OFFICIAL,
)


# -- the metrics table -------------------------------------------------------------------

def summary_records(infos: Sequence[SessionInfo]) -> list[dict[str, Any]]:
    """One flat record per (session, pipeline), values as `show --json` has them."""
    records = []
    for info in infos:
        for pipeline in info.pipelines:
            m = as_metrics(pipeline.metrics)
            obtained, planned = m.coverage
            # A judge-check's figures are over the answers the judge labelled, its interval with them.
            check = m.judge_check
            record: dict[str, Any] = {
                "run_key": info.run_key,
                "fingerprint": info.fingerprint,
                "target_model": info.target_model,
                "simulated": info.simulated,
                "pipeline": pipeline.exp_name,
                "status": pipeline.status,
                "n_obtained": obtained,
                "n_planned": planned,
                "n_scored": check.get("n_labelled") if check else obtained,
            }
            for field in HEADLINE:
                key = field.key
                record[key] = getattr(m, key)
                if field.interval:
                    interval = Interval.of(check.get(f"{key}_ci95") or {}) if check else m.interval(key) or Interval()
                    record[f"{key}_ci95_low"] = interval.low
                    record[f"{key}_ci95_high"] = interval.high
            for name, key in HALLUCINATIONS:
                value = getattr(m, key)
                rate = value.rate if isinstance(value, Rate) else value
                record[f"{name}_hallucination_rate"] = rate if isinstance(rate, (int, float)) else None
                record[f"{name}_hallucination_numerator"] = value.numerator if isinstance(value, Rate) else None
                record[f"{name}_hallucination_denominator"] = value.denominator if isinstance(value, Rate) else None
            for key in STABILITY:
                record[key] = getattr(m, key)
            record.update(_preference(m))
            record.update(_official(m))
            records.append(record)
    return records


def _preference(m: Metrics) -> dict[str, Any]:
    """What a preference session's record holds (`prefer`: B's win rate over A with its error,
    n its pairs; `prefer-check`: its accuracy interval and n over its calls); the preference
    columns empty for every other kind."""
    record: dict[str, Any] = dict.fromkeys(PREFERENCE)
    check = m.get("preference_check")
    if isinstance(check, dict):
        interval = Interval.of(check.get("ci95") or {})
        record.update(accuracy_ci95_low=interval.low, accuracy_ci95_high=interval.high, n_scored=check.get("n_calls"))
    figures = m.get("preference")
    if isinstance(figures, dict):
        interval = Interval.of(figures.get("ci95") or {})
        consistency, agreement = figures.get("position_consistency"), figures.get("label_agreement")
        record.update(
            n_scored=figures.get("n"),
            preference_win_rate=figures.get("win_rate"),
            preference_se=figures.get("se"),
            preference_ci95_low=interval.low,
            preference_ci95_high=interval.high,
            preference_ties=figures.get("ties"),
            preference_position_consistency=consistency.get("share") if isinstance(consistency, dict) else None,
            preference_label_agreement=agreement.get("agreement") if isinstance(agreement, dict) else None,
        )
    return record


def _official(m: Metrics) -> dict[str, Any]:
    """The official columns (empty without the block), and `official`: the block as metrics.json has it."""
    record: dict[str, Any] = dict.fromkeys(OFFICIAL)
    o = m.official
    record["official"] = o.document if o is not None else None
    if o is None:
        return record
    record.update(official_family=o.family, official_n=o.n, official_n_unscored=o.n_unscored)
    record["official_macro_f1_no_direct"] = o.macro_f1_no_direct
    for key in OFFICIAL_INTERVALS:
        interval = getattr(o, f"{key}_ci95") or Interval()
        record.update({f"official_{key}": getattr(o, key), f"official_{key}_ci95_low": interval.low, f"official_{key}_ci95_high": interval.high})
    rate = o.tool_hallucination_rate
    if rate is not None:
        wilson = Interval.of(rate.ci95) if isinstance(rate.ci95, dict) else Interval()
        record.update(
            official_tool_hallucination_rate=rate.rate,
            official_tool_hallucination_numerator=rate.numerator,
            official_tool_hallucination_denominator=rate.denominator,
            official_tool_hallucination_ci95_low=wilson.low,
            official_tool_hallucination_ci95_high=wilson.high,
        )
    return record


def _with_interval(record: dict[str, Any], key: str) -> str:
    low, high = record[f"{key}_ci95_low"], record[f"{key}_ci95_high"]
    text = decimal(record[key], DIGITS)
    return text + (f" [{decimal(low, DIGITS)}, {decimal(high, DIGITS)}]" if low is not None and high is not None else "")


def _hallucination(record: dict[str, Any], name: str) -> str:
    numerator, denominator = record[f"{name}_hallucination_numerator"], record[f"{name}_hallucination_denominator"]
    text = decimal(record[f"{name}_hallucination_rate"], DIGITS)
    return text + (f" ({numerator}/{denominator})" if denominator is not None else "")


def _session(record: dict[str, Any]) -> str:
    return f"{record['run_key']}/{record['fingerprint'][:8]}"


def _model(record: dict[str, Any]) -> str:
    return record["target_model"] + (" (simulated)" if record["simulated"] else "")


def _n(record: dict[str, Any]) -> str:
    obtained, planned = record.get("n_scored", record["n_obtained"]), record["n_planned"]
    if obtained is None:
        return "–"
    return str(obtained) if planned in (None, obtained) else f"{obtained}/{planned}"


TABLE_HEADER = (
    "session", "model", "pipeline", "n",
    *(field.paper + (" [95% CI]" if field.interval else "") for field in HEADLINE),
    *(field.paper for field in Metrics.group("hallucination")),
)


def table_cells(record: dict[str, Any]) -> list[str]:
    """The printed cells of one record (Markdown and LaTeX): numbers with 3 decimals."""
    return [
        _session(record), _model(record), record["pipeline"], _n(record),
        *(_with_interval(record, f.key) if f.interval else decimal(record[f.key], DIGITS) for f in HEADLINE),
        *(_hallucination(record, name) for name, _ in HALLUCINATIONS),
    ]


PREFERENCE_HEADER = ("session", "judge", "pipeline", "n pairs", "win rate of B [95% CI]", "SE", "ties", "consistency", "label agreement")


def preference_cells(record: dict[str, Any]) -> list[str]:
    """The printed cells of a `prefer` session's record (its second table)."""
    low, high = record["preference_ci95_low"], record["preference_ci95_high"]
    rate = decimal(record["preference_win_rate"], DIGITS)
    return [
        _session(record), _model(record), record["pipeline"], str(record["n_scored"]),
        rate + (f" [{decimal(low, DIGITS)}, {decimal(high, DIGITS)}]" if low is not None and high is not None else ""),
        decimal(record["preference_se"], DIGITS), "–" if record["preference_ties"] is None else str(record["preference_ties"]),
        decimal(record["preference_position_consistency"], DIGITS), decimal(record["preference_label_agreement"], DIGITS),
    ]


OFFICIAL_HEADER = (
    "session", "model", "pipeline", "n", "format",
    *(f"{name} [95% CI]" for name in ("acc", "acc_norm", "macro-F1")), "macro-F1 (3-class)", "ToolHall [Wilson 95% CI]",
)


def official_cells(record: dict[str, Any]) -> list[str]:
    """The printed cells of a pipeline's official figures (the third table): n with the rows left out."""
    unscored = record["official_n_unscored"]
    low, high = record["official_tool_hallucination_ci95_low"], record["official_tool_hallucination_ci95_high"]
    return [
        _session(record), _model(record), record["pipeline"],
        str(record["official_n"]) + (f" ({unscored} unscored left out)" if unscored else ""), record["official_family"] or "–",
        *(_with_interval(record, f"official_{key}") for key in OFFICIAL_INTERVALS),
        decimal(record["official_macro_f1_no_direct"], DIGITS),
        _hallucination(record, "official_tool")
        + (f" [{decimal(low, DIGITS)}, {decimal(high, DIGITS)}]" if low is not None and high is not None else ""),
    ]


def _tables(records: Sequence[dict[str, Any]]) -> list[tuple[tuple[str, ...], list[list[str]]]]:
    """(header, rows) of each table: the metrics table, the preference table when a `prefer`
    session is among them, the official figures when an official-format session is."""
    preferred = [r for r in records if r["preference_win_rate"] is not None]
    others = [r for r in records if r["preference_win_rate"] is None]
    official = [r for r in records if r["official_n"]]
    tables = [(TABLE_HEADER, [table_cells(r) for r in others])] if others or not preferred else []
    tables += [(PREFERENCE_HEADER, [preference_cells(r) for r in preferred])] if preferred else []
    return tables + ([(OFFICIAL_HEADER, [official_cells(r) for r in official])] if official else [])


def to_markdown(records: Sequence[dict[str, Any]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(one_line(c).replace("|", "\\|") for c in cells) + " |"

    blocks = []
    for header, rows in _tables(records):
        aligns = ["---"] * 3 + ["---:"] * (len(header) - 3)
        blocks.append("\n".join([line(header), "|" + "|".join(aligns) + "|", *(line(cells) for cells in rows)]))
    return "\n\n".join(blocks) + "\n\n" + _note(records) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def to_latex(records: Sequence[dict[str, Any]]) -> str:
    """A booktabs tabular per table (needs \\usepackage{booktabs}); the note as a comment above."""
    lines = [f"% {latex_escape(_note(records))}"]
    for header, rows in _tables(records):
        heads = [latex_escape(h) for h in header]
        heads[3] = "$n$"
        lines += [
            r"\begin{tabular}{lll" + "r" * (len(header) - 3) + "}",
            r"\toprule",
            " & ".join(heads) + r" \\",
            r"\midrule",
            *(" & ".join(latex_escape(one_line(c)).replace("–", "--") for c in cells) + r" \\" for cells in rows),
            r"\bottomrule",
            r"\end{tabular}",
        ]
    return "\n".join(lines) + "\n"


def _note(records: Sequence[dict[str, Any]]) -> str:
    note = (
        "Metrics over the answers obtained (n = obtained/planned when some are missing; "
        "for a judge-check, the answers the judge labelled; for a preference, its pairs or calls); "
        "95% percentile-bootstrap intervals; hallucination rates with numerator/denominator."
    )
    if any(r["official_n"] for r in records):
        note += (
            " Official: the figures of NVIDIA's lm-eval When2Call task (acc, acc_norm per character, "
            "scikit-learn's macro-F1 and the 3-class one, tool hallucination among cannot_answer examples offering no tool)."
        )
    if any(r["simulated"] for r in records):
        note += " SIMULATED: rows marked (simulated) come from the simulated endpoint, not a model."
    return note


def to_csv(records: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Unrounded values (as `show --json`), empty cells for None."""
    columns = list(columns or SUMMARY_COLUMNS)  # not the JSON's `official` block: its figures have their columns
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        writer.writerow(["" if record.get(c) is None else _csv_value(record.get(c)) for c in columns])
    return out.getvalue()


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_value(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else value  # a number, negative or not, stays one
    text = str(value)
    # A spreadsheet would run it as a formula (OWASP "CSV injection"): a leading ' makes it text.
    return "'" + text if text.startswith(_FORMULA_START) else text


def to_json(records: Sequence[dict[str, Any]]) -> str:
    return json.dumps({"rows": list(records)}, indent=2, ensure_ascii=False) + "\n"


def render(records: Sequence[dict[str, Any]], fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    return {"md": to_markdown, "csv": to_csv, "latex": to_latex, "json": to_json}[fmt](records)


# -- one row per example -----------------------------------------------------------------

def example_columns(all_rows: Sequence[SessionRows]) -> list[str]:
    columns = ["session", "uuid", "source", "gold"]
    for name in _pipelines(all_rows):
        columns += [f"{name}_label", f"{name}_correct"]
        if _scored(name):
            columns += [f"{name}_score_{label}" for label in LABELS]
    return columns


def example_records(all_rows: Sequence[SessionRows]) -> list[dict[str, Any]]:
    """One record per (session, example) with each pipeline's label, correctness and choice scores."""
    names = _pipelines(all_rows)
    records = []
    for rows in all_rows:
        session = f"{rows.info.run_key}/{rows.info.fingerprint}"
        for example in rows.rows:
            source = getattr(rows.examples.get(example.uuid), "source", None)
            record: dict[str, Any] = {"session": session, "uuid": example.uuid, "source": source or None, "gold": example.gold}
            for name in names:
                row = rows.primary.get(name, {}).get(example.uuid)
                label = rows.scored(name, example.uuid)[0]
                record[f"{name}_label"] = UNREADABLE_MARKER if rows.left_out(name, example.uuid) else label
                record[f"{name}_correct"] = None if label is None or example.gold is None else label == example.gold
                if _scored(name):
                    scores = _scores(name, row)
                    for index, choice in enumerate(LABELS):
                        record[f"{name}_score_{choice}"] = scores[index] if scores else None
            records.append(record)
    return records


def _pipelines(all_rows: Sequence[SessionRows]) -> list[str]:
    seen: dict[str, None] = {}
    for rows in all_rows:
        for name in rows.exp_names:
            seen.setdefault(name, None)
    return list(seen)


def _scored(exp_name: str) -> bool:
    kind = kinds.kind_of(exp_name)
    return bool(kind is not None and kind.variants)


def _scores(exp_name: str, row: dict[str, Any] | None) -> list[Any] | None:
    """The primary variant's score per choice (LABELS order); None for a string-fallback row."""
    kind = kinds.kind_of(exp_name)
    if row is None or kind is None:
        return None
    scores = row.get(f"scores_{kind.primary_variant or kind.variants[0]}")
    return scores if isinstance(scores, list) and len(scores) == len(LABELS) else None


def render_examples(all_rows: Sequence[SessionRows], fmt: str) -> str:
    check_gold(all_rows)
    records = example_records(all_rows)
    if fmt == "csv":
        return to_csv(records, example_columns(all_rows))
    if fmt == "json":
        return json.dumps({"examples": records}, indent=2, ensure_ascii=False) + "\n"
    raise ValueError("the per-example table is written as csv or json")


# -- files -------------------------------------------------------------------------------

class ExportError(ValueError):
    """An export that would write where it must not, or score what it cannot (one readable line)."""


def _session_folder(folder: Path) -> Path | None:
    """The session folder `folder` is in (or is), if any: runs/<RUN_KEY>/sessions/<FP> with a manifest."""
    from w2c_tui.store.layout import MANIFEST_FILE

    for candidate in (folder, *folder.parents):
        if candidate.parent.name == "sessions" and ((candidate / MANIFEST_FILE).is_file() or (candidate / "checkpoints").is_dir()):
            return candidate
    return None


def safe_target(path: Path) -> Path:
    """`path` if an export may be written there, else ExportError saying why in one line.

    An export replaces only a regular file (a symbolic link, a device such as /dev/null, a
    pipe or a folder is never replaced) and never writes into a session folder, whose files
    (manifest, checkpoints, metrics) are the evidence, except into its `exports/` folder.
    """
    path = Path(path)
    try:
        found = path.lstat()
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise ExportError(f"{path}: cannot be looked up ({exc.strerror or exc})") from None
    if found is not None:
        if stat.S_ISLNK(found.st_mode):
            raise ExportError(f"{path}: is a symbolic link; an export replaces only a regular file: name the file itself")
        if stat.S_ISDIR(found.st_mode):
            raise ExportError(f"{path}: is a folder; name a file")
        if not stat.S_ISREG(found.st_mode):
            raise ExportError(f"{path}: is not a regular file (a device, pipe or socket); it is never replaced")
    parent = path.parent.resolve()
    session = _session_folder(parent)
    if session is not None and parent.relative_to(session).parts[:1] != (EXPORTS_FOLDER,):
        raise ExportError(
            f"{path}: is inside the session folder {session}; its files are never replaced: "
            f"write elsewhere (or into its {EXPORTS_FOLDER}/ folder)"
        )
    return path


def write_atomic(path: Path, text: str) -> Path:
    """Write `text` to `path` whole or not at all (a temporary file beside it, then a rename),
    where `safe_target` allows it (ExportError otherwise)."""
    path = safe_target(Path(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(path)
    tmp.unlink(missing_ok=True)  # a leftover of a killed export of this pid (never followed: unlink takes the link)
    remove_leftovers(path)  # a killed export's of another pid
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            with contextlib.suppress(FileNotFoundError):  # a file replaced keeps its mode (a 0600 export stays private)
                os.fchmod(fh.fileno(), stat.S_IMODE(os.stat(path).st_mode) & 0o777)
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def unique_roots(roots: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """(the session folders in the order given, each once; those named again), by their real path."""
    seen: set[Path] = set()
    kept, again = [], []
    for root in roots:
        real = Path(root).resolve()
        (again if real in seen else kept).append(root)
        seen.add(real)
    return kept, again


def check_gold(all_rows: Sequence[SessionRows]) -> None:
    """ExportError when a session's gold labels are known only from a dataset file changed
    since its run (its rows do not hold them): exporting would score it against another file."""
    for rows in all_rows:
        if rows.n_without_gold:
            raise ExportError(f"{rows.info.paths.root}: {rows.dataset_problem}")


@dataclass(frozen=True)
class ExportFiles:
    markdown: Path
    latex: Path
    examples_csv: Path

    @property
    def paths(self) -> list[Path]:
        return [self.markdown, self.latex, self.examples_csv]


def write_exports(folder: Path, stem: str, all_rows: Sequence[SessionRows]) -> ExportFiles:
    """The Markdown and LaTeX tables and the per-example CSV, as <folder>/<stem>-metrics.md etc."""
    records = summary_records([rows.info for rows in all_rows])
    folder = Path(folder)
    return ExportFiles(
        write_atomic(folder / f"{stem}-metrics.md", to_markdown(records)),
        write_atomic(folder / f"{stem}-metrics.tex", to_latex(records)),
        write_atomic(folder / f"{stem}-examples.csv", render_examples(all_rows, "csv")),
    )


def session_exports_folder(info: SessionInfo) -> Path:
    """Where the TUI writes a session's exports: exports/ inside the session folder."""
    return info.paths.root / EXPORTS_FOLDER
