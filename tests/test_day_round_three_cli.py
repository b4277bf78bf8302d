"""Issue 36, the CLI's part: exits that tell the truth, messages that match the numbers.

Each test replays what a user met in a day of CLI use, against a standalone `w2c-tui sim`
(the `sim` fixture) or a session written by a launch in the test.
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from configs import write_config
from w2c_tui.cli import main


def sim_config(folder, sim, **tables):
    tables.setdefault("data", {"n_per_label": 2})
    tables.setdefault("mlflow", {"enabled": False})
    return write_config(folder, sim.base_url, **tables)


# -- 1. an interrupt never exits 0, and names every model that did not run -------------------


def test_ctrl_c_as_the_first_session_ends_names_the_second_and_exits_1(sim, tmp_path, capsys, monkeypatch):
    from w2c_tui.engine.launch import Launch

    run_session = Launch._run_session

    async def then_ctrl_c(self, plan, providers):
        outcome = await run_session(self, plan, providers)
        os.kill(os.getpid(), signal.SIGINT)  # the headless run's own handler takes it
        await asyncio.sleep(0.05)
        return outcome

    monkeypatch.setattr(Launch, "_run_session", then_ctrl_c)
    config = sim_config(tmp_path, sim)
    code = main(["--config", str(config), "run", "--model", "ma", "--model", "mb", "--only", "mcq", "--run-key", "k1"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "mb  session" in out and "not started" in out
    assert "mb not started: stopped by the user" in err
    assert "w2c-tui --config" in err and "run --run-key k1 --model ma --model mb --only mcq" in err
    # The resume it prints finishes the run: exit 0, both sessions.
    monkeypatch.setattr(Launch, "_run_session", run_session)
    assert main(["--config", str(config), "run", "--run-key", "k1", "--model", "ma", "--model", "mb", "--only", "mcq"]) == 0
    out, _ = capsys.readouterr()
    assert out.count("/sessions/") == 2
