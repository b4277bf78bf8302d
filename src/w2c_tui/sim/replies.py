"""Text the simulated assistant writes when it plays the model under evaluation.

Each label has its own recognisable shape (the sim's judge relies on it):
tool_call -> ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``;
request_for_info -> a question for one missing parameter (ends with "?");
cannot_answer -> an apology that the request cannot be served (no question);
direct -> a plain answer that neither apologises nor asks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from w2c_tui.data.when2call import Example
from w2c_tui.labels import LABELS
from w2c_tui.sim.hashing import pick
from w2c_tui.sim.knowledge import schema_for

# Used when the assistant calls a tool although none was offered (a tool hallucination).
INVENTED_TOOL = "web_search"


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]

    def as_text(self) -> str:
        body = json.dumps({"name": self.name, "arguments": self.arguments}, ensure_ascii=False)
        return f"<tool_call>\n{body}\n</tool_call>"


@dataclass(frozen=True, slots=True)
class TargetReply:
    label: str
    text: str
    tool_call: ToolCall | None = None


def _placeholder(schema: dict[str, Any]) -> Any:
    kind = str(schema.get("type", "string")).lower()
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        return schema["enum"][0]
    return {
        "integer": 1,
        "number": 1.0,
        "float": 1.0,
        "boolean": True,
        "array": [],
        "list": [],
        "dict": {},
        "object": {},
    }.get(kind, "example")


def _arguments(schema: dict[str, Any] | None) -> dict[str, Any]:
    params = (schema or {}).get("parameters") or {}
    props = params.get("properties") or {}
    if not isinstance(props, dict):
        return {}
    wanted = [p for p in params.get("required") or [] if p in props] or list(props)[:1]
    return {name: _placeholder(props[name] if isinstance(props[name], dict) else {}) for name in wanted}


def _tool_call(example: Example | None, names: list[str], schemas: list[dict[str, Any]]) -> ToolCall:
    if example is not None:
        # The dataset's own tool_call answer is the most plausible call, when that tool is offered.
        try:
            known = json.loads(example.answers["tool_call"])
        except ValueError:
            known = None
        if isinstance(known, dict) and known.get("name") in names and isinstance(known.get("arguments"), dict):
            return ToolCall(known["name"], known["arguments"])
    if names:
        return ToolCall(names[0], _arguments(schema_for(names[0], schemas, example)))
    topic = example.question[:80] if example is not None else "the user's request"
    return ToolCall(INVENTED_TOOL, {"query": topic})


def _missing_parameter(example: Example | None, names: list[str], schemas: list[dict[str, Any]]) -> str | None:
    if example is not None and example.held_out_param:
        return example.held_out_param
    if names:
        schema = schema_for(names[0], schemas, example) or {}
        required = (schema.get("parameters") or {}).get("required") or []
        if required:
            return str(required[0])
    return None


_ASK = (
    "I can take care of that, but I need one more detail first: which {p} should I use?",
    "Before I go ahead, could you tell me the {p} you have in mind?",
)
_ASK_GENERIC = "Could you give me a few more details about what you need, so I can do it properly?"
_REFUSE = (
    "I'm sorry, but I can't help with that: none of the tools available to me can do it.",
    "Sorry, I am unable to do this with the tools I have access to here.",
)
_DIRECT = (
    "Here is a short answer from what I already know, without using any tool (simulated reply).",
    "Happy to help. From general knowledge, the short answer is that it depends on the details you gave"
    " (simulated reply).",
)


def target_reply(
    label: str,
    *,
    example: Example | None,
    tool_names: list[str],
    schemas: list[dict[str, Any]],
    key: tuple[object, ...],
) -> TargetReply:
    """The assistant's answer acting out `label`; `key` picks among phrasings."""
    if label == "tool_call":
        call = _tool_call(example, tool_names, schemas)
        return TargetReply(label, call.as_text(), call)
    if label == "request_for_info":
        param = _missing_parameter(example, tool_names, schemas)
        if param is None:
            return TargetReply(label, _ASK_GENERIC)
        return TargetReply(label, pick(_ASK, *key, "ask").format(p=param.replace("_", " ")))
    if label == "cannot_answer":
        return TargetReply(label, pick(_REFUSE, *key, "refuse"))
    return TargetReply(label, pick(_DIRECT, *key, "direct"))


def mcq_reply(label: str, *, key: tuple[object, ...], max_tokens: int | None) -> str:
    """The option digit of `label`, sometimes behind a short prefix when there is room."""
    digit = str(LABELS.index(label))
    if max_tokens is not None and max_tokens < 6:
        return digit
    return pick((digit, digit, f"Answer: {digit}", f"The answer is {digit}."), *key, "mcq-style")


_PLANS = {
    "tool_call": "one of the offered tools fits, so I will call it",
    "request_for_info": "a required detail is missing, so I will ask for it",
    "cannot_answer": "no offered tool can do this, so I will decline",
    "direct": "I can answer from my own knowledge without a tool",
}


def reasoning_text(role: str, label: str, effort: str | None, *, tool_names: list[str]) -> str:
    """A short, clearly simulated chain of thought for reasoning models."""
    tools = ", ".join(tool_names[:3]) or "none"
    if role == "judge":
        text = "(simulated reasoning) I read the response under evaluation and match it to one category."
    elif role == "mcq":
        text = f"(simulated reasoning) I compare the options; option {LABELS.index(label)} fits best."
    else:
        text = f"(simulated reasoning) Tools offered: {tools}. Decision: {_PLANS[label]}."
    if effort == "high":
        text += " I double-checked the request against the tool descriptions."
    return text

