"""Cross-paradigm agreement, `w2c-tui export`, the richer `show` text, and their TUI keys.

The agreement case is built by hand: ten examples both pipelines answered, with a known 4×4
table, one answered by the judge only (never counted) and an invalid MCQ label (coerced to
cannot_answer, as the metrics count it).
"""

from __future__ import annotations

import csv
import io
import json
import os
import time
from pathlib import Path

import pytest

from w2c_tui.analysis import export as exporting
from w2c_tui.analysis.agreement import session_agreement
from w2c_tui.cli import main
from w2c_tui.data import load_examples
from w2c_tui.labels import LABELS
from w2c_tui.metrics.agreement import cohen_kappa
from w2c_tui.store.layout import JUDGE_DECISIONS, MCQ_PREDICTIONS, SessionPaths
from w2c_tui.session.rows import load_session_rows
from w2c_tui.testing.synthetic_session import write_session

D, T, R, C = LABELS  # direct, tool_call, request_for_info, cannot_answer

# (judge, mcq) for the first 12 examples; None: not obtained by that pipeline.
PAIRS = [
    (D, D), (D, D), (D, D), (T, T), (T, T), (R, R), (C, C),
    (D, T), (T, C), (C, "maybe"),  # two disagreements; "maybe" is coerced to cannot_answer: an agreement
    (R, None),  # the MCQ did not obtain it: left out
    (None, None),
]
# rows: judge, columns: mcq, LABELS order
KNOWN_MATRIX = [[3, 1, 0, 0], [0, 2, 0, 1], [0, 0, 1, 0], [0, 0, 0, 2]]
# p_o = 8/10; p_e = (4·3 + 3·3 + 1·1 + 2·3)/100 = .28; κ = (.8 − .28)/(1 − .28)
KNOWN_KAPPA = (0.8 - 0.28) / 0.72


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def known_session(tmp_path) -> Path:
    """Judge and MCQ rows rewritten with PAIRS."""
    session = write_session(tmp_path / "w", n_examples=12, pipelines=("llm_judge", "mcq"))
    examples = load_examples(session.dataset)[:12]
    paths = SessionPaths(session.root)
    judge, mcq = [], []
    for example, (j, m) in zip(examples, PAIRS):
        if j is not None:
            judge.append({"uuid": example.uuid, "predicted_label": j})
        if m is not None:
            mcq.append({"uuid": example.uuid, "gold_label": example.correct_answer, "predicted_label": m})
    for exp_name, name, rows in (("llm_judge", JUDGE_DECISIONS, judge), ("mcq", MCQ_PREDICTIONS, mcq)):
        paths.checkpoint_file(exp_name, name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return session.root


@pytest.fixture
def synthetic(tmp_path) -> Path:
    return write_session(tmp_path / "w", n_examples=24, simulated=True).root


# -- agreement -------------------------------------------------------------------------------


def test_kappa_and_agreement_on_a_known_table(known_session):
    agreement = session_agreement(known_session)
    assert agreement.pipelines == ["llm_judge", "mcq"]
    [pair] = agreement.pairs
    assert (pair.first, pair.second) == ("llm_judge", "mcq")
    assert pair.matrix == KNOWN_MATRIX
    assert pair.n == 10 and pair.n_agree == 8
    assert pair.percent_agreement == pytest.approx(0.8)
    assert pair.kappa == pytest.approx(KNOWN_KAPPA)  # 0.7222…
    # the same κ from the label lists themselves
    pairs = [(j, m if m in LABELS else C) for j, m in PAIRS if j and m]
    assert cohen_kappa([j for j, _ in pairs], [m for _, m in pairs]) == pytest.approx(KNOWN_KAPPA)

    examples = load_examples(load_session_rows(known_session).dataset_path)[:12]
    assert [(d.uuid, d.gold, d.first, d.second) for d in pair.disagreements] == sorted(
        [(examples[7].uuid, examples[7].correct_answer, D, T), (examples[8].uuid, examples[8].correct_answer, T, C)]
    )
    document = pair.to_json()
    assert document["matrix"]["rows"] == "llm_judge" and document["n_disagreements"] == 2
    assert document["disagreements"][0].keys() == {"uuid", "gold", "llm_judge", "mcq"}


def test_show_json_and_text_carry_the_agreement(known_session, capsys):
    code, out, _ = run_cli(capsys, "show", str(known_session), "--json")
    [pair] = json.loads(out)["agreement"]["pairs"]
    assert code == 0 and pair["n"] == 10 and pair["kappa"] == pytest.approx(KNOWN_KAPPA)
    code, out, _ = run_cli(capsys, "show", str(known_session))
    line = next(line for line in out.splitlines() if "llm_judge × mcq" in line)
    assert line.split()[-4:] == ["10", "0.722", "0.800", "2"]
    assert "SIMULATED" not in out


def test_a_session_with_one_pipeline_has_no_pair(tmp_path, capsys):
    root = write_session(tmp_path / "w", n_examples=8, pipelines=("mcq",)).root
    assert session_agreement(root).pairs == []
    code, out, _ = run_cli(capsys, "show", str(root))
    assert code == 0 and "agreement between" not in out


# -- show text -------------------------------------------------------------------------------


def test_show_text_has_intervals_per_class_hallucination_and_simulated(synthetic, capsys):
    code, out, err = run_cli(capsys, "show", str(synthetic))
    assert code == 0 and "Traceback" not in out + err
    assert "SIMULATED" in out.splitlines()[0]
    metrics = json.loads(SessionPaths(synthetic).metrics_file("llm_judge").read_text())
    block = out.split("  llm_judge ")[1].split("\n  mcq ")[0]
    assert "95% CI    acc [" in block and "(n 24, 200 bootstrap resamples)" in block
    assert "F1/class  direct " in block and "(n 6)" in block
    assert "halluc.   tool – (0/0)  answer " in block and "/24)" in block
    assert "agreement between pipelines" in out and "mcq × mcq_logprob" in out
    # the printed interval is the stored one, rounded to 3 decimals
    ci = metrics["accuracy_ci95"]
    assert f"acc [{ci['low']:.3f}, {ci['high']:.3f}]" in block


# -- export ----------------------------------------------------------------------------------

NUMBER_KEYS = ("accuracy", "macro_f1", "macro_f1_4", "macro_f1_no_direct")


def test_export_json_numbers_equal_show_json(synthetic, capsys):
    code, out, _ = run_cli(capsys, "show", str(synthetic), "--json")
    shown = json.loads(out)
    code2, out2, _ = run_cli(capsys, "export", str(synthetic), "--format", "json")
    rows = json.loads(out2)["rows"]
    assert code == code2 == 0 and [r["pipeline"] for r in rows] == ["llm_judge", "mcq", "mcq_logprob"]
    for row in rows:
        m = shown["metrics"][row["pipeline"]]
        for key in NUMBER_KEYS:
            assert row[key] == m[key]
        for key in ("accuracy", "macro_f1"):
            assert (row[f"{key}_ci95_low"], row[f"{key}_ci95_high"]) == (m[f"{key}_ci95"]["low"], m[f"{key}_ci95"]["high"])
        for name, key in exporting.HALLUCINATIONS:
            assert row[f"{name}_hallucination_rate"] == m[key]["rate"]
            assert row[f"{name}_hallucination_denominator"] == m[key]["denominator"]
        assert (row["n_obtained"], row["n_planned"]) == (shown["pipelines"][row["pipeline"]]["n_obtained"], 24)
        assert row["simulated"] is True


def test_export_csv_is_unrounded_and_markdown_latex_round_to_three(synthetic, capsys):
    shown = json.loads(run_cli(capsys, "show", str(synthetic), "--json")[1])["metrics"]
    code, out, _ = run_cli(capsys, "export", str(synthetic), "--format", "csv")
    table = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and list(table[0]) == list(exporting.SUMMARY_COLUMNS) and len(table) == 3
    for row in table:
        assert float(row["accuracy"]) == shown[row["pipeline"]]["accuracy"]
        assert float(row["macro_f1_ci95_high"]) == shown[row["pipeline"]]["macro_f1_ci95"]["high"]

    code, md, _ = run_cli(capsys, "export", str(synthetic), "--format", "md")
    lines = md.splitlines()
    assert lines[0].startswith("| session | model | pipeline | n | accuracy [95% CI] |")
    assert set(lines[1]) <= set("|-:") and lines[1].count("|") == lines[0].count("|")
    body = [line for line in lines[2:] if line.startswith("|")]
    assert len(body) == 3 and all(line.count("|") == lines[0].count("|") for line in body)
    judge = shown["llm_judge"]
    assert f"| {judge['accuracy']:.3f} [{judge['accuracy_ci95']['low']:.3f}, {judge['accuracy_ci95']['high']:.3f}] |" in body[0]
    assert "(simulated)" in body[0] and "SIMULATED" in md


def test_latex_is_booktabs_with_escaped_underscores(synthetic, capsys):
    code, tex, _ = run_cli(capsys, "export", str(synthetic), "--format", "latex")
    lines = tex.splitlines()
    assert code == 0 and lines[0].startswith("% ")
    begin = next(i for i, line in enumerate(lines) if line.startswith(r"\begin{tabular}{lll"))
    assert lines[begin + 1] == r"\toprule" and lines[begin + 3] == r"\midrule"
    assert lines[-2:] == [r"\bottomrule", r"\end{tabular}"]
    rows = lines[begin + 4:-2]
    assert len(rows) == 3 and all(r.endswith(r" \\") and r.count(" & ") == lines[begin + 2].count(" & ") for r in rows)
    assert r"llm\_judge" in rows[0] and r"mcq\_logprob" in rows[2] and "95\\% CI" in lines[begin + 2]
    assert "_" not in tex.replace(r"\_", "")
    assert exporting.latex_escape("a_b & 50% #1 {x} ~ ^ \\") == r"a\_b \& 50\% \#1 \{x\} \textasciitilde{} \textasciicircum{} \textbackslash{}"


def test_per_example_csv(synthetic, capsys):
    code, out, _ = run_cli(capsys, "export", str(synthetic), "--format", "csv", "--per-example")
    table = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(table) == 24
    columns = list(table[0])
    assert columns[:4] == ["session", "uuid", "source", "gold"]
    assert columns[4:8] == ["llm_judge_label", "llm_judge_correct", "mcq_label", "mcq_correct"]
    assert columns[-4:] == [f"mcq_logprob_score_{label}" for label in LABELS]
    rows = load_session_rows(synthetic)
    logprob = rows.primary["mcq_logprob"]
    for record in table:
        assert record["source"] == "synthetic"
        for name in ("llm_judge", "mcq", "mcq_logprob"):
            assert record[f"{name}_correct"] == str(int(record[f"{name}_label"] == record["gold"]))
        scores = logprob[record["uuid"]]["scores_raw"]
        if scores is not None:
            assert [float(record[f"mcq_logprob_score_{label}"]) for label in LABELS] == scores
    # correctness per pipeline adds up to the accuracy show reports
    shown = json.loads(run_cli(capsys, "show", str(synthetic), "--json")[1])["metrics"]
    assert sum(r["mcq_correct"] == "1" for r in table) / 24 == shown["mcq"]["accuracy"]


def test_export_out_writes_whole_files_and_replaces(synthetic, tmp_path, capsys):
    out = tmp_path / "tables" / "t.tex"
    code, printed, _ = run_cli(capsys, "export", str(synthetic), "--format", "latex", "--out", str(out))
    assert code == 0 and printed.strip() == str(out) and out.read_text().startswith("% ")
    other = write_session(synthetic.parent.parent.parent.parent, fingerprint="5e55a0c0ffee0002", seed=2).root
    code, _, _ = run_cli(capsys, "export", str(synthetic), str(other), "--format", "latex", "--out", str(out))
    assert code == 0 and out.read_text().count(r"llm\_judge") == 2  # replaced, two sessions
    assert [p.name for p in out.parent.iterdir()] == ["t.tex"]  # no temporary file left


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "t.md"
    target.write_text("before\n")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        exporting.write_atomic(target, "after\n")
    assert target.read_text() == "before\n" and [p.name for p in tmp_path.iterdir()] == ["t.md"]


@pytest.mark.parametrize(
    "argv, words",
    [
        (["export", "{tmp}/nowhere"], ["nowhere", "no such session folder"]),
        (["export", "{tmp}"], ["not a session folder"]),
        (["export", "{session}", "--format", "latex", "--per-example"], ["--per-example", "csv or json"]),
        (["export", "{session}", "--out", "{tmp}"], ["is a folder"]),
        (["export", "{session}", "--format", "xlsx"], ["invalid choice"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(synthetic, tmp_path, capsys, argv, words):
    empty = tmp_path / "empty"
    empty.mkdir()
    args = [a.format(tmp=empty, session=synthetic) for a in argv]
    code, out, err = run_cli(capsys, *args)
    message = [line for line in err.splitlines() if line.startswith("w2c-tui: error:")]
    assert code == 2 and len(message) == 1 and "Traceback" not in out + err
    assert all(word in message[0] for word in words)


# -- the TUI ---------------------------------------------------------------------------------

SIZE = (100, 30)


def make_app(workdir: Path):
    from w2c_tui.config import LoadedConfig
    from w2c_tui.config.schema import Settings
    from w2c_tui.tui.app import W2cApp

    settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}, "mlflow": {"enabled": False}})
    return W2cApp(loaded=LoadedConfig(settings, None, workdir.parent, {}), start_mode="sessions", poll_monitor=False)


async def settle(pilot, condition, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.05)
    await pilot.pause()


def open_agreement_tab():
    async def ready(pilot):
        from w2c_tui.tui.widgets.agreement_panel import AgreementPanel

        await settle(pilot, lambda: len(getattr(pilot.app.screen, "sessions", ())) == 1)
        await pilot.press("enter")
        await settle(pilot, lambda: pilot.app.screen.query(AgreementPanel))
        await settle(pilot, lambda: pilot.app.screen.query_one(AgreementPanel).agreement is not None)
        await pilot.press("a")
        await pilot.pause()
        pilot.app.screen.query_one("#agreement-rows").focus()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()

    return ready


async def test_session_view_agreement_panel_opens_traces_and_exports(tmp_path, monkeypatch):
    from w2c_tui.tui.screens.session_view import SessionViewScreen
    from w2c_tui.tui.screens.trace import TraceScreen
    from w2c_tui.tui.widgets.agreement_panel import AgreementPanel

    monkeypatch.chdir(tmp_path)
    root = write_session(tmp_path / "workdir", n_examples=24).root
    expected = session_agreement(root)
    app = make_app(tmp_path / "workdir")
    async with app.run_test(size=SIZE) as pilot:
        await open_agreement_tab()(pilot)
        screen = app.screen
        assert isinstance(screen, SessionViewScreen)
        panel = screen.query_one(AgreementPanel)
        table = str(panel.query_one("#agreement-pairs").render())
        assert "judge × mcq" in table and "κ" in table and f"{expected.pairs[0].kappa:.3f}" in table
        rows = panel.query_one("#agreement-rows")
        assert rows.row_count == len(expected.pairs[0].disagreements) > 0
        first = expected.pairs[0].disagreements[0].uuid
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, TraceScreen))
        assert app.screen.uuid == first
        await pilot.press("escape")
        await settle(pilot, lambda: isinstance(app.screen, SessionViewScreen))

        await pilot.press("e")
        exports = root / "exports"
        names = ["5e55a0c0ffee0001-examples.csv", "5e55a0c0ffee0001-metrics.md", "5e55a0c0ffee0001-metrics.tex"]
        await settle(pilot, lambda: exports.is_dir() and sorted(p.name for p in exports.iterdir()) == names)
        assert (exports / names[2]).read_text().count(r"\toprule") == 1


