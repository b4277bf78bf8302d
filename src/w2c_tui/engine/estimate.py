"""What a launch will cost before it starts: requests, tokens, time at the current limits, money.

The pipelines and sweeps are the plan's own (`engine.plan.planned_exp_names`); what one
example costs is each kind's registry entry (`session/kinds.py`): llm_judge 2 requests
(target + judge; a judge repair adds one more, rarely), mcq 1, mcq_logprob 1 /completions
request (a server that lists no token ids in its echo adds five small /tokenize calls, not
counted); a stability sweep is k times its method. The figures are for one session (one
target model); a launch with several target models runs one session each.

- Prompt tokens: characters of the real prompts (measured on a sample of examples, scaled
  up) / CHARS_PER_TOKEN. These prompts are mostly JSON tool schemas, which tokenize finer
  than prose (~4 characters a token): on the bundled prompts the sim's GPT-like splitter
  gives 2.75, SmolLM2's BPE tokenizer (49k vocabulary) 3.7, larger vocabularies more; 3
  lies between, erring towards more tokens for a real model (a budget should not fall short).
- Completion tokens: the kind's typical figure per example (`completion_tokens`), and at
  most its [pipelines] max_tokens (`completion_limit_keys`). Free answers of real models
  vary most (llm_judge): the typical figure is a short answer, the bound is the budget.
- Time, each pipeline alone and the session (its pipelines share their provider's limits):
  per provider the largest of requests x latency / max_concurrency, requests /
  requests_per_minute and tokens / tokens_per_minute. The latency of a real server is
  assumed (REQUEST_SECONDS + completion tokens / DECODE_TOKENS_PER_SECOND); the embedded
  simulator answers at once, so its time is this machine's CPU per request (SIM_*,
  measured by benchmarks/estimate_vs_actual.py).
- The finishing phase, after the last answer, on a resume with nothing left to send too:
  metrics and packing the call traces (FINISH_SECONDS), and with `[mlflow] enabled` the
  session's runs and artifacts logged (TRACK_SECONDS + TRACK_SECONDS_PER_PIPELINE each).
- Cost, when `[prices."<model>"]` prices the models used (typical and at most); a judge
  kind's tokens are split evenly between target and judge.
- A resume (`left_after`): each pipeline's figures times the share of its examples not yet
  on disk; the finishing phase stays whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from w2c_tui.api.providers import ProviderSettings as RoutedProvider
from w2c_tui.api.providers import route
from w2c_tui.config.schema import Settings
from w2c_tui.engine.plan import planned_exp_names
from w2c_tui.engine.usage_report import price_table
from w2c_tui.session import kinds
from w2c_tui.store.usage import COST_DECIMALS, Price

CHARS_PER_TOKEN = 3.0
_SAMPLE = 40

# A real server's latency per request (assumed: the largest uncertainty of the time estimate).
REQUEST_SECONDS = 0.5
DECODE_TOKENS_PER_SECOND = 50.0
# The embedded simulator (loopback, no latency): CPU per answered request, plus per echoed
# prompt token of log-probability requests, on the project's 2-core machine.
SIM_CONCURRENCY = 32  # engine/endpoint.py gives the embedded simulator this max_concurrency
SIM_SECONDS_PER_REQUEST = 0.0024
SIM_SECONDS_PER_ECHOED_TOKEN = 0.000003
# After the last answer (engine/launch.py: packing, tracking): a 3-pipeline session on the 2-core
# machine took 0.5 s to finalize and pack, and 4.7 to 6.0 s to log to a local MLflow store.
FINISH_SECONDS = 0.5
TRACK_SECONDS = 2.5
TRACK_SECONDS_PER_PIPELINE = 1.0


@dataclass
class Estimate:
    n_examples: int
    requests: dict[str, int] = field(default_factory=dict)  # generation requests (chat, completions)
    prompt_tokens: dict[str, int] = field(default_factory=dict)
    completion_tokens: dict[str, int] = field(default_factory=dict)  # typical
    completion_tokens_max: dict[str, int] = field(default_factory=dict)  # at most (max_tokens)
    seconds: dict[str, float] = field(default_factory=dict)  # each pipeline alone, at the current limits
    session_seconds: float = 0.0  # all pipelines at once, sharing their providers' limits
    finish_seconds: float = 0.0  # after the last answer: metrics, trace packing, MLflow
    resumed: dict[str, int] = field(default_factory=dict)  # exp_name -> examples already on disk (left out)
    # model -> [prompt tokens, typical completion tokens, most completion tokens]
    model_tokens: dict[str, list[int]] = field(default_factory=dict)
    cost: dict[str, Any] | None = None  # typical, at_most, priced_models, unpriced_models; None when unpriced
    limits: dict[str, dict[str, Any]] = field(default_factory=dict)  # provider -> the limits the time assumed

    @property
    def total_seconds(self) -> float:
        """The session from its first request to its end, the finishing phase included."""
        return self.session_seconds + self.finish_seconds

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    @property
    def total_prompt_tokens(self) -> int:
        return sum(self.prompt_tokens.values())

    @property
    def total_completion_tokens(self) -> int:
        return sum(self.completion_tokens.values())

    @property
    def total_completion_tokens_max(self) -> int:
        return sum(self.completion_tokens_max.values())

    def as_dict(self) -> dict[str, Any]:
        """The manifest's `estimate`: per pipeline and in total."""
        pipelines = {
            name: {
                "requests": self.requests[name],
                "prompt_tokens": self.prompt_tokens.get(name, 0),
                "completion_tokens": self.completion_tokens.get(name, 0),
                "completion_tokens_max": self.completion_tokens_max.get(name, 0),
                "seconds": round(self.seconds.get(name, 0.0), 1),
            }
            for name in self.requests
        }
        return {
            "n_examples": self.n_examples,
            "requests": self.total_requests,
            "prompt_tokens": self.total_prompt_tokens,
            "completion_tokens": self.total_completion_tokens,
            "completion_tokens_max": self.total_completion_tokens_max,
            "seconds": round(self.total_seconds, 1),
            "finish_seconds": round(self.finish_seconds, 1),
            **({"resumed_examples": dict(self.resumed)} if self.resumed else {}),
            "cost": self.cost,
            "pipelines": pipelines,
            "limits": self.limits,
            "chars_per_token": CHARS_PER_TOKEN,
        }


