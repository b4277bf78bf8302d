"""A session written by the earlier script suite (tests/fixtures/earlier_suite), read properly.

The fixture holds 6 bundled examples (2 tool_call, 2 request_for_info, 2 cannot_answer, one
of them with no tool): mcq and mcq_logprob complete with its own metrics_<exp>.json, and an
llm_judge interrupted after 4 examples. Every number below is computed by hand.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from w2c_tui.cli import main
from w2c_tui.session.reader import list_sessions, read_session

from configs import write_config

FIXTURE = Path(__file__).parent / "fixtures" / "earlier_suite"
SESSION = FIXTURE / "runs" / "suite-demo" / "sessions" / "3f9c2a7be41d0c55"


def files_of(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def session(tmp_path):
    copy = tmp_path / "runs" / "suite-demo" / "sessions" / SESSION.name
    shutil.copytree(SESSION, copy)
    return copy


def test_listed_with_model_n_and_status(session):
    [info] = list_sessions(session.parents[3])
    assert info.origin == "earlier-suite"
    assert info.target_model == "llama-3.3-70b-instruct"  # its manifest: config.target_model
    assert info.judge_model == "gpt-oss-120b"
    assert info.n_examples == 6
    assert {p.exp_name: p.status for p in info.pipelines} == {"llm_judge": "partial", "mcq": "complete", "mcq_logprob": "complete"}
    assert info.status == "partial"


def test_ours_recomputed_from_its_checkpoints(session):
    info = read_session(session)
    mcq = next(p for p in info.pipelines if p.exp_name == "mcq")
    m = mcq.metrics
    # gold T T R R C C, predicted T C R T T C: 3 of 6 right
    assert (m["n_obtained"], m["n_planned"]) == (6, 6)
    assert m["accuracy"] == pytest.approx(0.5)
    # F1 tool_call 2/(2+2+1) = .4, request_for_info 2/(2+0+1) = 2/3, cannot_answer 2/(2+1+1) = .5
    assert m["per_class_f1"]["tool_call"] == pytest.approx(0.4)
    assert m["macro_f1"] == pytest.approx((0.4 + 2 / 3 + 0.5) / 3)
    assert m["macro_f1_4"] == pytest.approx((0.4 + 2 / 3 + 0.5) / 4)
    assert m["tool_hallucination_rate"]["rate"] == 1.0  # the one no-tool cannot_answer got a tool call
    assert m["parameter_hallucination_rate"] == {"rate": 0.5, "numerator": 1, "denominator": 2}
    assert m["answer_hallucination_rate"]["rate"] == 0.0

    judge = next(p for p in info.pipelines if p.exp_name == "llm_judge")
    # interrupted: 4 of the session's 6 examples judged, 3 right (T T R, R judged cannot_answer)
    assert (judge.metrics["n_obtained"], judge.metrics["n_planned"]) == (4, 6)
    assert judge.metrics["accuracy"] == pytest.approx(3 / 4)
    assert judge.stored is None

    logprob = next(p for p in info.pipelines if p.exp_name == "mcq_logprob")
    variants = logprob.metrics["variants"]
    assert logprob.metrics["accuracy"] == pytest.approx(5 / 6)  # our primary: raw
    assert variants["norm_chars"]["accuracy"] == pytest.approx(4 / 6)
    assert variants["norm_bytes"]["accuracy"] == pytest.approx(1.0)


def test_stored_and_recomputed_side_by_side_with_differences_flagged(session):
    info = read_session(session)
    mcq = next(p for p in info.pipelines if p.exp_name == "mcq")
    assert mcq.stored["header"]["exp_name"] == "mcq"
    rows = {r["key"]: r for r in mcq.comparison}
    assert set(rows) == {
        "n_total", "accuracy", "macro_f1", "macro_f1_no_direct",
        "tool_hallucination_rate", "answer_hallucination_rate", "parameter_hallucination_rate",
    }
    # its macro_f1 averaged all four labels (.391667), ours the three present (.522222): by design
    assert rows["macro_f1"]["differs"] and rows["macro_f1"]["by_design"] and rows["macro_f1"]["note"]
    assert not any(r["differs"] for k, r in rows.items() if k != "macro_f1")

    logprob = {r["key"]: r for r in next(p for p in info.pipelines if p.exp_name == "mcq_logprob").comparison}
    # its acc_norm (bytes, 1.0) against lm-eval's acc_norm (characters, 4/6): by design
    assert logprob["acc_norm"]["by_design"] and logprob["acc_norm"]["ours"] == pytest.approx(4 / 6)
    assert not logprob["acc"]["differs"] and not logprob["acc_tokens"]["differs"]


def test_an_unexpected_difference_is_flagged_not_excused(session):
    path = session / "artifacts_local" / "mcq" / "outputs" / "mcq" / "metrics_mcq.json"
    document = json.loads(path.read_text())
    document["metrics"]["accuracy"] = 0.6
    path.write_text(json.dumps(document))
    rows = {r["key"]: r for r in next(p for p in read_session(session).pipelines if p.exp_name == "mcq").comparison}
    assert rows["accuracy"]["differs"] and not rows["accuracy"]["by_design"]


def test_cli_sessions_and_show(session, capsys):
    assert main(["sessions", "--workdir", str(session.parents[3])]) == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert "llama-3.3-70b-instruct" in line and " partial " in line and " 6 " in line and "[earlier suite]" in line

    assert main(["show", str(session)]) == 0
    text = capsys.readouterr().out
    assert "target llama-3.3-70b-instruct" in text and "status partial (resumable)" in text
    assert "4/6 obtained" in text and "acc 0.750" in text
    assert "macro_f1                          0.392    0.522  differs: by design" in text

    assert main(["show", str(session), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["session"]["origin"] == "earlier-suite"
    mcq = document["pipelines"]["mcq"]
    assert mcq["stored_metrics"]["metrics"]["macro_f1"] == 0.391667
    assert any(r["key"] == "macro_f1" and r["by_design"] for r in mcq["comparison"])
    assert document["metrics"]["mcq"]["accuracy"] == pytest.approx(0.5)


def test_reading_never_writes_into_its_folder(session, capsys):
    before = files_of(session)
    read_session(session).warm()
    assert main(["show", str(session)]) == 0
    assert files_of(session) == before


def test_tui_shows_model_status_and_comparison(session):
    from w2c_tui.session.rows import load_session_rows
    from w2c_tui.tui.screens.sessions import session_line, session_summary
    from w2c_tui.tui.widgets.metric_table import comparison_markup

    info = read_session(session).warm()
    assert "llama-3.3-70b-instruct" in session_line(info) and "earlier suite" in session_line(info)
    summary = session_summary(info)
    assert "4/6" in summary and "6/6" in summary and "recomputed from its checkpoints" in summary
    mcq = next(p for p in info.pipelines if p.exp_name == "mcq")
    markup = comparison_markup(mcq.comparison, mcq.stored)
    assert "by design" in markup and ".392" in markup
    rows = load_session_rows(session)
    assert len(rows.rows) >= 6 and rows.row("839407f4-7704-4346-a885-6775e94f85fe").predictions["mcq"] == "tool_call"


async def test_session_view_shows_stored_beside_ours(session, tmp_path, monkeypatch):
    import time

    from textual.widgets import Select

    from w2c_tui.tui.app import W2cApp
    from w2c_tui.tui.screens.session_view import SessionViewScreen

    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, run={"workdir_base": str(tmp_path)}, mlflow={"enabled": False})

    async def wait_for(pilot, condition):
        deadline = time.monotonic() + 30
        while not condition():
            assert time.monotonic() < deadline, "timed out waiting for the app"
            await pilot.pause(0.05)

    app = W2cApp("config.toml")
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_session(session)
        await wait_for(pilot, lambda: isinstance(app.screen, SessionViewScreen) and app.screen.data is not None)
        view = app.screen
        await wait_for(pilot, lambda: view.info is not None)  # info and rows are read by separate workers
        title = str(view.query_one("#session-title").render())
        assert "llama-3.3-70b-instruct" in title and "partial (resumable)" in title and "earlier suite" in title
        summary = str(view.query_one("#metrics-summary").render())
        assert "4/6" in summary and "6/6" in summary
        view.query_one("#metrics-pipeline", Select).value = "mcq"
        await wait_for(pilot, lambda: "by design" in str(view.query_one("#metrics-extra").render()))
        extra = str(view.query_one("#metrics-extra").render())
        assert "Earlier suite: stored vs ours recomputed" in extra and ".392" in extra and ".522" in extra


def test_an_opened_session_parses_its_dataset_once(session, monkeypatch):
    """Summary, every pipeline's recomputed metrics and the per-UUID rows share one read of the dataset."""
    import w2c_tui.data as data
    from w2c_tui.session.open_sessions import OpenSessions

    calls = []
    real = data.load_examples

    def counting(path=None, *args, **kwargs):
        calls.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(data, "load_examples", counting)
    opened = OpenSessions()
    info = opened.info(session)  # warm: the three pipelines' metrics recomputed
    rows = opened.data(session).rows
    assert all(p.metrics for p in info.pipelines) and len(rows.rows) >= 6
    assert rows.info is info and len(calls) == 1, calls
