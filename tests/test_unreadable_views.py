"""The views count an unreadable judge label as the session's figures do (docs/metrics.md §1).

A synthetic session whose llm_judge has 3 answers out of 24 the judge never labelled readably
(one of them an earlier-suite row, which stored its fallback cannot_answer), finalized under
`judge_unreadable_as` = left_out or cannot_answer: the Examples markers, the Trace screen,
Compare, the agreement table, the per-example export and the metrics a reader recomputes
each tell the rule metrics.json was written by.
"""

from __future__ import annotations

import json

import pytest

from w2c_tui.analysis.agreement import session_agreement
from w2c_tui.analysis.compare import compare_sessions, load_sessions
from w2c_tui.analysis.export import example_records
from w2c_tui.data import load_examples
from w2c_tui.engine.finalize import metrics_for
from w2c_tui.pipelines.llm_judge import LlmJudgePipeline
from w2c_tui.session import earlier_suite
from w2c_tui.session.checkpoints import primary_file
from w2c_tui.session.data import SessionData
from w2c_tui.session.reader import read_session
from w2c_tui.session.rows import UNREADABLE_EVENT, load_session_rows
from w2c_tui.store.jsonl import read_keyed
from w2c_tui.store.layout import AUDIT_FILE, MANIFEST_FILE, SessionPaths
from w2c_tui.testing.synthetic_session import write_session
from w2c_tui.tui.screens.trace import judge_widgets, pipeline_section, shown_label

LEFT_OUT, CANNOT = "left_out", "cannot_answer"


def _unreadable_session(tmp_path, rule: str, run_key: str, picks: slice = slice(0, 3)):
    """A complete llm_judge + mcq session, 3 judge labels unreadable, finalized under `rule`;
    (root, the unreadable uuids, the earlier-suite one among them)."""
    session = write_session(tmp_path / "w", run_key=run_key, n_examples=24, seed=1, pipelines=("llm_judge", "mcq"))
    paths = SessionPaths(session.root)
    examples = load_examples(session.dataset)[:24]
    path = primary_file(session.root, "llm_judge")
    rows = read_keyed(path)
    chosen = sorted(rows)[picks]
    for uuid, row in rows.items():
        gone = uuid in chosen
        row.update(judge_fallback_to_cannot_answer=gone, judge_parse_failed_second=gone, judge_used_retry=gone)
        if gone:  # ours: no label; the earlier suite's (the last): its fallback cannot_answer
            row.update(predicted_label=CANNOT if uuid == chosen[-1] else None, judge_parse_path="unreadable")
        elif row["predicted_label"] is None or row["judge_parse_path"] == "fallback":
            row.update(predicted_label=row["gold_label"], judge_parse_path="json")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows.values()), encoding="utf-8")
    audit = paths.checkpoints("llm_judge") / AUDIT_FILE  # the judge's own event, for these three only
    audit.write_text(
        "".join(
            json.dumps({"uuid": u, "fallback_type": UNREADABLE_EVENT, "stage": "judge_parse", "severity": "warning", "details": {}}) + "\n"
            for u in chosen
        ),
        encoding="utf-8",
    )
    metrics = metrics_for("llm_judge", rows, examples, LlmJudgePipeline.label_of, None, seed=42, unreadable_as=rule)
    paths.metrics_file("llm_judge").write_text(json.dumps({**metrics, "complete": True}), encoding="utf-8")
    manifest = json.loads((session.root / MANIFEST_FILE).read_text(encoding="utf-8"))
    manifest["config"]["pipelines"] = {"judge_unreadable_as": rule}
    (session.root / MANIFEST_FILE).write_text(json.dumps(manifest), encoding="utf-8")
    return session.root, chosen, metrics


@pytest.mark.parametrize(("rule", "marker", "label"), [(LEFT_OUT, "unreadable", None), (CANNOT, "unread→can", CANNOT)])
def test_the_examples_table_says_unreadable_by_the_rule(tmp_path, rule, marker, label):
    root, chosen, _ = _unreadable_session(tmp_path, rule, "r")
    rows = load_session_rows(root)
    assert rows.unreadable_as == {"llm_judge": rule} and rows.unreadable["llm_judge"] == frozenset(chosen)
    for uuid in chosen:  # the row's flag and the audit event give the same one marker
        assert marker in rows.row(uuid).markers and "judge→can" not in rows.row(uuid).markers
        assert rows.row(uuid).predictions["llm_judge"] == label  # the earlier suite's cannot_answer too
    readable = next(u for u in sorted(rows.primary["llm_judge"]) if u not in chosen)
    assert not {"unreadable", "unread→can"} & set(rows.row(readable).markers)


def test_the_rule_comes_from_the_manifest_when_metrics_json_does_not_say(tmp_path):
    root, chosen, metrics = _unreadable_session(tmp_path, CANNOT, "r")
    paths = SessionPaths(root)
    paths.metrics_file("llm_judge").write_text(json.dumps({**metrics, "judge_unreadable_as": None}), encoding="utf-8")
    assert load_session_rows(root).unreadable_as == {"llm_judge": CANNOT}


