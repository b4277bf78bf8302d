"""The Session view's endpoint line: which server answered, and whether it changed on a resume."""

from __future__ import annotations

from typing import Any

from textual.markup import escape


def endpoint_markup(manifest: dict[str, Any] | None) -> str:
    """Markup for one header line; empty for a session that recorded none of it."""
    manifest = manifest or {}
    endpoint = manifest.get("endpoint") or {}
    identity = manifest.get("server_identity") or {}
    parts = []
    if endpoint.get("target"):
        parts.append(f"[dim]endpoint[/] {escape(str(endpoint['target']))}")
    said = " · ".join(str(identity[k]) for k in ("server", "model", "system_fingerprint") if identity.get(k))
    if said:
        parts.append(f"[dim]server says[/] {escape(said)}")
    used = manifest.get("endpoints_used") or []
    if len(used) > 1:
        parts.append(f"[$warning]{len(used)} endpoints used[/]")
    changes = manifest.get("server_identity_changes") or []
    if changes:
        last = changes[-1]
        now = " · ".join(str(v) for k, v in (last.get("to") or {}).items() if v and k != "endpoint")
        parts.append(
            f"[b $warning]server identity changed {len(changes)}×[/] "
            f"[dim](last at {escape(str(last.get('observed_at') or '?'))}: now {escape(now or '?')})[/]"
        )
    return "   ".join(parts)
