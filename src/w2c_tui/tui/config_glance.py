"""config.toml at a glance: what the first frame shows of it, read with tomllib alone.

Loading the configuration (`w2c_tui.config.load_config`) imports pydantic and the settings
schema, about a third of the time to the first frame (issue 27.7). The first frame needs only
a few names from the file (providers, models, data, run key), so it reads them raw; the file is
validated right after that frame (`Workspace.loaded`), and a bad file is reported then. A file
that does not parse at all glances as empty: its error comes with the validation.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from w2c_tui.config import LoadedConfig

# The settings schema's defaults for what the glance shows (config/schema.py; a test keeps them equal).
DEFAULT_TARGET = "sim-small"
DEFAULT_JUDGE = "sim-judge"
DEFAULT_N_PER_LABEL = 50
DEFAULT_SEED = 42
CONFIG_NAME = "config.toml"  # config.load.DEFAULT_CONFIG_NAME


@dataclass(frozen=True)
class ConfigGlance:
    path: Path | None  # the file read (None: no file, the built-in defaults)
    providers: tuple[str, ...] = ()
    target: str = DEFAULT_TARGET
    judge: str = DEFAULT_JUDGE
    family: str = "auto"
    run_key: str = ""
    data_path: str = ""  # "": the bundled data
    use_full_dataset: bool = False
    n_per_label: str = str(DEFAULT_N_PER_LABEL)
    subsample_seed: str = str(DEFAULT_SEED)

    @property
    def embedded(self) -> bool:
        """No provider: launches use the simulated endpoint (LoadedConfig.embedded)."""
        return not self.providers


def config_file(config_path: str | Path | None, cwd: Path | None = None) -> Path | None:
    """The file load_config reads: the one named, else ./config.toml when it is a file."""
    if config_path is not None:
        return Path(config_path)
    candidate = (cwd or Path.cwd()) / CONFIG_NAME
    return candidate if candidate.is_file() else None


def read_glance(config_path: str | Path | None, *, environ: Mapping[str, str] | None = None) -> ConfigGlance:
    """The glance of the file load_config would read; never raises."""
    path = config_file(config_path)
    if path is None:
        raw: dict[str, Any] = {}
    else:
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            raw = {}  # said once the file is validated, right after the first frame
    env = os.environ if environ is None else environ
    return _from_raw(path, raw, env.get("RUN_KEY", "").strip())


def _section(raw: dict[str, Any], name: str) -> dict[str, Any]:
    value = raw.get(name)
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else str(value)


def _from_raw(path: Path | None, raw: dict[str, Any], run_key_env: str) -> ConfigGlance:
    models, data, run = _section(raw, "models"), _section(raw, "data"), _section(raw, "run")
    target = models.get("target_model", DEFAULT_TARGET)
    names = [target] if isinstance(target, str) else target if isinstance(target, list) else []
    return ConfigGlance(
        path=path,
        providers=tuple(_section(raw, "providers")),
        target=", ".join(n.strip() for n in names if isinstance(n, str) and n.strip()),
        judge=_text(models.get("judge_model", DEFAULT_JUDGE)),
        family=_text(models.get("template_family", "auto")).lower() or "auto",
        run_key=run_key_env or _text(run.get("run_key", "")),
        data_path=_text(data.get("eval_data_path", "")),
        use_full_dataset=data.get("use_full_dataset") is True,
        n_per_label=_text(data.get("n_per_label", DEFAULT_N_PER_LABEL)),
        subsample_seed=_text(data.get("subsample_seed", DEFAULT_SEED)),
    )


def glance_of(loaded: LoadedConfig) -> ConfigGlance:
    """The glance of a loaded (validated) configuration."""
    settings = loaded.settings
    models, data = settings.models, settings.data
    return ConfigGlance(
        path=loaded.path,
        providers=tuple(settings.providers),
        target=", ".join(models.target_models),
        judge=models.judge_model,
        family=models.template_family,
        run_key=settings.run.run_key,
        data_path=data.eval_data_path,
        use_full_dataset=data.use_full_dataset,
        n_per_label=str(data.n_per_label),
        subsample_seed=str(data.subsample_seed),
    )