def planned_pipelines(settings: Settings) -> list[tuple[str, str, int]]:
    """(exp_name, method, repeats) for every pipeline and sweep the settings switch on."""
    pipelines, sweeps = planned_exp_names(settings)
    return [(name, name, 1) for name in pipelines] + [(s.exp_name, s.method, s.k) for s in sweeps]


def prompt_chars_per_method(examples: list[Any], methods: list[str] | None = None) -> dict[str, float]:
    """Mean prompt characters per example of each kind (default: the selectable ones; a
    judge-check names its own), measured on a sample."""
    from w2c_tui.pipelines import pipeline_class  # the pipeline classes load when measured, not with the Setup screen

    sample = examples[:: max(1, len(examples) // _SAMPLE)][:_SAMPLE]
    measured: dict[str, float] = {}
    for kind in kinds.kinds() if methods is None else [kinds.get(m) for m in dict.fromkeys(methods)]:
        chars = pipeline_class(kind).prompt_chars
        measured[kind.name] = sum(chars(e) for e in sample) / len(sample) if sample else 0.0
    return measured


@dataclass
class _Load:
    """What one pipeline asks of one provider."""

    request_seconds: float = 0.0  # requests x latency (already divided by nothing)
    requests: int = 0
    tokens: int = 0


def estimate(
    settings: Settings,
    n_examples: int,
    chars_per_method: dict[str, float] | None = None,
    target_model: str | None = None,
    pipelines: list[tuple[str, str, int]] | None = None,
) -> Estimate:
    """The estimate of one session of `target_model` (default: the first target model), for
    `pipelines` (exp_name, method, repeats; default: those the settings switch on)."""
    result = Estimate(n_examples)
    target = target_model or next(iter(settings.models.target_models), "")
    judge = settings.models.judge_model
    providers = _providers(settings)
    loads: dict[str, dict[str, _Load]] = {}  # exp_name -> provider -> load
    for exp_name, method, repeats in planned_pipelines(settings) if pipelines is None else pipelines:
        kind = kinds.get(method)
        runs = n_examples * repeats
        requests = runs * kind.requests_per_example
        result.requests[exp_name] = requests
        prompt = int(runs * (chars_per_method or {}).get(method, 0.0) / CHARS_PER_TOKEN)
        limit = sum(int(getattr(settings.pipelines, key, 0)) for key in kind.completion_limit_keys)
        typical = min(kind.completion_tokens, limit) if limit else kind.completion_tokens
        completion, most = runs * typical, runs * (limit or kind.completion_tokens)
        if chars_per_method:
            result.prompt_tokens[exp_name] = prompt
        result.completion_tokens[exp_name] = completion
        result.completion_tokens_max[exp_name] = most
        # Who gets what: a judge kind sends its first request to the target, the rest to the judge.
        shares = [(target, 1.0, 1)]
        if kind.uses_judge:
            shares = [(target, 0.5, 1), (judge, 0.5, kind.requests_per_example - 1)]
        for model, share, per_example in shares:
            tokens = result.model_tokens.setdefault(model, [0, 0, 0])
            tokens[0] += int(prompt * share)
            tokens[1] += int(completion * share)
            tokens[2] += int(most * share)
            provider = route(model, providers) if providers else None
            load = loads.setdefault(exp_name, {}).setdefault(provider.name if provider else "", _Load())
            n = runs * per_example
            load.requests += n
            load.tokens += int((prompt + completion) * share)
            if provider is None:  # the embedded simulator: CPU per request
                echoed = prompt * share if kind.needs_prompt_logprobs else 0.0
                load.request_seconds += n * SIM_SECONDS_PER_REQUEST + echoed * SIM_SECONDS_PER_ECHOED_TOKEN
            else:
                per_request = completion * share / n if n else 0.0
                load.request_seconds += n * (REQUEST_SECONDS + per_request / DECODE_TOKENS_PER_SECOND)
    limits = {name: _limits(settings, name) for name in {p for per in loads.values() for p in per}}
    result.limits = {name or "simulated": lim for name, lim in limits.items()}
    for exp_name, per_provider in loads.items():
        result.seconds[exp_name] = max(_seconds(load, limits[name]) for name, load in per_provider.items())
    combined: dict[str, _Load] = {}
    for per_provider in loads.values():
        for name, load in per_provider.items():
            total = combined.setdefault(name, _Load())
            total.request_seconds += load.request_seconds
            total.requests += load.requests
            total.tokens += load.tokens
    result.session_seconds = max((_seconds(load, limits[name]) for name, load in combined.items()), default=0.0)
    result.finish_seconds = finish_seconds(settings, len(result.requests))
    result.cost = estimate_cost(result.model_tokens, price_table(settings))
    return result


def finish_seconds(settings: Settings, n_pipelines: int) -> float:
    """The session's finishing phase: it runs whatever is left to send, even nothing."""
    tracking = TRACK_SECONDS + TRACK_SECONDS_PER_PIPELINE * n_pipelines if settings.mlflow.enabled else 0.0
    return FINISH_SECONDS + tracking


def left_after(result: Estimate, finished: dict[str, int]) -> Estimate:
    """What a launch still sends when `finished` (exp_name -> examples on disk) are skipped:
    each pipeline's figures scaled by its share left; the session's time by the requests left;
    the finishing phase whole."""
    n = result.n_examples
    share = {name: 1 - min(finished.get(name, 0), n) / n if n else 1.0 for name in result.requests}
    if all(f == 1.0 for f in share.values()):
        return result
    total = result.total_requests
    left = sum(result.requests[name] * f for name, f in share.items()) / total if total else 1.0

    def scaled(figures: dict[str, int]) -> dict[str, int]:
        return {name: round(v * share.get(name, 1.0)) for name, v in figures.items()}

    cost = None
    if result.cost:
        cost = {**result.cost, **{k: round(result.cost[k] * left, COST_DECIMALS) for k in ("typical", "at_most")}}
    return Estimate(
        n,
        requests=scaled(result.requests),
        prompt_tokens=scaled(result.prompt_tokens),
        completion_tokens=scaled(result.completion_tokens),
        completion_tokens_max=scaled(result.completion_tokens_max),
        seconds={name: v * share.get(name, 1.0) for name, v in result.seconds.items()},
        session_seconds=result.session_seconds * left,
        finish_seconds=result.finish_seconds,
        resumed={name: min(finished.get(name, 0), n) for name in result.requests if finished.get(name)},
        model_tokens={m: [round(t * left) for t in figures] for m, figures in result.model_tokens.items()},
        cost=cost,
        limits=result.limits,
    )


def plan_estimate(settings: Settings, plan: Any, finished: dict[str, int] | None = None) -> dict[str, Any]:
    """The estimate of one planned session (engine.plan.SessionPlan) less the examples `finished`
    on disk (exp_name -> count), as the manifest records it: what this launch sends."""
    pipelines = [(name, name, 1) for name in plan.pipelines] + [(s.exp_name, s.method, s.k) for s in plan.sweeps]
    chars = prompt_chars_per_method(plan.examples, [method for _, method, _ in pipelines])
    full = estimate(settings, len(plan.examples), chars, plan.target_model, pipelines)
    return left_after(full, finished or {}).as_dict()


def estimate_cost(model_tokens: dict[str, list[int]], prices: dict[str, Price]) -> dict[str, Any] | None:
    """Typical and largest cost of the estimated tokens; None when no model used is priced."""
    priced = [m for m in model_tokens if m in prices]
    if not priced:
        return None

    def cost(completion_index: int) -> float:
        return sum(
            model_tokens[m][0] * prices[m].input_per_million
            + model_tokens[m][completion_index] * prices[m].output_per_million
            for m in priced
        ) / 1e6

    return {
        "typical": round(cost(1), COST_DECIMALS),
        "at_most": round(cost(2), COST_DECIMALS),
        "priced_models": sorted(priced),
        "unpriced_models": sorted(m for m in model_tokens if m not in prices),
    }


def _providers(settings: Settings) -> list[RoutedProvider]:
    """The configured providers for routing; [] means the embedded simulator."""
    return [
        RoutedProvider(
            name=name,
            base_url=p.base_url,
            model_prefixes=list(p.model_prefixes),
            max_concurrency=p.max_concurrency,
            requests_per_minute=p.requests_per_minute,
            is_default=p.default,
        )
        for name, p in settings.providers.items()
    ]


def _limits(settings: Settings, provider: str) -> dict[str, Any]:
    if not provider:
        return {"max_concurrency": SIM_CONCURRENCY, "requests_per_minute": 0, "tokens_per_minute": 0, "simulated": True}
    p = settings.providers[provider]
    return {
        "max_concurrency": p.max_concurrency,
        "requests_per_minute": p.requests_per_minute,
        # tokens_per_minute is read defensively: a config without token budgets has none.
        "tokens_per_minute": int(getattr(p, "tokens_per_minute", 0) or 0),
        "simulated": False,
    }


def _seconds(load: _Load, limits: dict[str, Any]) -> float:
    if limits.get("simulated"):  # CPU-bound: more concurrency does not make it faster
        return load.request_seconds
    bounds = [load.request_seconds / max(1, limits["max_concurrency"])]
    if limits["requests_per_minute"]:
        bounds.append(load.requests * 60.0 / limits["requests_per_minute"])
    if limits["tokens_per_minute"]:
        bounds.append(load.tokens * 60.0 / limits["tokens_per_minute"])
    return max(bounds)
