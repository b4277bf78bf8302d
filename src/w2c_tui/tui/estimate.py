"""What a launch will cost before it starts: requests per pipeline and rough prompt tokens.

Requests per example: llm_judge 2 (target + judge; a judge repair adds one more, rarely),
mcq 1, mcq_logprob 1 (four prompts in one /completions request); a stability sweep is k
times its method. Prompt tokens are estimated as characters / 4 of the real prompts,
measured on a sample of examples and scaled up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from w2c_tui.config.schema import Settings
from w2c_tui.store.layout import stability_exp_name

REQUESTS_PER_EXAMPLE = {"llm_judge": 2, "mcq": 1, "mcq_logprob": 1}
CHARS_PER_TOKEN = 4
_SAMPLE = 40
_JUDGED_ANSWER_CHARS = 400  # a typical free-form answer the judge reads


@dataclass
class Estimate:
    n_examples: int
    requests: dict[str, int] = field(default_factory=dict)
    prompt_tokens: dict[str, int] = field(default_factory=dict)

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    @property
    def total_prompt_tokens(self) -> int:
        return sum(self.prompt_tokens.values())


def planned_pipelines(settings: Settings) -> list[tuple[str, str, int]]:
    """(exp_name, method, repeats) for every pipeline and sweep the settings switch on."""
    planned = [(name, name, 1) for name in settings.pipelines.enabled()]
    if settings.stability.enabled:
        seen = set()
        for sweep in settings.stability.sweeps:
            for temperature in sweep.temperatures:
                name = stability_exp_name(sweep.method, sweep.k, temperature)
                if name not in seen:
                    seen.add(name)
                    planned.append((name, sweep.method, sweep.k))
    return planned


def prompt_chars_per_method(examples: list[Any]) -> dict[str, float]:
    """Mean prompt characters per request of each method, measured on a sample."""
    from w2c_tui.prompts.judge import build_judge_messages
    from w2c_tui.prompts.mcq import build_mcq_messages
    from w2c_tui.prompts.system import build_target_messages

    sample = examples[:: max(1, len(examples) // _SAMPLE)][:_SAMPLE]
    if not sample:
        return {name: 0.0 for name in REQUESTS_PER_EXAMPLE}

    def chars(messages: list[dict[str, str]]) -> int:
        return sum(len(m.get("content") or "") for m in messages)

    target = sum(chars(build_target_messages(e)) for e in sample) / len(sample)
    judge = sum(chars(build_judge_messages(e, "x" * _JUDGED_ANSWER_CHARS)) for e in sample) / len(sample)
    mcq = sum(chars(build_mcq_messages(e)) for e in sample) / len(sample)
    # Log-likelihood: the context once plus four times context + answer.
    loglik = sum(5 * chars(build_mcq_messages(e)) + sum(len(a) for a in e.answers.values()) for e in sample) / len(sample)
    return {"llm_judge": target + judge, "mcq": mcq, "mcq_logprob": loglik}


def estimate(settings: Settings, n_examples: int, chars_per_method: dict[str, float] | None = None) -> Estimate:
    result = Estimate(n_examples)
    for exp_name, method, repeats in planned_pipelines(settings):
        result.requests[exp_name] = n_examples * REQUESTS_PER_EXAMPLE[method] * repeats
        if chars_per_method:
            tokens = chars_per_method.get(method, 0.0) / CHARS_PER_TOKEN
            result.prompt_tokens[exp_name] = int(n_examples * repeats * tokens)
    return result