@pytest.mark.parametrize(("rule", "step", "title"), [
    (LEFT_OUT, "unreadable: left out of the figures", "llm_judge → unreadable"),
    (CANNOT, "unreadable, scored as the earlier suite did → cannot_answer", "llm_judge → cannot_answer"),
])
def test_the_trace_says_what_the_figures_did(tmp_path, rule, step, title):
    root, chosen, _ = _unreadable_session(tmp_path, rule, "r")
    data = SessionData.load(root)
    for uuid in chosen:
        detail = data.trace(uuid)
        [trace] = [t for t in detail.pipelines if t.exp_name == "llm_judge"]
        assert trace.unreadable_as == rule
        text = " ".join(str(w.content) for w in judge_widgets(trace, detail.gold) if hasattr(w, "content"))
        assert step in text and "fallback → cannot_answer" not in text
        assert shown_label(trace) == (CANNOT if rule == CANNOT else None)
        assert str(pipeline_section(trace, detail.gold).title).startswith(title)


def _compare(tmp_path, rule):
    a, chosen_a, _ = _unreadable_session(tmp_path, rule, "a", slice(0, 3))
    b, chosen_b, _ = _unreadable_session(tmp_path, rule, "b", slice(2, 4))  # one in common with A
    return compare_sessions(load_sessions([a, b]), n_resamples=50).pairs[0].pipelines["llm_judge"], chosen_a, chosen_b


def test_compare_pairs_only_labels_readable_on_both_sides_and_says_how_many_dropped(tmp_path):
    paired, chosen_a, chosen_b = _compare(tmp_path, LEFT_OUT)
    assert (paired.n_unreadable, paired.n_unreadable_a, paired.n_unreadable_b) == (4, 3, 2)
    assert paired.n_common == 24 - 4 and (paired.n_only_a, paired.n_only_b) == (0, 0)
    assert (paired.n_coerced_a, paired.n_coerced_b) == (0, 0)  # an unreadable label is no invalid one
    assert "4 unreadable judge label(s) (3 in A, 2 in B" in paired.warning
    assert paired.to_json()["n_unreadable"] == 4
    assert not {d.uuid for d in paired.disagreements} & {*chosen_a, *chosen_b}


def test_compare_under_the_earlier_suites_rule_scores_them_cannot_answer(tmp_path):
    paired, _, _ = _compare(tmp_path, CANNOT)
    assert (paired.n_common, paired.n_unreadable, paired.n_coerced_a, paired.n_coerced_b) == (24, 0, 0, 0)
    assert paired.warning is None


@pytest.mark.parametrize(("rule", "n"), [(LEFT_OUT, 21), (CANNOT, 24)])
def test_agreement_leaves_them_out_by_the_rule(tmp_path, rule, n):
    root, _, _ = _unreadable_session(tmp_path, rule, "r")
    [pair] = session_agreement(load_session_rows(root)).pairs
    assert pair.n == n


@pytest.mark.parametrize(("rule", "cell"), [(LEFT_OUT, "unreadable"), (CANNOT, CANNOT)])
def test_the_export_shows_the_unreadable_label(tmp_path, rule, cell):
    root, chosen, _ = _unreadable_session(tmp_path, rule, "r")
    records = {r["uuid"]: r for r in example_records([load_session_rows(root)])}
    for uuid in chosen:
        assert records[uuid]["llm_judge_label"] == cell
        assert (records[uuid]["llm_judge_correct"] is None) == (rule == LEFT_OUT)


@pytest.mark.parametrize("rule", [LEFT_OUT, CANNOT])
def test_recomputed_metrics_are_those_finalize_wrote(tmp_path, rule):
    root, _, written = _unreadable_session(tmp_path, rule, "r")
    info = read_session(root)
    paths = SessionPaths(root)
    rows = read_keyed(primary_file(root, "llm_judge"))
    again = earlier_suite.recompute(info.manifest, paths, "llm_judge", rows)
    keys = ("n_obtained", "n_total", "n_unreadable_labels", "judge_unreadable_as", "accuracy", "macro_f1", "n_invalid_labels")
    assert {k: again[k] for k in keys} == {k: written[k] for k in keys}
    # a stale metrics.json: the reader shows the rows recomputed, by the same rule
    paths.metrics_file("llm_judge").write_text(json.dumps({**written, "n_obtained": 23}), encoding="utf-8")
    [judge] = [p for p in read_session(root, use_summary=False).pipelines if p.exp_name == "llm_judge"]
    assert (judge.metrics["n_unreadable_labels"], judge.metrics["judge_unreadable_as"]) == (3, rule)
    assert judge.metrics["n_total"] == written["n_total"]


def test_an_earlier_suite_session_without_a_rule_leaves_them_out(tmp_path):
    root, _, written = _unreadable_session(tmp_path, LEFT_OUT, "r")
    info = read_session(root)
    manifest = info.manifest.model_copy(update={"config": {}})
    again = earlier_suite.recompute(manifest, SessionPaths(root), "llm_judge", read_keyed(primary_file(root, "llm_judge")))
    assert (again["n_total"], again["n_unreadable_labels"], again["judge_unreadable_as"]) == (21, 3, LEFT_OUT)
    mcq = earlier_suite.recompute(manifest, SessionPaths(root), "mcq", read_keyed(primary_file(root, "mcq")))
    assert "judge_unreadable_as" not in mcq and "n_unreadable_labels" not in mcq
