"""Configuration: loading, precedence, errors that point at file and line, save, fingerprint."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tomlkit

from w2c_tui.config import (
    ConfigError,
    Settings,
    fingerprint_payload,
    load_config,
    save_settings,
    session_fingerprint,
)

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"


def write(tmp_path: Path, text: str, name: str = "config.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_no_file_gives_embedded_defaults(tmp_path):
    loaded = load_config(cwd=tmp_path, environ={})
    assert loaded.path is None
    assert loaded.embedded
    assert loaded.settings.data.eval_data_path == ""
    assert loaded.workdir == (tmp_path / "workdir").resolve()


def test_example_config_loads_and_documents_every_key():
    loaded = load_config(ROOT / "config.example.toml", environ={})
    assert set(loaded.settings.providers) == {"jrc", "gemini"}
    lines = (ROOT / "config.example.toml").read_text().splitlines()
    documented: set[str] = set()
    for index, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "[")):
            continue
        key = stripped.split("=")[0].strip()
        # A key is documented by a comment in the block of lines directly above it.
        above = index - 1
        while above >= 0 and lines[above].strip() and not lines[above].strip().startswith(("#", "[")):
            above -= 1
        if above >= 0 and lines[above].strip().startswith("#"):
            documented.add(key)
    schema_keys = {
        key
        for section in ("run", "http", "models", "data", "pipelines", "stability", "mlflow")
        for key in Settings.model_fields[section].annotation.model_fields
    }
    schema_keys |= set(Settings.model_fields["providers"].annotation.__args__[1].model_fields)
    schema_keys |= {"method", "k", "temperatures"}
    schema_keys -= {"sweeps"}  # written as [[stability.sweeps]] tables
    assert schema_keys <= documented, sorted(schema_keys - documented)


def test_earlier_suite_config_loads_unchanged(tmp_path):
    path = tmp_path / "config.toml"
    shutil.copy(FIXTURES / "suite_config.toml", path)
    loaded = load_config(path, environ={"TOKEN_JRC": "jrc-secret"})
    s = loaded.settings
    assert s.providers["jrc"].token == "jrc-secret"
    assert s.providers["gemini"].model_prefixes == ["gemini-"]
    assert s.models.target_models == ["llama-3.3-70b-instruct"]
    assert s.pipelines.enabled() == ["llm_judge"]
    assert s.http.retry_sleep_seconds == 10.0
    assert s.debug == {"verbose": True, "max_examples": 0}
    assert s.available_models["gemini"] == ["gemini-2.5-pro", "gemini-2.0-flash"]
    # Relative paths mean what they meant to the earlier suite: relative to the config's folder.
    assert loaded.resolve_path(s.data.eval_data_path) == tmp_path / "When2Call/data/test/when2call_test_llm_judge.jsonl"


def test_precedence_file_then_dotenv_then_environment(tmp_path):
    path = write(tmp_path, '[run]\nrun_key = "from-file"\n[providers.jrc]\nbase_url = "https://x.example/v1"\n')
    (tmp_path / ".env").write_text("RUN_KEY=from-dotenv\nTOKEN_JRC=dotenv-token\n")
    loaded = load_config(path, environ={})
    assert loaded.settings.run.run_key == "from-dotenv"
    assert loaded.settings.providers["jrc"].token == "dotenv-token"
    loaded = load_config(path, environ={"RUN_KEY": "from-env", "TOKEN_JRC": "env-token"})
    assert loaded.settings.run.run_key == "from-env"
    assert loaded.settings.providers["jrc"].token == "env-token"


def test_token_sources_in_order(tmp_path):
    path = write(
        tmp_path,
        '[providers.a]\nbase_url = "https://a/v1"\ntoken = "inline"\n'
        '[providers.b]\nbase_url = "https://b/v1"\ntoken_env = "MY_B_KEY"\n'
        '[providers.my-gw]\nbase_url = "https://c/v1"\n',
    )
    loaded = load_config(path, environ={"TOKEN_A": "ignored", "MY_B_KEY": "bee", "TOKEN_MY_GW": "gw"})
    p = loaded.settings.providers
    assert (p["a"].token, p["b"].token, p["my-gw"].token) == ("inline", "bee", "gw")
    assert "inline" in loaded.secrets and "bee" in loaded.secrets


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[run\napi_seed = 1\n", ["config.toml", "invalid TOML", "line 1"]),
        ('[models]\ntarget_modle = "x"\n', ["config.toml:2", "unknown key 'target_modle'", "did you mean 'target_model'"]),
        ("[run]\napi_seed = 'abc'\n", ["config.toml:2", "run.api_seed", "integer"]),
        ('[providers.jrc]\nbse_url = "http://x"\n', ["config.toml:2", "did you mean 'base_url'"]),
        ("[http]\nmax_retries = -1\n", ["config.toml:2", "http.max_retries"]),
        ('[models]\ntemplate_family = "gpt2"\n', ["config.toml:2", "template_family", "harmony"]),
        ('[[stability.sweeps]]\nmethod = "mcq"\nkk = 3\n', ["config.toml:3", "did you mean 'k'"]),
        ('[stability]\nenabld = true\n', ["config.toml:2", "did you mean 'enabled'"]),
        ('[providers.jrc]\nbase_url = "ftp://x"\n', ["config.toml:2", "http://"]),
        ('[colours]\nx = 1\n', ["unknown key 'colours'"]),
    ],
)
def test_errors_name_file_line_and_fix(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    message = str(info.value)
    assert "\n" not in message
    for part in expected:
        assert part in message, message


def test_missing_config_file_is_clear(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml", environ={})


def test_save_keeps_comments_order_and_never_writes_tokens(tmp_path):
    original = (
        "# my notes\n[models]\n# the model I test\ntarget_model = \"a\"  # trailing note\n"
        "judge_model = \"j\"\n\n[providers.jrc]\nbase_url = \"https://x/v1\"\n"
    )
    path = write(tmp_path, original)
    loaded = load_config(path, environ={"TOKEN_JRC": "sekrit"})
    loaded.settings.models.target_model = "b"
    loaded.settings.pipelines.mcq_temperature = 0.5
    save_settings(loaded.settings, path)
    text = path.read_text()
    assert "# my notes" in text and "# the model I test" in text and "# trailing note" in text
    assert 'target_model = "b"' in text
    assert text.index("[models]") < text.index("[providers.jrc]")
    assert "sekrit" not in text
    assert "mcq_temperature = 0.5" in text
    reloaded = load_config(path, environ={})
    assert reloaded.settings.models.target_model == "b"
    assert reloaded.settings.pipelines.mcq_temperature == 0.5
    tomlkit.parse(text)


def test_save_removes_a_deleted_provider_and_keeps_the_others(tmp_path):
    original = (
        '[models]\ntarget_model = "a"\n\n# our gateway\n[providers.jrc]\nbase_url = "https://x/v1"\ndefault = true\n\n'
        '[providers.gemini]\nbase_url = "https://g/v1"\nmodel_prefixes = ["gemini-"]\n\n[http]\nmax_retries = 3\n'
    )
    path = write(tmp_path, original)
    loaded = load_config(path, environ={})
    del loaded.settings.providers["gemini"]
    save_settings(loaded.settings, path)
    text = path.read_text()
    assert "gemini" not in text and "[providers.jrc]" in text and "# our gateway" in text
    assert "max_retries = 3" in text
    assert list(load_config(path, environ={}).settings.providers) == ["jrc"]
    del loaded.settings.providers["jrc"]
    save_settings(loaded.settings, path)
    assert load_config(path, environ={}).settings.providers == {}


def _fp(settings: Settings, model: str = "m") -> str:
    return session_fingerprint(fingerprint_payload(settings, model, "sha", "plain"))


def test_fingerprint_ignores_operational_settings():
    base = Settings()
    other = Settings()
    other.http.max_retries = 9
    other.http.timeout_seconds = 5
    other.mlflow.enabled = False
    other.run.workdir_base = "/elsewhere"
    other.pipelines.do_mcq = False
    assert _fp(base) == _fp(other)
    assert len(_fp(base)) == 16 and int(_fp(base), 16) >= 0


@pytest.mark.parametrize(
    "change",
    [
        lambda s: setattr(s.run, "api_seed", 7),
        lambda s: setattr(s.data, "n_per_label", 10),
        lambda s: setattr(s.data, "subsample_seed", 1),
        lambda s: setattr(s.models, "judge_model", "other"),
        lambda s: setattr(s.models, "force_target_delimiter", " "),
        lambda s: setattr(s.pipelines, "mcq_temperature", 0.7),
    ],
)
def test_fingerprint_changes_with_prediction_settings(change):
    base = Settings()
    other = Settings()
    change(other)
    assert _fp(base) != _fp(other)


def test_fingerprint_differs_per_target_model():
    assert _fp(Settings(), "a") != _fp(Settings(), "b")
