"""A simulated OpenAI-compatible endpoint: demo model, test double and benchmark target.

Everything it answers is simulated (responses carry the header ``x-w2c-sim: simulated``
and ``"system_fingerprint": "w2c-tui-sim"``) and deterministic for a seed.
"""

from w2c_tui.sim.logprobs import token_logprob
from w2c_tui.sim.server import SimServer, serve
from w2c_tui.sim.settings import DEFAULT_MODELS, FAULT_KINDS, SimSettings

__all__ = ["DEFAULT_MODELS", "FAULT_KINDS", "SimServer", "SimSettings", "serve", "token_logprob"]
