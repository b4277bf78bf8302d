"""Before any example: can each target's server score `mcq_logprob` exactly? Refuse it where not.

The other pipelines of the launch run; the refused ones are listed in the manifest with
the probe's reason, and the caller is told in one sentence per (server, model).
"""

from __future__ import annotations

from collections.abc import Callable

from w2c_tui.api import ProviderSettings, RetryPolicy, route
from w2c_tui.api.probe import LogprobSupport, probe_logprobs
from w2c_tui.engine.plan import SessionPlan
from w2c_tui.engine.state import RunState
from w2c_tui.status import REFUSED
from w2c_tui.session import kinds
from w2c_tui.store.session import is_done


def needs_logprobs(method: str) -> bool:
    """Does this kind score prompt log-probabilities (so the probe decides whether it runs)?"""
    kind = kinds.method_kind(method)
    return kind is not None and kind.needs_prompt_logprobs


def logprob_exp_names(plan: SessionPlan) -> list[str]:
    """The pipelines of `plan` that need prompt log-probabilities."""
    sweeps = [s.exp_name for s in plan.sweeps if needs_logprobs(s.method)]
    return [p for p in plan.pipelines if needs_logprobs(p)] + sweeps


async def check_logprob_support(
    plans: list[SessionPlan],
    providers: list[ProviderSettings],
    states: dict[str, RunState],
    *,
    policy: RetryPolicy,
    timeout_seconds: float,
    notify: Callable[[str], None],
) -> dict[str, LogprobSupport]:
    """Probe each (provider, target model) once; drop refused pipelines from the plans.

    Returns the findings per session fingerprint. A probe that failed for a passing reason
    (over a whole retry budget) refuses nothing: that pipeline's examples fail and a resume
    asks again. A tokenizer endpoint that fails is optional: said once, then left out.
    """
    found: dict[tuple[str, str], LogprobSupport] = {}
    by_session: dict[str, LogprobSupport] = {}
    for plan in plans:
        wanted = logprob_exp_names(plan)
        if not wanted or all(is_done(plan.paths, exp_name) for exp_name in wanted):
            continue  # nothing left to score: no request
        provider = route(plan.target_model, providers)
        key = (provider.name, plan.target_model)
        if key not in found:
            found[key] = await probe_logprobs(provider, plan.target_model, timeout_seconds=timeout_seconds, policy=policy)
            if not found[key].usable and not found[key].transient:
                notify(f"mcq_logprob refused before its first example: {found[key].problem}")
            elif found[key].tokenizer_problem:
                notify(
                    f"mcq_logprob: the tokenizer endpoint of provider '{provider.name}' is left out "
                    f"(prompts are split by the echo instead): {found[key].tokenizer_problem}"
                )
        support = by_session[plan.fingerprint] = found[key]
        if support.usable or support.transient:
            continue
        refuse(plan, states[plan.fingerprint], needs_logprobs, wanted, support.problem or "")
    return by_session


def refuse(plan: SessionPlan, state: RunState, kind_matches: Callable[[str], bool], exp_names: list[str], problem: str) -> None:
    """Drop the pipelines and sweeps whose kind matches from `plan`; `exp_names` show as refused with `problem`."""
    plan.pipelines = [p for p in plan.pipelines if not kind_matches(p)]
    plan.sweeps = [s for s in plan.sweeps if not kind_matches(s.method)]
    for exp_name in exp_names:
        progress = state.pipeline(exp_name)
        progress.status, progress.message = REFUSED, problem
        progress.total = len(plan.examples)  # shown as 0 of N, not as an empty task done
