"""Request-parameter workarounds a provider teaches us with a 400, remembered per provider.

Each workaround is learned from an error that names the offending parameter and applies to
every later request to that provider, so the failed request is paid once, not per call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

CHAT_ENDPOINT = "/chat/completions"

MAX_TOKENS_RENAMED = "max_tokens_renamed"
SEED_DROPPED = "seed_dropped"
SYSTEM_ROLE_REWRITTEN = "system_role_rewritten"

_MENTIONS_MAX_TOKENS = re.compile(r"\bmax_tokens\b", re.IGNORECASE)
# "max_tokens is too large" is a value problem: renaming the parameter would not fix it.
_VALUE_PROBLEM = re.compile(r"too large|too long|context length|exceed|must be (less|at most|<)|greater than", re.I)
_MENTIONS_SEED = re.compile(r"\bseed\b", re.IGNORECASE)
_MENTIONS_ROLE_NAME = re.compile(r"\b(developer|system)\b", re.IGNORECASE)
_MENTIONS_ROLE_WORD = re.compile(r"\b(roles?|instructions?|messages?)\b", re.IGNORECASE)

# How far system-like messages are rewritten: each level includes the one before.
ROLES_AS_SENT, DEVELOPER_AS_SYSTEM, SYSTEM_INTO_USER = 0, 1, 2


@dataclass
class Workaround:
    kind: str
    details: str
    newly_learned: bool


@dataclass
class ParameterCompat:
    rename_max_tokens: bool = False
    drop_seed: bool = False
    role_level: int = ROLES_AS_SENT

    def apply(self, body: dict[str, Any], endpoint: str) -> dict[str, Any]:
        """`body` adjusted to what this provider accepts; the same object when nothing changes."""
        is_chat = endpoint == CHAT_ENDPOINT
        rename = self.rename_max_tokens and is_chat and "max_tokens" in body
        drop_seed = self.drop_seed and "seed" in body
        rewrite_roles = self.role_level > ROLES_AS_SENT and is_chat and _has_role(body, ("developer", "system"))
        if not (rename or drop_seed or rewrite_roles):
            return body
        body = dict(body)
        if rename:
            body["max_completion_tokens"] = body.pop("max_tokens")
        if drop_seed:
            del body["seed"]
        if rewrite_roles:
            body["messages"] = rewrite_messages(body["messages"], self.role_level)
        return body

    def learn(self, sent: dict[str, Any], endpoint: str, error_text: str) -> list[Workaround]:
        """Workarounds that would change `sent` given this 400 text; empty means resending is pointless."""
        found: list[Workaround] = []
        is_chat = endpoint == CHAT_ENDPOINT
        if (
            is_chat
            and "max_tokens" in sent
            and _MENTIONS_MAX_TOKENS.search(error_text)
            and not _VALUE_PROBLEM.search(error_text)
        ):
            found.append(
                Workaround(MAX_TOKENS_RENAMED, "sending max_completion_tokens instead of max_tokens",
                           not self.rename_max_tokens)
            )
            self.rename_max_tokens = True
        if "seed" in sent and _MENTIONS_SEED.search(error_text):
            found.append(Workaround(SEED_DROPPED, "seed is no longer sent", not self.drop_seed))
            self.drop_seed = True
        if is_chat and _MENTIONS_ROLE_NAME.search(error_text) and _MENTIONS_ROLE_WORD.search(error_text):
            if _has_role(sent, ("developer",)):
                level, details = DEVELOPER_AS_SYSTEM, "developer messages are sent as system messages"
            elif _has_role(sent, ("system",)):
                level, details = SYSTEM_INTO_USER, "system messages are moved into the first user message"
            else:
                level = ROLES_AS_SENT
            if level > ROLES_AS_SENT:
                found.append(Workaround(SYSTEM_ROLE_REWRITTEN, details, self.role_level < level))
                self.role_level = max(self.role_level, level)
        return found


def _has_role(body: dict[str, Any], roles: tuple[str, ...]) -> bool:
    messages = body.get("messages")
    return isinstance(messages, list) and any(isinstance(m, dict) and m.get("role") in roles for m in messages)


def rewrite_messages(messages: list[dict[str, Any]], level: int) -> list[dict[str, Any]]:
    """Developer messages become system ones; at SYSTEM_INTO_USER system text leads the first user message."""
    rewritten = [{**m, "role": "system"} if m.get("role") == "developer" else m for m in messages]
    if level < SYSTEM_INTO_USER:
        return rewritten
    system_texts = [_text_of(m.get("content")) for m in rewritten if m.get("role") == "system"]
    rest = [m for m in rewritten if m.get("role") != "system"]
    preamble = "\n\n".join(t for t in system_texts if t)
    if not preamble:
        return rest
    for index, message in enumerate(rest):
        if message.get("role") == "user":
            rest[index] = {**message, "content": _prepend(preamble, message.get("content"))}
            return rest
    return [{"role": "user", "content": preamble}, *rest]


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return content or ""


def _prepend(preamble: str, content: Any) -> Any:
    if isinstance(content, list):  # content parts: keep them, add the text in front
        return [{"type": "text", "text": preamble}, *content]
    return f"{preamble}\n\n{content}" if content else preamble
