"""Judge validation (`w2c-tui judge-check`, kind judge_check): metrics, runs, resume, links.

The simulated judge mislabels a known share of answers (`--judge-error-rate`), decided by
a hash of the response (`w2c_tui.sim.judge.judged_label`); the expected labels below are
recomputed with that same function, so the expected accuracy and κ are exact. (At error
rate 0 the sim's heuristic judge already mislabels 34 of the bundled file's 1,200 reference
answers, e.g. an apologetic direct answer as cannot_answer: hence no hard-coded figures.)
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from w2c_tui.cli import main
from w2c_tui.config.schema import Settings
from w2c_tui.data import load_examples
from w2c_tui.data.when2call import BUNDLED_PATH
from w2c_tui.engine.plan import PlanError, planned_exp_names
from w2c_tui.labels import LABELS
from w2c_tui.metrics.agreement import cohen_kappa
from w2c_tui.metrics.judge_check import (
    bias,
    judge_check_metrics,
    judge_check_summary,
    modal_label,
    per_class,
    self_consistency,
)
from w2c_tui.prompts.judge import judge_prompt
from w2c_tui.sim.judge import extract_response, judged_label
from w2c_tui.session import kinds
from w2c_tui.store.jsonl import read_keyed
from w2c_tui.judge_check.link import judge_note
from w2c_tui.session.answer_keys import answer_key, split_answer_key

from configs import write_config
from test_integration import run_launch

D, T, R, C = LABELS  # direct, tool_call, request_for_info, cannot_answer
SIM_SEED = 7
N_EXAMPLES = 6
LABELS_FILE = "judge_check_labels.jsonl"


# -- metrics on hand-computed tables -------------------------------------------------------


def test_accuracy_kappa_confusion_per_class_and_bias_by_hand():
    references = [D, D, T, T, R, C, C, D]
    judged = [[D], [C], [T], [T], [R], [C], [None], [R]]  # answer 7 not labelled
    figures = judge_check_metrics(references, judged)
    assert (figures["n_answers"], figures["n_labelled"], figures["n_unlabelled"], figures["k"]) == (8, 7, 1, 1)
    assert figures["accuracy"] == pytest.approx(5 / 7)
    # p_o = 5/7; rows (reference) 3,2,1,1; columns (judge) 1,2,2,2: p_e = 11/49; κ = (24/49)/(38/49)
    assert figures["kappa"] == pytest.approx(12 / 19)
    assert figures["confusion_matrix"]["matrix"] == [[1, 0, 1, 1], [0, 2, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    classes = figures["per_class"]
    assert classes[D] == {"precision": 1.0, "n_predicted": 1, "recall": pytest.approx(1 / 3), "n_reference": 3}
    assert classes[R]["precision"] == 0.5 and classes[R]["recall"] == 1.0
    assert classes[C]["precision"] == 0.5 and classes[C]["n_reference"] == 1  # the unlabelled one is not counted
    # excess: direct 1-3, tool 0, rfi 2-1, cannot 2-1: the tie at +1 goes to the first in label order
    assert figures["bias"] == {
        "excess": {D: -2, T: 0, R: 1, C: 1}, "over_predicted": R, "over_predicted_by": 1, "n_answers": 7
    }
    assert figures["self_consistency"] is None  # k = 1
    assert figures["kappa"] == pytest.approx(cohen_kappa([D, D, T, T, R, C, D], [D, C, T, T, R, C, R]))


def test_modal_label_self_consistency_and_per_call_accuracy_by_hand():
    assert modal_label([C, T, T, C]) == C  # a tie goes to the label sampled first
    assert modal_label([None, R, None]) == R
    assert modal_label([None, None]) is None
    references = [D, C, T, R, C]
    judged = [[D, D, D], [D, C, D], [T, R, C], [R, None, R], [None, None, None]]
    figures = judge_check_metrics(references, judged)
    assert figures["k"] == 3 and figures["n_labelled"] == 4 and figures["n_unlabelled"] == 1
    assert figures["accuracy"] == pytest.approx(3 / 4)  # modal labels D, D, T, R against D, C, T, R
    assert figures["accuracy_per_call"] == pytest.approx(7 / 11) and figures["n_calls_labelled"] == 11
    # Over the 3 answers with all k labels: shares 1, 2/3, 1/3; one unanimous.
    consistency = figures["self_consistency"]
    assert consistency["mean_modal_share"] == pytest.approx(2 / 3)
    assert consistency["unanimous_share"] == pytest.approx(1 / 3)
    assert consistency["n_answers"] == 3
    assert self_consistency([]) == {"mean_modal_share": None, "unanimous_share": None, "n_answers": 0}


def test_no_label_over_predicted_and_nothing_labelled():
    assert bias([D, T], [D, T])["over_predicted"] is None
    assert per_class([], [])[D] == {"precision": None, "n_predicted": 0, "recall": None, "n_reference": 0}
    summary = judge_check_summary([{"reference_label": D, "judge_labels": [None], "api_seed": 1}])
    assert summary["judge_check"]["n_labelled"] == 0 and summary["judge_check"]["accuracy"] is None
    assert summary["accuracy"] is None and summary["confusion_matrix"] is None


def test_summary_scores_only_labelled_answers():
    rows = [
        {"reference_label": D, "judge_labels": [D], "api_seed": 3},
        {"reference_label": C, "judge_labels": [None], "api_seed": 3},  # would be "right" as the fallback
        {"reference_label": T, "judge_labels": [R], "api_seed": 3},
    ]
    summary = judge_check_summary(rows)
    assert summary["accuracy"] == 0.5 and summary["judge_check"]["accuracy"] == 0.5
    assert sum(map(sum, summary["confusion_matrix"]["matrix"])) == 2
    assert summary["per_class"][C]["support"] == 0
    assert summary["judge_check"]["accuracy_ci95"]["n_boot"] == 1000


def test_row_keys_and_the_kind_is_not_selectable():
    key = answer_key("0a-1b", "request_for_info")
    assert key == "0a-1b#request_for_info" and split_answer_key(key) == ("0a-1b", "request_for_info")
    assert split_answer_key("plain") == ("plain", "")
    kind = kinds.get("judge_check")
    assert not kind.selectable and kind.primary_file_name() == LABELS_FILE
    assert "judge_check" not in kinds.names()
    assert "judge_check" not in planned_exp_names(Settings())[0]
    with pytest.raises(PlanError):
        planned_exp_names(Settings(), ["judge_check"])


# -- against the simulator -----------------------------------------------------------------


def expected_label(example, label: str, rate: float, sample=None) -> str:
    """What the sim's judge answers for this reference answer (the same hash as the sim)."""
    got = judged_label(SIM_SEED, extract_response(judge_prompt(example, example.answers[label])), rate, sample)
    return "direct" if got == "direct_answer" else got


