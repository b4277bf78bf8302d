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


# The earlier suite's own [stability] section (its w2c_config defaults, all three methods on).
EARLIER_SUITE_STABILITY = """
[stability]
do_mcq_stability = true
mcq_stability_n_runs = 10
mcq_stability_temperatures = [0.0, 0.3, 0.7]
do_llm_judge_stability = true
llm_judge_stability_n_runs = 4
target_stability_temperatures = [0.0, 0.7]
do_mcq_lp_stability = true
mcq_lp_stability_n_runs = 5
mcq_lp_stability_temperature = 0.0
"""


def test_earlier_suite_stability_keys_become_sweeps(tmp_path):
    text = (FIXTURES / "suite_config.toml").read_text() + EARLIER_SUITE_STABILITY
    loaded = load_config(write(tmp_path, text), environ={})
    stability = loaded.settings.stability
    assert stability.enabled
    assert [(s.method, s.k, s.temperatures) for s in stability.sweeps] == [
        ("mcq", 10, [0.0, 0.3, 0.7]),
        ("llm_judge", 4, [0.0, 0.7]),
        ("mcq_logprob", 5, [0.0]),
    ]


def test_earlier_suite_example_config_with_stability_off_loads(tmp_path):
    """config.example.toml of the earlier suite: every do_*_stability false -> no sweep."""
    text = (FIXTURES / "suite_config.toml").read_text() + EARLIER_SUITE_STABILITY.replace("= true", "= false")
    text = text.replace('[available_models]\njrc = ["llama-3.3-70b-instruct", "gpt-oss-120b"]', "[available_models]\nitems = []")
    stability = load_config(write(tmp_path, text), environ={}).settings.stability
    assert not stability.enabled and stability.sweeps == []


def test_earlier_suite_stability_keys_are_checked_like_ours(tmp_path):
    text = EARLIER_SUITE_STABILITY.replace("mcq_stability_n_runs = 10", "mcq_stability_n_runs = 0")
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text), environ={})
    assert "stability.sweeps.0.k" in str(info.value) and "greater than or equal to 1" in str(info.value)


def test_names_are_stripped_and_delimiters_kept(tmp_path):
    text = (
        '[models]\ntarget_model = [" m1 ", "m2 "]\njudge_model = " judge "\nforce_target_delimiter = "\\n"\n'
        '[providers.x]\nbase_url = " https://h.example/v1/ "\ntoken = " tok-12345678 "\nmodel_prefixes = [" gpt- "]\n'
        '[run]\nrun_key = " key "\n'
    )
    s = load_config(write(tmp_path, text), environ={}).settings
    assert s.models.target_models == ["m1", "m2"] and s.models.judge_model == "judge"
    assert s.models.force_target_delimiter == "\n"
    x = s.providers["x"]
    assert (x.base_url, x.token, x.model_prefixes) == ("https://h.example/v1", "tok-12345678", ["gpt-"])
    assert s.run.run_key == "key"


def test_a_malformed_token_is_never_echoed(tmp_path):
    path = write(tmp_path, '[providers.x]\nbase_url = "https://h.example/v1"\ntoken = "sk-SECRET-\\u2014-value"\n')
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert "providers.x.token" in str(info.value) and "SECRET" not in str(info.value)


@pytest.mark.parametrize(
    "url, token, clean",
    [
        ("https://user:pw-secret-1@h.example/v1", "pw-secret-1", "https://h.example/v1"),
        ("https://tok-secret-2@h.example/v1", "tok-secret-2", "https://h.example/v1"),
        ("https://h.example/v1?api_key=qk-secret-3", "qk-secret-3", "https://h.example/v1"),
        ("https://h.example/v1?api-version=2024&key=qk-secret-4", "qk-secret-4", "https://h.example/v1?api-version=2024"),
    ],
)
def test_a_credential_in_base_url_becomes_the_token_with_a_warning(tmp_path, url, token, clean):
    loaded = load_config(write(tmp_path, f'[providers.x]\nbase_url = "{url}"\n'), environ={})
    provider = loaded.settings.providers["x"]
    assert (provider.base_url, provider.token) == (clean, token)
    assert token in loaded.secrets
    [warning] = loaded.warnings
    assert "base_url carries a credential" in warning and "TOKEN_X" in warning and token not in warning


def test_a_credential_in_base_url_beside_a_token_is_dropped_from_the_url(tmp_path):
    text = '[providers.x]\nbase_url = "https://h.example/v1?token=qk-secret-5"\ntoken = "real-token-123"\n'
    loaded = load_config(write(tmp_path, text), environ={})
    provider = loaded.settings.providers["x"]
    assert (provider.base_url, provider.token) == ("https://h.example/v1", "real-token-123")
    assert "qk-secret-5" in loaded.secrets and "ignored it" in loaded.warnings[0]
