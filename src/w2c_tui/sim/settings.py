"""The sim's knobs."""

from __future__ import annotations

from dataclasses import dataclass, field

FAULT_KINDS: tuple[str, ...] = (
    "429_seconds",  # 429 with Retry-After: 1
    "429_date",  # 429 with Retry-After as an HTTP date about a second ahead
    "429_ms",  # 429 with retry-after-ms
    "500",
    "502",
    "503",
    "drop",  # connection closed in the middle of the response body
    "slow",  # answers after slow_ms
    "malformed_json",  # 200 with a truncated JSON body
    "empty_choices",  # 200 with "choices": []
)

# The demo's target and judge (config defaults) are listed, so the model-list check passes.
DEFAULT_MODELS: tuple[str, ...] = ("llama-3.3-70b-instruct", "qwen2.5-7b-instruct", "gpt-oss-120b", "sim-small", "sim-judge")

# Faults are injected into the model endpoints only, so probes and tokenisation stay reliable.
DEFAULT_FAULT_PATHS: tuple[str, ...] = ("/v1/chat/completions", "/v1/completions")

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
MAX_DELAY_MS = 3_600_000.0  # latency, jitter, a slow fault: an hour is already no answer

# How a server treats the prompt in /completions echo + logprobs (docs/servers.md has the real ones).
PROMPT_LOGPROBS = (
    "aligned",  # token i gets log P(token i | tokens before it), as vLLM does
    "shifted",  # token i gets log P(token i | tokens up to and including i), as llama-cpp-python 0.3.36 does
    "refused",  # echo with logprobs is answered with a 400, as OpenAI's gpt-3.5-turbo-instruct does
    "refused500",  # echo is answered with a 500 "Only no echo is supported", as llama.cpp's llama-server does
    "ignored",  # echo is ignored: only the generated token is listed, as some llama-server builds do
    "none",  # logprobs are silently left out (null), as TGI does
)
# How a list of text prompts is answered: error500 as llama-cpp-python (an empty 500), error400 as Ollama.
PROMPT_LISTS = ("ok", "error500", "error400")


@dataclass(frozen=True)
class Conventions:
    """The /completions conventions of one kind of server, which the sim can imitate."""

    prompt_logprobs: str = "aligned"
    prompt_lists: str = "ok"
    max_prompts: int = 0  # 0: no cap; more prompts in one request get a 400
    echo_generated: bool = True  # the generated token follows the echoed prompt (llama-cpp-python leaves it out)
    eos_at_once: bool = False  # the model ends every completion at once: nothing is generated
    bos: str = ""  # a BOS token the server puts before a text prompt (listed in the echo)
    bos_on_ids: bool = False  # ... and before a token-id prompt too, which shifts what was sent
    tokenizer: bool = True  # serves /tokenize (a gateway in front of vLLM often passes only /v1)
    text_offsets: bool = True  # False: every text_offset is -1, as SGLang sends
    # Takes vLLM's `return_token_ids` (each choice lists its prompt's ids) and `return_tokens_as_token_ids`
    # (echoed tokens spelled "token_id:<id>"); older vLLM and other servers ignore both.
    echo_token_ids: bool = True

    def __post_init__(self) -> None:
        if self.prompt_logprobs not in PROMPT_LOGPROBS:
            raise ValueError(f"prompt_logprobs must be one of {', '.join(PROMPT_LOGPROBS)}, got {self.prompt_logprobs!r}")
        if self.prompt_lists not in PROMPT_LISTS:
            raise ValueError(f"prompt_lists must be one of {', '.join(PROMPT_LISTS)}, got {self.prompt_lists!r}")
        if self.max_prompts < 0:
            raise ValueError("max_prompts must not be negative")


# Presets for `w2c-tui sim --imitate NAME`: the conventions measured or read for each server.
IMITATIONS: dict[str, Conventions] = {
    "vllm": Conventions(max_prompts=1024),
    "vllm-llama": Conventions(max_prompts=1024, bos="<|begin_of_text|>"),
    "vllm-gateway": Conventions(max_prompts=1024, tokenizer=False),
    "vllm-no-echo-ids": Conventions(max_prompts=1024, echo_token_ids=False),
    "llama-cpp-python": Conventions(prompt_logprobs="shifted", prompt_lists="error500", echo_generated=False, echo_token_ids=False),
    "llama-server": Conventions(prompt_logprobs="refused500", prompt_lists="error500", echo_token_ids=False),
    "openai-instruct": Conventions(prompt_logprobs="refused", tokenizer=False, echo_token_ids=False),
    "ollama": Conventions(prompt_logprobs="ignored", prompt_lists="error400", tokenizer=False, echo_token_ids=False),
    "sglang": Conventions(text_offsets=False, echo_token_ids=False),
    "tgi": Conventions(prompt_logprobs="none", max_prompts=4, tokenizer=False, echo_token_ids=False),
}


@dataclass(frozen=True)
class SimSettings:
    host: str = "127.0.0.1"
    port: int = 0  # 0: any free port
    latency_ms: float = 0.0  # least response time of a model-endpoint request (the sim's own work included)
    jitter_ms: float = 0.0  # latency varies uniformly by +- this much
    fault_rate: float = 0.0  # share of model-endpoint requests that fail (0..1)
    fault_kinds: tuple[str, ...] = FAULT_KINDS
    seed: int = 0
    judge_malformed_rate: float = 0.1
    judge_error_rate: float = 0.0  # share of answers the judge labels wrongly on purpose (sim/judge.py)
    judge_position_bias: float = 0.0  # share of preference requests answered "1" whatever the answers (sim/preference.py)
    slow_ms: float = 120_000.0
    models: tuple[str, ...] = field(default=DEFAULT_MODELS)
    fault_paths: tuple[str, ...] = DEFAULT_FAULT_PATHS
    rejected_params: tuple[str, ...] = ()  # request fields answered with a 400, like stricter providers do
    conventions: Conventions = field(default_factory=Conventions)
    # Capacity mode (sim/capacity.py): 429 with Retry-After beyond these; 0 = no cap.
    capacity_in_flight: int = 0  # requests being answered at once
    capacity_rpm: int = 0  # requests a minute
    capacity_tpm: int = 0  # tokens (prompt + completion) a minute

    def __post_init__(self) -> None:
        # Accept lists from callers, keep the dataclass hashable.
        object.__setattr__(self, "fault_kinds", tuple(self.fault_kinds))
        object.__setattr__(self, "models", tuple(self.models))
        object.__setattr__(self, "fault_paths", tuple(self.fault_paths))
        object.__setattr__(self, "rejected_params", tuple(self.rejected_params))
        # Written so that NaN fails each test (every comparison with NaN is false).
        for name in ("fault_rate", "judge_malformed_rate", "judge_error_rate", "judge_position_bias"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        for name in ("capacity_in_flight", "capacity_rpm", "capacity_tpm"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative (0 = no cap)")
        for name in ("latency_ms", "jitter_ms", "slow_ms"):
            value = getattr(self, name)
            if not 0.0 <= value <= MAX_DELAY_MS:
                raise ValueError(f"{name} must be between 0 and {MAX_DELAY_MS:.0f} (an hour), got {value}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be 0..65535, got {self.port}")
        unknown = [k for k in self.fault_kinds if k not in FAULT_KINDS]
        if unknown:
            raise ValueError(f"unknown fault kind(s) {', '.join(unknown)}; known: {', '.join(FAULT_KINDS)}")
        if not self.fault_kinds:
            raise ValueError("fault_kinds must name at least one kind")
