"""Session metadata: manifest.json, per-pipeline _DONE.json, mlflow_ids.json."""

from __future__ import annotations

from typing import Any

from w2c_tui.store.audit import utc_now
from w2c_tui.store.jsonl import read_json, write_json_atomic
from w2c_tui.store.layout import SessionPaths

SCHEMA_VERSION = 1

# Facts about where the session's rows come from: written when the session is created and
# never rewritten by a later launch (a later launch against another server must not relabel them).
ORIGIN_FIELDS = ("simulated", "endpoint")
# What the server says about itself (response `model`, `system_fingerprint`, `server` header).
IDENTITY_KEYS = ("model", "system_fingerprint", "server")


class ManifestError(ValueError):
    pass


def open_manifest(paths: SessionPaths, config: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Create the manifest, or refresh `updated_at` of an existing one.

    `config` must already be redacted. A manifest that exists but cannot be read is not
    overwritten: it is evidence, and the user decides what to do with it.
    """
    now = utc_now()
    endpoint = (extra or {}).get("endpoint")  # this launch's server
    if paths.manifest.exists():
        manifest = read_json(paths.manifest)
        if manifest is None:
            raise ManifestError(
                f"{paths.manifest}: corrupt manifest (not a JSON object); move it aside to resume this session"
            )
        if manifest.get("fingerprint") not in (None, paths.fingerprint):
            raise ManifestError(
                f"{paths.manifest}: belongs to fingerprint {manifest.get('fingerprint')}, not {paths.fingerprint}"
            )
        _check_origin(paths, manifest, extra or {})
        manifest["updated_at"] = now
        manifest.setdefault("resumed", 0)
        manifest["resumed"] += 1
        # An earlier session (made before these fields existed) gets none made up now.
        extra = {k: v for k, v in (extra or {}).items() if k not in ORIGIN_FIELDS}
    else:
        manifest = {
            "schema_version": SCHEMA_VERSION,
            "fingerprint": paths.fingerprint,
            "run_key": paths.run_key,
            "created_at": now,
            "updated_at": now,
            "config": config,
        }
    if extra:
        # Pipelines of earlier launches (e.g. `--only mcq` then the rest) stay listed.
        earlier = manifest.get("exp_names") or []
        manifest.update(extra)
        if "exp_names" in extra:
            manifest["exp_names"] = list(dict.fromkeys([*earlier, *extra["exp_names"]]))
    if endpoint is not None:
        # Every server the rows came from (more than one only after an explicit resume).
        used = manifest.setdefault("endpoints_used", [])
        if endpoint not in used:
            used.append(endpoint)
    write_json_atomic(paths.manifest, manifest)
    return manifest


def _check_origin(paths: SessionPaths, manifest: dict[str, Any], extra: dict[str, Any]) -> None:
    """Simulated and real answers never share a session."""
    if "simulated" in manifest and "simulated" in extra and bool(manifest["simulated"]) != bool(extra["simulated"]):
        held = "simulated" if manifest["simulated"] else "real"
        raise ManifestError(
            f"{paths.root}: the session holds {held} answers; a launch against "
            f"{'a real provider' if held == 'simulated' else 'the simulated endpoint'} cannot continue it"
        )


def server_identity(data: Any, server_header: str | None) -> dict[str, Any]:
    """What a response says about its server; strings only, bounded."""
    body = data if isinstance(data, dict) else {}

    def text(value: Any) -> str | None:
        return str(value)[:200] if isinstance(value, (str, int, float)) and str(value) else None

    return {"model": text(body.get("model")), "system_fingerprint": text(body.get("system_fingerprint")), "server": text(server_header)}


def record_server_identity(paths: SessionPaths, identity: dict[str, Any]) -> dict[str, Any] | None:
    """Note the server's identity in the manifest; returns the earlier one when it differs.

    `server_identity` is the first ever seen (an origin fact); a different one seen later is
    appended to `server_identity_changes`, and compared against from then on.
    """
    manifest = read_json(paths.manifest)
    if manifest is None:
        return None
    seen = {k: identity.get(k) for k in IDENTITY_KEYS}
    first = manifest.get("server_identity")
    if not isinstance(first, dict):
        manifest["server_identity"] = {**identity, "observed_at": utc_now()}
        write_json_atomic(paths.manifest, manifest)
        return None
    changes = manifest.get("server_identity_changes") or []
    last = changes[-1]["to"] if changes else first
    before = {k: last.get(k) for k in IDENTITY_KEYS}
    if before == seen:
        return None
    changes.append({"observed_at": utc_now(), "from": before, "to": {**identity}})
    manifest["server_identity_changes"] = changes
    write_json_atomic(paths.manifest, manifest)
    return before


def read_manifest(paths: SessionPaths) -> dict[str, Any] | None:
    return read_json(paths.manifest)


def is_done(paths: SessionPaths, exp_name: str) -> bool:
    return paths.done_file(exp_name).exists()


def mark_done(paths: SessionPaths, exp_name: str, payload: dict[str, Any]) -> None:
    write_json_atomic(paths.done_file(exp_name), {"exp_name": exp_name, "finished_at": utc_now(), **payload})


def read_mlflow_ids(paths: SessionPaths) -> dict[str, Any]:
    ids = read_json(paths.mlflow_ids) or {}
    ids.setdefault("parent_run_id", None)
    ids.setdefault("child_run_ids", {})
    return ids


def write_mlflow_ids(paths: SessionPaths, ids: dict[str, Any]) -> None:
    write_json_atomic(paths.mlflow_ids, ids)
