"""Async client for OpenAI-compatible APIs: routing, limits, retries, compat fallbacks, call records."""

from w2c_tui.api.client import ApiClient
from w2c_tui.api.limits import ProviderLimits, RequestSpacing
from w2c_tui.api.observer import CallObserver
from w2c_tui.api.providers import MissingTokenError, ProviderSettings, default_provider, is_loopback_url, route
from w2c_tui.redaction import redact, redact_text
from w2c_tui.api.results import ChatResult
from w2c_tui.api.retry import (
    ApiError,
    PermanentApiError,
    RetriesExhaustedError,
    RetryPolicy,
    cause_for_exception,
    cause_for_status,
    parse_retry_after,
)
from w2c_tui.api.trace import RECORD_KEYS, CallContext, build_record

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
