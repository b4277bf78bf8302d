"""A judge label that could not be read is its own outcome (issue 37, item 3; docs/metrics.md §1).

It is counted (`n_unreadable_labels`) and left out of every figure, whose n says so; the
earlier suite's rule (scored as cannot_answer) only with `[pipelines] judge_unreadable_as =
"cannot_answer"`, which changes metrics.json only (not the rows, not the fingerprint). A
resumed llm_judge asks the judge again for those answers, not the target.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from w2c_tui.cli.show_text import metric_detail_lines
from w2c_tui.config import load_config
from w2c_tui.config.fingerprint import fingerprint_payload
from w2c_tui.data import load_examples
from w2c_tui.engine.finalize import metrics_for, metrics_stale
from w2c_tui.session.unreadable import unreadable_label
from w2c_tui.engine.launch import Launch
from w2c_tui.metrics import compute_metrics, stability_row
from w2c_tui.pipelines.llm_judge import LlmJudgePipeline
from w2c_tui.session.documents import disagreement
from w2c_tui.sim.server import SimServer
from w2c_tui.store.call_files import iter_calls
from w2c_tui.store.jsonl import read_keyed, write_json_atomic
from w2c_tui.store.layout import SessionPaths
from w2c_tui.tui.widgets.metric_table import hallucination_markup

from configs import write_config

ALL = load_examples()


def _pick(label: str, n: int = 2):
    return [e for e in ALL if e.correct_answer == label and e.tools][:n]


# gold: tool, tool, rfi, rfi, can, can
EXAMPLES = [*_pick("tool_call"), *_pick("request_for_info"), *_pick("cannot_answer")]
PREDICTED = ["tool_call", None, "request_for_info", "cannot_answer", "cannot_answer", None]  # None: unreadable


def _row(example, label):
    unreadable = label is None
    return {
        "uuid": example.uuid,
        "predicted_label": label,
        "gold_label": example.correct_answer,
        "judge_raw": "I am not sure" if unreadable else json.dumps({"classification": label}),
        "judge_parse_failed_first": unreadable,
        "judge_parse_failed_second": unreadable,
        "judge_used_retry": unreadable,
        "judge_fallback_to_cannot_answer": unreadable,
    }


ROWS = {e.uuid: _row(e, label) for e, label in zip(EXAMPLES, PREDICTED)}


def _metrics(rule: str):
    return metrics_for("llm_judge", ROWS, EXAMPLES, LlmJudgePipeline.label_of, None, seed=3, unreadable_as=rule)


def test_left_out_by_hand():
    m = _metrics("left_out")
    # scored: tool→tool ✓, rfi→rfi ✓, rfi→can ✗, can→can ✓ (the two unreadable ones are out)
    assert (m["n_planned"], m["n_obtained"], m["n_total"], m["n_unreadable_labels"]) == (6, 6, 4, 2)
    assert m["judge_unreadable_as"] == "left_out" and m["n_invalid_labels"] == 0
    assert m["accuracy"] == pytest.approx(3 / 4)
    # F1: tool 1, rfi 2·1/(2+0+1) = 2/3, can 2·1/(2+1+0) = 2/3; direct seen nowhere
    assert m["per_class_f1"] == pytest.approx({"direct": 0.0, "tool_call": 1.0, "request_for_info": 2 / 3, "cannot_answer": 2 / 3})
    assert m["macro_f1_labels"] == ["cannot_answer", "request_for_info", "tool_call"]
    assert m["macro_f1"] == pytest.approx(7 / 9)
    assert m["macro_f1_4"] == pytest.approx(7 / 12)
    assert m["macro_f1_no_direct"] == pytest.approx(7 / 9)
    assert m["confusion_matrix"]["matrix"] == [[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1]]
    assert m["answer_hallucination_rate"] == {"rate": 0.0, "numerator": 0, "denominator": 4}
    assert m["parameter_hallucination_rate"] == {"rate": 0.0, "numerator": 0, "denominator": 2}
    # the earlier suite's convention beside it: everything not scored counts as cannot_answer
    assert m["missing_as_cannot_answer"]["n_total"] == 6
    assert m["missing_as_cannot_answer"]["accuracy"] == pytest.approx(4 / 6)


def test_cannot_answer_rule_by_hand():
    m = _metrics("cannot_answer")
    # tool→can ✗ and can→can ✓ join: 4 of 6 right
    assert (m["n_obtained"], m["n_total"], m["n_unreadable_labels"]) == (6, 6, 2)
    assert m["judge_unreadable_as"] == "cannot_answer" and m["n_invalid_labels"] == 0  # not a coercion
    assert m["accuracy"] == pytest.approx(4 / 6)
    # tool 2·1/(2+0+1), rfi 2·1/(2+0+1), can 2·2/(4+2+0): 2/3 each
    assert m["macro_f1"] == pytest.approx(2 / 3)
    assert m["confusion_matrix"]["matrix"] == [[0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 1, 1], [0, 0, 0, 2]]
    assert m["answer_hallucination_rate"]["denominator"] == 6


def test_an_earlier_suites_row_is_unreadable_too():
    """Its rows hold the cannot_answer they fell back to (spec defect 2): the flag decides."""
    old = {**ROWS[EXAMPLES[1].uuid], "predicted_label": "cannot_answer"}
    assert LlmJudgePipeline.label_of(old) is None and not LlmJudgePipeline.settled(old)
    assert unreadable_label("llm_judge", old) and not unreadable_label("mcq", old)
    rows = {**ROWS, old["uuid"]: old}
    m = metrics_for("llm_judge", rows, EXAMPLES, LlmJudgePipeline.label_of, None, seed=3)
    assert (m["n_total"], m["n_unreadable_labels"]) == (4, 2)


def test_a_damaged_count_or_rule_in_metrics_json_is_named():
    from w2c_tui.session.documents import check_metrics

    clean, reasons = check_metrics({**_metrics("left_out"), "n_unreadable_labels": "two", "judge_unreadable_as": 3})
    assert "n_unreadable_labels" not in clean and "judge_unreadable_as" not in clean
    assert sorted(reasons) == [
        "metrics.json: judge_unreadable_as is a number, expected text",
        "metrics.json: n_unreadable_labels is text, expected a number",
    ]
    assert metric_detail_lines(clean)[-1].strip().startswith("halluc.")  # no line from a damaged count


def test_kinds_without_a_judge_get_no_rule():
    rows = {e.uuid: {"uuid": e.uuid, "predicted_label": e.correct_answer} for e in EXAMPLES}
    m = metrics_for("mcq", rows, EXAMPLES, lambda r: r["predicted_label"], None, seed=3)
    assert "n_unreadable_labels" not in m and "judge_unreadable_as" not in m and m["n_total"] == 6
    with pytest.raises(ValueError):
        compute_metrics(EXAMPLES, {}, unreadable_as="drop")


def test_nothing_readable_gives_no_figure():
    rows = {e.uuid: _row(e, None) for e in EXAMPLES}
    m = metrics_for("llm_judge", rows, EXAMPLES, LlmJudgePipeline.label_of, None, seed=3)
    assert (m["n_obtained"], m["n_total"], m["n_unreadable_labels"]) == (6, 0, 6) and "accuracy" not in m


def test_show_and_the_tui_say_it_with_the_n():
    left, fallback = _metrics("left_out"), _metrics("cannot_answer")
    lines = metric_detail_lines(left)
    assert "(n 4, 1000 bootstrap resamples)" in lines[0]  # the interval's n: the readable labels
    assert lines[-1].strip() == "judge     2 answers the judge did not label readably: left out (n = 4)"
    assert "scored as cannot_answer, as the earlier suite did (n = 6)" in metric_detail_lines(fallback)[-1]
    assert "2 answers the judge did not label readably: left out (n = 4)" in hallucination_markup(left)
    assert "invalid labels" not in hallucination_markup(left)
    assert "did not label readably" not in hallucination_markup({**left, "n_unreadable_labels": 0})


def test_a_stored_left_out_metrics_json_is_not_stale_for_its_unlabelled_rows(tmp_path):
    paths = SessionPaths(tmp_path)
    write_json_atomic(paths.metrics_file("llm_judge"), _metrics("left_out"))
    assert not metrics_stale(paths, "llm_judge", ROWS, LlmJudgePipeline.label_of, "left_out")
    assert metrics_stale(paths, "llm_judge", ROWS, LlmJudgePipeline.label_of, "cannot_answer")  # the other rule
    # the session reader's check reads predicted_label itself (None for an unreadable one)
    assert disagreement(_metrics("left_out"), [r["predicted_label"] for r in ROWS.values()]) is None
    assert disagreement(_metrics("cannot_answer"), [r["predicted_label"] for r in ROWS.values()]) is None
    write_json_atomic(paths.metrics_file("llm_judge"), {**_metrics("left_out"), "judge_unreadable_as": None})
    assert metrics_stale(paths, "llm_judge", ROWS, LlmJudgePipeline.label_of, "left_out")  # before the rule existed


def _sweep_row(example, labels, unreadable):
    row = {"uuid": example.uuid, **stability_row(labels, example.correct_answer)}
    row.update(LlmJudgePipeline.sweep_fields(
        [{"target_text": "t", "judge_raw": "r", "label_unreadable": u} for u in unreadable]
    ))
    return row


def test_a_sweep_row_with_an_unreadable_run_is_left_out_of_every_figure():
    sweep = "stability_llm_judge_k=2_T=0.7"
    rows = {
        EXAMPLES[0].uuid: _sweep_row(EXAMPLES[0], ["tool_call", "tool_call"], [False, False]),
        # run 2 unreadable: the row holds it as the earlier suite did (cannot_answer), marked
        EXAMPLES[2].uuid: _sweep_row(EXAMPLES[2], ["request_for_info", "cannot_answer"], [False, True]),
    }
    assert rows[EXAMPLES[2].uuid]["n_unreadable_runs"] == 1
    label_of = lambda r: r["mode_label"]  # noqa: E731
    left = metrics_for(sweep, rows, EXAMPLES[:3], label_of, None, seed=3)
    assert (left["n_obtained"], left["n_unreadable_labels"], left["judge_unreadable_as"]) == (2, 1, "left_out")
    assert left["n_total"] == 1 and left["stability_at_k"] == 1.0 and left["mean_flip_rate"] == 0.0
    both = metrics_for(sweep, rows, EXAMPLES[:3], label_of, None, seed=3, unreadable_as="cannot_answer")
    assert both["n_total"] == 2 and both["stability_at_k"] == 0.5 and both["mean_flip_rate"] == 0.5


def test_the_rule_is_not_in_the_fingerprint(tmp_path):
    config = write_config(tmp_path, None)
    settings = load_config(config, environ={}).settings
    other = settings.model_copy(deep=True)
    other.pipelines.judge_unreadable_as = "cannot_answer"
    assert fingerprint_payload(settings, "m", "sha", "auto") == fingerprint_payload(other, "m", "sha", "auto")
    assert settings.pipelines.judge_unreadable_as == "left_out"


def test_a_wrong_rule_is_one_readable_line(tmp_path):
    from w2c_tui.config import ConfigError

    config = write_config(tmp_path, None, pipelines={"judge_unreadable_as": "drop"})
    with pytest.raises(ConfigError) as error:
        load_config(config, environ={})
    message = str(error.value)
    assert "judge_unreadable_as" in message and "\n" not in message.strip()


# -- resume against the sim: only the judge is asked again ----------------------------------------


def _launch(config, run_key="unreadable"):
    [outcome] = asyncio.run(Launch(load_config(config, environ={}), run_key=run_key).run())
    return outcome


def _config(folder, server, **pipelines):
    """llm_judge on 12 examples; the sim's identity is a label, so a sim started anew (another
    port, another judge) serves the same session."""
    return write_config(
        folder, server.base_url, data={"n_per_label": 4}, mlflow={"enabled": False},
        pipelines={"do_mcq": False, "do_mcq_logprob": False, **pipelines}, provider_keys={"endpoint_id": "the-sim"},
    )


def _judge_rows(paths):
    return read_keyed(paths.checkpoint_file("llm_judge", "judge_decisions.jsonl"))


def _first_run(folder):
    with SimServer(seed=7, judge_malformed_rate=0.8) as server:  # about 2 in 3 unreadable after the repair
        first = _launch(_config(folder, server))
    unreadable = {u for u, r in _judge_rows(first.plan.paths).items() if r["judge_fallback_to_cannot_answer"]}
    assert 0 < len(unreadable) < 12, "the seed must give some unreadable labels, not all"
    return first, unreadable


def _shown(root, capsys, n):
    """`show` says it with the n, and `show --json` carries the count and the rule."""
    from w2c_tui.cli import main

    capsys.readouterr()
    assert main(["show", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"{n} answers the judge did not label readably: left out (n = {12 - n})" in out
    assert main(["show", str(root), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    metrics = shown["metrics"]["llm_judge"]
    assert (metrics["n_unreadable_labels"], metrics["judge_unreadable_as"], metrics["n_total"]) == (n, "left_out", 12 - n)


def test_a_resume_asks_only_the_judge_again_for_unreadable_labels(tmp_path, capsys):
    first, unreadable = _first_run(tmp_path)
    paths = first.plan.paths
    assert all(_judge_rows(paths)[u]["predicted_label"] is None for u in unreadable)  # no label in the row
    metrics = json.loads(paths.metrics_file("llm_judge").read_text())
    assert (metrics["n_obtained"], metrics["n_unreadable_labels"]) == (12, len(unreadable))
    assert metrics["n_total"] == 12 - len(unreadable) and metrics["status"] == "complete"
    _shown(paths.root, capsys, len(unreadable))
    targets = paths.checkpoint_file("llm_judge", "target_responses.jsonl")
    target_rows = targets.read_text()
    calls_before = sum(1 for _ in iter_calls(paths.calls_file("llm_judge")))

    with SimServer(seed=7, judge_malformed_rate=0.0) as server:  # the judge is fixed
        again = _launch(_config(tmp_path, server))
        requests = server.stats()["requests"]
    assert again.plan.fingerprint == first.plan.fingerprint
    assert requests.get("/v1/chat/completions") == len(unreadable), requests  # one judge request each, no target
    calls = list(iter_calls(paths.calls_file("llm_judge")))[calls_before:]
    assert sorted(c["uuid"] for c in calls) == sorted(unreadable) and {c["pipeline"] for c in calls} == {"judge"}
    assert targets.read_text() == target_rows  # the target's answers were kept, none asked again
    rows = _judge_rows(paths)  # the newer row wins
    assert len(rows) == 12 and not any(r["judge_fallback_to_cannot_answer"] for r in rows.values())
    metrics = json.loads(paths.metrics_file("llm_judge").read_text())
    assert (metrics["n_total"], metrics["n_unreadable_labels"], metrics["status"]) == (12, 0, "complete")
    audit = [json.loads(line) for line in paths.audit_file("llm_judge").read_text().splitlines()]
    assert not [e for e in audit if e["fallback_type"] == "duplicate_uuid_label_conflict"]


def test_the_earlier_rule_on_resume_changes_metrics_only(tmp_path):
    first, unreadable = _first_run(tmp_path)
    paths = first.plan.paths
    left = json.loads(paths.metrics_file("llm_judge").read_text())
    n_rows = paths.checkpoint_file("llm_judge", "judge_decisions.jsonl").read_text().count("\n")
    with SimServer(seed=7, judge_malformed_rate=1.0) as server:  # still broken
        again = _launch(_config(tmp_path, server, judge_unreadable_as="cannot_answer"))
    assert again.plan.fingerprint == first.plan.fingerprint  # the same session
    earlier = json.loads(paths.metrics_file("llm_judge").read_text())
    assert (earlier["judge_unreadable_as"], earlier["n_unreadable_labels"]) == ("cannot_answer", len(unreadable))
    assert earlier["n_total"] == 12 == left["n_total"] + len(unreadable)
    gold_can = sum(1 for u in unreadable if _judge_rows(paths)[u]["gold_label"] == "cannot_answer")
    assert earlier["per_class"]["cannot_answer"]["predicted"] == left["per_class"]["cannot_answer"]["predicted"] + len(unreadable)
    assert earlier["confusion_matrix"]["matrix"][3][3] == left["confusion_matrix"]["matrix"][3][3] + gold_can
    # asked again all the same (unreadable again here): one more judge row each, none else
    assert paths.checkpoint_file("llm_judge", "judge_decisions.jsonl").read_text().count("\n") == n_rows + len(unreadable)


def test_a_sweep_against_the_sim_marks_its_unreadable_runs(tmp_path):
    sweep = "stability_llm_judge_k=2_T=0.7"
    body = '[stability]\nenabled = true\n[[stability.sweeps]]\nmethod = "llm_judge"\nk = 2\ntemperatures = [0.7]\n'
    with SimServer(seed=7, judge_malformed_rate=0.8) as server:
        config = write_config(
            tmp_path, server.base_url, body, data={"n_per_label": 4}, mlflow={"enabled": False},
            pipelines={"do_llm_judge": False, "do_mcq": False, "do_mcq_logprob": False},
        )
        outcome = _launch(config)
    paths = outcome.plan.paths
    rows = read_keyed(paths.checkpoint_file(sweep, f"{sweep}.jsonl"))
    marked = {u for u, r in rows.items() if r["n_unreadable_runs"]}
    assert 0 < len(marked) < 12
    for row in rows.values():
        assert row["n_unreadable_runs"] == sum(row["run_labels_unreadable"]) and len(row["run_labels_unreadable"]) == 2
        assert row["n_coerced_runs"] == 0  # an unreadable run is no coercion of the model's answer
    metrics = json.loads(paths.metrics_file(sweep).read_text())
    assert (metrics["n_obtained"], metrics["n_unreadable_labels"], metrics["n_total"]) == (12, len(marked), 12 - len(marked))
    audit = [json.loads(line) for line in paths.audit_file(sweep).read_text().splitlines()]
    assert not [e for e in audit if e["fallback_type"] == "invalid_label_coercion_to_cannot_answer"]