def small_dataset(folder: Path) -> Path:
    lines = BUNDLED_PATH.read_text(encoding="utf-8").splitlines()[:N_EXAMPLES]
    path = folder / "data.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def configured(folder: Path, base_url: str) -> Path:
    small_dataset(folder)
    return write_config(folder, base_url, data={"eval_data_path": "data.jsonl"}, mlflow={"enabled": False})


def judge_check_json(config: Path, capsys, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["judge-check", "--config", str(config), "--json", *extra])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


@pytest.fixture
def erring_sim(make_sim):
    return make_sim("--seed", str(SIM_SEED), "--judge-error-rate", "0.25", "--judge-malformed-rate", "0")


def test_judge_check_on_the_sim_gives_the_expected_accuracy_and_kappa(erring_sim, tmp_path, capsys):
    config = configured(tmp_path, erring_sim.base_url)
    examples = load_examples(tmp_path / "data.jsonl")
    references = [label for e in examples for label in LABELS]
    expected = [expected_label(e, label, 0.25) for e in examples for label in LABELS]
    assert expected != references  # the error rate shows

    code, shown = judge_check_json(config, capsys)
    assert code == 0, shown
    figures = shown["figures"]
    n = N_EXAMPLES * 4
    assert (figures["n_answers"], figures["n_labelled"]) == (n, n)
    assert figures["accuracy"] == pytest.approx(sum(e == r for e, r in zip(expected, references)) / n)
    assert figures["kappa"] == pytest.approx(cohen_kappa(references, expected))

    root = Path(shown["session"])
    assert root.parent.parent.name == "judge-check"
    rows = read_keyed(root / "checkpoints" / "judge_check" / LABELS_FILE)
    assert set(rows) == {answer_key(e.uuid, label) for e in examples for label in LABELS}
    some = rows[answer_key(examples[0].uuid, T)]
    assert some["reference_label"] == T and some["example_uuid"] == examples[0].uuid and len(some["judge_labels"]) == 1
    assert (root / "checkpoints" / "judge_check" / "_DONE.json").is_file()
    metrics = json.loads((root / "artifacts_local" / "judge_check" / "metrics.json").read_text())
    assert metrics["complete"] is True and metrics["judge_check"]["accuracy"] == figures["accuracy"]
    calls = (root / "artifacts_local" / "judge_check" / "llm_calls").iterdir()
    assert any(calls)  # traces, keyed by the row key
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["exp_names"] == ["judge_check"] and manifest["judge_check"]["k"] == 1

    capsys.readouterr()
    assert main(["show", str(root)]) == 0
    printed = capsys.readouterr().out
    assert f"on {n:,} answers (0 not labelled by the judge, of {n:,})" in printed
    assert "confusion (rows: reference label, columns: judge label)" in printed


