"""Before any example: does each target's server take chat requests with `tools`? Refuse where not.

Only with `[pipelines] target_native_tools = true`, and only for the pipelines that send the
target the example's tools (those whose kind writes target answers: llm_judge and its sweeps).
One short chat request per (provider, target model). A server that refuses it outright (vLLM
without `--enable-auto-tool-choice --tool-call-parser …` answers HTTP 400) would fail every
example the same way, so those pipelines are refused before the first one, in one sentence
that quotes the server; the other pipelines run. A probe that fails for a passing reason
refuses nothing (the examples then meet the server themselves).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from w2c_tui.api import ApiClient, ProviderSettings, RetryPolicy, route
from w2c_tui.api.retry import ApiError, PermanentApiError
from w2c_tui.engine.capabilities import refuse
from w2c_tui.engine.plan import SessionPlan
from w2c_tui.engine.state import RunState
from w2c_tui.session import kinds
from w2c_tui.store.session import is_done

PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The current time in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
PROBE_MESSAGES = [{"role": "user", "content": "What time is it in Paris?"}]
# Statuses that say "this request, as sent, is not served here"; others are the server's passing trouble.
REFUSING_STATUSES = (400, 404, 422, 501)


def sends_tools(method: str) -> bool:
    """Does this kind send the target the example's tools (when target_native_tools is on)?"""
    kind = kinds.method_kind(method)
    return kind is not None and kind.file("target") is not None


def tool_exp_names(plan: SessionPlan) -> list[str]:
    return [p for p in plan.pipelines if sends_tools(p)] + [s.exp_name for s in plan.sweeps if sends_tools(s.method)]


async def tools_problem(
    provider: ProviderSettings, model: str, *, policy: RetryPolicy, timeout_seconds: float, transport: Any = None
) -> str | None:
    """One sentence naming the server and its own words when it refuses chat with tools, else None."""
    async with ApiClient([provider], policy, timeout_seconds, transport=transport) as client:
        try:
            await client.chat(model, PROBE_MESSAGES, max_tokens=1, temperature=0.0, tools=[PROBE_TOOL])
        except PermanentApiError as exc:
            if exc.status not in REFUSING_STATUSES:
                return None
            return (
                f"the server at {provider.base_url} (provider '{provider.name}', model '{model}') refuses chat "
                f"requests with tools, which target_native_tools = true sends ({exc}); serve the model with tool "
                "calling enabled or set [pipelines] target_native_tools = false"
            )
        except ApiError:
            return None
    return None


async def check_native_tools(
    plans: list[SessionPlan],
    providers: list[ProviderSettings],
    states: dict[str, RunState],
    *,
    enabled: bool,
    policy: RetryPolicy,
    timeout_seconds: float,
    notify: Callable[[str], None],
) -> list[str]:
    """Probe each (provider, target model) once; drop refused pipelines from the plans. Returns the problems."""
    if not enabled:
        return []
    found: dict[tuple[str, str], str | None] = {}
    for plan in plans:
        wanted = [e for e in tool_exp_names(plan) if not is_done(plan.paths, e)]
        if not wanted:
            continue
        provider = route(plan.target_model, providers)
        key = (provider.name, plan.target_model)
        if key not in found:
            found[key] = await tools_problem(provider, plan.target_model, policy=policy, timeout_seconds=timeout_seconds)
            if found[key]:
                notify(f"{', '.join(wanted)} refused before the first example: {found[key]}")
        problem = found[key]
        if problem is None:
            continue
        refuse(plan, states[plan.fingerprint], sends_tools, wanted, problem)
    return [p for p in found.values() if p]
