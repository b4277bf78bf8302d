"""SVG snapshots of the main screens at 100x30, on synthetic sessions with fixed contents.

Nothing here depends on the clock: sessions come from `w2c_tui.testing.synthetic_session` (seeded,
fixed timestamps), the Monitor shows a frozen snapshot and draws it once.
Update after an intended change with: pytest tests/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from w2c_tui.config import LoadedConfig
from w2c_tui.config.schema import Settings
from w2c_tui.tui.app import W2cApp
from w2c_tui.tui.launches import MonitoredSession
from w2c_tui.testing.synthetic_session import write_session

SIZE = (100, 30)
# Every screen also at 80x24, the smallest terminal we support (nothing cut, the footer whole).
SIZES = pytest.mark.parametrize("size", [(100, 30), (80, 24)], ids=["100x30", "80x24"])


class FrozenState:
    """A RunState stand-in whose snapshot never changes."""

    def snapshot(self) -> dict:
        confusion = [[0, 1, 0, 0], [2, 61, 6, 4], [1, 9, 48, 9], [3, 5, 2, 70]]
        return {
            "label": "demo",
            "session_dir": "",
            "simulated": True,
            "elapsed": 83.0,
            "finished": False,
            "in_flight": 24,
            "max_concurrency": 32,
            "requests": 1834,
            "errors": 2,
            "requests_per_second": 21.4,
            "latency_p50": 0.81,
            "latency_p95": 2.4,
            "retries": {"429": 11, "503": 3},
            "retries_total": 14,
            "waits": {"jrc": {"cause": "429", "seconds_left": 12.0}},
            "tokens_in": 1_240_000,
            "tokens_out": 84_000,
            "usage": {
                "total": {"prompt_tokens": 1_240_000, "completion_tokens": 84_000, "requests": 1832},
                "by_model": {
                    "llama-3.3-70b-instruct": {"role": "target", "prompt_tokens": 1_010_000, "completion_tokens": 61_000},
                    "gpt-oss-120b": {"role": "judge", "prompt_tokens": 230_000, "completion_tokens": 23_000},
                },
            },
            "pacing": {
                "jrc": {"limit": 24, "ceiling": 32, "adaptive": True, "min_limit": 16, "max_limit": 32,
                        "overloads": 11, "requests": 1834, "waiting": 9, "slot_wait_seconds": 95.0},
            },
            "pipelines": {
                "llm_judge": {"total": 300, "done": 212, "failed": 0, "status": "running", "rate": 4.1,
                              "eta_seconds": 21.0, "accuracy": 0.71, "macro_f1": 0.68, "confusion": confusion},
                "mcq": {"total": 300, "done": 300, "failed": 0, "status": "complete", "rate": 0.0,
                        "eta_seconds": None, "accuracy": 0.64, "macro_f1": 0.61, "confusion": confusion},
                "mcq_logprob": {"total": 300, "done": 118, "failed": 2, "status": "running", "rate": 9.8,
                                "eta_seconds": 18.0, "accuracy": 0.52, "macro_f1": 0.49, "confusion": confusion},
                "stability_mcq_k=10_T=0.0": {"total": 300, "done": 0, "failed": 0, "status": "queued", "rate": 0.0,
                                             "eta_seconds": None, "accuracy": None, "macro_f1": None,
                                             "confusion": [[0] * 4 for _ in range(4)]},
            },
            "event_count": 2,
            "recent_events": [
                {"ts_utc": "2026-01-15T12:03:11.000Z", "severity": "warning", "uuid": "5e1c0a77-aaaa",
                 "fallback_type": "judge_json_parse_failed_first", "exp_name": "llm_judge", "details": {"error": "no JSON"}},
                {"ts_utc": "2026-01-15T12:03:12.000Z", "severity": "warning", "uuid": "a91f03bb-bbbb",
                 "fallback_type": "all_logprobs_-inf_string_fallback", "exp_name": "mcq_logprob", "details": {}},
            ],
        }


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)
    workdir = tmp_path / "workdir"
    write_session(workdir, n_examples=24, stability_k=5, calls_total=300, mlflow=True)
    write_session(workdir, fingerprint="7ac2e9a10b5e0002", target_model="qwen3-32b", n_examples=24, seed=2, skill=0.55)
    return workdir


def make_app(workdir: Path, start_mode: str = "sessions") -> W2cApp:
    settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}, "mlflow": {"enabled": False}})
    loaded = LoadedConfig(settings, None, workdir.parent, {})
    return W2cApp(loaded=loaded, start_mode=start_mode, poll_monitor=False)


async def settle(pilot, condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.05)
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


@SIZES
def test_setup_screen(snap_compare, size, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RUN_KEY", raising=False)

    async def ready(pilot):
        await settle(pilot, lambda: getattr(pilot.app.screen, "_n_examples", None) is not None)

    assert snap_compare(W2cApp(None), terminal_size=size, run_before=ready)


@SIZES
def test_monitor_screen(snap_compare, size, workdir):
    app = make_app(workdir, start_mode="monitor")
    app.workspace.extra_monitored.append(MonitoredSession("demo", "2026-11 llama sweep / 3f9a1c0d2b7e4a55 · llama-3.3-70b-instruct", "", FrozenState()))

    async def ready(pilot):
        await settle(pilot, lambda: pilot.app.screen.current_panel() is not None)

    assert snap_compare(app, terminal_size=size, run_before=ready)


@SIZES
def test_sessions_screen(snap_compare, size, workdir):
    async def ready(pilot):
        await settle(pilot, lambda: len(pilot.app.screen.sessions) == 2)

    assert snap_compare(make_app(workdir), terminal_size=size, run_before=ready)


def open_first_session(kind: str):
    async def ready(pilot):
        await settle(pilot, lambda: len(pilot.app.screen.sessions) == 2)
        await pilot.press("enter")
        await settle(pilot, lambda: getattr(pilot.app.screen, "data", None) is not None and pilot.app.screen.info is not None)
        if kind == "examples":
            await pilot.press("x")
        if kind == "trace":
            await pilot.press("x", "down", "down", "enter")
            await settle(pilot, lambda: pilot.app.screen.query(".pipeline-section"))
        await pilot.pause()

    return ready


@SIZES
def test_session_metrics(snap_compare, size, workdir):
    assert snap_compare(make_app(workdir), terminal_size=size, run_before=open_first_session("metrics"))


@SIZES
def test_session_examples(snap_compare, size, workdir):
    assert snap_compare(make_app(workdir), terminal_size=size, run_before=open_first_session("examples"))


@SIZES
def test_trace_screen(snap_compare, size, workdir):
    assert snap_compare(make_app(workdir), terminal_size=size, run_before=open_first_session("trace"))


@SIZES
def test_compare_screen(snap_compare, size, workdir):
    sessions = sorted(str(p) for p in (workdir / "runs" / "synthetic" / "sessions").iterdir())

    async def ready(pilot):
        await settle(pilot, lambda: len(pilot.app.screen.sessions) == 2)
        pilot.app.screen.choose(sessions[0], sessions[1])
        await settle(pilot, lambda: pilot.app.screen.data_b is not None)

    assert snap_compare(make_app(workdir, start_mode="compare"), terminal_size=size, run_before=ready)


def test_usage_widgets(snap_compare):
    """The Monitor's usage line and the Session view's estimate-beside-actual block (issue 15)."""
    from textual.app import App
    from textual.widgets import Static

    from w2c_tui.store.usage import Price
    from w2c_tui.tui.widgets.usage_line import UsageLine
    from w2c_tui.tui.widgets.usage_summary import usage_markup

    usage = {
        "total": {"prompt_tokens": 1_240_000, "completion_tokens": 84_000, "requests": 1834, "requests_without_usage": 3},
        "by_model": {
            "llama-3.3-70b-instruct": {"role": "target", "prompt_tokens": 900_000, "completion_tokens": 60_000,
                                       "requests": 1400, "requests_without_usage": 3},
            "gpt-oss-120b": {"role": "judge", "prompt_tokens": 340_000, "completion_tokens": 24_000,
                             "requests": 434, "requests_without_usage": 0},
        },
    }
    metrics = {"mcq": {"usage": usage["total"], "usage_by_model": usage["by_model"], "elapsed_seconds": 312.0,
                       "cost": {"input": 0.54, "output": 0.036, "total": 0.576, "lower_bound": True}}}
    manifest = {"estimate": {"requests": 1800, "prompt_tokens": 1_300_000, "completion_tokens": 80_000,
                             "completion_tokens_max": 400_000, "seconds": 290.0, "cost": {"typical": 0.6, "at_most": 0.8}}}

    class UsageApp(App):
        def compose(self):
            yield UsageLine()
            yield Static(usage_markup(metrics, manifest))

        def on_mount(self):
            self.query_one(UsageLine).update_snapshot({"usage": usage}, {"llama-3.3-70b-instruct": Price(0.6, 0.6)})

    assert snap_compare(UsageApp(), terminal_size=(100, 8))
