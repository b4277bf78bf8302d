"""What a launch will cost before it starts: requests per pipeline and rough prompt tokens.

The pipelines and sweeps are the plan's own (`engine.plan.planned_exp_names`); what one
example costs is each kind's registry entry (`store/kinds.py`): llm_judge 2 requests
(target + judge; a judge repair adds one more, rarely), mcq 1, mcq_logprob 1 /completions
request (plus five small /tokenize calls where the server has a tokenizer, not counted
here); a stability sweep is k times its method. Prompt tokens are estimated as
characters / 4 of the real prompts, measured on a sample of examples and scaled up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from w2c_tui.config.schema import Settings
from w2c_tui.engine.plan import planned_exp_names
from w2c_tui.pipelines.kind_code import resolve
from w2c_tui.store import kinds

CHARS_PER_TOKEN = 4
_SAMPLE = 40


@dataclass
class Estimate:
    n_examples: int
    requests: dict[str, int] = field(default_factory=dict)
    prompt_tokens: dict[str, int] = field(default_factory=dict)
    tokenize_calls: dict[str, int] = field(default_factory=dict)  # small /tokenize calls beside the requests

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    @property
    def total_prompt_tokens(self) -> int:
        return sum(self.prompt_tokens.values())


def planned_pipelines(settings: Settings) -> list[tuple[str, str, int]]:
    """(exp_name, method, repeats) for every pipeline and sweep the settings switch on."""
    pipelines, sweeps = planned_exp_names(settings)
    return [(name, name, 1) for name in pipelines] + [(s.exp_name, s.method, s.k) for s in sweeps]


def prompt_chars_per_method(examples: list[Any]) -> dict[str, float]:
    """Mean prompt characters per example of each kind, measured on a sample."""
    sample = examples[:: max(1, len(examples) // _SAMPLE)][:_SAMPLE]
    measured: dict[str, float] = {}
    for kind in kinds.kinds():
        if kind.prompt_chars is None or not sample:
            measured[kind.name] = 0.0
            continue
        chars = resolve(kind.prompt_chars)
        measured[kind.name] = sum(chars(e) for e in sample) / len(sample)
    return measured


def estimate(settings: Settings, n_examples: int, chars_per_method: dict[str, float] | None = None) -> Estimate:
    result = Estimate(n_examples)
    for exp_name, method, repeats in planned_pipelines(settings):
        kind = kinds.get(method)
        result.requests[exp_name] = n_examples * kind.requests_per_example * repeats
        if kind.tokenize_calls_per_example:
            result.tokenize_calls[exp_name] = n_examples * kind.tokenize_calls_per_example * repeats
        if chars_per_method:
            tokens = chars_per_method.get(method, 0.0) / CHARS_PER_TOKEN
            result.prompt_tokens[exp_name] = int(n_examples * repeats * tokens)
    return result
