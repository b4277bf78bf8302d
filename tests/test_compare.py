"""Paired comparison (issue 14, item 1): McNemar, Holm, the paired bootstrap, `compare` and the Compare screen."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from w2c_tui.analysis.compare import SIGN, answers, compare_sessions, load_sessions
from w2c_tui.cli import main
from w2c_tui.metrics.paired import discordant, holm, mcnemar_exact, paired_bootstrap, single_bootstrap
from w2c_tui.store.layout import MCQ_PREDICTIONS, SessionPaths
from w2c_tui.testing.synthetic_session import write_session

D, T, R, C = "direct", "tool_call", "request_for_info", "cannot_answer"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- McNemar and Holm, by hand --------------------------------------------------------------


def test_mcnemar_exact_matches_hand_computed_binomial_tails():
    # b=1, c=5: n=6, P(X<=1) = (1 + 6) / 64 = 7/64, two-sided 14/64 = 0.21875
    assert mcnemar_exact(1, 5) == pytest.approx(0.21875, abs=1e-15)
    assert mcnemar_exact(5, 1) == pytest.approx(0.21875, abs=1e-15)
    assert mcnemar_exact(0, 0) == 1.0  # no discordant pair: nothing to test
    assert mcnemar_exact(0, 3) == pytest.approx(0.25, abs=1e-15)  # 2 * 1/8
    assert mcnemar_exact(2, 8) == pytest.approx(2 * (1 + 10 + 45) / 1024, abs=1e-15)  # 0.109375
    assert mcnemar_exact(10, 10) == 1.0  # 2 * P(X<=10) > 1: capped
    assert mcnemar_exact(0, 40) == pytest.approx(2 / 2**40, rel=1e-12)  # no underflow
    assert 0 < mcnemar_exact(1500, 1800) < 1e-4  # thousands of discordant pairs, exact integers
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_holm_step_down_is_monotone_and_capped():
    # sorted: .005*4=.02, .01*3=.03, .03*2=.06, .04*1=.04 -> raised to .06 (monotone)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # 0.5*2 = 1, then max(1, 0.6)
    assert holm([0.2]) == [0.2]
    assert holm([]) == []


def test_discordant_counts():
    gold = [D, T, R, C, D]
    a = [D, D, R, T, D]  # right, wrong, right, wrong, right
    b = [T, T, R, C, D]  # wrong, right, right, right, right
    assert discordant(gold, a, b) == (2, 1)  # B right where A wrong: 2; A right where B wrong: 1


# -- the paired bootstrap -------------------------------------------------------------------


def test_bootstrap_of_identical_predictions_is_zero():
    gold = [D, T, R, C] * 10
    pred = [D, T, C, C] * 10
    ci = paired_bootstrap(gold, pred, list(pred), n_resamples=500, seed=3)
    assert ci["delta_accuracy"]["low"] == ci["delta_accuracy"]["high"] == 0.0
    assert ci["delta_macro_f1"]["low"] == ci["delta_macro_f1"]["high"] == 0.0
    assert ci["delta_accuracy"]["n_resamples"] == 500 and ci["delta_accuracy"]["seed"] == 3


def test_bootstrap_where_every_resample_gives_the_same_delta():
    # Every gold is direct; A always says tool_call (F1 0 for both labels seen), B always right (F1 1):
    # whatever examples a resample draws, Δ accuracy = 1 and Δ macro-F1 = 1.
    gold = [D] * 7
    ci = paired_bootstrap(gold, [T] * 7, [D] * 7, n_resamples=200, seed=0)
    assert (ci["delta_accuracy"]["low"], ci["delta_accuracy"]["high"]) == (1.0, 1.0)
    assert (ci["delta_macro_f1"]["low"], ci["delta_macro_f1"]["high"]) == (1.0, 1.0)
    # The same pair the other way round: -1.
    ci = paired_bootstrap(gold, [D] * 7, [T] * 7, n_resamples=200, seed=0)
    assert (ci["delta_accuracy"]["low"], ci["delta_accuracy"]["high"]) == (-1.0, -1.0)


def test_bootstrap_is_seeded_and_brackets_the_observed_delta(monkeypatch):
    gold = [D, T, R, C] * 25
    a = [D, T, R, C] * 20 + [T, D, C, R] * 5  # 80 right
    b = [D, T, R, C] * 23 + [T, D, C, R] * 2  # 92 right
    first = paired_bootstrap(gold, a, b, n_resamples=2000, seed=7)
    assert first == paired_bootstrap(gold, a, b, n_resamples=2000, seed=7)
    assert first != paired_bootstrap(gold, a, b, n_resamples=2000, seed=8)
    ci = first["delta_accuracy"]
    assert ci["low"] < 0.12 < ci["high"]
    # B is right on every example A is right on, plus 12: no resample can make B worse.
    assert ci["low"] >= 0.0

    # Chunking (for memory) does not change the draw: the result depends only on the seed and the count.
    import w2c_tui.metrics.paired as paired

    whole = paired_bootstrap(gold, a, b, n_resamples=50, seed=1)
    monkeypatch.setattr(paired, "CHUNK", 7)
    assert paired_bootstrap(gold, a, b, n_resamples=50, seed=1) == whole


def test_bootstrap_cells_draw_matches_resampling_example_indices():
    """The multinomial over (gold, A, B) cells is the index bootstrap in distribution: same percentiles."""
    import numpy as np

    gold = [D, T, R, C] * 15
    a = [D, T, R, C] * 10 + [T, T, C, C] * 5
    b = [D, T, R, R] * 12 + [D, D, R, C] * 3
    right_a = np.array([x == g for x, g in zip(a, gold)], dtype=float)
    right_b = np.array([x == g for x, g in zip(b, gold)], dtype=float)
    picks = np.random.default_rng(11).integers(0, len(gold), size=(20_000, len(gold)))  # the same indices for A and B
    low, high = np.percentile(right_b[picks].mean(axis=1) - right_a[picks].mean(axis=1), (2.5, 97.5))
    ci = paired_bootstrap(gold, a, b, n_resamples=20_000, seed=5)["delta_accuracy"]
    step = 1 / len(gold)  # Δ accuracy moves in steps of 1/n
    assert abs(ci["low"] - low) <= step + 1e-9 and abs(ci["high"] - high) <= step + 1e-9


def test_bootstrap_refuses_unscored_labels_and_empty_input():
    assert paired_bootstrap([], [], []) == {"delta_accuracy": None, "delta_macro_f1": None}
    with pytest.raises(ValueError, match="coerce"):
        paired_bootstrap([D], [None], [D])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        paired_bootstrap([D], [D], [D, D])
    single = single_bootstrap([D, D], [D, T], n_resamples=100)
    assert 0.0 <= single["accuracy"]["low"] <= 0.5 <= single["accuracy"]["high"] <= 1.0


# -- sessions -------------------------------------------------------------------------------


@pytest.fixture
def two_sessions(tmp_path) -> tuple[Path, Path]:
    workdir = tmp_path / "workdir"
    a = write_session(workdir, n_examples=24, seed=1, skill=0.7)
    b = write_session(workdir, fingerprint="7ac2e9a10b5e0002", target_model="qwen3-32b", n_examples=24, seed=2, skill=0.55)
    return a.root, b.root


def _primary(root: Path, exp_name: str, file_name: str) -> Path:
    return SessionPaths(root).checkpoint_file(exp_name, file_name)


def test_pair_numbers_match_a_count_by_hand(two_sessions):
    root_a, root_b = two_sessions
    rows_a, rows_b = load_sessions([root_a, root_b])
    comparison = compare_sessions([rows_a, rows_b], n_resamples=1000, seed=0)
    entry = comparison.pairs[0].pipelines["mcq"]
    # By hand from the checkpoint rows.
    read = lambda root: {r["uuid"]: r for r in map(json.loads, _primary(root, "mcq", MCQ_PREDICTIONS).read_text().splitlines())}
    ra, rb = read(root_a), read(root_b)
    b_only = sum(1 for u in ra if rb[u]["predicted_label"] == ra[u]["gold_label"] != ra[u]["predicted_label"])
    a_only = sum(1 for u in ra if ra[u]["predicted_label"] == ra[u]["gold_label"] != rb[u]["predicted_label"])
    right_a = sum(1 for u in ra if ra[u]["predicted_label"] == ra[u]["gold_label"])
    right_b = sum(1 for u in rb if rb[u]["predicted_label"] == rb[u]["gold_label"])
    assert entry.n_common == 24 and entry.warning is None
    assert (entry.n_b_right_a_wrong, entry.n_a_right_b_wrong) == (b_only, a_only)
    assert entry.delta_accuracy == pytest.approx((right_b - right_a) / 24)
    assert entry.mcnemar_p == mcnemar_exact(b_only, a_only)
    assert len(entry.right_to_wrong) == a_only and len(entry.wrong_to_right) == b_only
    assert all(d.a == d.gold != d.b for d in entry.right_to_wrong)
    ci = entry.delta_accuracy_ci95
    assert ci["low"] <= entry.delta_accuracy <= ci["high"]
    # per-class Δ F1 is B's per-class F1 minus A's
    assert entry.delta_per_class_f1[T] == pytest.approx(entry.per_class_f1_b[T] - entry.per_class_f1_a[T])


def test_unequal_example_sets_are_warned_and_unanswered_examples_never_scored(tmp_path):
    workdir = tmp_path / "workdir"
    a = write_session(workdir, n_examples=24, seed=1, pipelines=("mcq",))
    b = write_session(workdir, fingerprint="7ac2e9a10b5e0002", n_examples=20, seed=2, pipelines=("mcq",))  # first 20
    path = _primary(b.root, "mcq", MCQ_PREDICTIONS)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    dropped = rows.pop(0)["uuid"]  # not obtained in B: no row
    coerced = rows[1]["uuid"]
    rows[1]["predicted_label"] = None  # B's answer held no digit: an answer, scored as cannot_answer
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    sessions = load_sessions([a.root, b.root])
    comparison = compare_sessions(sessions, n_resamples=200)
    entry = comparison.pairs[0].pipelines["mcq"]
    assert entry.n_common == 19  # 20 in B, one of them without a row
    assert (entry.n_only_a, entry.n_only_b) == (5, 0)  # 4 never planned in B + 1 not obtained: dropped
    assert entry.n_coerced_b == 1 and entry.n_coerced_a == 0
    assert "example sets differ" in entry.warning and "5 answered only in A" in entry.warning
    assert dropped not in {d.uuid for d in entry.disagreements}
    assert answers(sessions[1], "mcq").labels[coerced][1] == C
    assert dropped not in answers(sessions[1], "mcq").labels
    from w2c_tui.cli.compare_cmd import comparison_lines

    text = "\n".join(comparison_lines(comparison))
    assert "WARNING: example sets differ: 5 answered only in A, 0 only in B" in text
    assert "invalid labels scored as cannot_answer: 0 in A, 1 in B" in text


def test_three_sessions_give_leaderboards_and_holm(tmp_path):
    workdir = tmp_path / "workdir"
    roots = [
        write_session(workdir, fingerprint=f"5e55a0c0ffee000{i}", n_examples=40, seed=i, skill=skill).root
        for i, skill in ((1, 0.8), (2, 0.5), (3, 0.65))
    ]
    comparison = compare_sessions(load_sessions(roots), n_resamples=300)
    assert [(p.a.name, p.b.name) for p in comparison.pairs] == [("A", "B"), ("A", "C"), ("B", "C")]
    for exp_name in ("llm_judge", "mcq", "mcq_logprob"):
        raw = [p.pipelines[exp_name].mcnemar_p for p in comparison.pairs]
        adjusted = [p.pipelines[exp_name].mcnemar_p_holm for p in comparison.pairs]
        assert adjusted == pytest.approx(holm(raw))
        assert all(adj >= p for adj, p in zip(adjusted, raw))
        board = comparison.leaderboards[exp_name]
        assert sorted(r.session.name for r in board) == ["A", "B", "C"]
        assert [r.accuracy for r in board] == sorted((r.accuracy for r in board), reverse=True)
        assert all(r.accuracy_ci95["low"] <= r.accuracy <= r.accuracy_ci95["high"] for r in board)
    document = comparison.to_json()
    assert document["holm"] and set(document["leaderboards"]) == {"llm_judge", "mcq", "mcq_logprob"}


# -- the command ----------------------------------------------------------------------------


def test_compare_json_has_the_keys_per_pipeline(two_sessions, capsys):
    root_a, root_b = two_sessions
    code, out, err = run_cli(capsys, "compare", str(root_a), str(root_b), "--json", "--resamples", "500", "--seed", "3")
    assert code == 0, err
    document = json.loads(out)
    assert document["sign"] == SIGN == "B − A" and document["n_resamples"] == 500 and document["seed"] == 3
    assert [s["session"] for s in document["sessions"]] == ["A", "B"]
    pipelines = document["pairs"][0]["pipelines"]
    assert set(pipelines) == {"llm_judge", "mcq", "mcq_logprob"}
    for entry in pipelines.values():
        for key in (
            "n_common", "delta_accuracy", "delta_accuracy_ci95", "delta_macro_f1", "delta_macro_f1_ci95", "mcnemar_p",
            "n_b_right_a_wrong", "n_a_right_b_wrong", "delta_per_class_f1", "right_to_wrong", "wrong_to_right",
        ):
            assert key in entry, key
        assert (entry["a"], entry["b"], entry["sign"]) == ("A", "B", "B − A")
        assert set(entry["delta_accuracy_ci95"]) >= {"low", "high"}
        assert entry["n_common"] == 24
        for flip in entry["right_to_wrong"]:
            assert set(flip) == {"uuid", "gold", "a", "b"} and flip["a"] == flip["gold"] != flip["b"]
    # the same seed gives the same document
    assert run_cli(capsys, "compare", str(root_a), str(root_b), "--json", "--resamples", "500", "--seed", "3")[1] == out


def test_compare_text_states_the_sign_and_the_numbers(two_sessions, capsys):
    code, out, err = run_cli(capsys, "compare", *map(str, two_sessions), "--resamples", "300")
    assert code == 0, err
    assert "Δ = B − A" in out and "McNemar p" in out and "95% CI" in out
    assert "right→wrong (A right, B wrong)" in out and "per-class Δ F1 (B − A)" in out


def test_compare_bad_input_is_one_line_and_exit_2(two_sessions, tmp_path, capsys):
    root_a, _ = two_sessions
    for argv in (
        ("compare", str(root_a), str(tmp_path / "missing")),
        ("compare", str(root_a)),
        ("compare", str(root_a), str(root_a)),
        ("compare", str(root_a), str(tmp_path), "--resamples", "0"),
    ):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2 and out == "", argv
        assert err.count("\n") == 1 and err.startswith("w2c-tui: error:"), (argv, err)
    assert "no such session folder" in run_cli(capsys, "compare", str(root_a), str(tmp_path / "missing"))[2]


# -- the Compare screen ---------------------------------------------------------------------


async def _settle(pilot, condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.05)
    await pilot.pause()


async def test_compare_screen_shows_the_signed_delta_and_opens_flips(two_sessions, tmp_path):
    from w2c_tui.config import LoadedConfig
    from w2c_tui.config.schema import Settings
    from w2c_tui.tui.app import W2cApp
    from w2c_tui.tui.screens.compare import CompareScreen
    from w2c_tui.tui.screens.trace import TraceScreen
    from w2c_tui.tui.widgets.row_list import RowList

    root_a, root_b = two_sessions
    workdir = tmp_path / "workdir"
    settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}, "mlflow": {"enabled": False}})
    app = W2cApp(loaded=LoadedConfig(settings, None, tmp_path, {}), start_mode="compare", poll_monitor=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await _settle(pilot, lambda: len(screen.sessions) == 2)
        screen.choose(str(root_a), str(root_b))
        await _settle(pilot, lambda: screen.pair is not None)
        text = str(screen.query_one("#compare-metrics").render())
        assert "Δ = B − A" in text and "Δ acc" in text and "McNemar" in text and "95% CI" in text
        mcq = screen.pair.pipelines["mcq"]
        assert f"{mcq.delta_accuracy:+.3f}".replace("0.", ".", 1) in text
        # only the flips B got wrong, in one pipeline
        screen.query_one("#compare-pipeline").value = "mcq"
        screen.query_one("#compare-flip").value = "right→wrong"
        await pilot.pause(0.2)
        rows = screen.query_one("#compare-rows", RowList)
        assert rows.row_count == len(mcq.right_to_wrong)
        assert "per-class Δ F1 (B − A)" in str(screen.query_one("#compare-metrics").render())
        if rows.row_count:
            rows.focus()
            await pilot.press("enter")
            await _settle(pilot, lambda: isinstance(app.screen, TraceScreen))
            assert app.screen.uuid == mcq.right_to_wrong[0].uuid and app.screen.title_prefix == "session A"


def test_compare_screen_snapshot_with_a_pipeline_and_flips_chosen(snap_compare, tmp_path, monkeypatch):
    from w2c_tui.config import LoadedConfig
    from w2c_tui.config.schema import Settings
    from w2c_tui.tui.app import W2cApp

    monkeypatch.chdir(tmp_path)
    workdir = tmp_path / "workdir"
    a = write_session(workdir, n_examples=24, seed=1, skill=0.7).root
    b = write_session(workdir, fingerprint="7ac2e9a10b5e0002", target_model="qwen3-32b", n_examples=20, seed=2, skill=0.55).root
    settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}, "mlflow": {"enabled": False}})
    app = W2cApp(loaded=LoadedConfig(settings, None, tmp_path, {}), start_mode="compare", poll_monitor=False)

    async def ready(pilot):
        screen = pilot.app.screen
        await _settle(pilot, lambda: len(screen.sessions) == 2)
        screen.choose(str(a), str(b))
        await _settle(pilot, lambda: screen.pair is not None)
        screen.query_one("#compare-pipeline").value = "mcq"
        screen.query_one("#compare-flip").value = "wrong→right"
        await pilot.pause(0.2)
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(app, terminal_size=(100, 30), run_before=ready)
