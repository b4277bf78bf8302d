"""Fast JSON for the hot paths: API answers, JSONL rows, the sim's responses.

A log-probability answer echoes thousands of tokens (hundreds of KB); the standard
library spends milliseconds per answer on it, orjson a fraction of that. orjson only
speaks strict JSON, so documents with NaN or Infinity (which Python's json writes and
some servers send) fall back to the standard library when read; when written, orjson
turns non-finite floats into null.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["array_items", "dumps", "dumps_bytes", "joined_array", "loads", "loads_strict", "parse", "raw_fragment"]

_OPTIONS = orjson.OPT_NON_STR_KEYS


def loads(data: bytes | str) -> Any:
    """Parse JSON; raises ValueError (as `json.loads` does) when it is not JSON."""
    return parse(data)[0]


def parse(data: bytes | str) -> tuple[Any, bool]:
    """The JSON value and whether it was strict JSON (so that it can be written back verbatim)."""
    try:
        return loads_strict(data), True
    except ValueError:
        return json.loads(data), False  # NaN / Infinity, or a real error with the usual message


def loads_strict(data: bytes | str) -> Any:
    """Parse strict JSON (no NaN or Infinity); raises ValueError otherwise."""
    return orjson.loads(data)


def dumps_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON on one line; values JSON does not know are written as `str(value)`."""
    return orjson.dumps(value, default=str, option=_OPTIONS)


def dumps(value: Any) -> str:
    return dumps_bytes(value).decode("utf-8")


def raw_fragment(raw: bytes) -> orjson.Fragment:
    """A received body that parsed as strict JSON, to embed verbatim in a document we write.

    Re-encoding a parsed echo costs more than everything else we do per request; a body
    that parsed as strict JSON is already what we would write. Line breaks between tokens
    are turned into spaces (strict JSON has none inside strings) so a row stays one line.
    """
    return orjson.Fragment(raw.replace(b"\r", b" ").replace(b"\n", b" "))


def array_items(values: list[Any]) -> bytes:
    """The items of a JSON array as `dumps_bytes` writes them, without the brackets."""
    return dumps_bytes(values)[1:-1]


def joined_array(head: bytes, tail: list[Any]) -> orjson.Fragment:
    """The array of the items `head` holds (from `array_items`) then `tail`'s, to embed in a
    document: written exactly as `dumps_bytes(head_values + tail)` would write it."""
    rest = array_items(tail) if tail else b""
    return orjson.Fragment(b"[" + head + (b"," if head and rest else b"") + rest + b"]")
