"""The four When2Call behaviour labels, in the dataset's canonical order."""

from __future__ import annotations

from typing import Final, Literal

Label = Literal["direct", "tool_call", "request_for_info", "cannot_answer"]

# Order of the `answers` dict in every When2Call record; MCQ option i is LABELS[i].
LABELS: Final[tuple[str, ...]] = ("direct", "tool_call", "request_for_info", "cannot_answer")
LABELS_NO_DIRECT: Final[tuple[str, ...]] = LABELS[1:]

# What an unparsable or missing prediction is coerced to at the metrics stage (spec §10.4).
FALLBACK_LABEL: Final[str] = "cannot_answer"

SHORT: Final[dict[str, str]] = {
    "direct": "dir",
    "tool_call": "tool",
    "request_for_info": "rfi",
    "cannot_answer": "can",
}


def is_label(value: object) -> bool:
    return isinstance(value, str) and value in LABELS
