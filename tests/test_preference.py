"""Pairwise preference (`w2c-tui prefer`, `prefer-check`; kinds prefer and prefer_check).

The simulated preference judge (`w2c_tui.sim.preference.preferred_position`) errs and favours
position 1 by hashes, so the prefer-check figures below are recomputed with that same
function; the prefer figures are recomputed by hand from the session's rows.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from w2c_tui.cli import main
from w2c_tui.data import load_examples
from w2c_tui.labels import LABELS
from w2c_tui.metrics.preference import (
    pair_verdict,
    position_consistency,
    preference_check_metrics,
    preference_metrics,
    win_rate,
)
from w2c_tui.preference.keys import call_key, check_pair, order_of, split_call_key, split_pair
from w2c_tui.prompts.preference import parse_preference_output, preference_prompt
from w2c_tui.session import kinds
from w2c_tui.sim.preference import preferred_position, responses
from w2c_tui.store.jsonl import read_keyed

from configs import write_config
from test_integration import run_launch
from test_judge_check import small_dataset

D, T, R, C = LABELS
SIM_SEED = 7
CALLS = "preference_calls.jsonl"


# -- metrics on hand-computed tables -------------------------------------------------------


def test_pair_verdicts_and_win_rate_by_hand():
    assert pair_verdict(["B", "B"]) == "B" and pair_verdict(["A", "B"]) == "tie"
    assert pair_verdict(["B", "tie"]) == "B" and pair_verdict(["tie", "A"]) == "A"
    assert pair_verdict([None, "A"]) == "A" and pair_verdict([None, None]) is None
    figures = win_rate(["B", "B", "A", "tie"], seed=1)
    # scores 1, 1, 0, ½: w = 2.5/4; Σ(s − w)² = 2·(3/8)² + (5/8)² + (1/8)² = 44/64; SE = sqrt(44/64 / 12)
    assert figures["win_rate"] == pytest.approx(0.625)
    assert figures["se"] == pytest.approx(math.sqrt(44 / 64 / 12))
    assert (figures["n"], figures["wins_b"], figures["wins_a"], figures["ties"]) == (4, 2, 1, 1)
    ci = figures["ci95"]
    assert 0 <= ci["low"] <= 0.625 <= ci["high"] <= 1 and ci["n_boot"] == 1000 and ci["seed"] == 1
    assert win_rate([])["win_rate"] is None and win_rate(["B"])["se"] is None


def row(pair, call, preferred, *, gold=D, a=D, b=T, verdict=None, k=2):
    order = order_of(call)
    if verdict is None and preferred is not None:
        verdict = "tie" if preferred == "tie" else str(order.index(preferred) + 1)
    return {"uuid": call_key(pair, call), "pair": pair, "call": call, "order": order, "preferred": preferred,
            "verdict": verdict, "gold_label": gold, "label_a": a, "label_b": b, "k": k, "api_seed": 3}


def test_consistency_position_and_label_agreement_by_hand():
    rows = [
        row("u1", 0, "B"), row("u1", 1, "B"),  # consistent, B; A right (label D = gold): disagrees
        row("u2", 0, "A"), row("u2", 1, "B"),  # position decided: inconsistent, tie
        row("u3", 0, "tie", a=T, b=T), row("u3", 1, "tie", a=T, b=T),  # consistent tie; neither right: not in agreement
        row("u4", 0, "A", gold=T), row("u4", 1, None, gold=T),  # one order only: not in consistency
    ]
    figures = preference_metrics(rows)
    assert figures["n_pairs"] == 4 and figures["n_calls"] == 8 and figures["n_calls_unreadable"] == 1
    assert (figures["wins_b"], figures["wins_a"], figures["ties"], figures["n"]) == (1, 1, 2, 4)
    assert figures["win_rate"] == pytest.approx(0.5)
    assert figures["position_consistency"] == {"share": pytest.approx(2 / 3), "n_pairs": 3}
    # readable verdicts: u1 "1"? call 0 AB prefers B -> "2"; call 1 BA prefers B -> "1"; u2: "1", "1"; u4: "1"
    assert figures["position_1"] == {"share": pytest.approx(4 / 5), "n_calls": 5, "n_tie_calls": 2}
    # exactly one right: u1 (A right, verdict B), u2 (A right, tie), u4 (gold T: B right, verdict A)
    assert figures["label_agreement"] == {"agreement": 0.0, "n_pairs": 3, "n_agree": 0, "ties": 1}
    assert figures["per_gold_label"][T]["n"] == 1 and figures["per_gold_label"][D]["win_rate"] == pytest.approx(2 / 3)  # B, tie, tie


def test_check_accuracy_per_wrong_label_bias_and_self_consistency_by_hand():
    rows = [
        row(check_pair("u1", T), 0, "A", b=T, k=4), row(check_pair("u1", T), 1, "A", b=T, k=4),
        row(check_pair("u1", T), 2, "A", b=T, k=4), row(check_pair("u1", T), 3, "B", b=T, k=4),
        row(check_pair("u1", R), 0, "A", b=R, k=4), row(check_pair("u1", R), 1, "tie", b=R, k=4),
        row(check_pair("u1", R), 2, "B", b=R, k=4), row(check_pair("u1", R), 3, "tie", b=R, k=4),
    ]
    figures = preference_check_metrics(rows)
    assert figures["accuracy"] == pytest.approx(4 / 8) and figures["n_calls"] == 8 and figures["ties"] == 2
    assert figures["per_wrong_label"][T]["accuracy"] == pytest.approx(3 / 4)
    assert figures["per_wrong_label"][R]["accuracy"] == pytest.approx(1 / 4)
    assert figures["pair_accuracy"] == {"accuracy": 0.5, "n_pairs": 2}  # T pair: 3 A, 1 B -> A; R: A, tie, B, tie -> tie
    # calls 0 and 2 show A first: A A A B; calls 1 and 3: A B tie tie
    assert figures["accuracy_right_first"] == {"accuracy": pytest.approx(3 / 4), "n_calls": 4}
    assert figures["accuracy_right_second"] == {"accuracy": pytest.approx(1 / 4), "n_calls": 4}
    # groups (pair, order): (T, AB) A A, (T, BA) A B, (R, AB) A B, (R, BA) tie tie
    assert figures["self_consistency"] == {
        "mean_modal_share": pytest.approx((1 + 0.5 + 0.5 + 1) / 4), "unanimous_share": 0.5, "n_groups": 4
    }


def test_parsing_keys_and_kinds():
    assert parse_preference_output('{"preferred": "2", "reason": "asks"}').verdict == "2"
    assert parse_preference_output('```json\n{"preferred": "Tie", "reason": "x"}\n```').verdict == "tie"
    assert parse_preference_output("1\nResponse 1 calls the tool.").verdict == "1"
    assert parse_preference_output("hard to say").verdict is None
    assert split_call_key(call_key(check_pair("u-1", R), 3)) == ("u-1#request_for_info", 3)
    assert split_pair("u-1#request_for_info") == ("u-1", R) and split_pair("u-1") == ("u-1", "")
    for name in ("prefer", "prefer_check"):
        assert not kinds.get(name).selectable and name not in kinds.names()


# -- against the simulator -----------------------------------------------------------------


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def sim_verdict(example, first: str, second: str, sample=None) -> str:
    """What the sim answers for these two answers in this order (its own hash)."""
    one, two = responses(preference_prompt(example, first, second))
    return preferred_position(SIM_SEED, one, two, example.correct_answer, 0.1, 0.2, sample)


@pytest.fixture
def biased_sim(make_sim):
    return make_sim(
        "--seed", str(SIM_SEED), "--judge-error-rate", "0.1", "--judge-position-bias", "0.2", "--judge-malformed-rate", "0"
    )


def predicted_check_rows(examples, k: int, sampled: bool) -> list[dict]:
    """The prefer-check rows the sim's hash predicts (call i: seed 42 + i, A first when i is even)."""
    expected = []
    for e in examples:
        right = e.answers[e.correct_answer]
        for wrong_label in (label for label in LABELS if label != e.correct_answer):
            wrong = e.answers[wrong_label]
            pair = check_pair(e.uuid, wrong_label)
            for call in range(k):
                first, second = (right, wrong) if call % 2 == 0 else (wrong, right)
                verdict = sim_verdict(e, first, second, 42 + call if sampled else None)
                preferred = "tie" if verdict == "tie" else order_of(call)[int(verdict) - 1]
                r = row(pair, call, preferred, gold=e.correct_answer, a=e.correct_answer, b=wrong_label, k=k)
                r["api_seed"] = 42  # the config's: it seeds the bootstrap
                expected.append(r)
    return expected