async def test_compare_export_key_writes_under_the_workdir(tmp_path, monkeypatch):
    from w2c_tui.tui.screens.compare import CompareScreen

    monkeypatch.chdir(tmp_path)
    workdir = tmp_path / "workdir"
    a = write_session(workdir, n_examples=12).root
    b = write_session(workdir, fingerprint="7ac2e9a10b5e0002", target_model="qwen3-32b", n_examples=12, seed=2).root
    app = make_app(workdir)
    async with app.run_test(size=SIZE) as pilot:
        app.open_compare(str(a), str(b))
        await settle(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.data_b is not None)
        await pilot.press("e")
        folder = workdir / "exports"
        # the table of both sessions (md, csv, tex) and the comparison on screen (md, json)
        await settle(pilot, lambda: folder.is_dir() and len(list(folder.iterdir())) == 5)
        tex = next(folder.glob("*.tex")).read_text()
        assert "qwen3-32b" in tex and tex.count(r"llm\_judge") == 2
        assert len(list(folder.glob("*-comparison.*"))) == 2


def test_session_agreement_snapshot(snap_compare, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_session(tmp_path / "workdir", n_examples=24)
    assert snap_compare(make_app(tmp_path / "workdir"), terminal_size=SIZE, run_before=open_agreement_tab())
