"""The one place secrets are removed before anything is written or shown."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

MASK = "***"
MASK_BYTES = MASK.encode()
# Keys whose values are credentials whatever they contain (compared lower-case, '-' as '_').
SECRET_KEYS = frozenset(
    {
        "authorization",
        "proxy_authorization",
        "api_key",
        "apikey",
        "x_api_key",
        "x_goog_api_key",
        "token",
        "access_token",
        "auth_token",
        "bearer_token",
        "refresh_token",
        "client_secret",
        "password",
    }
)


# Every secret this process knows (provider tokens), with their JSON-escaped forms, longest
# first. Writers of the store scrub each serialized line with `scrub`, so a secret cannot
# reach a file whatever path it took into the data.
_KNOWN: tuple[str, ...] = ()
_KNOWN_BYTES: tuple[bytes, ...] = ()  # the same, UTF-8 encoded, for lines written as bytes
# Shorter strings are not scrubbed from files: masking "abc" would mangle ordinary text,
# and no provider issues tokens that short.
MIN_SECRET_LENGTH = 8


def register_secrets(values: Iterable[str]) -> None:
    global _KNOWN, _KNOWN_BYTES
    found = set(_KNOWN)
    for value in values:
        if value and len(value) >= MIN_SECRET_LENGTH:
            found.add(value)
            found.add(json.dumps(value, ensure_ascii=False)[1:-1])
            found.add(json.dumps(value)[1:-1])
    _KNOWN = tuple(sorted(found, key=len, reverse=True))
    _KNOWN_BYTES = tuple(secret.encode("utf-8") for secret in _KNOWN)


def scrub(text: str) -> str:
    """`text` with every registered secret replaced by the mask."""
    for secret in _KNOWN:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub_bytes(data: bytes) -> bytes:
    """`scrub` for UTF-8 text kept as bytes: the same result, without decoding and encoding it
    again (UTF-8 matches only whole characters, so replacing bytes replaces the same text)."""
    for secret in _KNOWN_BYTES:
        if secret in data:
            data = data.replace(secret, MASK_BYTES)
    return data


def is_secret_key(key: object) -> bool:
    return isinstance(key, str) and key.lower().replace("-", "_") in SECRET_KEYS


# Query parameters that carry a credential in a URL (`?key=` is Google's, `sig=` Azure's SAS).
SECRET_QUERY_KEYS = SECRET_KEYS | {"key", "secret", "sig", "signature", "x_api_key", "api_token", "auth"}
_QUERY_PARAM = re.compile(r"([?&;])([^=&#;]+)=([^&#;]*)")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://)([^/?#@]*)@")


def _is_secret_param(name: str) -> bool:
    return unquote(name).lower().replace("-", "_") in SECRET_QUERY_KEYS


def redact_url(url: str) -> str:
    """`url` fit to write or show: no userinfo, credential query values masked.

    A textual rewrite, so it also works on a URL too broken to parse."""
    url = _USERINFO.sub(r"\1", url, count=1)
    return _QUERY_PARAM.sub(
        lambda m: f"{m.group(1)}{m.group(2)}={MASK}" if _is_secret_param(m.group(2)) and m.group(3) else m.group(0), url
    )


def split_url_credentials(url: str) -> tuple[str, list[str]]:
    """(`url` without userinfo and credential query parameters, the credentials found).

    For `user:password@` the password is the credential (the user name is kept out of the
    URL too); for a lone `TOKEN@` it is that name.
    """
    found: list[str] = []
    match = _USERINFO.match(url)
    if match:
        user, _, password = match.group(2).partition(":")
        credential = unquote(password or user)
        if credential:
            found.append(credential)
        url = match.group(1) + url[match.end():]

    def drop(m: re.Match[str]) -> str:
        if _is_secret_param(m.group(2)):
            if m.group(3):
                found.append(unquote(m.group(3)))
            return m.group(1) if m.group(1) == "?" else ""
        return m.group(0)

    url = _QUERY_PARAM.sub(drop, url)
    url = re.sub(r"\?&", "?", url).rstrip("?&")
    return url, found


def redact(obj: Any, secrets: Iterable[str]) -> Any:
    """`obj` with every secret string replaced by "***" and credential-named keys masked.

    Copy-on-write: containers without anything to hide come back as the very same object,
    so redacting a large clean request body costs a walk, not a copy.
    """
    return _redact(obj, needles_of(secrets))


def needles_of(secrets: Iterable[str]) -> tuple[str, ...]:
    """The secrets as `redact_text` and `redact_with` look for them: distinct, longest first."""
    return tuple(sorted({s for s in secrets if s}, key=len, reverse=True))


def redact_with(obj: Any, needles: tuple[str, ...]) -> Any:
    """`redact` with the secrets already in `needles_of` form (a client makes it once, not per call)."""
    return _redact(obj, needles)


def redact_text(text: str, secrets: Iterable[str]) -> str:
    return _redact_str(text, needles_of(secrets))


def _redact_str(text: str, needles: tuple[str, ...]) -> str:
    for needle in needles:
        if needle in text:
            text = text.replace(needle, MASK)
    return text


# Types `_redact` returns untouched: checked first, as most values of a body are one of them.
_PLAIN = frozenset({int, float, bool, type(None)})
# is_secret_key per key seen: bodies repeat the same few keys ("role", "content") on every call.
_KEY_VERDICTS: dict[str, bool] = {}
_KEY_VERDICTS_MAX = 4096


def _is_secret_key_cached(key: Any) -> bool:
    if type(key) is not str:
        return is_secret_key(key)
    verdict = _KEY_VERDICTS.get(key)
    if verdict is None:
        verdict = is_secret_key(key)
        if len(_KEY_VERDICTS) < _KEY_VERDICTS_MAX:
            _KEY_VERDICTS[key] = verdict
    return verdict


def _redact(obj: Any, needles: tuple[str, ...]) -> Any:
    kind = type(obj)
    if kind in _PLAIN:
        return obj
    if kind is str or isinstance(obj, str):
        return _redact_str(obj, needles)
    if isinstance(obj, dict):
        changed: dict[Any, Any] | None = None
        for key, value in obj.items():
            if _is_secret_key_cached(key) and value not in (None, ""):
                new_value = MASK
            else:
                new_value = value if type(value) in _PLAIN else _redact(value, needles)
            new_key = _redact_str(key, needles) if isinstance(key, str) else key
            if changed is None and (new_value is not value or new_key is not key):
                changed = {}
                for done_key, done_value in obj.items():  # keep what was already walked
                    if done_key is key:
                        break
                    changed[done_key] = done_value
            if changed is not None:
                changed[new_key] = new_value
        return obj if changed is None else changed
    if isinstance(obj, (list, tuple)):
        for index, item in enumerate(obj):  # long lists of token ids: nothing is built until a change
            if type(item) in _PLAIN:
                continue
            new = _redact(item, needles)
            if new is not item:
                items = [*obj[:index], new, *(_redact(rest, needles) for rest in obj[index + 1:])]
                return items if isinstance(obj, list) else tuple(items)
        return obj
    return obj


class Redactor:
    """The secrets of one launch, bound to the two functions above."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = tuple(s for s in secrets if s)
        self._needles = needles_of(self.secrets)

    def text(self, value: str) -> str:
        return _redact_str(value, self._needles)

    def data(self, value: Any) -> Any:
        return _redact(value, self._needles)