def test_k_samples_at_a_temperature_give_self_consistency(erring_sim, tmp_path, capsys):
    config = configured(tmp_path, erring_sim.base_url)
    examples = load_examples(tmp_path / "data.jsonl")
    code, shown = judge_check_json(config, capsys, "--k", "3", "--temperature", "0.7")
    assert code == 0, shown
    # Sample i is sent with seed api_seed + i (42 + i); the sim draws its errors per seed.
    samples = [[expected_label(e, label, 0.25, 42 + i) for i in range(3)] for e in examples for label in LABELS]
    references = [label for _ in examples for label in LABELS]
    want = judge_check_metrics(references, samples)
    figures = shown["figures"]
    assert figures["k"] == 3 and shown["temperature"] == 0.7
    assert figures["self_consistency"] == pytest.approx(want["self_consistency"])
    assert figures["self_consistency"]["unanimous_share"] < 1.0
    assert figures["accuracy"] == pytest.approx(want["accuracy"])
    assert figures["accuracy_per_call"] == pytest.approx(want["accuracy_per_call"])
    rows = read_keyed(Path(shown["session"]) / "checkpoints" / "judge_check" / LABELS_FILE)
    assert all(len(r["judge_labels"]) == 3 for r in rows.values())


def test_a_rerun_judges_only_the_missing_answers(erring_sim, tmp_path, capsys):
    config = configured(tmp_path, erring_sim.base_url)
    code, first = judge_check_json(config, capsys)
    assert code == 0
    root = Path(first["session"])
    labels = root / "checkpoints" / "judge_check" / LABELS_FILE
    kept = labels.read_text().splitlines()[:7]
    labels.write_text("\n".join(kept) + "\n")  # as if killed after 7 rows
    (root / "checkpoints" / "judge_check" / "_DONE.json").unlink()

    before = erring_sim.stats()["requests"].get("/v1/chat/completions", 0)
    code, second = judge_check_json(config, capsys)
    sent = erring_sim.stats()["requests"].get("/v1/chat/completions", 0) - before
    assert code == 0 and second["session"] == first["session"]
    assert sent == N_EXAMPLES * 4 - 7  # one judge request per missing answer, none for the 7 kept
    assert len(read_keyed(labels)) == N_EXAMPLES * 4
    assert second["figures"] == first["figures"]

    before = erring_sim.stats()["requests"].get("/v1/chat/completions", 0)
    assert judge_check_json(config, capsys)[0] == 0  # complete: nothing is sent again
    assert erring_sim.stats()["requests"].get("/v1/chat/completions", 0) == before


