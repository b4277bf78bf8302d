"""What a launch would skip: examples already finished in the sessions its run key holds.

The Setup estimate subtracts them, so a complete run key estimates 0 requests, as its launch
makes; the launch subtracts the same from the estimate its manifest records (`engine/manifest.py`).
"""

from __future__ import annotations

from w2c_tui.config import LoadedConfig
from w2c_tui.engine.plan import SessionPlan, plan_sessions, resolve_run_key
from w2c_tui.session import kinds
from w2c_tui.store.jsonl import read_keyed
from w2c_tui.store.session import is_done


def finished_on_disk(loaded: LoadedConfig) -> dict[str, dict[str, int]]:
    """target model -> exp_name -> planned examples already finished under [run] run_key (none
    without a run key: a generated key is new). Blocking: it reads the dataset and the rows."""
    if not loaded.settings.run.run_key.strip():
        return {}
    found: dict[str, dict[str, int]] = {}
    for plan in plan_sessions(loaded, resolve_run_key(loaded)):
        if plan.paths.manifest.is_file():
            found.setdefault(plan.target_model, {}).update(finished_in(plan))
    return found


def finished_in(plan: SessionPlan) -> dict[str, int]:
    """exp_name -> planned examples of `plan` whose rows are on disk already. Blocking."""
    wanted = {e.uuid for e in plan.examples}
    per_exp: dict[str, int] = {}
    for exp_name in plan.exp_names:
        if is_done(plan.paths, exp_name):
            per_exp[exp_name] = len(wanted)
            continue
        path = plan.paths.checkpoint_file(exp_name, kinds.primary_file_name(exp_name))
        rows = read_keyed(path) if path.is_file() else {}
        per_exp[exp_name] = len(wanted & rows.keys())
    return per_exp
