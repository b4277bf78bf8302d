"""Saving never loses what it did not understand (issue 17, item 1).

Save edits config.toml in place and writes only the values changed in the form; a file that
could not be loaded is never written over. Each case presses save (in the app, or calls the
save function) and diffs the file byte for byte.
"""

from __future__ import annotations

import difflib
import stat
from pathlib import Path

import pytest

from w2c_tui.config import ConfigError, Settings, load_config, save_settings
from w2c_tui.tui.app import W2cApp
from w2c_tui.tui.screens.setup import SetupScreen

from test_tui_flow import SIZE, wait_for

SUITE_CONFIG = Path(__file__).parent / "fixtures" / "suite_config.toml"

# Everything the data-loss report lost: a provider with its token, workdir_base, api_seed,
# both models, n_per_label, MLflow off; plus comments and keys w2c-tui does not interpret.
VALID = """\
# my lab's configuration -- keep these notes
[run]
workdir_base = "./my-runs"   # on the big disk
api_seed = 99

[providers.lab]
base_url = "http://127.0.0.1:9/v1"
token = "lab-token-in-file"
max_concurrency = 4

[models]
target_model = ["model-a"]
judge_model = "judge-b"

[data]
n_per_label = 7 # small on purpose

[mlflow]
enabled = false

[debug]
my_own_note = "w2c-tui does not read this"

[available_models]
lab = ["model-a", "judge-b"]
"""

