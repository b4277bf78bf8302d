"""Which behaviour (label) the simulated assistant intends for a request.

* Known question (a bundled When2Call question appears in the prompt): the gold label
  with probability ``skill(model)``, else one of the other three labels.
* Unknown question: ``cannot_answer`` when the prompt offers no tools, else any label.

At temperature 0 the draw uses ``unit(seed, "intent", model, prompt)`` only. At T > 0 the
request's own seed (or a counter when it has none) may replace that draw: with
probability ``min(0.9, 0.6 * T)`` the label is drawn afresh, so sampling the same prompt
with different seeds varies more the hotter it is.
"""

from __future__ import annotations

from w2c_tui.data.when2call import Example
from w2c_tui.labels import LABELS
from w2c_tui.sim.hashing import pick, unit

SKILL_LOW, SKILL_SPAN = 0.60, 0.25


def skill(model: str) -> float:
    """How often `model` picks the gold label of a known question: 0.60 to 0.85."""
    return SKILL_LOW + SKILL_SPAN * unit("skill", model)


def _draw(example: Example | None, has_tools: bool, model: str, *key: object) -> str:
    if example is not None:
        gold = example.correct_answer
        if unit(*key, "gold") < skill(model):
            return gold
        return pick([label for label in LABELS if label != gold], *key, "other")
    if not has_tools:
        return "cannot_answer"
    return pick(LABELS, *key, "any")


def deviation_probability(temperature: float) -> float:
    return min(0.9, 0.6 * max(0.0, temperature))


def intended_label(
    *,
    seed: int,
    model: str,
    prompt: str,
    example: Example | None,
    has_tools: bool,
    temperature: float,
    request_seed: int | str | None,
) -> str:
    """The label the sim acts out; `request_seed` only matters when temperature > 0."""
    base = _draw(example, has_tools, model, seed, "intent", model, prompt)
    if temperature <= 0:
        return base
    key = (seed, "sample", model, prompt, temperature, request_seed)
    if unit(*key) >= deviation_probability(temperature):
        return base
    return _draw(example, has_tools, model, *key)
