"""Load settings: built-in defaults < config.toml < .env < environment.

Tokens are resolved here and live only in memory: `token` in the file, else the variable
named by `token_env`, else `TOKEN_<NAME>`. `RUN_KEY` overrides `[run] run_key`.
"""

from __future__ import annotations

import io
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from dotenv import dotenv_values
from pydantic import BaseModel, ValidationError

from w2c_tui.config.errors import ConfigError, nearest, where
from w2c_tui.config.schema import ProviderSettings, Settings, check_header_token
from w2c_tui.redaction import is_secret_key, redact_url, register_secrets, split_url_credentials

DEFAULT_CONFIG_NAME = "config.toml"
# MLflow reads these from the environment (a .env file counts too, see tracking.export_mlflow_environment).
MLFLOW_SECRET_VARIABLES = ("MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN")


@dataclass
class LoadedConfig:
    settings: Settings
    path: Path | None  # None: embedded defaults, no file
    base_dir: Path  # relative paths in the file are relative to this folder
    environ: dict[str, str] = field(default_factory=dict, repr=False)
    # What the user should know but need not fix now (a credential moved out of a URL).
    warnings: list[str] = field(default_factory=list)
    # Credentials taken out of base URLs at load: secrets, though no longer in any URL.
    url_credentials: list[str] = field(default_factory=list, repr=False)

    @property
    def embedded(self) -> bool:
        """True when no provider is configured: the simulated endpoint stands in."""
        return not self.settings.providers

    def resolve_path(self, value: str) -> Path:
        path = Path(os.path.expanduser(value))
        return path if path.is_absolute() else (self.base_dir / path)

    @property
    def workdir(self) -> Path:
        return self.resolve_path(self.settings.run.workdir_base).resolve()

    @property
    def secrets(self) -> list[str]:
        """Provider tokens and MLflow credentials: never written, logged or shown."""
        tokens = [p.token for p in self.settings.providers.values() if p.token]
        # A credential in a base_url (https://user:password@host, ?api_key=...) is a secret too.
        tokens += self.url_credentials
        for provider in self.settings.providers.values():
            tokens += split_url_credentials(provider.base_url)[1]
        return tokens + [self.environ[k] for k in MLFLOW_SECRET_VARIABLES if self.environ.get(k)]


def token_variable(name: str, provider: ProviderSettings) -> str:
    """The environment variable a user should set for this provider's token."""
    return provider.token_env or f"TOKEN_{name.upper().replace('-', '_')}"


def load_config(
    path: str | Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> LoadedConfig:
    """Read `path` (or ./config.toml when it exists) and apply .env and environment.

    With no file at all the result holds the embedded defaults (no providers).
    """
    cwd = cwd or Path.cwd()
    if path is not None:
        config_path: Path | None = Path(path)
        if not config_path.exists():
            raise ConfigError(f"{config_path}: config file not found (copy config.example.toml to start one)")
        if config_path.is_dir():
            raise ConfigError(f"{config_path}: is a folder; --config takes a TOML file")
    else:
        candidate = cwd / DEFAULT_CONFIG_NAME
        config_path = candidate if candidate.is_file() else None

    text = ""
    raw: dict[str, Any] = {}
    if config_path is not None:
        try:
            text = config_path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{config_path}: {not_text(exc)}; save it as UTF-8 TOML") from None
        except OSError as exc:
            raise ConfigError(f"{config_path}: cannot be read ({exc.strerror or exc})") from None
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{config_path}: invalid TOML: {exc}; fix the syntax at that line") from None

    base_dir = (config_path.parent if config_path else cwd).resolve()
    env = _environment(base_dir, environ)
    settings = validate(raw, config_path, text)
    _apply_environment(settings, env, base_dir / ".env")
    remote = settings.mlflow.tracking_uri.startswith(("http://", "https://"))  # credentials go to a server
    if settings.mlflow.enabled and remote:
        _check_mlflow_credentials(env, base_dir / ".env")
    loaded = LoadedConfig(settings=settings, path=config_path, base_dir=base_dir, environ=env)
    _move_url_credentials(loaded)
    register_secrets(loaded.secrets)
    return loaded


def _environment(base_dir: Path, environ: Mapping[str, str] | None) -> dict[str, str]:
    """.env beside the config file, overridden by the real environment."""
    merged: dict[str, str] = {}
    dotenv = base_dir / ".env"
    if dotenv.is_file():
        try:
            text = dotenv.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{dotenv}: {not_text(exc)}; save it as UTF-8 lines of NAME=value") from None
        except OSError as exc:
            raise ConfigError(f"{dotenv}: cannot be read ({exc.strerror or exc})") from None
        merged.update({k: v for k, v in dotenv_values(stream=io.StringIO(text)).items() if v is not None})
    merged.update(os.environ if environ is None else environ)
    return merged


def validate(raw: dict[str, Any], path: Path | None = None, text: str = "") -> Settings:
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, path, text)) from None


