"""Async client for OpenAI-compatible APIs: routing, limits, retries, compat fallbacks, call records."""

from importlib import import_module
from typing import Any

# Exports load their module on first use (PEP 562): routing and settings need no httpx,
# and the app's first screen should not pay for the client.
_HOME = {
    "ApiClient": "w2c_tui.api.client",
    "ProviderLimits": "w2c_tui.api.limits",
    "RequestSpacing": "w2c_tui.api.limits",
    "CallObserver": "w2c_tui.api.observer",
    "MissingTokenError": "w2c_tui.api.providers",
    "ProviderSettings": "w2c_tui.api.providers",
    "default_provider": "w2c_tui.api.providers",
    "is_loopback_url": "w2c_tui.api.providers",
    "route": "w2c_tui.api.providers",
    "redact": "w2c_tui.redaction",
    "redact_text": "w2c_tui.redaction",
    "ChatResult": "w2c_tui.api.results",
    "ApiError": "w2c_tui.api.retry",
    "PermanentApiError": "w2c_tui.api.retry",
    "RetriesExhaustedError": "w2c_tui.api.retry",
    "RetryPolicy": "w2c_tui.api.retry",
    "cause_for_exception": "w2c_tui.api.retry",
    "cause_for_status": "w2c_tui.api.retry",
    "parse_retry_after": "w2c_tui.api.retry",
    "RECORD_KEYS": "w2c_tui.api.trace",
    "CallContext": "w2c_tui.api.trace",
    "build_record": "w2c_tui.api.trace",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'w2c_tui.api' has no attribute {name!r}")
    value = getattr(import_module(_HOME[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "ApiClient",
    "ApiError",
    "CallContext",
    "CallObserver",
    "ChatResult",
    "MissingTokenError",
    "PermanentApiError",
    "ProviderLimits",
    "ProviderSettings",
    "RECORD_KEYS",
    "RequestSpacing",
    "RetriesExhaustedError",
    "RetryPolicy",
    "build_record",
    "cause_for_exception",
    "cause_for_status",
    "default_provider",
    "is_loopback_url",
    "parse_retry_after",
    "redact",
    "redact_text",
    "route",
]
