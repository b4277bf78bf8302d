"""Which server answered a session, as recorded in its manifest: one description for every output."""

from __future__ import annotations

from typing import Any, NamedTuple

from w2c_tui.session.simulated import is_simulator


class Part(NamedTuple):
    label: str  # "" for a part that is all value
    value: str
    warning: bool = False


def endpoint_parts(manifest: dict[str, Any] | None) -> list[Part]:
    """Endpoint, simulated or not, what the server says about itself, and any change; [] when none recorded."""
    manifest = manifest or {}
    endpoint = manifest.get("endpoint") or {}
    identity = manifest.get("server_identity") or {}
    parts = []
    if endpoint.get("target"):
        simulated = manifest.get("simulated") or is_simulator(identity if isinstance(identity, dict) else None)
        # Not "simulated (simulated)": the embedded endpoint's name says it already.
        kind = " (simulated)" if simulated and "simulated" not in str(endpoint["target"]) else ""
        parts.append(Part("endpoint", f"{endpoint['target']}{kind}"))
    said = " · ".join(str(identity[k]) for k in ("server", "model", "system_fingerprint") if identity.get(k))
    if said:
        parts.append(Part("server says", said))
    used = manifest.get("endpoints_used") or []
    if len(used) > 1:
        parts.append(Part("", f"{len(used)} endpoints used", True))
    changes = manifest.get("server_identity_changes") or []
    if changes:
        last = changes[-1]
        now = " · ".join(str(v) for k, v in (last.get("to") or {}).items() if v and k != "endpoint")
        parts.append(
            Part("", f"server identity changed {len(changes)}× (last at {last.get('observed_at') or '?'}: now {now or '?'})", True)
        )
    return parts


def endpoint_text(manifest: dict[str, Any] | None) -> str:
    return "   ".join(f"{p.label} {p.value}" if p.label else p.value for p in endpoint_parts(manifest))
