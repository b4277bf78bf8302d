"""The one place secrets are removed before anything is written or shown."""

from __future__ import annotations

from typing import Any

MASK = "***"
_SECRET_KEYS = {"token", "authorization", "api_key", "apikey", "x-api-key", "access_token", "bearer"}


class Redactor:
    """Masks known secret values anywhere in text or nested data, and secret-named keys."""

    def __init__(self, secrets: list[str] | None = None) -> None:
        # Longest first, so a secret containing another is masked whole; very short
        # strings are not treated as secrets (masking "a" would mangle every text).
        self.secrets = sorted({s for s in (secrets or []) if s and len(s) >= 4}, key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        return value

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {
                k: (MASK if v and str(k).lower() in _SECRET_KEYS else self.data(v)) for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [self.data(v) for v in value]
        return value
