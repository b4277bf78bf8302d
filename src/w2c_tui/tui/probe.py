"""'Test connection': what an OpenAI-compatible provider can do, asked with tiny requests.

Checks GET /models and a one-token chat here; `logprobs` and `tokenize` come from the
capability probe (`api/probe.py`), the same one launch preflight runs, so Setup shows the
verdict a launch would act on: whether mcq_logprob can be scored exactly, and why not.
Each check has its own ✓/✗, so one missing capability never hides the others.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import httpx

from w2c_tui.redaction import redact_text, scrub

CHECKS = ("models", "chat", "logprobs", "tokenize")


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


def _reason(response: httpx.Response) -> str:
    text = response.text.strip().replace("\n", " ")
    return f"HTTP {response.status_code}" + (f": {text[:120]}" if text else "")


async def probe_provider(
    name: str, base_url: str, token: str | None, model: str | None, *, timeout: float = 8.0
) -> ProbeResult:
    """What the provider can do; details quote server errors with the token masked."""
    result = await _probe(name, base_url, token, model, timeout)
    for check in result.checks.values():
        # A server may quote the Authorization header it got; the token may not be saved yet.
        check.detail = scrub(redact_text(check.detail, [token] if token else []))
    return result


async def _probe(name: str, base_url: str, token: str | None, model: str | None, timeout: float) -> ProbeResult:
    result = ProbeResult(name)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    base = base_url.rstrip("/")
    async with httpx.AsyncClient(timeout=timeout, headers=headers) as client:
        try:
            response = await client.get(f"{base}/models")
            if response.status_code == 200:
                data = response.json().get("data") or []
                result.models = sorted(str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id"))
                result.checks["models"] = Check(True, f"{len(result.models)} models")
            else:
                result.checks["models"] = Check(False, _reason(response))
        except (httpx.HTTPError, ValueError) as exc:
            result.checks["models"] = Check(False, type(exc).__name__)
            # Nothing else will answer if the server cannot be reached at all.
            for check in CHECKS[1:]:
                result.checks[check] = Check(False, "not tried: server unreachable")
            return result

        model = model or (result.models[0] if result.models else None)
        if model is None:
            for check in CHECKS[1:]:
                result.checks[check] = Check(False, "no model to try")
            return result
        chat, capabilities = await asyncio.gather(
            _chat(client, base, model), _capabilities(name, base_url, token, model, timeout)
        )
        result.checks["chat"] = chat
        result.checks.update(capabilities)
    return result


async def _chat(client: httpx.AsyncClient, base: str, model: str) -> Check:
    body = {"model": model, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1, "temperature": 0}
    try:
        response = await client.post(f"{base}/chat/completions", json=body)
    except httpx.HTTPError as exc:
        return Check(False, type(exc).__name__)
    if response.status_code != 200:
        return Check(False, _reason(response))
    return Check(True, model)


async def _capabilities(name: str, base_url: str, token: str | None, model: str, timeout: float) -> dict[str, Check]:
    """The `logprobs` (mcq_logprob can be scored exactly) and `tokenize` checks, from the capability probe."""
    from w2c_tui.api import ProviderSettings
    from w2c_tui.api.probe import probe_logprobs

    provider = ProviderSettings(name=name, base_url=base_url, token=token)
    try:
        support = await probe_logprobs(provider, model, timeout_seconds=timeout)
    except Exception as exc:  # noqa: BLE001 - e.g. a missing token: shown as the check's detail
        return {"logprobs": Check(False, str(exc)), "tokenize": Check(False, "not tried")}
    verdict = "mcq_logprob exact" if support.usable else (support.problem or "")
    return {
        "logprobs": Check(support.usable, f"{verdict} ({support.facts()})"),
        "tokenize": Check(bool(support.tokenizer), support.tokenizer or "no tokenizer endpoint (text prompts are split by the echo)"),
    }
