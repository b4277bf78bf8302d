"""The sessions that validate a judge (judge-check, prefer-check), found by the judge they checked.

A judged session links to the newest finished check of the same judge model on the same server;
both features find those folders here, and each reads its own figures from them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from w2c_tui.store.jsonl import read_document
from w2c_tui.store.layout import MANIFEST_FILE


def judge_endpoint(manifest: dict[str, Any]) -> Any:
    """The judge's server as the manifest recorded it (None when it recorded none)."""
    endpoint = manifest.get("endpoint")
    return endpoint.get("judge") if isinstance(endpoint, dict) else None


def sessions_of_judge(workdir: Path, exp_name: str, judge_model: str, endpoint: Any) -> list[Path]:
    """Session folders under the workdir holding pipeline run `exp_name` for this judge and server."""
    try:
        runs = list((Path(workdir) / "runs").iterdir())
    except OSError:
        return []
    found = []
    for run in runs:
        try:
            folders = [d for d in (run / "sessions").iterdir() if d.is_dir()]
        except OSError:
            continue  # no sessions/ folder, or one that cannot be read
        for root in folders:
            if not (root / "checkpoints" / exp_name).is_dir():
                continue
            manifest, _ = read_document(root / MANIFEST_FILE)
            if manifest is not None and manifest.get("judge_model") == judge_model and judge_endpoint(manifest) == endpoint:
                found.append(root)
    return found
