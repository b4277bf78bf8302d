"""One session as per-UUID rows: gold label, each pipeline's prediction, fallback markers.

What the examples table, the charts and the Compare screen show. Blocking file work,
meant for thread workers; the session's dataset is asked through `SessionInfo.dataset`,
so it is parsed once however many readers ask.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from w2c_tui.labels import LABELS
from w2c_tui.session import kinds
from w2c_tui.store.audit import read_events, resolved_events, summarize
from w2c_tui.session.reader import SessionInfo, read_session
from w2c_tui.session.checkpoints import primary_file
from w2c_tui.store.jsonl import read_keyed
from w2c_tui.session.unreadable import judge_labelled, unreadable_label

# A judge label that could not be read, even after the repair request: left out of the figures
# (`judge_unreadable_as = "left_out"`) or scored as cannot_answer (docs/metrics.md §1).
UNREADABLE_MARKER = "unreadable"
UNREADABLE_SCORED_MARKER = "unread→can"  # short: two markers fit the column at 80 columns
UNREADABLE_EVENT = "judge_json_parse_failed_second_fallback_to_cannot_answer"  # the earlier suite's name

# Audit event type -> the short marker shown in the examples table (the unreadable label's: per rule).
EVENT_MARKERS = {
    "judge_json_parse_failed_first": "judge-retry",
    UNREADABLE_EVENT: UNREADABLE_MARKER,
    "all_logprobs_-inf_string_fallback": "lp→string",
    "token_prefix_mismatch_lcp_split": "lcp",
    "missing_prediction_uuid": "missing",
    "invalid_label_coercion_to_cannot_answer": "coerced",
    "api_call_failed_example_skipped": "api-fail",
}


def unreadable_marker(rule: str | None) -> str:
    """The marker of an unreadable judge label under the pipeline's rule (None: left out)."""
    from w2c_tui.metrics.unreadable import scored_as

    return UNREADABLE_SCORED_MARKER if scored_as(rule) else UNREADABLE_MARKER


def unreadable_rule(info: SessionInfo, exp_name: str) -> str | None:
    """The rule the pipeline's unreadable judge labels were counted by: its metrics.json's (or
    the recomputed metrics'), else the manifest's setting, else the default; None for a kind
    whose labels no judge gives."""
    from w2c_tui.metrics.unreadable import UNREADABLE_RULE_KEY, rule_of

    if not judge_labelled(exp_name):
        return None
    pipeline = next((p for p in info.pipelines if p.exp_name == exp_name), None)
    metrics = pipeline.metrics if pipeline is not None else None
    manifest = info.manifest
    return rule_of(
        metrics.judge_unreadable_as if metrics is not None else None,
        manifest.setting("pipelines", UNREADABLE_RULE_KEY) if manifest is not None else None,
    )


def row_markers(row: dict[str, Any] | None, rule: str | None = None) -> set[str]:
    """Fallback markers readable from the checkpoint row itself (older sessions lack events);
    `rule`: the pipeline's judge_unreadable_as."""
    if not row:
        return set()
    found = set()
    if row.get("judge_fallback_to_cannot_answer"):
        found.add(unreadable_marker(rule))
    elif row.get("judge_used_retry"):
        found.add("judge-retry")
    if row.get("mode") == "string_fallback":
        found.add("lp→string")
    if row.get("used_lcp_split") is True:
        found.add("lcp")
    return found


@dataclass
class ExampleRow:
    uuid: str
    gold: str | None
    predictions: dict[str, str | None]
    markers: tuple[str, ...]
    search_text: str

    def is_correct(self, exp_name: str) -> bool | None:
        predicted = self.predictions.get(exp_name)
        if predicted is None or self.gold is None:
            return None
        return predicted == self.gold


@dataclass
class SessionRows:
    """Everything the examples table, the charts and the compare screen need."""

    info: SessionInfo
    exp_names: list[str]
    rows: list[ExampleRow]
    primary: dict[str, dict[str, dict[str, Any]]]
    events_by_uuid: dict[str, list[dict[str, Any]]]
    examples: dict[str, Any]  # uuid -> data.Example, when the dataset file was found
    dataset_path: Path | None
    audit_summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Judge-labelled pipelines: the examples whose judge label could not be read, and the rule
    # their figures counted them by (`unreadable_rule`; docs/metrics.md §1).
    unreadable: dict[str, frozenset[str]] = field(default_factory=dict)
    unreadable_as: dict[str, str] = field(default_factory=dict)
    # The dataset file is not the one the session ran on (session/dataset.py): what changed,
    # and how many examples have no gold label of their own (they cannot be scored).
    dataset_problem: str | None = None
    n_without_gold: int = 0
    _by_uuid: dict[str, ExampleRow] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._by_uuid = {r.uuid: r for r in self.rows}

    def row(self, uuid: str) -> ExampleRow | None:
        return self._by_uuid.get(uuid)

    def left_out(self, exp_name: str, uuid: str) -> bool:
        """Whether the pipeline's label of this example is an unreadable judge label its rule leaves out."""
        from w2c_tui.metrics.unreadable import scored_as

        return uuid in self.unreadable.get(exp_name, ()) and scored_as(self.unreadable_as.get(exp_name)) is None

    def scored(self, exp_name: str, uuid: str) -> tuple[str | None, bool]:
        """(the label as the metrics score it, whether it is an invalid label coerced to
        cannot_answer); None for no row, or for an unreadable judge label left out."""
        from w2c_tui.metrics.classification import coerce_label
        from w2c_tui.metrics.unreadable import scored_as

        row = self.primary.get(exp_name, {}).get(uuid)
        if row is None:
            return None, False
        if uuid in self.unreadable.get(exp_name, ()):
            return scored_as(self.unreadable_as.get(exp_name)), False  # never a coercion (metrics.md §1)
        return coerce_label(kinds.label_of(exp_name, row))


