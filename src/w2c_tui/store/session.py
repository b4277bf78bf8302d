"""Session metadata: manifest.json, per-pipeline _DONE.json, mlflow_ids.json."""

from __future__ import annotations

from typing import Any

from w2c_tui.store.audit import utc_now
from w2c_tui.store.jsonl import read_json, write_json_atomic
from w2c_tui.store.layout import SessionPaths

SCHEMA_VERSION = 1


class ManifestError(ValueError):
    pass


def open_manifest(paths: SessionPaths, config: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Create the manifest, or refresh `updated_at` of an existing one.

    `config` must already be redacted. A manifest that exists but cannot be read is not
    overwritten: it is evidence, and the user decides what to do with it.
    """
    now = utc_now()
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
        manifest["updated_at"] = now
        manifest.setdefault("resumed", 0)
        manifest["resumed"] += 1
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
    write_json_atomic(paths.manifest, manifest)
    return manifest


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
