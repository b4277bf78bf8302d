"""NVIDIA's official When2Call MCQ formats as template families (`when2call`, `when2call-<format>`).

The paper's MCQ figures come from NVIDIA's lm-evaluation-harness task
(`evaluation/mcq/lm_eval_harness/when2call/` in NVIDIA/When2Call, Apache-2.0; NOTICE beside
this file): one pre-rendered prompt per model family, the four answers as choices in the
record's order with the tool call rewritten in the family's syntax, `target_delimiter: ""`.
With one of these families `mcq_logprob` scores exactly those (context, continuation) pairs.

`when2call-xlam` is known but refused: its prompt goes through the model's own chat template
(lm-eval's `--apply_chat_template`, from the Hugging Face tokenizer), which an
OpenAI-compatible `/completions` server does not apply to a prompt.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from w2c_tui.data.when2call import DataError, Example
from w2c_tui.labels import LABELS
from w2c_tui.prompts.official.formats import FORMATS

XLAM = "when2call-xlam"
OFFICIAL_FAMILIES: tuple[str, ...] = (*FORMATS, XLAM)
XLAM_REFUSED = (
    f"{XLAM} needs the model's own chat template applied to its prompt, which a /completions server does not do; "
    f"choose one of {', '.join(FORMATS)}"
)


def is_official(family: str | None) -> bool:
    return family in OFFICIAL_FAMILIES


def official_family(rows: Iterable[dict[str, Any]]) -> str | None:
    """The official family every one of these mcq_logprob rows was scored in, else None."""
    families = {row.get("template_family") for row in rows}
    family = families.pop() if len(families) == 1 else None
    return family if is_official(family) else None


def official_pair(example: Example, family: str) -> tuple[str, list[str]]:
    """(context, choices) exactly as the official task writes them, choices in LABELS order.

    An example the format cannot write (a tool_call answer without name and arguments, a tool
    without a description for functionary) is a DataError naming the example.
    """
    if family == XLAM:
        raise ValueError(XLAM_REFUSED)
    prompt, call = FORMATS[family]
    try:
        choices = [call(example.answers[label]) if call and label == "tool_call" else example.answers[label] for label in LABELS]
        return prompt(example), choices
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataError(
            f"uuid {example.uuid}: the official {family} format cannot write this example "
            f"({type(exc).__name__}: {exc}); fix the record or choose another template_family"
        ) from None


def check_writable(examples: Iterable[Example], family: str) -> None:
    """Write every example once before the run: one the format cannot write is named then, not mid-run."""
    if family in FORMATS:
        for example in examples:
            official_pair(example, family)