def test_show_links_a_judged_session_to_its_check_and_warns(erring_sim, make_sim, tmp_path, capsys):
    config = configured(tmp_path, erring_sim.base_url)
    [outcome] = run_launch(config, "evaluated", only=["llm_judge"])
    assert outcome.ok
    session = outcome.plan.paths.root

    def shown() -> tuple[str, dict]:
        capsys.readouterr()
        assert main(["show", str(session)]) == 0
        text = capsys.readouterr().out
        assert main(["show", str(session), "--json"]) == 0
        return text, json.loads(capsys.readouterr().out)["judge_check_link"]

    text, link = shown()
    assert "WARNING: judge sim-judge was never checked" in text
    assert link["check"] is None and "never checked" in link["warning"]

    # A check of the same judge model on another server is not this judge's check.
    other = make_sim("--seed", str(SIM_SEED), "--judge-malformed-rate", "0")
    other_folder = tmp_path / "other"
    other_folder.mkdir()
    other_config = configured(other_folder, other.base_url)
    other_config.write_text(other_config.read_text().replace('"./workdir"', f'"{tmp_path / "workdir"}"'))
    assert judge_check_json(other_config, capsys)[0] == 0
    assert shown()[1]["check"] is None

    code, check = judge_check_json(config, capsys)  # error rate 0.25: κ well under 0.8
    assert code == 0
    kappa = check["figures"]["kappa"]
    assert kappa < 0.8
    text, link = shown()
    assert link["check"]["session"] == check["session"] and link["check"]["kappa"] == pytest.approx(kappa)
    n = N_EXAMPLES * 4
    assert f"judge checked: κ {kappa:.2f} on {n:,} answers, judge-check/{Path(check['session']).name}" in text
    assert f"κ {kappa:.2f} < 0.8" in text and "WARNING" in text

    # The judge-check session itself carries no link (it is not judged by a judge).
    assert judge_note(Path(check["session"]), json.loads((Path(check["session"]) / "manifest.json").read_text()),
                      ["judge_check"]) is None


def test_a_good_judge_is_linked_without_a_warning(make_sim, tmp_path, capsys):
    sim = make_sim("--seed", str(SIM_SEED), "--judge-malformed-rate", "0")
    config = configured(tmp_path, sim.base_url)
    [outcome] = run_launch(config, "evaluated", only=["llm_judge"])
    code, check = judge_check_json(config, capsys)
    assert code == 0 and check["figures"]["kappa"] >= 0.8
    capsys.readouterr()
    assert main(["show", str(outcome.plan.paths.root)]) == 0
    text = capsys.readouterr().out
    assert "judge checked: κ" in text and "WARNING" not in text


