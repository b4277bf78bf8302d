"""What the sim "knows": the bundled When2Call questions, and tools named in a prompt."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from w2c_tui.data.when2call import Example, load_examples


@lru_cache(maxsize=1)
def bundled_examples() -> tuple[Example, ...]:
    return tuple(load_examples())


@lru_cache(maxsize=1)
def _by_question() -> dict[str, tuple[Example, ...]]:
    # Some questions occur twice (with and without the tool that answers them).
    index: dict[str, list[Example]] = {}
    for example in bundled_examples():
        index.setdefault(example.question.strip(), []).append(example)
    return {q: tuple(group) for q, group in index.items()}


@lru_cache(maxsize=1)
def _longest_first() -> tuple[tuple[str, tuple[Example, ...]], ...]:
    # Longest first, so a question that contains a shorter one wins the scan.
    return tuple(sorted(_by_question().items(), key=lambda kv: -len(kv[0])))


@lru_cache(maxsize=4096)
def _candidates(text: str) -> tuple[Example, ...]:
    index = _by_question()
    hit = index.get(text.strip())
    if hit:
        return hit
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        hit = index.get(line)
        if not hit and ":" in line:
            hit = index.get(line.split(":", 1)[1].strip())
        if hit:
            return hit
    for question, group in _longest_first():
        if question and question in text:
            return group
    return ()


@lru_cache(maxsize=1)
def _tool_names() -> dict[str, frozenset[str]]:
    """uuid -> names of the example's tools."""
    return {
        e.uuid: frozenset(str(s.get("name")) for s in e.tool_schemas() if isinstance(s, dict))
        for e in bundled_examples()
    }


def find_example(text: str, tool_names: tuple[str, ...] | list[str] = ()) -> Example | None:
    """The bundled example whose question appears in `text`, if any.

    Cheap paths first (the whole text, then each line, also after a "Label:" prefix);
    a substring scan over all questions only when those miss. When a question belongs to
    several examples, the one whose tools best match `tool_names` (the tools offered in
    the prompt) wins: +1 per offered tool it has, -1 per tool of its own not offered.
    """
    group = _candidates(text)
    if len(group) <= 1:
        return group[0] if group else None
    offered, names = set(tool_names), _tool_names()
    return max(group, key=lambda e: len(names[e.uuid] & offered) - len(names[e.uuid] - offered))


_NAME_IN_JSON = re.compile(r'"name"\s*:\s*"([^"\\]{1,200})"')


def tool_names_in_text(text: str) -> list[str]:
    """Function names found as `"name": "..."` in JSON embedded in prompt text, in order."""
    seen: dict[str, None] = {}
    for name in _NAME_IN_JSON.findall(text):
        seen.setdefault(name, None)
    return list(seen)


def native_tool_schemas(tools: Any) -> list[dict[str, Any]]:
    """Function schemas from an OpenAI `tools` parameter (or bare schemas)."""
    out: list[dict[str, Any]] = []
    if not isinstance(tools, list):
        return out
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        if isinstance(fn.get("name"), str):
            out.append(fn)
    return out


def schema_for(name: str, schemas: list[dict[str, Any]], example: Example | None) -> dict[str, Any] | None:
    """The schema of tool `name`, from native tools or the known example's tool list."""
    for schema in schemas:
        if schema.get("name") == name:
            return schema
    if example is not None:
        for raw in example.tools:
            try:
                schema = json.loads(raw)
            except ValueError:
                continue
            if isinstance(schema, dict) and schema.get("name") == name:
                return schema
    return None
