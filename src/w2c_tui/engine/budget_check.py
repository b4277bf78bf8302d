"""A token budget too small for one request of the run, said at launch.

The token bucket (api/token_budget.py) lets no request take more than one minute's budget,
so such a run does not wait forever; but it goes at one request a minute, which nobody
wants without being told. One request is measured on the run's own examples: the smallest
MCQ prompt among the first few (every pipeline's requests carry at least the question and
its tools), in the budget's own estimate of tokens.
"""

from __future__ import annotations

from w2c_tui.api.providers import ProviderSettings, route
from w2c_tui.api.token_budget import estimate_tokens
from w2c_tui.prompts.mcq import build_mcq_messages

_SAMPLE = 20


def smallest_request(examples: list) -> int:
    """Tokens (the budget's estimate) of the smallest MCQ prompt among the first examples; 0 without any."""
    sizes = [estimate_tokens({"messages": build_mcq_messages(e), "max_tokens": 1}) for e in examples[:_SAMPLE]]
    return min(sizes, default=0)


def budget_warnings(plans: list, providers: list[ProviderSettings]) -> list[str]:
    """One line per provider whose tokens_per_minute cannot hold one request of the run."""
    lines = []
    for provider in providers:
        per_minute = provider.tokens_per_minute
        if per_minute <= 0:
            continue
        examples = [e for plan in plans if route(plan.target_model, providers).name == provider.name for e in plan.examples]
        need = smallest_request(examples)
        if need > per_minute:
            lines.append(
                f"provider '{provider.name}': tokens_per_minute = {per_minute:,} is less than one request of this run "
                f"(about {need:,} tokens): each request counts as a whole minute's budget, so they go one a minute; "
                f"raise [providers.{provider.name}] tokens_per_minute (0: no token budget)"
            )
    return lines