def test_answers_the_server_failed_are_not_obtained_and_exit_1(make_sim, tmp_path, capsys):
    sim = make_sim("--seed", str(SIM_SEED), "--fault-rate", "1", "--fault-kinds", "500", "--judge-malformed-rate", "0")
    small_dataset(tmp_path)
    config = write_config(
        tmp_path, sim.base_url, data={"eval_data_path": "data.jsonl"}, http={"max_retries": 0}, mlflow={"enabled": False}
    )
    code, shown = judge_check_json(config, capsys)
    assert code == 1 and shown["status"] == "partial"
    assert shown["figures"] == {}  # nothing judged, nothing scored
    root = Path(shown["session"])
    assert not (root / "checkpoints" / "judge_check" / "_DONE.json").exists()


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--k", "3"], "needs --temperature above 0"),
        (["--k", "0"], "must be at least 1"),
        (["--temperature", "2.5"], "between 0 and 2"),
        (["--judge", " "], "empty model name"),
    ],
)
def test_bad_options_exit_2_with_one_line(tmp_path, capsys, monkeypatch, arguments, message):
    monkeypatch.chdir(tmp_path)
    assert main(["judge-check", *arguments]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_missing_dataset_exits_2(tmp_path, capsys):
    config = write_config(tmp_path, "http://127.0.0.1:9/v1", data={"eval_data_path": "nowhere.jsonl"})
    assert main(["judge-check", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "nowhere.jsonl" in err and "Traceback" not in err


# -- the Session view's link (snapshot) ----------------------------------------------------


def write_judge_check_session(workdir: Path, *, judge: str = "gpt-oss-120b", kappa: float = 0.93) -> Path:
    """A finished judge-check session of `judge` (no endpoint recorded, as synthetic sessions)."""
    root = workdir / "runs" / "judge-check" / "sessions" / "c0ffee00c0ffee00"
    checkpoints = root / "checkpoints" / "judge_check"
    artifacts = root / "artifacts_local" / "judge_check"
    checkpoints.mkdir(parents=True)
    artifacts.mkdir(parents=True)
    manifest = {
        "fingerprint": root.name, "run_key": "judge-check", "created_at": "2025-12-01T09:00:00.000Z",
        "target_model": judge, "judge_model": judge, "exp_names": ["judge_check"], "n_examples": 4,
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    rows = [
        {"uuid": answer_key("u1", label), "example_uuid": "u1", "reference_label": label, "predicted_label": label,
         "judge_labels": [label], "k": 1}
        for label in LABELS
    ]
    (checkpoints / LABELS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (checkpoints / "_DONE.json").write_text(json.dumps({"exp_name": "judge_check", "finished_at": "2025-12-01T09:30:00.000Z"}))
    figures = {"n_answers": 1200, "n_labelled": 1200, "n_unlabelled": 0, "k": 1, "accuracy": 0.95, "kappa": kappa}
    metrics = {"exp_name": "judge_check", "complete": True, "status": "complete", "n_planned": 4, "n_obtained": 4,
               "n_total": 4, "judge_check": figures}
    (artifacts / "metrics.json").write_text(json.dumps(metrics))
    return root


def test_session_view_links_the_judge_check(snap_compare, tmp_path, monkeypatch):
    from test_tui_snapshots import SIZE, make_app, settle
    from w2c_tui.testing.synthetic_session import write_session

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    workdir = tmp_path / "workdir"
    write_session(workdir, n_examples=24, pipelines=("llm_judge", "mcq"))
    check = write_judge_check_session(workdir)
    note = judge_note(
        workdir / "runs" / "synthetic" / "sessions" / "5e55a0c0ffee0001",
        json.loads((workdir / "runs" / "synthetic" / "sessions" / "5e55a0c0ffee0001" / "manifest.json").read_text()),
        ["llm_judge", "mcq"],
    )
    assert note.check.root == check and note.warning is None
    assert note.check.text() == "judge checked: κ 0.93 on 1,200 answers, judge-check/c0ffee00c0ffee00"

    async def ready(pilot):
        await settle(pilot, lambda: len(pilot.app.screen.sessions) == 2)
        await pilot.press("enter")  # the newest: the evaluated session
        await settle(pilot, lambda: pilot.app.screen.query("#judge-note") and pilot.app.screen.query_one("#judge-note").display)

    assert snap_compare(make_app(workdir), terminal_size=SIZE, run_before=ready)


async def test_setup_check_judge_runs_a_judge_check_shown_in_the_monitor(erring_sim, tmp_path, monkeypatch):
    """The Setup action starts the judge-check launch of the form's judge, as a launch is started."""
    from w2c_tui.tui.app import W2cApp
    from w2c_tui.tui.screens.monitor import MonitorScreen
    from w2c_tui.tui.screens.setup import SetupScreen

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    configured(tmp_path, erring_sim.base_url)
    app = W2cApp("config.toml")

    async def until(condition, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, "timed out"
            await pilot.pause(0.05)

    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: isinstance(app.screen, SetupScreen))
        await pilot.click("#check-judge")
        await until(lambda: app.workspace.launches and isinstance(app.screen, MonitorScreen))
        [record] = app.workspace.launches
        await until(lambda: record.ended)
    assert record.status == "complete", record.error
    assert record.launch.judge == "sim-judge" and record.launch.plans[0].pipelines == ["judge_check"]
    root = Path(record.sessions[0].session_dir)
    assert root.parent.parent.name == "judge-check"
    assert (root / "checkpoints" / "judge_check" / "_DONE.json").is_file()
    assert len(read_keyed(root / "checkpoints" / "judge_check" / LABELS_FILE)) == N_EXAMPLES * 4