def test_prefer_check_gives_the_figures_the_hash_predicts(biased_sim, tmp_path, capsys):
    small_dataset(tmp_path)
    config = write_config(tmp_path, biased_sim.base_url, data={"eval_data_path": "data.jsonl"}, mlflow={"enabled": False})
    code, shown = run_json(capsys, "prefer-check", "--config", str(config))
    assert code == 0, shown
    examples = load_examples(tmp_path / "data.jsonl")
    expected = predicted_check_rows(examples, 2, sampled=False)
    want = preference_check_metrics(expected)
    figures = shown["figures"]
    assert figures["n_calls"] == len(examples) * 3 * 2 and figures["n_calls_unreadable"] == 0
    for key in ("accuracy", "ci95", "ties", "per_wrong_label", "pair_accuracy", "position_1",
                "position_consistency", "accuracy_right_first", "accuracy_right_second"):
        assert figures[key] == want[key], key  # the same arithmetic on the same verdicts
    assert figures["position_1"]["share"] > 0.5  # the bias shows
    assert figures["accuracy"] < 1.0  # and so do the errors
    rows = read_keyed(Path(shown["session"]) / "checkpoints" / "prefer_check" / CALLS)
    assert len(rows) == len(expected)

    capsys.readouterr()
    assert main(["show", shown["session"]]) == 0
    printed = capsys.readouterr().out
    assert "(the right reference answer preferred)" in printed and "position consistency" in printed


