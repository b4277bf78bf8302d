"""The sim playing the preference judge (`w2c-tui prefer`, `prefer-check`).

It reads the two answers from the `<response_1>` / `<response_2>` tags of the prompt and the
question's gold label from the bundled example (`gold_of`: the question, and the tools listed
before it, not the names in the answers, pick among examples sharing a question); an answer is
"right" when the sim's judge labels it as the gold label (`sim.judge.classify`). Then
`preferred_position` decides, all by hashes, so tests recompute every verdict:

1. position bias: with unit(seed, "prefer-position", first, second, sample) < position_bias
   the judge answers "1" whatever the answers;
2. otherwise the truth: "1" when only the first answer is right, "2" when only the second
   is, "tie" when both or neither are;
3. an error: with unit(seed, "prefer-error", min(first, second), max(first, second), sample)
   < error_rate, "1" and "2" swap and a tie becomes pick(("1", "2"), seed, "prefer-error-to",
   first, second, sample). The error hash ignores the order, so an erring judge errs in both
   orders (a consistent mistake); the position bias makes it inconsistent.

`sample` is the request seed of a sampled judge (temperature > 0), None otherwise.
"""

from __future__ import annotations

import re

from w2c_tui.sim.hashing import pick, unit
from w2c_tui.sim.judge import classify
from w2c_tui.sim.knowledge import find_example, tool_names_in_text

_TAG = {n: re.compile(rf"<response_{n}>\n?(.*?)\n?</response_{n}>", re.DOTALL) for n in (1, 2)}
_REASONS = {
    "1": "Response 1 takes the behaviour the question calls for; response 2 does not.",
    "2": "Response 2 takes the behaviour the question calls for; response 1 does not.",
    "tie": "Both responses are equally good (or equally poor) by the criteria.",
}


def _ours(label: str) -> str:
    return "direct" if label == "direct_answer" else label


def responses(message: str) -> tuple[str, str] | None:
    """(response 1, response 2) inside a preference prompt, None when either is missing."""
    found = [_TAG[n].findall(message) for n in (1, 2)]
    return (found[0][-1], found[1][-1]) if all(found) else None


def gold_of(message: str) -> str | None:
    """The gold label of the bundled example the prompt asks about (None when unknown)."""
    head, _, rest = message.partition("<question>")
    question = rest.partition("</question>")[0]
    example = find_example(question or message, tool_names_in_text(head))
    return example.correct_answer if example is not None else None


def preferred_position(
    seed: int, first: str, second: str, gold: str | None, error_rate: float, position_bias: float, sample: object = None
) -> str:
    """"1", "2" or "tie" for these two answers in this order (module docstring)."""
    if position_bias > 0 and unit(seed, "prefer-position", first, second, sample) < position_bias:
        return "1"
    good1 = gold is not None and _ours(classify(first)) == gold
    good2 = gold is not None and _ours(classify(second)) == gold
    verdict = "1" if good1 and not good2 else "2" if good2 and not good1 else "tie"
    low, high = sorted((first, second))
    if error_rate > 0 and unit(seed, "prefer-error", low, high, sample) < error_rate:
        verdict = {"1": "2", "2": "1"}.get(verdict) or pick(("1", "2"), seed, "prefer-error-to", first, second, sample)
    return verdict


def preference_reply(
    seed: int, message: str, *, error_rate: float, position_bias: float, sample: object = None
) -> tuple[str, str | None]:
    """(reply text, gold label) for a preference request: one JSON object with the verdict and a reason."""
    pair = responses(message)
    gold = gold_of(message)
    if pair is None:
        return "I cannot find two responses to compare.", gold
    verdict = preferred_position(seed, pair[0], pair[1], gold, error_rate, position_bias, sample)
    return '{"preferred": "' + verdict + '", "reason": "' + _REASONS[verdict] + '"}', gold