def load_session_rows(root: Path | SessionInfo) -> SessionRows:
    """Read one session's predictions and audit events into per-UUID rows. Blocking."""
    info = root if isinstance(root, SessionInfo) else read_session(Path(root))
    # A damaged session lists what could be read: its pipelines (read_session never raises).
    exp_names = [p.exp_name for p in info.pipelines]
    # The pipelines' own (cached) rows, so the earlier suite's recomputed metrics read them once too.
    primary: dict[str, dict[str, dict[str, Any]]] = {p.exp_name: p.rows for p in info.pipelines}
    for exp_name in exp_names:
        if exp_name not in primary:
            path = primary_file(info.paths.root, exp_name)
            primary[exp_name] = _readable(lambda: read_keyed(path) if path else {}, {})

    from w2c_tui.metrics.unreadable import scored_as

    rules = {name: rule for name in exp_names if (rule := unreadable_rule(info, name)) is not None}
    unreadable = {
        name: frozenset(u for u, row in primary[name].items() if unreadable_label(name, row)) for name in rules
    }
    events_by_uuid: dict[str, list[dict[str, Any]]] = defaultdict(list)
    summaries: dict[str, dict[str, Any]] = {}
    resolved_ids: set[int] = set()
    event_rule: dict[int, str | None] = {}  # id(event) -> its pipeline's rule
    for exp_name in exp_names:
        events = _readable(lambda: read_events(info.paths.audit_file(exp_name)), [])
        obtained = primary[exp_name].keys()
        resolved_at = resolved_events(events, obtained)
        for index, event in enumerate(events):
            uuid = event.get("uuid")
            if isinstance(uuid, str):
                events_by_uuid[uuid].append(event)
                event_rule[id(event)] = rules.get(exp_name)
                if index in resolved_at:
                    resolved_ids.add(id(event))
        # From the events and rows on disk, so a resume's resolutions show even in older sessions.
        summaries[exp_name] = summarize(events, obtained)

    uuids = set().union(*(rows.keys() for rows in primary.values())) if primary else set()
    examples, dataset_path = info.dataset.lookup(uuids)
    uuids |= set(examples)

    rows = []
    for uuid in sorted(uuids):
        example = examples.get(uuid)
        gold = example.correct_answer if example is not None else None
        predictions: dict[str, str | None] = {}
        markers: set[str] = set()
        for exp_name in exp_names:
            row = primary[exp_name].get(uuid)
            if gold is None and row and row.get("gold_label") in LABELS:
                gold = row["gold_label"]
            predictions[exp_name] = kinds.label_of(exp_name, row)
            if uuid in unreadable.get(exp_name, ()):  # as the figures count it: left out, or cannot_answer
                predictions[exp_name] = scored_as(rules[exp_name])
            markers |= row_markers(row, rules.get(exp_name))
        for event in events_by_uuid.get(uuid, ()):
            if id(event) in resolved_ids:
                continue  # a resume obtained the answer: history, not a marker
            marker = EVENT_MARKERS.get(str(event.get("fallback_type")))
            if marker == UNREADABLE_MARKER:
                marker = unreadable_marker(event_rule.get(id(event)))
            if marker:
                markers.add(marker)
        question = example.question if example is not None else ""
        rows.append(ExampleRow(uuid, gold, predictions, tuple(sorted(markers)), f"{uuid} {question}".lower()))
    return SessionRows(
        info, exp_names, rows, primary, dict(events_by_uuid), examples, dataset_path, summaries,
        dataset_problem=info.dataset.problem, n_without_gold=info.dataset.n_without_gold,
        unreadable=unreadable, unreadable_as=rules,
    )


def stability_entropies(rows: SessionRows) -> dict[str, list[float]]:
    """Normalised entropy of every example, per stability sweep."""
    found: dict[str, list[float]] = {}
    for exp_name in rows.exp_names:
        if not kinds.is_sweep(exp_name):
            continue
        values = [r.get("normalized_entropy") for r in rows.primary.get(exp_name, {}).values()]
        found[exp_name] = [float(v) for v in values if isinstance(v, (int, float))]
    return found


def _readable(read, empty):
    """What `read()` returns, or `empty` when the file cannot be read (already a damaged-session reason)."""
    try:
        return read()
    except OSError:
        return empty
