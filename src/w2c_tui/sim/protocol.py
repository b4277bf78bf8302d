"""Small helpers shared by the endpoint handlers: request checks and response ids."""

from __future__ import annotations

import itertools
import time
from typing import Any

FINGERPRINT = "w2c-tui-sim"

_ids = itertools.count(1)


class BadRequest(ValueError):
    """A client error, answered with 400 and an OpenAI-style error body."""


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": 400}}


def new_id(prefix: str) -> str:
    return f"{prefix}-sim-{next(_ids):x}"


def now() -> int:
    return int(time.time())


def text_of(content: Any) -> str:
    """Message content as text: a string, or the text parts of a content-part list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    raise BadRequest("message content must be a string, a list of content parts or null")


def number(body: dict[str, Any], name: str, default: float) -> float:
    value = body.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(f"'{name}' must be a number")
    return float(value)


def optional_int(body: dict[str, Any], *names: str) -> int | None:
    """The first of `names` present and not null, as a non-negative int."""
    for name in names:
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise BadRequest(f"'{name}' must be a non-negative integer")
        return value
    return None


def refuse_streaming(body: dict[str, Any]) -> None:
    # Better a clear 400 than a non-streamed body a streaming client cannot read.
    if body.get("stream"):
        raise BadRequest("the w2c-tui sim does not support stream=true")


def model_of(body: dict[str, Any], default: str) -> str:
    model = body.get("model")
    if model is None:
        return default
    if not isinstance(model, str) or not model:
        raise BadRequest("'model' must be a non-empty string")
    return model


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
