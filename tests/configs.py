"""One way for tests to write a config.toml: the defaults every test shares, plus what it changes.

`config.example.toml` documents every key; a test writes only what it is about. The run part is
always `[run] workdir_base = "./workdir"`, `api_seed = 42` (beside the file, the example's seed);
with a `base_url` one provider serves every model, else the built-in simulated endpoint answers.
Tables come from keyword arguments (`data={"n_per_label": 2}`, `mlflow={"enabled": False}`),
and `body` appends raw TOML for what a dict cannot say (sweeps, `[prices."m"]`, several providers).
A test about malformed TOML writes its text itself: that text is what it tests.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

RUN = {"workdir_base": "./workdir", "api_seed": 42}


def toml_value(value: Any) -> str:
    """A TOML literal for a string, number, boolean or list of them (JSON spells them alike)."""
    if isinstance(value, float) and value != value:
        raise ValueError("NaN has no TOML spelling here")
    return json.dumps(value, ensure_ascii=False)


def table(name: str, values: dict[str, Any]) -> str:
    return f"[{name}]\n" + "".join(f"{key} = {toml_value(value)}\n" for key, value in values.items())


def config_text(
    base_url: str | None = None,
    body: str = "",
    *,
    provider: str = "sim",
    concurrency: int | None = 32,
    provider_keys: dict[str, Any] | None = None,
    run: dict[str, Any] | None = None,
    **tables: dict[str, Any],
) -> str:
    """The text of a config: [run], the provider at `base_url` (if any), `tables`, then `body`."""
    parts = ["\n" + table("run", {**RUN, **(run or {})})]
    if base_url is not None:
        keys: dict[str, Any] = {"base_url": base_url}
        if concurrency is not None:
            keys["max_concurrency"] = concurrency
        keys.update(provider_keys or {})
        keys.setdefault("default", True)
        # default last, where the example puts it
        keys["default"] = keys.pop("default")
        parts.append(table(f"providers.{provider}", keys))
    parts.extend(table(name, values) for name, values in tables.items())
    return "\n".join(parts) + textwrap.dedent(body)


def write_config(folder: Path, base_url: str | None = None, body: str = "", *, name: str = "config.toml", **options: Any) -> Path:
    """`config_text(base_url, body, **options)` written to `folder/name`; returns its path."""
    path = Path(folder) / name
    path.write_text(config_text(base_url, body, **options))
    return path
