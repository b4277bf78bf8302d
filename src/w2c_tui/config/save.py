"""Write settings back to config.toml with tomlkit, keeping the user's comments and order.

Only values that differ from what the file says (or from the defaults, for keys the file
does not have) are touched. Tokens are never written: they belong in .env.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Table

from w2c_tui.config.schema import Settings

_NEVER_WRITTEN = {"token"}
# Tables keyed by names the user chooses: a name gone from the settings is removed from the file.
_NAMED_TABLES = {"providers"}


def save_settings(settings: Settings, path: str | Path) -> Path:
    path = Path(path)
    document = tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else tomlkit.document()
    defaults = Settings().model_dump(mode="json")
    _merge(document, settings.model_dump(mode="json"), defaults)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(tomlkit.dumps(document), encoding="utf-8")
    tmp.replace(path)
    return path


def _merge(table: Any, values: dict[str, Any], defaults: dict[str, Any] | None) -> None:
    for key in _NAMED_TABLES & set(values):
        if key in table and hasattr(table[key], "items"):
            for name in [n for n in table[key] if n not in values[key]]:
                del table[key][name]
    for key, value in values.items():
        if key in _NEVER_WRITTEN:
            continue
        default = (defaults or {}).get(key)
        if isinstance(value, dict):
            if key not in table:
                if value == default or not value:
                    continue
                table[key] = tomlkit.table()
            child = table[key]
            if isinstance(child, (Table, dict)) or hasattr(child, "items"):
                _merge(child, value, default if isinstance(default, dict) else None)
            continue
        if key in table:
            if _plain(table[key]) != value:
                table[key] = value
        elif value != default and value is not None:
            table[key] = value
    return None


def _plain(item: Any) -> Any:
    return item.unwrap() if hasattr(item, "unwrap") else item
