"""The paper's figures (the `official` block of an official-format mcq_logprob, docs/metrics.md §17)
beside ours in the session view, Compare and the exports."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from test_agreement_export import make_app, settle

from w2c_tui.analysis import export as exporting
from w2c_tui.session.reader import read_session
from w2c_tui.store.layout import SessionPaths
from w2c_tui.testing.synthetic_session import write_session
from w2c_tui.tui.widgets.metric_table import official_compare_rows, official_markup

WILSON = {"low": 0.0, "high": 0.390, "method": "wilson"}


def block(family: str = "when2call-hermes", *, acc: float = 0.48, n_unscored: int = 0) -> dict:
    """An official block as metrics/official.py writes it."""
    return {
        "family": family, "n": 24, "n_unscored": n_unscored,
        "acc": acc, "acc_ci95": {"low": 0.40, "high": 0.567, "n_boot": 1000, "seed": 42},
        "acc_norm": 0.487, "acc_norm_ci95": {"low": 0.407, "high": 0.567, "n_boot": 1000, "seed": 42},
        "macro_f1": 0.316, "macro_f1_ci95": {"low": 0.271, "high": 0.361, "n_boot": 1000, "seed": 42},
        "macro_f1_labels": ["cannot_answer", "direct", "request_for_info", "tool_call"], "macro_f1_no_direct": 0.422,
        "tool_hallucination_rate": {"rate": 0.0, "numerator": 0, "denominator": 6, "ci95": WILSON},
    }


def official_session(workdir: Path, official: dict | None, **kwargs) -> Path:
    """A synthetic mcq_logprob session whose metrics.json carries `official` (none when None)."""
    root = write_session(workdir, n_examples=24, pipelines=("mcq_logprob",), **kwargs).root
    if official is not None:
        path = SessionPaths(root).metrics_file("mcq_logprob")
        metrics = json.loads(path.read_text())
        path.write_text(json.dumps({**metrics, "official": official}))
    return root


@pytest.fixture
def sessions(tmp_path, monkeypatch) -> tuple[Path, Path, Path]:
    """(an official hermes session, an official llama3_2 one, one in our own format)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    workdir = tmp_path / "workdir"
    hermes = official_session(workdir, block(), run_key="off1")
    llama = official_session(workdir, block("when2call-llama3_2", acc=0.567, n_unscored=2), run_key="off2", fingerprint="7ac2e9a10b5e0002", seed=2)
    ours = official_session(workdir, None, run_key="ours", fingerprint="0dd5e9a10b5e0003", seed=3)
    return hermes, llama, ours


# -- the markup ------------------------------------------------------------------------------

def test_the_block_shows_each_figure_with_its_interval_and_the_rates_k_of_n():
    text = official_markup([("mcq_logprob", "complete", {"official": block(n_unscored=2)})])
    assert text.startswith("[b]official (NVIDIA lm-eval task)[/b]   [dim]mcq_logprob · when2call-hermes · n[/] [b]24[/b]")
    assert "2 unscored (string fallback) left out" in text
    for item in (
        "acc [b].480[/b] [dim](.40–.57)[/]", "acc_norm [b].487[/b] [dim](.41–.57)[/]",
        "macro F1 [b].316[/b] [dim](.27–.36)[/] 3-class [b].422[/b]", "tool halluc. [b].000[/b] [dim]0/6 Wilson (.00–.39)[/]",
    ):
        assert item in text


def test_no_block_for_our_formats_or_an_empty_one():
    assert official_markup([("mcq_logprob", "complete", {"accuracy": 0.5}), ("mcq", "complete", None)]) == ""
    assert official_markup([("mcq_logprob", "complete", {"official": {"family": "when2call", "n": 0, "n_unscored": 3}})]) == ""


def test_compare_rows_put_a_and_b_side_by_side_only_when_both_have_the_block():
    a, b = {"official": block()}, {"official": block("when2call-llama3_2", acc=0.567, n_unscored=2)}
    full = official_compare_rows(a, b)
    assert full[0] == ["", "format", "n", "acc", "acc_norm", "macro F1", "3-class", "tool halluc."]
    assert full[1] == ["A", "when2call-hermes", "24", ".480 (.40–.57)", ".487 (.41–.57)", ".316 (.27–.36)", ".422", ".000 0/6 Wilson (.00–.39)"]
    assert full[2][:4] == ["B", "when2call-llama3_2", "24 (2 unscored left out)", ".567 (.40–.57)"]
    narrow = official_compare_rows(a, b, full=False)
    assert narrow[1] == ["A", "hermes", "24", ".480", ".487", ".316", ".422", ".000 0/6"]
    assert official_compare_rows(a, {"accuracy": 0.5}) == [] and official_compare_rows(None, b) == []


