"""The target model's prompt: our When2Call-style system prompt plus the user question.

Tools are shown in the prompt text (one compact JSON object per `<tool>...</tool>` line,
keys in dataset order, BFCL types kept as given), like the official When2Call prompts.
`openai_tools` gives the same tools in the native `tools` request form, for servers
that should see them as structured tools instead.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from w2c_tui.data.when2call import Example

_INTRO_WITH_TOOLS = (
    "You are a helpful assistant with access to the tools listed below. "
    "Each tool is described by a JSON schema on its own line, between <tool> and </tool>."
)
_INTRO_NO_TOOLS = "You are a helpful assistant. There are no tools available to you in this conversation."

_RULES = """How to respond:
- If one of the listed tools can do what the user asks and the user has given every required argument, call it. A tool call is the whole reply, written exactly in this form:
<tool_call>{"name": "<tool name>", "arguments": {"<argument name>": <value>, ...}}</tool_call>
- If a suitable tool needs a required argument that the user has not given, do not guess it: ask the user for the missing information.
- If no listed tool fits the request and you cannot answer it reliably yourself, say that you cannot help with it. Never call a tool that is not listed."""

# Deliberately no "do not call tools" rule: whether the model invents a tool call here is
# what the tool-hallucination rate measures.
_RULES_NO_TOOLS = "If you cannot answer the request reliably yourself, say that you cannot help with it."


def tool_lines(tools: tuple[str, ...] | list[str]) -> str:
    """One `<tool>{json}</tool>` line per tool; '' when there are none."""
    return "\n".join(_tool_line(t) for t in tools)


@functools.lru_cache(maxsize=4096)
def _tool_line(tool: str) -> str:
    # Re-serialise so stray whitespace in the dataset strings cannot vary the prompt. Cached:
    # a tool is shown in about two examples of When2Call and in every prompt of one (issue 25).
    return f"<tool>{json.dumps(json.loads(tool), ensure_ascii=False)}</tool>"


def system_prompt(example: Example) -> str:
    if not example.tools:
        return f"{_INTRO_NO_TOOLS}\n\n{_RULES_NO_TOOLS}"
    return f"{_INTRO_WITH_TOOLS}\n\n<tools>\n{tool_lines(example.tools)}\n</tools>\n\n{_RULES}"


def build_target_messages(example: Example) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system_prompt(example)},
        {"role": "user", "content": example.question},
    ]


# BFCL type names that JSON Schema (and so the OpenAI `tools` parameter) does not know.
_BFCL_TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def _json_schema(node: Any) -> Any:
    """Copy of a BFCL schema with its type names translated to JSON Schema ones."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _json_schema(value) for key, value in node.items()}
    # Only a *string* "type" is a type name; a dict under "type" is a property called "type".
    kind = node.get("type")
    if isinstance(kind, str):
        if kind == "any":
            del out["type"]  # JSON Schema spells "any value" as no type at all
        else:
            out["type"] = _BFCL_TYPES.get(kind, kind)
    elif isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        out["type"] = [_BFCL_TYPES.get(k, k) for k in kind]
    return out


def openai_tools(example: Example) -> list[dict[str, Any]]:
    """The example's tools as the chat API's `tools` parameter."""
    result = []
    for schema in example.tool_schemas():
        function: dict[str, Any] = {"name": schema["name"], "description": schema.get("description", "")}
        function["parameters"] = _json_schema(schema.get("parameters") or {"type": "object", "properties": {}})
        result.append({"type": "function", "function": function})
    return result
