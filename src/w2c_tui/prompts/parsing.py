"""Reading the judge's JSON verdict and the MCQ classifier's digit.

The judge parser is strict about content (a JSON object with a known "classification";
several objects must all name the same one) and lenient about wrapping (code fences,
reasoning text before the object, `<think>` blocks). Anything else is reported as unparsed,
never guessed: the pipeline then asks once more, and only the metrics stage applies the
fallback label.
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
        return _verdict([(whole, body)], "json", "")

    found = _embedded_objects(body)
    with_key = [(obj, raw) for obj, raw in found if "classification" in obj]
    if not with_key:
        return JudgeParse(None, None, error='no JSON object with a "classification" key' if found else "no JSON object found")
    fences = [m for m in _FENCE.finditer(body) if any(raw in m.group(1) for _, raw in with_key)]
    outside = body
    for piece in [m.group(0) for m in fences] + [raw for _, raw in with_key]:
        outside = outside.replace(piece, " ")
    return _verdict(with_key, "fenced_json" if fences else "embedded_json", outside)


def _verdict(with_key: list[tuple[dict, str]], path: str, outside: str) -> JudgeParse:
    """The one label every object with a "classification" key names; else why there is none.

    Objects that name different labels (or one that is not a label) make the reply ambiguous:
    neither is taken, so the pipeline asks again instead of guessing which the judge meant."""
    named = [obj["classification"] for obj, _ in with_key]
    labels = {_label(value) for value in named}
    if None in labels:
        bad = next(value for value in named if _label(value) is None)
        return JudgeParse(None, None, error=f"unknown classification {repr(bad)[:60]}; expected one of {', '.join(_JUDGE_TO_LABEL)}")
    if len(labels) > 1:
        said = ", ".join(repr(value)[:40] for value in named)
        return JudgeParse(None, None, error=f"the reply's JSON objects disagree (classification {said}): ambiguous")
    rationale = next((r for obj, _ in reversed(with_key) if (r := _own_rationale(obj))), None)
    return JudgeParse(labels.pop(), path, rationale=rationale or outside.strip() or None)


def _label(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    return _JUDGE_TO_LABEL.get(value.strip().lower())


def _own_rationale(obj: dict) -> str | None:
    for key in ("rationale", "reason"):
        if isinstance(obj.get(key), str) and obj[key].strip():
            return obj[key].strip()
    return None


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
