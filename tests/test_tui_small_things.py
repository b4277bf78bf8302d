"""Small things a new user met on day two (issue 27, item 6)."""

from __future__ import annotations

from w2c_tui.cli import main
from w2c_tui.config import load_config
from w2c_tui.report.endpoint_note import endpoint_parts
from w2c_tui.testing.synthetic_session import write_session
from w2c_tui.tui.app import W2cApp

from test_tui_flow import wait_for


async def test_edit_on_the_built_in_endpoint_says_there_is_nothing_to_edit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = W2cApp(loaded=load_config(None, environ={}), poll_monitor=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: getattr(app.screen, "_clean_values", None) is not None)
        setup = app.screen
        await pilot.press("e")
        await pilot.pause(0.2)
        assert app.screen is setup  # no "Add a provider" dialog with placeholders
        assert any("simulated endpoint has no settings" in str(n.message) for n in app._notifications)


async def test_a_launch_note_is_never_an_empty_notification(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = W2cApp(loaded=load_config(None, environ={}), poll_monitor=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        before = len(app._notifications)
        app._launch_note("")
        app._launch_note("   ")
        await pilot.pause()
        assert len(app._notifications) == before
        app._launch_note("call traces left unpacked: disk full")
        await pilot.pause()
        note = list(app._notifications)[-1]
        assert (note.title, note.message) == ("call traces left unpacked", "disk full")


def test_the_endpoint_line_says_simulated_once():
    embedded = {"simulated": True, "endpoint": {"target": "simulated"}}
    assert [p.value for p in endpoint_parts(embedded)] == ["simulated"]
    standalone = {"endpoint": {"target": "http://127.0.0.1:8000/v1"}, "server_identity": {"system_fingerprint": "w2c-tui-sim"}}
    assert endpoint_parts(standalone)[0].value == "http://127.0.0.1:8000/v1 (simulated)"


def test_show_takes_a_run_key_with_one_session(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_session(tmp_path / "workdir", run_key="day2")
    assert main(["show", "day2"]) == 0
    assert "run day2" in capsys.readouterr().out
    write_session(tmp_path / "workdir", run_key="day2", fingerprint="7ac2e9a10b5e0002")
    assert main(["show", "day2"]) == 2
    assert "run key day2 has 2 sessions" in capsys.readouterr().err


async def test_the_throughput_axis_starts_at_zero_when_nothing_was_sent():
    from textual.app import App

    from w2c_tui.tui.widgets.charts import ThroughputChart

    class One(App):
        def compose(self):
            yield ThroughputChart()

    app = One()
    async with app.run_test(size=(60, 14)) as pilot:
        chart = app.query_one(ThroughputChart)
        chart.add_sample(1.0, 0.0, None)
        chart.add_sample(2.0, 0.0, None)
        await pilot.pause()
        text = "\n".join(strip.text for strip in chart.render_lines(chart.region.reset_offset))
        assert "-1" not in text and "−1" not in text
