"""What a chat call returns, read out of the provider's JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from w2c_tui.api.bad_response import BadResponse


@dataclass
class ChatResult:
    content: str
    reasoning: str | None
    tool_calls: list[dict[str, Any]] | None
    finish_reason: str | None
    usage: dict[str, Any]
    raw: dict[str, Any] = field(repr=False)
    provider: str
    latency_ms: float  # of the attempt that succeeded, not counting earlier attempts or waits
    attempts: int  # HTTP requests sent, including retries and compatibility resends


def chat_result(data: dict[str, Any], provider: str, latency_ms: float, attempts: int) -> ChatResult:
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices:
        raise BadResponse("the answer has no choices", "no_choices")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise BadResponse(f"the answer's choice is a {type(choice).__name__}, not an object: {_words(choice)}", "not_object")
    message = choice.get("message") or {}
    if not isinstance(message, dict):
        raise BadResponse(f"the answer's message is a {type(message).__name__}, not an object: {_words(message)}", "not_object")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    usage = data.get("usage")
    return ChatResult(
        content=_content_text(message.get("content")),
        reasoning=reasoning if isinstance(reasoning, str) else None,
        tool_calls=message.get("tool_calls") or None,
        finish_reason=choice.get("finish_reason"),
        usage=usage if isinstance(usage, dict) else {},
        raw=data,
        provider=provider,
        latency_ms=latency_ms,
        attempts=attempts,
    )


def finish_reason(data: Any) -> Any:
    """The first choice's finish_reason ("stop", "length", ...), None when the answer has none."""
    choices = data.get("choices") if isinstance(data, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    return choice.get("finish_reason") if isinstance(choice, dict) else None


def is_empty_answer(data: Any) -> bool:
    """A readable chat answer that says nothing: no text (content null, missing or blank) and no tool calls.

    It stays the model's answer (the pipeline scores or coerces it like any other); the run counts it,
    because a whole run of them usually means a wrong model name or a broken server template.
    """
    choices = data.get("choices") if isinstance(data, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        return False
    return not _content_text(message.get("content")).strip() and not message.get("tool_calls")


def _words(value: Any) -> str:
    """What the server put there, shortened for a one-line message."""
    text = " ".join(str(value).split())
    return repr(text if len(text) <= 200 else text[:199] + "…")


def _content_text(content: Any) -> str:
    """Plain text, also when a provider answers with a list of content parts."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""
