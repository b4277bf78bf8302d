"""Write settings back to config.toml in place with tomlkit, touching only what changed.

The file is edited, never regenerated: only values that differ between the settings to save
and `loaded_as` (the settings as the file last gave them) are written, so unknown keys,
tables, comments and order stay as the user left them. A file that exists but does not load
is never written over (its content is not what the settings were read from). Tokens are
never written: they belong in .env.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path
from typing import Any, Mapping

import tomlkit

from w2c_tui.config.errors import ConfigError
from w2c_tui.config.load import validate
from w2c_tui.config.schema import ProviderSettings, Settings

# Per provider: a token read from .env lives only in memory; one already in the file is left there.
_PROVIDER_KEYS_NEVER_WRITTEN = {"token"}
_MISSING = object()
# The commented example: a link to the repository's config.example.toml, packaged with the module.
EXAMPLE_CONFIG = Path(__file__).with_name("config.example.toml")


def save_settings(
    settings: Settings,
    path: str | Path,
    *,
    loaded_as: Settings | None = None,
    renamed: Mapping[str, str] | None = None,
) -> Path:
    """Write into `path` the values of `settings` that differ from `loaded_as`.

    Without `loaded_as` the file's own settings are the baseline (defaults for a new file).
    `renamed` maps a provider's name in the file to its new name: its table moves with what
    the form does not show (a token written there, comments). Raises ConfigError, writing
    nothing, when the file exists but does not load.
    """
    path = Path(path)
    target = path.resolve() if path.is_symlink() else path  # edit the file a link points to, keep the link
    try:
        original = target.read_text(encoding="utf-8") if target.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} was not saved: it cannot be read ({exc})") from None
    if original is not None:
        on_disk = _settings_of(original, path)
        baseline = loaded_as if loaded_as is not None else on_disk
        document = tomlkit.parse(original)
    else:
        # A first save starts from config.example.toml, so every key comes with its comment;
        # the values that differ from the example's are then written over it as for any file.
        document, baseline = _example_document(path)
        renamed = _adopt_example_provider(baseline, settings, renamed)
    new, old = settings.model_dump(mode="json"), baseline.model_dump(mode="json")
    providers_new, providers_old = new.pop("providers"), old.pop("providers")
    _write_changes(document, new, old)
    _write_provider_changes(document, providers_new, providers_old, dict(renamed or {}))

    text = tomlkit.dumps(document)
    if text == original:
        return path  # nothing changed: the file is not touched at all
    _settings_of(text, path, checking_result=True)
    _replace(target, text)
    return path


def _example_document(path: Path) -> tuple[Any, Settings]:
    """config.example.toml (shipped beside this module) as a document and as settings.

    Without it (a damaged install) a first save writes a bare file, as before.
    """
    try:
        text = EXAMPLE_CONFIG.read_text(encoding="utf-8")
        return tomlkit.parse(text), validate(tomllib.loads(text), path, text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ConfigError):
        return tomlkit.document(), Settings()


def _adopt_example_provider(example: Settings, settings: Settings, renamed: Mapping[str, str] | None) -> dict[str, str]:
    """Let the user's first provider take over the example's first table, comments and all."""
    renamed = dict(renamed or {})
    unknown = [name for name in settings.providers if name not in example.providers]
    first = next(iter(example.providers), None)
    if unknown and first is not None and first not in settings.providers:
        renamed.setdefault(first, unknown[0])
    return renamed


def _settings_of(text: str, path: Path, *, checking_result: bool = False) -> Settings:
    """The settings `text` holds, or a ConfigError saying why the file is left alone."""
    try:
        return validate(tomllib.loads(text), path, text)
    except (tomllib.TOMLDecodeError, ConfigError) as exc:
        if checking_result:
            raise ConfigError(f"{path} was not saved: the edited file would not load ({exc})") from None
        why = f"it does not load as it is ({exc}); fix it in an editor first"
        raise ConfigError(f"{path} was not saved: {why}") from None


def _write_changes(table: Any, new: dict[str, Any], old: dict[str, Any]) -> None:
    """Set in `table` each value of `new` that differs from `old`, recursing into sections."""
    for key, value in new.items():
        before = old.get(key, _MISSING)
        if value == before:
            continue
        if isinstance(value, dict) and isinstance(before, dict):
            if key not in table:
                table[key] = tomlkit.table()
            _write_changes(table[key], value, before)
            continue
        table[key] = value
    # A name gone from a user-named table ([debug], [available_models]) goes from the file too.
    for key in old.keys() - new.keys():
        if key in table:
            del table[key]


def _write_provider_changes(
    document: Any, new: dict[str, dict], old: dict[str, dict], renamed: dict[str, str]
) -> None:
    """Remove the providers removed, add the ones added, edit the fields changed; never a token."""
    new = {name: _without_token(fields) for name, fields in new.items()}
    old = {name: _without_token(fields) for name, fields in old.items()}
    if new == old:
        return
    if "providers" not in document:
        document["providers"] = tomlkit.table(is_super_table=True)
    providers = document["providers"]
    for before, after in renamed.items():
        moved = before in old and before not in new and after in new and after not in old
        if moved and before in providers and after not in providers:
            table = providers[before]
            del providers[before]
            providers[after] = table
            old[after] = old.pop(before)
    for name in old.keys() - new.keys():
        if name in providers:
            del providers[name]
    for name, fields in new.items():
        if name not in providers:
            providers[name] = tomlkit.table()
        _write_changes(providers[name], fields, old.get(name, _provider_defaults()))


def _without_token(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if k not in _PROVIDER_KEYS_NEVER_WRITTEN}


def _provider_defaults() -> dict[str, Any]:
    """A new provider's table holds only the fields that differ from these."""
    return {
        name: info.get_default(call_default_factory=True)
        for name, info in ProviderSettings.model_fields.items()
        if not info.is_required() and name not in _PROVIDER_KEYS_NEVER_WRITTEN
    }


def _replace(target: Path, text: str) -> None:
    """Write atomically, keeping the file's permissions (a config may be private)."""
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    if target.exists():
        shutil.copymode(target, tmp)
    os.replace(tmp, target)
