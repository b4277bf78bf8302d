"""What the second tmux walk-through at 80x24 found (issue 27): a stale Setup estimate after a launch,
rows and hints cut or wrapped at 80 columns, the usage line's order and words, "so far" on a final
matrix, a placeholder that looked like a real path, help rows that wrapped."""

from __future__ import annotations

import copy
import re

from textual.content import Content
from textual.widgets import Input

from test_tui_snapshots import FrozenState, make_app, settle, workdir  # noqa: F401 - workdir is a fixture
from test_tui_snapshots_80x24 import setup_app, setup_ready
from w2c_tui.tui.launches import LaunchRecord, MonitoredSession
from w2c_tui.tui.screens.help import SECTIONS
from w2c_tui.tui.screens.setup.launch import readiness_markup
from w2c_tui.tui.widgets.item_line import wrap_items
from w2c_tui.tui.widgets.usage_line import describe_usage

SIZE = (80, 24)


def plain(markup: str) -> str:
    return re.sub(r"\[/?[^\]]*\]", "", markup)


def lines_of(widget) -> list[str]:
    return [strip.text for strip in widget.render_lines(widget.region.reset_offset)]


async def test_back_on_setup_the_estimate_counts_what_the_launch_left_on_disk(tmp_path, monkeypatch):
    """The estimate of run key `day2` read the disk before the launch; once the launch has filled it,
    Setup shown again says 0 requests (it said ≈ 2,400)."""
    import w2c_tui.engine.resume_estimate as resume_estimate

    on_disk: dict[str, dict[str, int]] = {}
    reads: list[str] = []

    def finished_on_disk(loaded):
        reads.append(loaded.settings.run.run_key)
        return {m: dict(d) for m, d in on_disk.items()}

    monkeypatch.setattr(resume_estimate, "finished_on_disk", finished_on_disk)
    app = setup_app(tmp_path, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await setup_ready(pilot)
        setup = app.screen
        setup.query_one("#run-key", Input).value = "day2"
        estimate = setup.query_one("#estimate")
        await settle(pilot, lambda: "day2" in reads and "requests" in str(estimate.render()))
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "≈ 0 requests" not in str(estimate.render())  # nothing on disk yet
        # The launch ran meanwhile (from the Monitor's point of view): every pipeline of sim-small is on disk.
        on_disk["sim-small"] = {name: 10_000 for name in ("llm_judge", "mcq", "mcq_logprob")}
        setup.set_focus(None)
        await pilot.press("2")
        await settle(pilot, lambda: app.current_mode == "monitor")
        await pilot.press("1")
        await settle(pilot, lambda: "≈ 0 requests" in str(app.screen.query_one("#estimate").render()))


async def test_a_session_with_sweeps_keeps_each_row_on_one_line_at_80x24(workdir):
    app = make_app(workdir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: len(app.screen.sessions) == 2)
        swept = next(info for info in app.screen.sessions if any(p.exp_name.startswith("stability") for p in info.pipelines))
        app.screen._summarise(swept)
        await pilot.pause()
        rows = [line.rstrip() for line in lines_of(app.screen.query_one("#session-summary"))]
        sweep_rows = [line for line in rows if line.lstrip().startswith("S:")]
        assert sweep_rows and all(re.search(r"\([.\d]+–[.\d]+\)\s+[.\d]+$", line) for line in sweep_rows), rows
        assert not any(re.fullmatch(r"\s*\.\d\d", line) for line in rows), rows  # no F1 wrapped onto a line of its own


async def test_the_examples_status_and_the_agreement_count_are_whole_at_80x24(workdir):
    app = make_app(workdir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: len(app.screen.sessions) == 2)
        await pilot.press("enter")
        await settle(pilot, lambda: getattr(app.screen, "data", None) is not None and app.screen.info is not None)
        await pilot.press("x")
        status = app.screen.query_one("#example-status")
        await settle(pilot, lambda: "examples" in " ".join(lines_of(status)))
        shown = " ".join(line.strip() for line in lines_of(status))
        assert "clear filters" in shown and "questions from" in shown, shown
        await pilot.press("a")
        count = app.screen.query_one("#agreement-count")
        await settle(pilot, lambda: "differ" in " ".join(lines_of(count)))
        assert count.region.right <= SIZE[0]
        assert " ".join(lines_of(count)).strip().endswith("enter: trace")


def test_the_usage_line_puts_the_target_first_and_says_when_nothing_was_asked():
    usage = {
        "total": {"requests": 5, "prompt_tokens": 400, "completion_tokens": 40},
        "by_model": {
            "sim-judge": {"role": "judge", "requests": 2, "prompt_tokens": 100, "completion_tokens": 10},
            "sim-small": {"role": "target", "requests": 3, "prompt_tokens": 300, "completion_tokens": 30},
        }
    }
    breakdown = plain(describe_usage(usage)).splitlines()[-1]
    assert breakdown.index("target") < breakdown.index("judge"), breakdown
    assert "no answer yet" in describe_usage(None)
    assert "no request answered in this launch" in describe_usage(None, finished=True)


class FinishingState(FrozenState):
    """Every pipeline has ended; the session is still being packed (not finished)."""

    def snapshot(self) -> dict:
        snap = copy.deepcopy(super().snapshot())
        for pipeline in snap["pipelines"].values():
            pipeline.update(done=pipeline["total"], status="complete", rate=0.0, eta_seconds=None)
        snap.update(phase="packing", in_flight=0)
        return snap


async def test_a_matrix_is_not_so_far_once_its_pipeline_has_ended(workdir):
    app = make_app(workdir, start_mode="monitor")
    record = LaunchRecord(1, launch=None)
    session = MonitoredSession("finishing", "sweep / 0b5e7c1d2e3f4a5b · gemma", "", FinishingState(), record)
    record.sessions = [session]
    app.workspace.extra_monitored.append(session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.screen.current_panel() is not None)
        panel = app.screen.current_panel()
        assert "finishing" in str(panel.query_one("#monitor-title").render())
        assert "so far" not in str(panel.query_one("#confusion-box").border_title)


async def test_the_data_path_placeholder_is_not_a_path_and_the_status_is_short(tmp_path, monkeypatch):
    app = setup_app(tmp_path, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await setup_ready(pilot)
        placeholder = app.screen.query_one("#data-path", Input).placeholder
        assert "/" not in placeholder and ".jsonl" in placeholder
        app.screen.query_one("#n-per-label", Input).value = "x"
        status = app.screen.query_one("#setup-status")
        await settle(pilot, lambda: "to fix" in " ".join(lines_of(status)))
        assert len([line for line in lines_of(status) if line.strip()]) == 1  # one line beside the buttons
    assert plain(readiness_markup(1)) == "⚠ 1 field to fix"
    assert plain(readiness_markup(2)) == "⚠ 2 fields to fix"
    assert len(plain(readiness_markup(0, config_error="bad key"))) <= 28  # beside the buttons at 80 columns


def test_every_help_row_fits_80_columns():
    # The help box at 80 columns leaves 74 for a row (border, padding, scrollbar).
    for _, keys in SECTIONS:
        for key, text in keys:
            assert len(f"  {key:<10} {text}") <= 74, (key, text)


def test_items_wrap_between_items_never_inside_one():
    items = [Content.from_markup(t) for t in ("gold [b]can[/b] ·", "judge dir ✗", "S:mcq k2 T.0 dir ✗", "S:mcq k2 T.7 dir ✗")]
    lines = [line.plain for line in wrap_items(items, 36)]
    assert lines == ["gold can ·   judge dir ✗", "S:mcq k2 T.0 dir ✗", "S:mcq k2 T.7 dir ✗"]
    assert [line.plain for line in wrap_items(items, 200)] == ["gold can ·   judge dir ✗   S:mcq k2 T.0 dir ✗   S:mcq k2 T.7 dir ✗"]
    assert [line.plain for line in wrap_items(items[2:3], 5)] == ["S:mcq k2 T.0 dir ✗"]  # too wide: alone, as it is


async def test_a_pipeline_and_its_verdict_stay_together_in_the_trace_summary(workdir):
    app = make_app(workdir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: len(app.screen.sessions) == 2)
        swept = next(info for info in app.screen.sessions if any(p.exp_name.startswith("stability") for p in info.pipelines))
        app.open_session(swept.paths.root)
        await settle(pilot, lambda: type(app.screen).__name__ == "SessionViewScreen")
        await settle(pilot, lambda: getattr(app.screen, "data", None) is not None and app.screen.info is not None)
        await pilot.press("x", "down", "enter")
        await settle(pilot, lambda: app.screen.query(".pipeline-section"))
        summary = app.screen.query_one(".trace-summary")
        lines = [line.strip() for line in lines_of(summary) if line.strip()]
        assert len(lines) == 1, lines  # one line at 80 columns with one sweep
        await pilot.resize_terminal(60, 24)  # narrower: it wraps, between pipelines
        await pilot.pause()
        lines = [line.strip() for line in lines_of(summary) if line.strip()]
        assert len(lines) >= 2, lines
        assert not any(line.startswith(("✓", "✗")) for line in lines), lines
        assert all(line.endswith(("✓", "✗", "·")) for line in lines), lines  # every line ends with a whole item


async def test_the_estimate_and_a_sweeps_figures_wrap_between_items_at_120x40(tmp_path, monkeypatch):
    """`S:mcq k3 T.7 450` was cut after `k3` in the estimate, `entropy .36` in the Metrics tab."""
    from configs import write_config
    from w2c_tui.tui.app import W2cApp

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    sweeps = '\n[stability]\nenabled = true\n[[stability.sweeps]]\nmethod = "mcq"\nk = 3\ntemperatures = [0.0, 0.7]\n'
    write_config(tmp_path, body=sweeps, models={"target_model": ["sim-small", "qwen2.5-7b-instruct"]}, mlflow={"enabled": False})
    app = W2cApp("config.toml")
    async with app.run_test(size=(120, 40)) as pilot:
        await setup_ready(pilot)
        estimate = app.screen.query_one("#estimate")
        await settle(pilot, lambda: "S:mcq" in " ".join(lines_of(estimate)))
        counts = [line.strip() for line in lines_of(estimate) if re.match(r"\s*(judge|mcq|lp|S:)", line)]
        item = r"[A-Za-z:]+(?: k\d+ T\.\d+)? [\d,]+"
        assert counts and all(re.fullmatch(f"{item}(?:   {item})*", line) for line in counts), counts
        assert "S:mcq k3 T.7" in " ".join(counts)


def test_two_histograms_leave_room_for_their_legend():
    from w2c_tui.tui.widgets.charts import tallest_bin

    # Ten bins of 0.1 over 0…1: 0.0, 0.0 and 0.05 fill the first; 0.1 opens the second.
    assert tallest_bin([0.0, 0.0, 0.05, 1.0], 10) == 3
    assert tallest_bin([0.0, 0.0, 0.1, 1.0], 10) == 2
    assert tallest_bin([0.5] * 7, 20) == 7  # one value: one bin
    assert tallest_bin([], 20) == 0


async def test_a_burst_of_keys_edits_a_field_in_the_order_typed(tmp_path, monkeypatch):
    """`backspace 3` typed at once into `day2` (a fast typist, or the app busy with a launch) gives
    `day3`: Textual ran the field's backspace only after the key bubbled to the app, after the 3."""
    from textual import events

    app = setup_app(tmp_path, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await setup_ready(pilot)
        field = app.screen.query_one("#run-key", Input)
        field.value = "day2"
        field.focus()
        await pilot.pause()
        field.action_end()
        await pilot.pause()
        for key, character in (("backspace", None), ("3", "3"), ("left", None), ("x", "x"), ("home", None), ("y", "y")):
            app.post_message(events.Key(key, character))  # queued together, as a terminal delivers a burst
        await settle(pilot, lambda: len(field.value) == 6)
        assert field.value == "ydayx3"
        assert app.current_mode == "setup"  # the 3 was text, not the Sessions tab
