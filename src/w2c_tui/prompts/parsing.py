"""Reading the judge's JSON verdict and the MCQ classifier's digit.

The judge parser is strict about content (a JSON object with a known "classification")
and lenient about wrapping (code fences, reasoning text before the object, `<think>`
blocks). Anything else is reported as unparsed, never guessed: the pipeline then asks
once more, and only the metrics stage applies the fallback label.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# Judge vocabulary (the official names and ours) -> our label names.
_JUDGE_TO_LABEL = {
    "direct_answer": "direct",
    "direct": "direct",
    "tool_call": "tool_call",
    "request_for_info": "request_for_info",
    "cannot_answer": "cannot_answer",
}

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n?(.*?)```", re.IGNORECASE | re.DOTALL)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class JudgeParse:
    label: str | None
    path: str | None  # "json" | "fenced_json" | "embedded_json"; None when unparsed
    rationale: str | None = None
    error: str | None = None


def strip_reasoning(text: str) -> str:
    """The text without reasoning-model `<think>` blocks.

    A lone `</think>` (servers that drop the opening tag) ends the reasoning; a `<think>`
    that is never closed means everything after it is reasoning.
    """
    text = _THINK_BLOCK.sub("", text)
    lower = text.lower()
    if "</think>" in lower:
        text = text[lower.rindex("</think>") + len("</think>") :]
        lower = text.lower()
    if "<think>" in lower:
        text = text[: lower.index("<think>")]
    return text


def parse_judge_output(text: str | None) -> JudgeParse:
    body = strip_reasoning(text or "").strip()
    if not body:
        return JudgeParse(None, None, error="empty reply (nothing outside reasoning blocks)")

    whole = _loads_object(body)
    if whole is not None:
        return _verdict([(whole, body, "")], "json")

    fenced = [(obj, m.group(0), body.replace(m.group(0), " ")) for m in _FENCE.finditer(body)
              if (obj := _loads_object(m.group(1).strip())) is not None]
    if any("classification" in obj for obj, _, _ in fenced):
        return _verdict(fenced, "fenced_json")

    embedded = [(obj, raw, body.replace(raw, " ")) for obj, raw in _embedded_objects(body)]
    if any("classification" in obj for obj, _, _ in embedded):
        return _verdict(embedded, "embedded_json")
    if fenced or embedded:
        return JudgeParse(None, None, error='no JSON object with a "classification" key')
    return JudgeParse(None, None, error="no JSON object found")


def _verdict(candidates: list[tuple[dict, str, str]], path: str) -> JudgeParse:
    """The last candidate with a known label; else why none qualified."""
    with_key = [c for c in candidates if "classification" in c[0]]
    if not with_key:
        return JudgeParse(None, None, error='JSON object has no "classification" key')
    for obj, _raw, outside in reversed(with_key):
        label = _label(obj["classification"])
        if label is not None:
            return JudgeParse(label, path, rationale=_rationale(obj, outside))
    bad = with_key[-1][0]["classification"]
    return JudgeParse(None, None, error=f"unknown classification {bad!r}; expected one of {', '.join(_JUDGE_TO_LABEL)}")


def _label(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    return _JUDGE_TO_LABEL.get(value.strip().lower())


def _rationale(obj: dict, outside: str) -> str | None:
    for key in ("rationale", "reason"):
        if isinstance(obj.get(key), str) and obj[key].strip():
            return obj[key].strip()
    return outside.strip() or None


def _loads_object(text: str) -> dict | None:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _embedded_objects(text: str) -> list[tuple[dict, str]]:
    """Top-level JSON objects inside free text, left to right, with their source text."""
    found = []
    i = text.find("{")
    while i != -1:
        try:
            value, end = _DECODER.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError):
            i = text.find("{", i + 1)
            continue
        if isinstance(value, dict):
            found.append((value, text[i:end]))
        # Skip past the object so its nested objects are not reported on their own.
        i = text.find("{", end)
    return found


def parse_mcq_digit(text: str | None) -> int:
    """The first character that is a digit 0-3, ignoring `<think>` blocks; -1 if none.

    Other digits are skipped, so "7... no, 1" gives 1 and "12" gives 1: the classifier was
    told to reply with one digit, and digits outside 0-3 cannot name an option.
    """
    match = re.search(r"[0-3]", strip_reasoning(text or ""))
    return int(match.group(0)) if match else -1
