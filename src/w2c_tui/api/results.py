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
        raise BadResponse("the answer has no choices")
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    if not isinstance(message, dict):
        raise BadResponse(f"the answer's message is a {type(message).__name__}, not an object")
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


def _content_text(content: Any) -> str:
    """Plain text, also when a provider answers with a list of content parts."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""