def test_prefer_check_k_calls_at_a_temperature_give_self_consistency(biased_sim, tmp_path, capsys):
    small_dataset(tmp_path)
    config = write_config(tmp_path, biased_sim.base_url, data={"eval_data_path": "data.jsonl"}, mlflow={"enabled": False})
    code, shown = run_json(capsys, "prefer-check", "--config", str(config), "--k", "4", "--temperature", "0.7")
    assert code == 0, shown
    want = preference_check_metrics(predicted_check_rows(load_examples(tmp_path / "data.jsonl"), 4, sampled=True))
    figures = shown["figures"]
    assert figures["k"] == 4 and figures["self_consistency"] == want["self_consistency"]
    assert figures["self_consistency"]["n_groups"] == 6 * 3 * 2 and figures["self_consistency"]["unanimous_share"] < 1
    assert figures["accuracy"] == want["accuracy"]


@pytest.fixture(scope="module")
def two_sessions(tmp_path_factory):
    """Two simulated llm_judge sessions of the bundled file's 300 examples (two target models)."""
    from conftest import SimProcess

    sim = SimProcess("--seed", str(SIM_SEED), "--judge-malformed-rate", "0", "--judge-error-rate", "0.1",
                     "--judge-position-bias", "0.2")
    folder = tmp_path_factory.mktemp("prefer")
    config = write_config(folder, sim.base_url, data={"use_full_dataset": True}, mlflow={"enabled": False})
    roots = []
    for model in ("sim-small", "qwen2.5-7b-instruct"):
        [outcome] = run_launch(config, f"eval-{model}", models=[model], only=["llm_judge"])
        assert outcome.ok
        roots.append(outcome.plan.paths.root)
    yield sim, config, roots
    sim.stop()


