"""The preference pipelines: one judge call per item, an item being (pair, call).

The launch (`launch.py`) turns each pair into k items, `Example` copies whose `uuid` is the
row key `<pair>#<call>` (`keys.py`), so the runner's resume sends only the calls without a
row, and traces, progress and metrics.json work as for any kind. Call i shows A as
"Response 1" when i is even and B when odd, with seed api_seed + i.

`prefer`: A and B are the llm_judge answers of two sessions (read from the session folders
the manifest's `prefer` entry names). `prefer_check`: A is the right reference answer, B one
wrong one (the item's gold label is the right one; the wrong one is in the pair key).

A reply whose verdict cannot be read is asked once more (as the judge's repair); if that
fails too the call has no verdict (None), is audited and left out of every figure, and the
next run of the same command asks it again. A run in which no call got a verdict is not
complete.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from w2c_tui.data import Example
from w2c_tui.metrics.preference import preferred_of
from w2c_tui.pipelines.base import Pipeline
from w2c_tui.preference.keys import order_of, split_call_key, split_pair
from w2c_tui.prompts.preference import (
    build_preference_messages,
    build_preference_repair_messages,
    parse_preference_output,
)
from w2c_tui.session import kinds
from w2c_tui.store.jsonl import read_json, read_keyed
from w2c_tui.store.layout import JUDGE_DECISIONS, PREFERENCE_CALLS, TARGET_RESPONSES

PREFER = kinds.PREFER.name
PREFER_CHECK = kinds.PREFER_CHECK.name
#: audit event: the judge's reply gave no verdict, even after the repair
UNREADABLE_EVENT = "preference_verdict_unreadable"
_ANSWER_CHARS = 400  # a typical answer, for the cost estimate


def session_answers(root: Path) -> dict[str, dict[str, Any]]:
    """uuid -> {"text", "label", "gold"}: a session's llm_judge answers that were judged (gold:
    the label the row was scored against, None in rows that kept none)."""
    folder = Path(root) / "checkpoints" / "llm_judge"
    targets = read_keyed(folder / TARGET_RESPONSES)
    decisions = read_keyed(folder / JUDGE_DECISIONS)
    answers = {}
    for uuid, decision in decisions.items():
        text = (targets.get(uuid) or {}).get("raw_text")
        if text is None:
            text = decision.get("target_raw")  # older rows kept the answer in the decision
        if isinstance(text, str):
            answers[uuid] = {"text": text, "label": decision.get("predicted_label"), "gold": decision.get("gold_label")}
    return answers


class _PreferenceBase(Pipeline):
    primary_file = PREFERENCE_CALLS

    @staticmethod
    def prompt_chars(example: Example) -> int:
        answer = "x" * _ANSWER_CHARS
        return sum(len(m["content"]) for m in build_preference_messages(example, answer, answer))

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        recorded = (read_json(ctx.paths.manifest) or {}).get(self.kind.name) or {}
        self.recorded = recorded
        self.k = max(1, int(recorded.get("k") or 2))

    def pair_answers(self, example: Example, pair: str) -> tuple[str, str, Any, Any]:
        """(answer A, answer B, label A, label B) of one pair."""
        raise NotImplementedError

    async def _ask(self, example: Example, first: str, second: str, seed: int) -> tuple[Any, str, bool, str | None]:
        """(parse, raw reply, repaired?, first raw reply when repaired)."""
        pipes = self.ctx.settings.pipelines
        judge = self.ctx.judge_model

        async def ask(messages, stage: str) -> str:
            result = await self.ctx.client.chat(
                judge,
                messages,
                temperature=pipes.judge_temperature,
                max_tokens=pipes.judge_max_tokens,
                seed=seed,
                reasoning_effort=self.ctx.reasoning_effort(judge),
                ctx=self.ctx.call(example.uuid, stage),
            )
            return result.content or ""

        raw = await ask(build_preference_messages(example, first, second), "judge")
        parsed = parse_preference_output(raw)
        if parsed.verdict is not None:
            return parsed, raw, False, None
        retry = await ask(build_preference_repair_messages(example, first, second, raw), "judge_repair")
        return parse_preference_output(retry), retry, True, raw

    async def evaluate(self, example: Example) -> dict[str, Any]:
        pair, call = split_call_key(example.uuid)
        answer_a, answer_b, label_a, label_b = self.pair_answers(example, pair)
        order = order_of(call)
        first, second = (answer_a, answer_b) if order == "AB" else (answer_b, answer_a)
        seed = self.ctx.api_seed + call
        parsed, raw, repaired, first_raw = await self._ask(example, first, second, seed)
        positions = {"1": order[0], "2": order[1], "tie": "tie"}
        preferred = positions.get(parsed.verdict) if parsed.verdict else None
        row = {
            "uuid": example.uuid,
            "pair": pair,
            "example_uuid": split_pair(pair)[0],
            "call": call,
            "order": order,
            "verdict": parsed.verdict,
            "preferred": preferred,
            # the label of the answer it preferred (None for a tie or no verdict)
            "predicted_label": {"A": label_a, "B": label_b}.get(preferred),
            "reason": parsed.reason,
            "judge_raw": raw,
            "judge_raw_first": first_raw,
            "judge_used_retry": repaired,
            "gold_label": example.correct_answer,
            "label_a": label_a,
            "label_b": label_b,
            "answer_a": answer_a,
            "answer_b": answer_b,
            "judge_model": self.ctx.judge_model,
            "temperature": self.ctx.settings.pipelines.judge_temperature,
            "k": self.k,
            "api_seed": self.ctx.api_seed,
            "request_seed": seed,
        }
        if parsed.verdict is None:
            self.ctx.audit.emit(
                UNREADABLE_EVENT,
                uuid=example.uuid,
                stage="judge_parse",
                details={"error": parsed.error, "counted_as": "no verdict (left out of every preference figure)"},
            )
        self.write(PREFERENCE_CALLS, row)
        return row

    @staticmethod
    def label_of(row: dict[str, Any]) -> str | None:
        return None  # a call prefers an answer, it predicts no behaviour: no live accuracy or F1

    @staticmethod
    def settled(row: dict[str, Any]) -> bool:
        """A call without a readable verdict is asked again by the next run (the newer row wins)."""
        return preferred_of(row) is not None


class PreferPipeline(_PreferenceBase):
    """Session A's answer against session B's, both from their llm_judge pipelines."""

    kind = kinds.PREFER

    def prepare(self, pending: list[Example]) -> None:
        self._a = session_answers(Path(self.recorded["session_a"]))
        self._b = session_answers(Path(self.recorded["session_b"]))

    def pair_answers(self, example: Example, pair: str) -> tuple[str, str, Any, Any]:
        a, b = self._a[pair], self._b[pair]
        return a["text"], b["text"], a["label"], b["label"]


class PreferCheckPipeline(_PreferenceBase):
    """The right reference answer (A) against one wrong one (B)."""

    kind = kinds.PREFER_CHECK

    def pair_answers(self, example: Example, pair: str) -> tuple[str, str, Any, Any]:
        wrong = split_pair(pair)[1]
        return example.answers[example.correct_answer], example.answers[wrong], example.correct_answer, wrong
