"""The row keys of a judge-check session: one row per reference answer, keyed `<uuid>#<label>`.

So the runner's resume (rows keyed by UUID), the trace index (calls keyed by UUID) and the
session reader work unchanged; the reader turns such keys back into items (`reference_examples`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

KEY_SEPARATOR = "#"


def answer_key(uuid: str, label: str) -> str:
    """The row key of one reference answer: `<uuid>#<label>`."""
    return f"{uuid}{KEY_SEPARATOR}{label}"


def split_answer_key(key: str) -> tuple[str, str]:
    """(uuid, reference label) of a row key; the label is "" for a key without one."""
    uuid, _, label = key.rpartition(KEY_SEPARATOR)
    return (uuid, label) if uuid else (key, "")


def reference_example(example: Any, label: str) -> Any:
    """The item of one reference answer: the example under its row key, gold = that label."""
    return dataclasses.replace(example, uuid=answer_key(example.uuid, label), correct_answer=label)


def reference_examples(keys: set[str], examples: dict[str, Any]) -> dict[str, Any]:
    """Row key -> item, for the keys that name a reference answer of one of `examples`."""
    found = {}
    for key in keys:
        uuid, label = split_answer_key(key)
        example = examples.get(uuid)
        if label and example is not None and label in example.answers:
            found[key] = reference_example(example, label)
    return found