def test_prefer_gives_figures_recomputed_from_the_rows(two_sessions, capsys):
    sim, config, (root_a, root_b) = two_sessions
    code, shown = run_json(capsys, "prefer", str(root_a), str(root_b), "--config", str(config))
    assert code == 0, shown
    figures = shown["figures"]
    rows = list(read_keyed(Path(shown["session"]) / "checkpoints" / "prefer" / CALLS).values())
    assert len(rows) == 300 * 2 and figures["n_pairs"] == 300

    # By hand: each pair's verdict from its two calls, then (wins + ties/2)/n and its SE.
    by_pair: dict[str, list[dict]] = {}
    for r in rows:
        by_pair.setdefault(r["pair"], []).append(r)
    scores, agree, n_agree_pairs, consistent, n_both = [], 0, 0, 0, 0
    for calls in by_pair.values():
        s = [{"B": 1.0, "tie": 0.5, "A": 0.0}[c["preferred"]] for c in calls]
        mean = sum(s) / len(s)
        verdict = "B" if mean > 0.5 else "A" if mean < 0.5 else "tie"
        scores.append({"B": 1.0, "tie": 0.5, "A": 0.0}[verdict])
        n_both += 1
        consistent += len({c["preferred"] for c in calls}) == 1
        a_ok, b_ok = calls[0]["label_a"] == calls[0]["gold_label"], calls[0]["label_b"] == calls[0]["gold_label"]
        if a_ok != b_ok:
            n_agree_pairs += 1
            agree += verdict == ("A" if a_ok else "B")
    n = len(scores)
    w = sum(scores) / n
    assert figures["n"] == n == 300
    assert figures["win_rate"] == pytest.approx(w)
    assert figures["se"] == pytest.approx(math.sqrt(sum((x - w) ** 2 for x in scores) / (n * (n - 1))))
    assert figures["ties"] == scores.count(0.5)
    assert figures["ci95"]["low"] <= w <= figures["ci95"]["high"]
    assert figures["position_consistency"] == {"share": pytest.approx(consistent / n_both), "n_pairs": n_both}
    assert figures["label_agreement"]["n_pairs"] == n_agree_pairs > 0
    assert figures["label_agreement"]["agreement"] == pytest.approx(agree / n_agree_pairs)
    verdicts = Counter(r["verdict"] for r in rows)
    assert figures["position_1"]["share"] == pytest.approx(verdicts["1"] / (verdicts["1"] + verdicts["2"]))
    assert shown["judge_check_link"]["check"] is None and "never checked" in shown["judge_check_link"]["warning"]

    capsys.readouterr()
    assert main(["show", shown["session"]]) == 0
    printed = capsys.readouterr().out
    assert "win rate of B over A" in printed and "prefer-check" in printed
    # A tie prefers no answer, so its call has no label: that is not audited as a coercion.
    assert "invalid_label_coercion" not in printed and figures["ties"] > 0

    # Exports carry the same figures: JSON unrounded, Markdown as a second table.
    capsys.readouterr()
    assert main(["export", shown["session"], str(root_a), "--format", "json"]) == 0
    exported = {r["pipeline"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    mine = exported["prefer"]
    assert mine["preference_win_rate"] == figures["win_rate"] and mine["preference_se"] == figures["se"]
    assert (mine["preference_ci95_low"], mine["preference_ci95_high"]) == (figures["ci95"]["low"], figures["ci95"]["high"])
    assert mine["n_scored"] == 300 and mine["preference_ties"] == figures["ties"]
    assert exported["llm_judge"]["preference_win_rate"] is None
    assert main(["export", shown["session"], str(root_a), "--format", "md"]) == 0
    markdown = capsys.readouterr().out
    assert "| win rate of B [95% CI] |" in markdown and f"{figures['win_rate']:.3f} [" in markdown
    assert "| llm_judge |" in markdown

    # The Trace screen of one call: its example (question, tools), both answers, the judge's call.
    from w2c_tui.session.data import SessionData
    from w2c_tui.tui.screens.trace import pipeline_section, preference_widgets

    key = rows[1]["uuid"]
    detail = SessionData.load(Path(shown["session"])).trace(key)
    assert detail.example is not None and detail.example.uuid == key and detail.gold == rows[1]["gold_label"]
    [trace] = detail.pipelines
    assert trace.row["answer_a"] == rows[1]["answer_a"] and len(trace.calls) == 1
    assert "Response 2" in json.dumps(trace.calls[0]["request"])
    assert len(preference_widgets(trace, detail.gold)) == 8 and pipeline_section(trace, detail.gold) is not None


def test_a_cut_prefer_session_sends_only_the_missing_calls(two_sessions, capsys):
    sim, config, (root_a, root_b) = two_sessions
    code, first = run_json(capsys, "prefer", str(root_a), str(root_b), "--config", str(config), "--run-key", "cut")
    assert code == 0
    root = Path(first["session"])
    calls = root / "checkpoints" / "prefer" / CALLS
    kept = calls.read_text().splitlines()[:433]
    calls.write_text("\n".join(kept) + "\n")  # as if killed after 433 calls
    (root / "checkpoints" / "prefer" / "_DONE.json").unlink()

    before = sim.stats()["requests"].get("/v1/chat/completions", 0)
    code, second = run_json(capsys, "prefer", str(root_a), str(root_b), "--config", str(config), "--run-key", "cut")
    sent = sim.stats()["requests"].get("/v1/chat/completions", 0) - before
    assert code == 0 and second["session"] == first["session"]
    assert sent == 600 - 433
    assert second["figures"] == first["figures"]


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["prefer-check", "--k", "3"], "needs --temperature above 0"),
        (["prefer-check", "--k", "0"], "must be at least 1"),
        (["prefer", "nowhere-a", "nowhere-b"], "not a session folder"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, monkeypatch, arguments, message):
    monkeypatch.chdir(tmp_path)
    assert main(arguments) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


async def test_compare_screen_p_runs_prefer_on_the_two_sessions(two_sessions, monkeypatch):
    """The Compare screen's `p` starts the prefer launch of its A and B, shown in the Monitor."""
    import time

    from w2c_tui.preference.launch import PreferLaunch
    from w2c_tui.tui.app import W2cApp
    from w2c_tui.tui.screens.compare import CompareScreen

    sim, config, (root_a, root_b) = two_sessions
    monkeypatch.chdir(config.parent)
    app = W2cApp(str(config))

    async def until(condition, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, "timed out"
            await pilot.pause(0.05)

    async with app.run_test(size=(120, 36)) as pilot:
        app.open_compare(str(root_a), str(root_b))
        await until(lambda: isinstance(app.screen, CompareScreen) and app.screen.data_b is not None)
        await pilot.press("p")
        await until(lambda: app.workspace.launches)
        [record] = app.workspace.launches
        await until(lambda: record.ended)
    assert record.status == "complete", record.error
    assert isinstance(record.launch, PreferLaunch) and record.launch.plans[0].pipelines == ["prefer"]
    assert record.launch.pair.root_a == Path(root_a).resolve()
    root = Path(record.sessions[0].session_dir)
    assert len(read_keyed(root / "checkpoints" / "prefer" / CALLS)) == 600
