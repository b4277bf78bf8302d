"""Configuration: the settings model, loading (TOML + .env + environment), saving, fingerprint."""

from typing import TYPE_CHECKING

from w2c_tui.config.errors import ConfigError
from w2c_tui.config.fingerprint import canonical_json, fingerprint_payload, session_fingerprint
from w2c_tui.config.load import LoadedConfig, load_config, token_variable, validate
from w2c_tui.config.schema import Settings, StabilitySweep

if TYPE_CHECKING:
    from w2c_tui.config.save import save_settings

__all__ = [
    "ConfigError",
    "LoadedConfig",
    "Settings",
    "StabilitySweep",
    "canonical_json",
    "fingerprint_payload",
    "load_config",
    "save_settings",
    "session_fingerprint",
    "token_variable",
    "validate",
]


def __getattr__(name: str):
    # Saving (and its tomlkit) loads on first use: the app's first frame only reads config.toml.
    if name == "save_settings":
        from w2c_tui.config.save import save_settings

        return save_settings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