# -- the TUI ---------------------------------------------------------------------------------

def shown_text(widget) -> str:
    return "\n".join(line.plain for line in widget._wrapped(widget.size.width))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_session_view_shows_the_block_for_an_official_session_only(sessions, size):
    from w2c_tui.tui.screens.session_view import SessionViewScreen
    from w2c_tui.tui.widgets.item_line import ItemLine

    hermes, _, ours = sessions
    app = make_app(hermes.parents[3])
    async with app.run_test(size=size) as pilot:
        for root, expected in ((hermes, True), (ours, False)):
            app.push_screen(SessionViewScreen(app.workspace, root))
            await settle(pilot, lambda: isinstance(app.screen, SessionViewScreen) and app.screen.info is not None)
            line = app.screen.query_one("#official-summary", ItemLine)
            assert line.display is expected
            if expected:
                text = shown_text(line)
                assert "official (NVIDIA lm-eval task)" in text and "when2call-hermes · n 24" in text
                assert "acc .480 (.40–.57)" in text and "3-class .422" in text and "tool halluc. .000 0/6 Wilson (.00–.39)" in text
                assert max(len(row) for row in text.split("\n")) <= size[0] - 2  # nothing cut at the edge
            app.pop_screen()
            await pilot.pause()


@pytest.mark.parametrize("width", [80, 120])
async def test_compare_shows_both_official_blocks_side_by_side(sessions, width):
    from textual.widgets import Static

    from w2c_tui.tui.screens.compare import CompareScreen

    hermes, llama, ours = sessions
    app = make_app(hermes.parents[3])
    async with app.run_test(size=(width, 40)) as pilot:
        app.open_compare(str(hermes), str(llama))
        await settle(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.pair is not None)
        text = str(app.screen.query_one("#compare-metrics", Static).render())
        assert "official (NVIDIA lm-eval task) lp · side by side, not paired (no Δ)" in text
        if width >= 120:
            assert "when2call-llama3_2" in text and ".567 (.40–.57)" in text and ".000 0/6 Wilson (.00–.39)" in text
        else:
            assert "llama3_2" in text and ".000 0/6" in text and "B: 2 unscored (string fallback) left out" in text
        app.screen.choose(str(hermes), str(ours))
        await settle(pilot, lambda: app.screen.data_b is not None and app.screen.data_b.info.run_key == "ours")
        await pilot.pause(0.2)
        assert "official (NVIDIA lm-eval task)" not in str(app.screen.query_one("#compare-metrics", Static).render())


# -- the exports -----------------------------------------------------------------------------

def records(*roots: Path) -> list[dict]:
    return exporting.summary_records([read_session(root) for root in roots])


def test_csv_has_the_official_columns_filled_for_official_sessions_and_empty_for_others(sessions):
    hermes, _, ours = sessions
    rows = list(csv.DictReader(io.StringIO(exporting.render(records(hermes, ours), "csv"))))
    assert "official" not in rows[0]  # the block itself is in the JSON only
    first, second = rows
    assert (first["official_family"], first["official_n"], first["official_acc"], first["official_acc_ci95_low"]) == ("when2call-hermes", "24", "0.48", "0.4")
    assert (first["official_acc_norm"], first["official_macro_f1"], first["official_macro_f1_no_direct"]) == ("0.487", "0.316", "0.422")
    assert (first["official_tool_hallucination_numerator"], first["official_tool_hallucination_denominator"]) == ("0", "6")
    assert first["official_tool_hallucination_ci95_high"] == "0.39"
    assert all(second[column] == "" for column in exporting.OFFICIAL)


def test_json_carries_the_block_as_is(sessions):
    hermes, _, ours = sessions
    rows = json.loads(exporting.render(records(hermes, ours), "json"))["rows"]
    assert rows[0]["official"] == block() and rows[0]["official_tool_hallucination_rate"] == 0.0
    assert rows[1]["official"] is None and rows[1]["official_acc"] is None


