"""What a server can do, found out with a few short requests: the one probe of the app.

* `list_models`: GET /models, the only place that asks a server for its models; launch
  preflight reads reachability, token rejection and a non-API answer from it.
* `probe_provider`: the Setup screen's "Test connection" (models, a one-token chat, then
  the capability probe), each check with its own verdict and details with the token masked.
* `probe_logprobs`: log-probability scoring, one probe per (provider, model), used by
  launch preflight, `w2c-tui probe` and the connection test. It asks:

  - does `echo` + `logprobs` return prompt-token log-probabilities at all;
  - are they **aligned**: the log-probability the server reports for generating token t
    after a prefix (no echo, greedy, one token) must equal the one its echo reports for t
    at the end of prefix + t. llama-cpp-python 0.3.36 fails this: each echoed token gets
    the log-probability of being followed by itself;
  - is the generated token listed after the echo, is a BOS token listed first;
  - are prompt lists accepted, are token-id prompts accepted, is there a tokenizer endpoint;
  - does the echo of a text prompt list the ids it was read as, without special tokens
    (vLLM's `return_token_ids` and `add_special_tokens`): the ids must be the tokenizer's.

`LogprobSupport.problem` is one sentence naming the server and what it lacks, or None
when `mcq_logprob` can be scored exactly there.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from w2c_tui.api.client import ApiClient
from w2c_tui.api.attempt import exchange, server_words
from w2c_tui.api.transport import AiohttpSender, Sender, Timeouts
from w2c_tui.api.providers import MissingTokenError, ProviderSettings, auth_headers, endpoint_url
from w2c_tui.api.retry import (
    ApiError,
    CallRetries,
    RetriesExhaustedError,
    RetryPolicy,
    TransientFailure,
)
from w2c_tui.api.echo import (
    LOGPROB_RULE,
    OWN_LOGPROB_ONLY,
    EchoLayoutError,
    EchoMismatch,
    ImpossibleLogprobError,
    impossible_logprob,
    loose_spelling,
    ordered_choices,
    read_echo,
)
from w2c_tui.redaction import redact_text, scrub

# Short prefixes whose greedy next token is usually a word of its own, tried in turn.
PREFIXES = ("The capital of France is", "One, two, three, four,", "The sky is")
# Echo and generation compute the same number in different batches; a shifted echo is off by nats.
ALIGN_TOLERANCE = 0.02
PROBE_RETRIES = 3
# GET /models attempts before launch takes its answer as the server's (api/retry.py SAME_ANSWER_LIMIT).
LISTING_ATTEMPTS = 4


@dataclass
class LogprobSupport:
    provider: str
    base_url: str
    model: str
    prompt_logprobs: bool = False  # echo + logprobs give prompt-token log-probabilities
    aligned: bool | None = None  # None: could not be measured
    generated_listed: bool | None = None  # the generated token follows the echoed prompt tokens
    bos_listed: bool | None = None
    prompt_lists: bool | None = None  # several text prompts in one request
    token_id_prompts: bool | None = None
    token_id_lists: bool | None = None  # several token-id prompts in one request
    tokenizer: str | None = None  # URL of the tokenizer endpoint
    tokenizer_problem: str | None = None  # why a tokenizer endpoint that seemed there was taken as absent
    echo_token_ids: bool | None = None  # a text prompt's echo lists the tokenizer's ids, no special tokens added
    evidence: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None  # why mcq_logprob cannot be scored exactly here
    transient: bool = False  # the probe itself failed for a passing reason: ask again later

    @property
    def usable(self) -> bool:
        return self.problem is None

    @property
    def server(self) -> str:
        return f"the server at {self.base_url} (provider '{self.provider}', model '{self.model}')"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def facts(self) -> str:
        """What was found, in one line."""
        def word(value: bool | None) -> str:
            return "?" if value is None else ("yes" if value else "no")

        return (
            f"prompt log-probs {word(self.prompt_logprobs)}, aligned {word(self.aligned)}, "
            f"generated token listed {word(self.generated_listed)}, BOS listed {word(self.bos_listed)}, "
            f"prompt lists {word(self.prompt_lists)}, token-id prompts {word(self.token_id_prompts)}, "
            f"tokenizer {self.tokenizer or 'none'}"
        )

    def summary(self) -> str:
        """One line for people: the verdict, then what was found."""
        if self.transient:
            verdict = f"mcq_logprob: not known yet ({self.problem})"
        else:
            verdict = "mcq_logprob: exact" if self.usable else f"mcq_logprob refused: {self.problem}"
        return f"{verdict} ({self.facts()})"


async def probe_logprobs(
    provider: ProviderSettings,
    model: str,
    *,
    timeout_seconds: float = 60.0,
    policy: RetryPolicy | None = None,
    transport: Any = None,
) -> LogprobSupport:
    """Probe `model` on `provider` with a client of its own (its calls are in no session's traces)."""
    support = LogprobSupport(provider.name, provider.base_url, model)
    # A failed probe stops a pipeline, so it rides out passing faults even when runs may not.
    base = policy or RetryPolicy()
    policy = replace(base, max_retries=max(PROBE_RETRIES, base.max_retries))
    async with ApiClient([provider], policy, timeout_seconds, transport=transport) as client:
        try:
            await _probe(client, model, support)
        except RetriesExhaustedError as exc:
            support.problem = f"{support.server} did not answer the probe: {exc}"
            support.transient = True
        except ApiError as exc:
            support.problem = support.problem or f"{support.server} failed a probe request: {exc}"
    return support


async def _probe(client: ApiClient, model: str, support: LogprobSupport) -> None:
    checked = 0
    for prefix in PREFIXES:
        found = await _alignment(client, model, prefix, support)
        if support.problem is not None:
            return
        checked += found
        if checked == 2 or support.aligned is False:
            break
    support.prompt_lists = await _accepts_list(client, model, list(PREFIXES[:2]), support)
    if support.problem is not None:
        return
    ids = await _tokenizer_ids(client, model, support)
    if ids:
        support.tokenizer = client.tokenizer_url(model)
        support.token_id_prompts = await _echoes_ids_as_sent(client, model, ids)
        if support.token_id_prompts:
            support.token_id_lists = await _accepts_list(client, model, [ids, ids], support)
            if support.problem is not None:
                return
            if support.aligned and support.prompt_lists:  # only then can scoring use it
                support.echo_token_ids = await _lists_prompt_ids(client, model, ids)
    if checked == 0:
        support.problem = (
            f"{support.server} generated no token that its echo lists on its own, so whether its prompt "
            "log-probabilities are aligned could not be checked"
        )
    elif support.aligned is False:
        e = support.evidence
        support.problem = (
            f"{support.server} reports echoed prompt log-probabilities shifted against its own generation "
            f"(after {e['prefix']!r} it generates {e['token']!r} at {e['generation_logprob']:.3f}, "
            f"its echo gives {e['token']!r} {e['echo_logprob']:.3f}); scores would be wrong"
        )


async def _tokenizer_ids(client: ApiClient, model: str, support: LogprobSupport) -> list[int] | None:
    """The tokenizer's ids for the first prefix; one that fails or never answers counts as absent
    (it is optional: prompts are then split by the echo), and the reason is kept to be said once."""
    try:
        return await client.tokenize(model, PREFIXES[0], add_special_tokens=False)
    except ApiError as exc:
        support.tokenizer_problem = str(exc)[:300]
        return None


async def _alignment(client: ApiClient, model: str, prefix: str, support: LogprobSupport) -> bool:
    """Compare generation with echo after `prefix`; False when this prefix could not tell."""
    generated = await client.completions(model, prefix, max_tokens=1, echo=False, logprobs=1, temperature=0.0)
    choice = _choice(generated)
    lp = _mapping(choice.get("logprobs"))
    tokens, values = _list(lp.get("tokens")), _list(lp.get("token_logprobs"))
    if not tokens or not values:
        if choice.get("logprobs") is None:
            support.problem = f"{support.server} returns no log-probabilities from /completions (logprobs is null)"
        return False
    impossible = impossible_logprob(values[0])
    if impossible is not None:  # +3.0 generated and +3.0 echoed would look "aligned"
        support.problem = f"{support.server} sends impossible log-probabilities (a generated token's log-probability is {impossible}; {LOGPROB_RULE})"
        return False
    token, generation_logprob = str(tokens[0]), float(values[0])
    if not token.strip():
        return False  # whitespace or an end token: its echo would merge with neighbours

    try:
        echoed = await client.completions(model, prefix + token, max_tokens=1, echo=True, logprobs=1, temperature=0.0)
    except RetriesExhaustedError as exc:
        if not exc.cause.startswith("5xx:500"):
            raise
        # It just answered the same prompt without echo: a 500 on every try is a refusal (llama.cpp's server).
        support.problem = f"{support.server} fails every request with echo and logprobs ({exc.last_error})"
        return False
    except ApiError as exc:
        if getattr(exc, "status", None) in (400, 404, 422):
            support.problem = f"{support.server} refuses echo with logprobs ({exc})"
            return False
        raise
    try:
        echo = read_echo(_choice(echoed), prompt_text=prefix + token, usage=_mapping(echoed).get("usage"))
    except ImpossibleLogprobError as exc:
        support.problem = f"{support.server} sends impossible log-probabilities in its echo ({exc})"
        return False
    except EchoLayoutError as exc:
        support.problem = f"{support.server} gives no usable prompt log-probabilities ({exc})"
        return False
    support.prompt_logprobs = True
    support.generated_listed = len(echo.tokens) > echo.n_prompt
    support.bos_listed = not (prefix + token).startswith(echo.tokens[0]) if echo.tokens[0] else True
    if echo.tokens[echo.n_prompt - 1] != token or echo.prompt_logprobs[-1] is None:
        return False  # the tokenizer merged the generated token with the prefix
    echo_logprob = float(echo.prompt_logprobs[-1])
    aligned = math.isclose(echo_logprob, generation_logprob, abs_tol=ALIGN_TOLERANCE)
    if support.aligned is None or not aligned:
        support.evidence = {
            "prefix": prefix,
            "token": token,
            "generation_logprob": generation_logprob,
            "echo_logprob": echo_logprob,
        }
    support.aligned = aligned if support.aligned is None else support.aligned and aligned
    return True


async def _echoes_ids_as_sent(client: ApiClient, model: str, ids: list[int]) -> bool:
    """Token-id prompts are taken as they are: the echo spells the prefix back, nothing added."""
    try:
        response = await client.completions(model, ids, max_tokens=1, echo=True, logprobs=1, temperature=0.0)
        echo = read_echo(_choice(response), n_prompt_tokens=len(ids), usage=_mapping(response).get("usage"))
    except (ApiError, EchoLayoutError):
        return False
    return "".join(echo.prompt_tokens) == PREFIXES[0]


async def _lists_prompt_ids(client: ApiClient, model: str, ids: list[int]) -> bool:
    """A text prompt sent with `token_ids` is echoed with the very ids the tokenizer gave it:
    nothing added (a BOS would mean `add_special_tokens` is ignored), nothing left unlisted."""
    try:
        response = await client.completions(
            model, PREFIXES[0], max_tokens=1, echo=True, logprobs=OWN_LOGPROB_ONLY, temperature=0.0, token_ids=True
        )
    except ApiError:
        return False
    choice = _choice(response)
    return choice.get("prompt_token_ids") == ids and len(_list(_mapping(choice.get("logprobs")).get("tokens"))) >= len(ids)


async def _accepts_list(client: ApiClient, model: str, prompts: list[Any], support: LogprobSupport) -> bool:
    """Whether the server answers a list of prompts (texts or token-id lists) with one echo each.

    One whose echoes are not those prompts, each at its index, is refused (`support.problem`):
    as the run reads every answer so (`api/echo.ordered_choices`), each example would fail.
    """
    try:
        response = await client.completions(model, prompts, max_tokens=1, echo=True, logprobs=1, temperature=0.0)
    except ApiError:
        return False
    choices = _list(_mapping(response).get("choices"))
    if len(choices) != len(prompts) or not all(_mapping(_mapping(c).get("logprobs")).get("tokens") for c in choices):
        return False
    try:
        for i, (prompt, choice) in enumerate(zip(prompts, ordered_choices(response, len(prompts)) or [])):
            echoed = "".join(map(str, _list(choice["logprobs"]["tokens"])))
            if isinstance(prompt, str) and loose_spelling(prompt) not in loose_spelling(echoed):  # a BOS may lead
                raise EchoMismatch(f"the echo at index {i} is not of the prompt sent there")
    except EchoMismatch as exc:
        support.problem = (
            f"{support.server} answers a list of prompts with echoes that are not those prompts, each at "
            f"its index ({exc}); its scores would be exchanged"
        )
        return False
    return True


# A server's JSON may hold anything anywhere: these read a shape without assuming it.
def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _choice(response: Any) -> dict[str, Any]:
    """The first choice of a completions answer, {} when there is none or it is not an object."""
    choices = _list(_mapping(response).get("choices"))
    return _mapping(choices[0]) if choices else {}


# Model listing and the connection test

CHECKS = ("models", "chat", "logprobs", "tokenize")
MODELS_ENDPOINT = "/models"


@dataclass
class ModelListing:
    """What GET /models answered, or why it did not."""

    unreachable: str | None = None  # what the transport said: no answer at all
    status: int | None = None
    content_type: str = ""
    models: list[str] = field(default_factory=list)  # sorted ids of a 200 JSON answer
    unreadable: str | None = None  # a 200 whose body is not the JSON list of models
    reason: str = ""  # "HTTP 401: <the server's words>" for a status other than 200
    cause: str | None = None  # the retry cause when another attempt may answer otherwise

    def describe(self) -> str:
        return self.unreachable or self.unreadable or self.reason or self.content_type

    @property
    def ok(self) -> bool:
        return self.unreachable is None and self.unreadable is None and self.status == 200


async def list_models(
    base_url: str,
    token: str | None,
    *,
    timeout: float = 10.0,
    sender: Sender | None = None,
    policy: RetryPolicy | None = None,
) -> ModelListing:
    """GET /models on `base_url` (through its own sender unless one is given), each attempt
    within `timeout` seconds whole; never raises for the server's faults.

    With a `policy`, an answer that may pass (no answer, 408/429/5xx, a web page or a body cut
    short) is asked again, at most LISTING_ATTEMPTS times: launch refuses a run on this answer,
    so one passing fault must not decide it, while a wrong base URL is still told in seconds.
    """
    if sender is None:
        own = AiohttpSender(auth_headers(token), Timeouts(connect=min(10.0, timeout), read=timeout), max_connections=1)
        try:
            return await list_models(base_url, token, timeout=timeout, sender=own, policy=policy)
        finally:
            await own.aclose()
    if policy is None:
        return await _list_models_once(sender, base_url, timeout)
    short = replace(policy, max_retries=LISTING_ATTEMPTS - 1)
    retries = CallRetries(short, asyncio.sleep, random.Random(), lambda failure, wait: None)
    listing = ModelListing()

    async def attempt() -> ModelListing:
        nonlocal listing
        started = time.monotonic()
        listing = await _list_models_once(sender, base_url, timeout)
        if listing.cause is not None:
            raise TransientFailure(listing.cause, listing.describe(), listing.status, time.monotonic() - started)
        return listing

    try:
        return await retries.run(attempt)
    except TransientFailure:
        return listing  # the last answer stands: it came on every attempt


async def _list_models_once(sender: Sender, base_url: str, deadline: float) -> ModelListing:
    outcome = await exchange(sender, "GET", endpoint_url(base_url, MODELS_ENDPOINT), None, False, deadline)
    if outcome.status is None:
        return ModelListing(unreachable=outcome.error, cause=outcome.retry_cause)
    headers = outcome.headers or {}
    listing = ModelListing(status=outcome.status, content_type=headers.get("content-type", ""))
    if outcome.status != 200:
        listing.reason = _status_reason(outcome.status, outcome.content)
        listing.cause = outcome.retry_cause
        return listing
    if "json" not in listing.content_type.lower():
        listing.cause = "html"  # a proxy's page now and then; every time, a base URL that is not the API
    if outcome.data is None:
        listing.unreadable = "the body is not JSON"
        listing.cause = listing.cause or "bad_json"
    else:
        listing.models = sorted(model_ids(outcome.data))
    return listing


def _status_reason(status: int, content: bytes | None) -> str:
    """"HTTP 401: <the start of the server's words>", for a status other than 200."""
    words = server_words(content)
    return f"HTTP {status}" + (f": {words[:120]}" if words else "")


@dataclass
class Check:
    ok: bool
    detail: str = ""


@dataclass
class ProbeResult:
    provider: str
    checks: dict[str, Check] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return "  ".join(f"{'✓' if c.ok else '✗'} {name}" for name, c in self.checks.items())


async def probe_provider(
    name: str, base_url: str, token: str | None, model: str | None, *, timeout: float = 8.0
) -> ProbeResult:
    """'Test connection': what the provider can do; details quote server errors with the token masked."""
    result = await _connection(name, base_url, token, model, timeout)
    for check in result.checks.values():
        # A server may quote the Authorization header it got; the token may not be saved yet.
        check.detail = scrub(redact_text(check.detail, [token] if token else []))
    return result


async def _connection(name: str, base_url: str, token: str | None, model: str | None, timeout: float) -> ProbeResult:
    result = ProbeResult(name)
    base = base_url.rstrip("/")
    listing = await list_models(base, token, timeout=timeout)
    failure = listing.unreachable or listing.unreadable
    if failure:
        result.checks["models"] = Check(False, failure)
        # Nothing else will answer if the server cannot be reached at all.
        for check in CHECKS[1:]:
            result.checks[check] = Check(False, "not tried: server unreachable")
        return result
    if listing.ok:
        result.models = listing.models
        result.checks["models"] = Check(True, f"{len(result.models)} models")
    else:
        result.checks["models"] = Check(False, listing.reason)

    model = model or (result.models[0] if result.models else None)
    if model is None:
        for check in CHECKS[1:]:
            result.checks[check] = Check(False, "no model to try")
        return result
    chat, capabilities = await asyncio.gather(
        _chat(base, token, model, timeout), _capabilities(name, base_url, token, model, timeout)
    )
    result.checks["chat"] = chat
    result.checks.update(capabilities)
    return result


async def _chat(base: str, token: str | None, model: str, timeout: float) -> Check:
    """A one-token chat through the run's own transport (its proxy rule, TLS context and
    whole-attempt deadline), so a test that passes is one the run's calls pass too."""
    body = {"model": model, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1, "temperature": 0}
    sender = AiohttpSender(auth_headers(token), Timeouts(connect=timeout, read=timeout), max_connections=1)
    try:
        outcome = await exchange(sender, "POST", endpoint_url(base, "/chat/completions"), body, True, timeout)
    finally:
        await sender.aclose()
    if outcome.status is not None and outcome.status != 200:
        return Check(False, _status_reason(outcome.status, outcome.content))
    return Check(False, outcome.error) if outcome.error else Check(True, model)


async def _capabilities(name: str, base_url: str, token: str | None, model: str, timeout: float) -> dict[str, Check]:
    """The `logprobs` (mcq_logprob can be scored exactly) and `tokenize` checks, from the capability probe."""
    provider = ProviderSettings(name=name, base_url=base_url, token=token)
    try:
        support = await probe_logprobs(provider, model, timeout_seconds=timeout)
    except MissingTokenError as exc:  # a remote provider whose token is not set yet
        return {"logprobs": Check(False, str(exc)), "tokenize": Check(False, "not tried")}
    return {
        "logprobs": Check(support.usable, support.summary()),
        "tokenize": Check(bool(support.tokenizer), support.tokenizer or "no tokenizer endpoint (text prompts are split by the echo)"),
    }


def model_ids(payload: Any) -> list[str]:
    """The model ids of a GET /models answer (`{"data": [{"id": ...}]}`, or the bare list), in its order."""
    entries = payload.get("data") if isinstance(payload, dict) else payload
    return [str(e["id"]) for e in entries or [] if isinstance(e, dict) and e.get("id")]
