"""A simulated OpenAI-compatible endpoint: demo model, test double and benchmark target.

Everything it answers is simulated (responses carry the header ``x-w2c-sim: simulated``
and ``"system_fingerprint": "w2c-tui-sim"``) and deterministic for a seed.

The names below load on first use: the app's first screen reads `DEFAULT_MODELS` from
`w2c_tui.sim.settings` and must not pay for the server (aiohttp) to paint.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "token_logprob": "w2c_tui.sim.logprobs",
    "SimServer": "w2c_tui.sim.server",
    "serve": "w2c_tui.sim.server",
    "DEFAULT_MODELS": "w2c_tui.sim.settings",
    "FAULT_KINDS": "w2c_tui.sim.settings",
    "SimSettings": "w2c_tui.sim.settings",
}

__all__ = ["DEFAULT_MODELS", "FAULT_KINDS", "SimServer", "SimSettings", "serve", "token_logprob"]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'w2c_tui.sim' has no attribute {name!r}")
    return getattr(import_module(module), name)