def test_markdown_prints_a_table_of_the_official_figures(sessions):
    hermes, llama, ours = sessions
    text = exporting.render(records(hermes, llama, ours), "md")
    header = "| session | model | pipeline | n | format | acc [95% CI] | acc_norm [95% CI] | macro-F1 [95% CI] | macro-F1 (3-class) | ToolHall [Wilson 95% CI] |"
    assert header in text
    assert "| 24 | when2call-hermes | 0.480 [0.400, 0.567] | 0.487 [0.407, 0.567] | 0.316 [0.271, 0.361] | 0.422 | 0.000 (0/6) [0.000, 0.390] |" in text
    assert "| 24 (2 unscored left out) | when2call-llama3_2 | 0.567 [0.400, 0.567] |" in text
    official_table = text[text.index(header):]
    assert "ours/" not in official_table  # a session in our format has no row there
    assert "Official: the figures of NVIDIA's lm-eval When2Call task" in text


def test_latex_prints_the_official_table_escaped(sessions):
    hermes, _, ours = sessions
    text = exporting.render(records(hermes, ours), "latex")
    assert text.count(r"\begin{tabular}") == 2
    assert r"format & acc [95\% CI] & acc\_norm [95\% CI]" in text
    assert r"when2call-hermes & 0.480 [0.400, 0.567]" in text and r"0.000 (0/6) [0.000, 0.390] \\" in text


def test_no_official_table_or_note_without_an_official_session(sessions):
    _, _, ours = sessions
    for fmt in ("md", "latex"):
        text = exporting.render(records(ours), fmt)
        assert "ToolHall [Wilson" not in text and "Official:" not in text


def test_the_tuis_export_files_carry_the_official_table(sessions, tmp_path):
    from w2c_tui.session.rows import load_session_rows

    hermes, _, _ = sessions
    files = exporting.write_exports(tmp_path / "out", "x", [load_session_rows(read_session(hermes))])
    assert "ToolHall [Wilson 95% CI]" in files.markdown.read_text() and "when2call-hermes" in files.latex.read_text()


def test_official_session_view_80x24(snap_compare, sessions):
    """The block under our summary table, at the smallest terminal we support."""
    from w2c_tui.tui.screens.session_view import SessionViewScreen

    hermes = sessions[0]

    async def ready(pilot):
        await settle(pilot, lambda: len(getattr(pilot.app.screen, "sessions", ())) == 3)
        pilot.app.push_screen(SessionViewScreen(pilot.app.workspace, hermes))
        await settle(pilot, lambda: getattr(pilot.app.screen, "data", None) is not None and pilot.app.screen.info is not None)
        await pilot.pause(0.2)
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(make_app(hermes.parents[3]), terminal_size=(80, 24), run_before=ready)


async def test_setup_flags_a_delimiter_beside_an_official_family_on_the_delimiter_field(tmp_path, monkeypatch):
    """The schema refuses it across two keys; the form names the field to fix, not only a count."""
    from textual.widgets import Input, Select, Static

    from w2c_tui.tui.app import W2cApp

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    app = W2cApp(None)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: getattr(app.screen, "_n_examples", None) is not None)
        app.screen.query_one("#family", Select).value = "when2call-hermes"
        app.screen.query_one("#delimiter", Input).value = '" "'
        await pilot.pause()
        app.screen.validate_form()
        assert list(app.screen.errors) == ["delimiter"]
        error = app.screen.query_one("#field-delimiter .field-error", Static)
        assert "must be empty with template_family 'when2call-hermes'" in str(error.render())
        app.screen.query_one("#delimiter", Input).value = '""'
        await pilot.pause()
        app.screen.validate_form()
        assert app.screen.errors == {}


def test_a_damaged_block_is_neither_shown_nor_exported(tmp_path, monkeypatch):
    """The reader names it as damage and drops it (session/documents.py): no half-read figures."""
    monkeypatch.chdir(tmp_path)
    root = official_session(tmp_path / "workdir", {**block(), "acc": "high"}, run_key="bad")
    info = read_session(root)
    assert any("official.acc is text" in reason for reason in info.damaged)
    assert official_markup(info.summary_pipelines()) == ""
    (record,) = exporting.summary_records([info])
    assert record["official"] is None and all(record[column] is None for column in exporting.OFFICIAL)