def _explain(exc: ValidationError, path: Path | None, text: str) -> str:
    """The first pydantic error as one sentence with file, line and a fix."""
    # A misspelt key also makes its correct name "missing": name the typo first.
    error = min(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    loc = tuple(error["loc"])
    place = where(path, text, loc)
    if error["type"] == "extra_forbidden":
        key = str(loc[-1])
        suggestion = nearest(key, _valid_keys(loc[:-1]))
        hint = f"; did you mean '{suggestion}'?" if suggestion else "; remove it or check config.example.toml"
        return f"{place}: unknown key '{key}'{hint}"
    if error["type"] == "missing":
        return f"{place}: required key is missing; add it (see config.example.toml)"
    given = error.get("input")
    if isinstance(given, (dict, list)) or is_secret_key(loc[-1] if loc else None):
        shown = ""  # a token's value is never echoed, even a malformed one
    else:
        shown = f" (got {redact_url(given)!r})" if isinstance(given, str) else f" (got {given!r})"
    message = error["msg"].removeprefix("Value error, ")
    return f"{place}: {message}{shown}"


def _valid_keys(loc: tuple[Any, ...]) -> list[str]:
    """Field names valid at a location, for 'did you mean' suggestions."""
    model: type[BaseModel] | None = Settings
    for part in loc:
        if model is None:
            return []
        info = model.model_fields.get(str(part))
        if info is None:  # a dict key such as the <name> of providers.<name>
            continue
        model = _model_of(info.annotation)
    return list(model.model_fields) if model else []


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_of(arg)
        if found:
            return found
    return None


def not_text(exc: UnicodeDecodeError) -> str:
    """'is not UTF-8 text (byte 0xff at offset 3)' for a binary or mis-encoded file."""
    return f"is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"


def _apply_environment(settings: Settings, env: Mapping[str, str], dotenv: Path) -> None:
    run_key = env.get("RUN_KEY", "").strip()
    if run_key:
        settings.run.run_key = run_key
    for name, provider in settings.providers.items():
        if not provider.token:
            variable = token_variable(name, provider)
            token = env.get(variable, "").strip()
            problem = check_header_token(token)
            if problem:
                raise ConfigError(
                    f"{variable} (from {dotenv} or the environment): the token for provider '{name}' {problem}; "
                    "set it again, on one line"
                )
            provider.token = token


def _check_mlflow_credentials(env: Mapping[str, str], dotenv: Path) -> None:
    """MLflow sends these in HTTP headers: a value its client cannot send is refused at load, not at the first sync.

    The token goes into the header as it is; the user name and password are base64-encoded
    from latin-1 (Basic auth), so only characters outside latin-1 fail there.
    """
    token = env.get("MLFLOW_TRACKING_TOKEN", "")
    problem = check_header_token(token) if token else None
    if problem:
        raise ConfigError(f"MLFLOW_TRACKING_TOKEN (from {dotenv} or the environment) {problem}; set it again, on one line")
    for variable in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        value = env.get(variable, "")
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            raise ConfigError(
                f"{variable} (from {dotenv} or the environment) contains a character outside latin-1, which "
                "MLflow's HTTP client cannot send; set it again"
            ) from None


def _move_url_credentials(loaded: LoadedConfig) -> None:
    """A credential written into a base_url goes into the Authorization header instead.

    `http://TOKEN@host/v1`, `http://user:TOKEN@host/v1` and `…/v1?api_key=TOKEN` become the
    provider's token (unless one is set) and leave the URL, so no URL we write or show can
    carry it; the user is told once to move it to .env.
    """
    for name, provider in loaded.settings.providers.items():
        clean, found = split_url_credentials(provider.base_url)
        if not found:
            continue
        loaded.url_credentials.extend(found)
        variable = token_variable(name, provider)
        if provider.token:
            note = "ignored it (a token is set)"
        else:
            problem = check_header_token(found[-1])
            if problem:
                raise ConfigError(f"{where(loaded.path, '', ('providers', name, 'base_url'))}: the credential in the URL {problem}")
            provider.token = found[-1]
            note = "sent it as the Authorization header instead"
        provider.base_url = clean
        loaded.warnings.append(
            f"warning: [providers.{name}] base_url carries a credential; w2c-tui {note} and never writes it. "
            f"Move it to {variable} in .env and remove it from the URL"
        )
