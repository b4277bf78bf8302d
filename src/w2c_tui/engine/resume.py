"""`--resume-session`: continue a named session although its server's identity changed.

Only the endpoint may differ: the session's fingerprint is recomputed from the current
settings with the endpoint the session recorded (or, for a session made before endpoints
were fingerprinted, without one) and must come out as the session's folder name. Simulated
and real answers never mix.
"""

from __future__ import annotations

import re
from pathlib import Path

from w2c_tui.config import LoadedConfig, fingerprint_payload, session_fingerprint
from w2c_tui.engine.plan import PlanError, SessionPlan
from w2c_tui.store.jsonl import read_json
from w2c_tui.store.layout import MANIFEST_FILE, SessionPaths

FINGERPRINT_SHAPE = re.compile(r"^[0-9a-f]{16}$")


def find_session(loaded: LoadedConfig, value: str, run_key: str | None) -> SessionPaths:
    """A session folder, or the fingerprint of one under the workdir's runs/ (in `run_key` if given)."""
    text = value.strip()
    path = Path(text).expanduser()
    if not FINGERPRINT_SHAPE.match(text) or path.is_dir():
        if not (path / MANIFEST_FILE).is_file():
            raise PlanError(f"--resume-session {text}: not a session folder (no {MANIFEST_FILE} there)")
        return SessionPaths(path.resolve())
    runs = loaded.workdir / "runs"
    keys = [run_key] if run_key else sorted(p.name for p in runs.glob("*") if p.is_dir())
    found = [SessionPaths.under(loaded.workdir, key, text) for key in keys]
    found = [p for p in found if p.manifest.is_file()]
    if not found:
        where = f"run key '{run_key}'" if run_key else str(runs)
        raise PlanError(f"--resume-session {text}: no session with that fingerprint in {where}; `w2c-tui sessions` lists them")
    if len(found) > 1:
        names = ", ".join(p.run_key for p in found)
        raise PlanError(f"--resume-session {text}: that fingerprint is in several run keys ({names}); pass --run-key or the folder")
    return found[0]


def retarget(loaded: LoadedConfig, plans: list[SessionPlan], paths: SessionPaths) -> SessionPlan:
    """The plan for the named session, writing into it; the others are dropped."""
    manifest = read_json(paths.manifest)
    if manifest is None:
        raise PlanError(f"{paths.manifest}: corrupt manifest (not a JSON object); cannot resume it")
    label = f"--resume-session {paths.root}"
    model = manifest.get("target_model")
    plan = next((p for p in plans if p.target_model == model), None)
    if plan is None:
        raise PlanError(f"{label}: the session is for model '{model}', which this launch does not run; pass --model {model}")
    recorded = manifest.get("endpoint")
    if "simulated" in manifest and bool(manifest["simulated"]) != bool(plan.endpoint.get("simulated")):
        held = "simulated" if manifest["simulated"] else "real"
        raise PlanError(f"{label}: the session holds {held} answers; this launch cannot continue it from another kind of server")
    payload = fingerprint_payload(
        loaded.settings, plan.target_model, plan.dataset_sha256, plan.family, recorded if isinstance(recorded, dict) else None
    )
    if session_fingerprint(payload) != paths.fingerprint:
        raise PlanError(
            f"{label}: this config differs from the session's in more than the endpoint "
            "(data, models, temperatures, seeds or sweeps); only a moved server can be resumed this way"
        )
    plan.paths = paths
    plan.fingerprint = paths.fingerprint
    return plan