# A valid file turned into one that does not load, one way each.
BROKEN = {
    "misspelt key": VALID.replace("api_seed = 99", "api_sed = 99"),
    "wrong type": VALID.replace("n_per_label = 7", 'n_per_label = "seven"'),
    "out of range": VALID.replace("max_concurrency = 4", "max_concurrency = 0"),
    "unknown table": VALID + "\n[mystery]\nanswer = 42\n",
    "toml syntax error": VALID.replace('judge_model = "judge-b"', 'judge_model = "judge-b'),
}


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("RUN_KEY", "TOKEN_LAB", "TOKEN_JRC", "TOKEN_GEMINI"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def changed_lines(before: str, after: str) -> list[str]:
    """The lines removed ('-') and added ('+') between two texts."""
    diff = difflib.ndiff(before.splitlines(), after.splitlines())
    return [line for line in diff if line[:1] in "-+"]


def messages(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def press_save(app, pilot, *, change: dict[str, str] | None = None) -> None:
    """Open Setup, type the changes into the form, press ctrl+s and wait for the answer."""
    await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
    for widget_id, value in (change or {}).items():
        app.screen.query_one(f"#{widget_id}").value = value
    await pilot.pause(0.1)
    await pilot.press("ctrl+s")
    await wait_for(pilot, lambda: any("aved" in m for m in messages(app)), timeout=15)


# -- a file that does not load is never written over -----------------------------------------
@pytest.mark.parametrize("case", sorted(BROKEN))
async def test_the_app_never_saves_over_a_config_it_could_not_load(folder, case):
    path = folder / "config.toml"
    path.write_text(BROKEN[case])
    before = path.read_bytes()
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        assert app.workspace.config_error
        await press_save(app, pilot, change={"n-per-label": "3"})
        refusal = next(m for m in messages(app) if "aved" in m)
    assert path.read_bytes() == before
    assert refusal.startswith("Not saved") and "config.toml" in refusal and "nothing was written" in refusal
    assert app.workspace.config_error in refusal  # the reason the file did not load


async def test_refused_too_when_the_broken_config_was_found_in_the_folder(folder):
    path = folder / "config.toml"
    path.write_text(BROKEN["misspelt key"])
    before = path.read_bytes()
    app = W2cApp()  # no --config: ./config.toml is found, fails, and the app opens on defaults
    async with app.run_test(size=SIZE) as pilot:
        await press_save(app, pilot)
        assert any(m.startswith("Not saved") and "api_sed" in m for m in messages(app))
    assert path.read_bytes() == before


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_save_function_refuses_a_file_that_does_not_load(folder, case):
    path = folder / "config.toml"
    path.write_text(BROKEN[case])
    before = path.read_bytes()
    for loaded_as in (None, Settings()):
        with pytest.raises(ConfigError, match="was not saved"):
            save_settings(Settings(), path, loaded_as=loaded_as)
        assert path.read_bytes() == before
    assert not (folder / "config.toml.tmp").exists()


def test_a_file_broken_after_loading_is_not_saved_over(folder):
    path = folder / "config.toml"
    path.write_text(VALID)
    loaded = load_config(path, environ={})
    path.write_text(BROKEN["wrong type"])  # edited by hand while the app was open
    changed = loaded.settings.model_copy(deep=True)
    changed.data.n_per_label = 3
    with pytest.raises(ConfigError, match="does not load"):
        save_settings(changed, path, loaded_as=loaded.settings)
    assert path.read_text() == BROKEN["wrong type"]


# -- a valid file: only what changed -----------------------------------------------------------
@pytest.mark.parametrize("source", ["valid", "earlier suite"])
async def test_saving_an_unchanged_form_leaves_the_file_byte_identical(folder, source):
    path = folder / "config.toml"
    path.write_bytes(VALID.encode() if source == "valid" else SUITE_CONFIG.read_bytes())
    before = path.read_bytes()
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        assert not app.workspace.config_error
        await press_save(app, pilot)
        assert any(m.startswith("Saved") for m in messages(app))
    assert path.read_bytes() == before


async def test_one_value_changed_in_the_form_changes_one_line(folder):
    path = folder / "config.toml"
    path.write_text(VALID)
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        await press_save(app, pilot, change={"n-per-label": "12"})
        # a second save with nothing more changed writes nothing more
        saved_once = path.read_text()
        app._notifications.clear()
        await press_save(app, pilot)
        assert path.read_text() == saved_once
    assert changed_lines(VALID, path.read_text()) == [
        "- n_per_label = 7 # small on purpose",
        "+ n_per_label = 12 # small on purpose",
    ]


def test_save_function_changes_only_the_changed_line(folder):
    path = folder / "config.toml"
    path.write_text(VALID)
    loaded = load_config(path, environ={"TOKEN_LAB": "from-dotenv"})
    changed = loaded.settings.model_copy(deep=True)
    changed.run.api_seed = 5
    save_settings(changed, path, loaded_as=loaded.settings)
    assert changed_lines(VALID, path.read_text()) == ["- api_seed = 99", "+ api_seed = 5"]


def test_a_value_the_file_did_not_have_is_added_and_nothing_else_moves(folder):
    path = folder / "config.toml"
    path.write_text(VALID)
    loaded = load_config(path, environ={})
    changed = loaded.settings.model_copy(deep=True)
    changed.http.max_retries = 7
    save_settings(changed, path, loaded_as=loaded.settings)
    lines = changed_lines(VALID, path.read_text())
    assert all(line.startswith("+") for line in lines), lines
    assert "+ max_retries = 7" in lines
    assert load_config(path, environ={}).settings.http.max_retries == 7


def test_tokens_are_never_written_and_the_files_own_token_stays(folder):
    path = folder / "config.toml"
    path.write_text(VALID.replace('token = "lab-token-in-file"\n', ""))
    original = path.read_text()
    loaded = load_config(path, environ={"TOKEN_LAB": "secret-from-dotenv"})
    changed = loaded.settings.model_copy(deep=True)
    changed.providers["lab"].max_concurrency = 8
    changed.providers["lab"].token = "another-secret"
    save_settings(changed, path, loaded_as=loaded.settings)
    text = path.read_text()
    assert "secret" not in text and "token" not in text
    assert changed_lines(original, text) == ["- max_concurrency = 4", "+ max_concurrency = 8"]

    path.write_text(VALID)  # a token the user put in the file is theirs: it stays
    loaded = load_config(path, environ={})
    changed = loaded.settings.model_copy(deep=True)
    changed.providers["lab"].token = ""
    changed.data.n_per_label = 9
    save_settings(changed, path, loaded_as=loaded.settings)
    assert 'token = "lab-token-in-file"' in path.read_text()


def test_a_provider_added_elsewhere_after_loading_is_kept(folder):
    path = folder / "config.toml"
    path.write_text(VALID)
    loaded = load_config(path, environ={})
    extra = '\n[providers.other]\nbase_url = "http://127.0.0.1:8/v1"\n'
    path.write_text(VALID + extra)
    changed = loaded.settings.model_copy(deep=True)
    changed.data.n_per_label = 9
    save_settings(changed, path, loaded_as=loaded.settings)
    text = path.read_text()
    assert "[providers.other]" in text and "[providers.lab]" in text
    assert changed_lines(VALID + extra, text) == [
        "- n_per_label = 7 # small on purpose",
        "+ n_per_label = 9 # small on purpose",
    ]


def test_saving_keeps_the_files_permissions(folder):
    path = folder / "config.toml"
    path.write_text(VALID)
    path.chmod(0o600)
    loaded = load_config(path, environ={})
    changed = loaded.settings.model_copy(deep=True)
    changed.data.n_per_label = 9
    save_settings(changed, path, loaded_as=loaded.settings)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# -- providers ---------------------------------------------------------------------------------
def test_a_renamed_provider_keeps_its_table_with_the_token_in_the_file(folder):
    path = folder / "config.toml"
    path.write_text(VALID)
    loaded = load_config(path, environ={})
    changed = loaded.settings.model_copy(deep=True)
    changed.providers = {"lab2": changed.providers["lab"]}
    save_settings(changed, path, loaded_as=loaded.settings, renamed={"lab": "lab2"})
    text = path.read_text()
    assert "[providers.lab]" not in text and "[providers.lab2]" in text
    assert 'token = "lab-token-in-file"' in text.split("[providers.lab2]")[1]
    reloaded = load_config(path, environ={})
    assert reloaded.settings.providers["lab2"].token == "lab-token-in-file"
    assert reloaded.settings.providers["lab2"].max_concurrency == 4


async def test_renaming_a_provider_in_the_app_keeps_its_token(folder):
    from w2c_tui.tui.widgets.provider_list import ProviderList

    path = folder / "config.toml"
    path.write_text(VALID)
    app = W2cApp("config.toml")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        app.screen.query_one(ProviderList).focus()
        await pilot.press("e")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "ProviderEditor")
        app.screen.query_one("#p-name").value = "lab2"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen))
        assert list(app.workspace.loaded.settings.providers) == ["lab2"]
        await press_save(app, pilot)
    reloaded = load_config(path, environ={})
    assert list(reloaded.settings.providers) == ["lab2"]
    assert reloaded.settings.providers["lab2"].token == "lab-token-in-file"
    assert "# my lab's configuration" in path.read_text() and 'my_own_note = "w2c-tui' in path.read_text()


def test_a_removed_provider_is_removed_and_nothing_else(folder):
    path = folder / "config.toml"
    two = VALID + '\n[providers.other]\nbase_url = "http://127.0.0.1:8/v1"\n'
    path.write_text(two)
    loaded = load_config(path, environ={})
    changed = loaded.settings.model_copy(deep=True)
    del changed.providers["other"]
    save_settings(changed, path, loaded_as=loaded.settings)
    assert changed_lines(two, path.read_text()) == ["- [providers.other]", '- base_url = "http://127.0.0.1:8/v1"']


def test_an_undecodable_file_is_not_saved_over(folder):
    path = folder / "config.toml"
    path.write_bytes(VALID.encode() + b"\n# caf\xe9\n")
    before = path.read_bytes()
    with pytest.raises(ConfigError, match="was not saved: it cannot be read"):
        save_settings(Settings(), path)
    assert path.read_bytes() == before
