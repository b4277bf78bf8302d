"""Judge validation: the judge labels the four reference answers of every example.

The judge-check plan (`launch.py`) turns each example into four items, one per
reference answer: `Example` copies whose `uuid` is the row key `<uuid>#<label>` and whose
`correct_answer` is that answer's label. So the runner's resume, progress, traces and
metrics.json work as for any kind, and `accuracy` there is the judge's accuracy.

The judge is asked with the llm_judge pipeline's own request (`judge_response`: the same
prompt, one repair, the same audit events), k times with seeds api_seed + i when k > 1.
A request whose reply could not be read even after the repair gives no label (None): the
llm_judge pipeline leaves it out of its figures (or scores it as cannot_answer under
judge_unreadable_as = "cannot_answer"); a judge-check never scores it. An
answer left without a label is asked again when the check is run again (`settled`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from w2c_tui.data import Example
from w2c_tui.labels import LABELS
from w2c_tui.metrics.judge_check import modal_label
from w2c_tui.pipelines.base import Pipeline
from w2c_tui.pipelines.judging import judge_response
from w2c_tui.prompts.judge import build_judge_messages
from w2c_tui.session import kinds
from w2c_tui.judge_check.link import JUDGE_CHECK
from w2c_tui.session.answer_keys import reference_example, split_answer_key
from w2c_tui.store.jsonl import read_json
from w2c_tui.store.layout import JUDGE_CHECK_LABELS

LABELS_FILE = JUDGE_CHECK_LABELS
#: audit event: the judge gave no readable label for a reference answer in any of its k requests
UNLABELLED_EVENT = "judge_check_answer_unlabelled"


def reference_items(examples: list[Example]) -> list[Example]:
    """One item per (example, reference answer), in the dataset's label order."""
    return [reference_example(example, label) for example in examples for label in LABELS if label in example.answers]


class JudgeCheckPipeline(Pipeline):
    kind = kinds.JUDGE_CHECK
    primary_file = LABELS_FILE

    @staticmethod
    def prompt_chars(example: Example) -> int:
        """Characters of prompt one item sends per judge request (cost estimate)."""
        answer = example.answers.get(example.correct_answer, "")
        return sum(len(m["content"]) for m in build_judge_messages(example, answer))

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # k is the session's (recorded in its manifest at launch, part of its fingerprint).
        recorded = (read_json(ctx.paths.manifest) or {}).get(JUDGE_CHECK) or {}
        self.k = max(1, int(recorded.get("k") or 1))

    async def evaluate(self, example: Example) -> dict[str, Any]:
        answer = example.answers[example.correct_answer]
        # The k requests go out together (the provider's concurrency limit still applies).
        decisions = await asyncio.gather(
            *(judge_response(self.ctx, example, answer, seed=self.ctx.api_seed + i) for i in range(self.k))
        )
        labels = [None if d["judge_fallback_to_cannot_answer"] else d["predicted_label"] for d in decisions]
        raws = [d["judge_raw_retry"] if d["judge_used_retry"] else d["judge_raw"] for d in decisions]
        retries = [bool(d["judge_used_retry"]) for d in decisions]
        uuid, label = split_answer_key(example.uuid)
        row = {
            "uuid": example.uuid,
            "example_uuid": uuid,
            "reference_label": label,
            "gold_label": label,  # what the store's readers take as the gold of a row not in the dataset
            "predicted_label": modal_label(labels),
            "judge_labels": labels,
            "judge_raw": raws,
            "judge_used_retry": retries,
            "judge_model": self.ctx.judge_model,
            "temperature": self.ctx.settings.pipelines.judge_temperature,
            "k": self.k,
            "api_seed": self.ctx.api_seed,
            "answer_text": answer,
        }
        if row["predicted_label"] is None:
            self.ctx.audit.emit(
                UNLABELLED_EVENT,
                uuid=example.uuid,
                stage="judge_parse",
                details={"k": self.k, "counted_as": "not labelled (left out of every judge-check figure)"},
            )
        self.write(LABELS_FILE, row)
        return row

    @staticmethod
    def label_of(row: dict[str, Any]) -> str | None:
        return row.get("predicted_label")

    @staticmethod
    def settled(row: dict[str, Any]) -> bool:
        """An answer the judge gave no label is asked again by the next run (its judge may have
        been fixed since); the new row supersedes the old (the checkpoint's last row wins)."""
        return row.get("predicted_label") is not None


__all__ = ["JUDGE_CHECK", "JudgeCheckPipeline", "LABELS_FILE", "reference_items"]
