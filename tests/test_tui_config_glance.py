"""The first frame reads config.toml raw (tui/config_glance.py) and validates it right after
(issue 27.7): the glance says what the loaded settings say, pydantic is not imported before the
first frame, and a bad file still reaches the user as one readable line naming file, line and key."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from w2c_tui.config import LoadedConfig, load_config
from w2c_tui.config.schema import Settings
from w2c_tui.tui.app import W2cApp
from w2c_tui.tui.config_glance import glance_of, read_glance
from w2c_tui.tui.screens.setup import SetupScreen

from configs import write_config


async def wait_for(pilot, condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.05)


def test_the_glance_of_no_file_is_the_schema_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert read_glance(None, environ={}) == glance_of(LoadedConfig(Settings(), None, tmp_path, {}))


def test_the_glance_of_a_file_is_what_loading_it_gives(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_config(
        tmp_path,
        "http://127.0.0.1:9/v1",
        run={"run_key": " day2 "},
        models={"target_model": [" m1", "m2 "], "judge_model": "j", "template_family": "LLAMA3"},
        data={"eval_data_path": "data/x.jsonl", "n_per_label": 7, "subsample_seed": 3, "use_full_dataset": True},
    )
    loaded = load_config(path, environ={"TOKEN_SIM": "t"})
    glance = read_glance(path, environ={})
    assert glance == glance_of(loaded)
    assert glance.providers == ("sim",) and glance.target == "m1, m2" and glance.run_key == "day2"
    assert read_glance("config.toml", environ={"RUN_KEY": "other"}).run_key == "other"  # as load_config applies it


def test_a_file_that_does_not_parse_glances_as_empty(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config.toml").write_text("[models\n")
    glance = read_glance(None, environ={})
    assert glance.embedded and glance.path == tmp_path / "config.toml"
    assert read_glance("missing.toml", environ={}).embedded


def test_pydantic_is_not_imported_before_the_first_frame(tmp_path):
    """In a fresh interpreter: the modules loaded when Setup's first frame is drawn."""
    write_config(tmp_path, "http://127.0.0.1:9/v1", models={"target_model": "m"})
    script = r"""
import sys
from textual.app import App
seen = []
display = App._display
def first(self, screen, renderable):
    if renderable is not None and not seen and type(screen).__name__ == "SetupScreen":
        seen.append(sorted(m for m in sys.modules if m.split(".")[0] in ("pydantic", "pydantic_core", "dotenv", "tomlkit")
                           or m.startswith(("w2c_tui.config", "w2c_tui.sim", "w2c_tui.api", "w2c_tui.engine"))))
    display(self, screen, renderable)
App._display = first
async def done(pilot):
    await pilot.pause()
    print(seen)
    pilot.app.exit()
from w2c_tui.tui.app import W2cApp
W2cApp("config.toml").run(headless=True, size=(100, 30), auto_pilot=done)
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[[]]"


async def test_a_bad_config_is_one_notification_naming_file_line_and_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("config.toml").write_text('[run]\nworkdir_base = "./workdir"\napi_sed = 42\n')
    app = W2cApp("config.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and app.screen._built)
        await pilot.pause()
        errors = [n for n in app._notifications if n.severity == "error"]
        assert len(errors) == 1
        message = errors[0].message
        assert "\n" not in message and "config.toml" in message and "config.toml:3" in message and "api_sed" in message
        shown = str(app.screen.query_one("#config-error").render())
        assert "could not be used" in shown and "api_sed" in shown
        assert app.screen.query_one("#config-error").display
        assert app.workspace.loaded.path is None  # opened on defaults
        assert app.screen.query_one("#target").value == "sim-small"


async def test_a_good_config_fills_the_form_and_the_badge(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOKEN_SIM", "secret")
    write_config(tmp_path, "http://127.0.0.1:9/v1", models={"target_model": "m", "judge_model": "j"})
    app = W2cApp("config.toml")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and app.screen._built)
        await pilot.pause()
        assert not app.workspace.config_error
        assert not [n for n in app._notifications if n.severity == "error"]
        assert app.source_badge == "config.toml · sim"
        assert not app.screen.query_one("#setup-notice").display
        assert not app.screen.query_one("#config-error").display
        assert app.screen.query_one("#target").value == "m"
