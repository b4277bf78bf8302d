"""Whether answers came from the simulator: the embedded one (the manifest's `simulated`), or a
standalone `w2c-tui sim` used as a provider, which says so in every answer."""

from __future__ import annotations

from typing import Any, Mapping

SIM_FINGERPRINT = "w2c-tui-sim"  # sim/protocol.FINGERPRINT (sim sits above this layer)
SIM_HEADER = "x-w2c-sim"  # sim/app.SIM_HEADER: "simulated"


def is_simulator(identity: Mapping[str, Any] | None, headers: Mapping[str, str] | None = None) -> bool:
    """From a server identity (store.session.server_identity) and, live, the answer's headers."""
    if identity and identity.get("system_fingerprint") == SIM_FINGERPRINT:
        return True
    return headers is not None and str(headers.get(SIM_HEADER, "")).lower() == "simulated"
