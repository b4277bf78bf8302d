"""The sim's ASGI application: routes, latency, fault injection and the sim header."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from typing import Any

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from w2c_tui.jsoncodec import dumps_bytes, loads
from w2c_tui.sim import faults, protocol
from w2c_tui.sim.capacity import CapacityGate, refusal_response, usage_tokens
from w2c_tui.sim.chat import chat_completion
from w2c_tui.sim.completions import InternalError, completion
from w2c_tui.sim.settings import SimSettings
from w2c_tui.sim.stats import SimStats
from w2c_tui.sim.tokenizer import VOCAB, UnknownTokenId, decode, encode, pieces_of

MAX_MODEL_LEN = 32768
SIM_HEADER = (b"x-w2c-sim", b"simulated")


def _json(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps_bytes(payload), status_code=status, headers=headers, media_type="application/json")


def _bad(message: str) -> Response:
    return _json(protocol.error_body(message), 400)


class SimState:
    """Everything one running sim remembers: settings, counters, fault attempts."""

    def __init__(self, settings: SimSettings) -> None:
        self.settings = settings
        self.stats = SimStats()
        self.faults = faults.FaultPlan(settings.seed, settings.fault_rate, settings.fault_kinds)
        self.stopping = asyncio.Event()  # set on shutdown, so "slow" faults end early
        self.capacity = (
            CapacityGate(settings.capacity_in_flight, settings.capacity_rpm, settings.capacity_tpm, settings.latency_ms)
            if settings.capacity_in_flight or settings.capacity_rpm or settings.capacity_tpm
            else None
        )
        self._samples = itertools.count()
        self._random = random.Random(settings.seed)

    def next_sample(self) -> int:
        return next(self._samples)

    def reset(self) -> None:
        self.stats.reset()
        self.faults.reset()

    async def wait_latency(self, started: float) -> None:
        """Sleep until the request has taken its latency since `started`, the sim's own work included.

        A real server's response time contains its compute; counting ours the same way
        keeps the sim's CPU (which shares the machine with the client) out of the latency
        a benchmark sees, as long as the sim keeps up.
        """
        s = self.settings
        delay = s.latency_ms + (self._random.uniform(-s.jitter_ms, s.jitter_ms) if s.jitter_ms else 0.0)
        remaining = delay / 1000 - (time.monotonic() - started)
        if remaining > 0:
            await asyncio.sleep(remaining)

    async def wait_slow(self) -> None:
        try:
            await asyncio.wait_for(self.stopping.wait(), self.settings.slow_ms / 1000)
        except asyncio.TimeoutError:
            pass


async def _read_json(request: Request) -> dict[str, Any]:
    try:
        body = loads(await request.body())
    except ValueError:
        raise protocol.BadRequest("the request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise protocol.BadRequest("the request body must be a JSON object")
    return body


class _Tagged:
    """Outer ASGI layer: counts requests and marks every response as simulated."""

    def __init__(self, app: Any, stats: SimStats) -> None:
        self.app, self.stats = app, stats

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not scope["path"].startswith("/sim/"):
            self.stats.count_request(scope["path"])

        async def tagged_send(message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), SIM_HEADER]
            await send(message)

        try:
            await self.app(scope, receive, tagged_send)
        except ClientDisconnect:  # the client gave up (a cancelled run): nobody is left to answer
            pass


def create_app(settings: SimSettings | None = None) -> tuple[Any, SimState]:
    """The ASGI app and its state (stats, fault plan); `state.stopping` ends slow faults."""
    state = SimState(settings or SimSettings())
    s = state.settings
    default_model = s.models[0] if s.models else "sim-small"

    async def model_endpoint(request: Request, build) -> Response:
        gate = state.capacity
        if gate is None:
            return await _serve(request, build)
        refusal = gate.admit()  # before reading the body: a refusal costs the server nothing
        if refusal is not None:
            state.stats.count_capacity(refusal.cap)
            return refusal_response(refusal, default_model)

        def counted(body: dict[str, Any]) -> Any:
            payload = build(body)
            gate.charge(usage_tokens(payload))
            return payload

        try:
            return await _serve(request, counted)
        finally:
            gate.leave()

    async def _serve(request: Request, build) -> Response:
        started = time.monotonic()
        try:
            body = await _read_json(request)
        except protocol.BadRequest as exc:
            return _bad(str(exc))
        rejected = next((name for name in s.rejected_params if name in body), None)
        if rejected is not None:
            return _bad(f"Unrecognized request argument supplied: {rejected}")
        path = request.url.path
        kind = state.faults.decide(faults.request_key(path, body)) if path in s.fault_paths else None
        if kind is not None:
            state.stats.count_fault(kind)
        response = _answer(body, kind, build)
        await state.wait_latency(started)
        if kind == "slow":
            await state.wait_slow()
        return response

    def _answer(body: dict[str, Any], kind: str | None, build) -> Response:
        model = body.get("model") if isinstance(body.get("model"), str) else default_model
        if kind in faults.ERROR_STATUS:
            return faults.error_response(kind, model)
        if kind == "drop":
            return faults.DroppedResponse()
        try:
            payload = build(body)
        except protocol.BadRequest as exc:
            return _bad(str(exc))
        except InternalError as exc:
            return _json({"error": {"message": str(exc), "type": "internal_server_error", "code": 500}}, 500)
        if kind == "empty_choices":
            payload = faults.without_choices(payload)
        response = _json(payload)
        return faults.malformed(response.body) if kind == "malformed_json" else response

    async def chat(request: Request) -> Response:
        return await model_endpoint(
            request,
            lambda body: chat_completion(
                body,
                seed=s.seed,
                default_model=default_model,
                judge_malformed_rate=s.judge_malformed_rate,
                judge_error_rate=s.judge_error_rate,
                judge_position_bias=s.judge_position_bias,
                next_sample=state.next_sample,
            ),
        )

    async def completions(request: Request) -> Response:
        return await model_endpoint(
            request,
            lambda body: completion(
                body, seed=s.seed, default_model=default_model, next_sample=state.next_sample, conventions=s.conventions
            ),
        )

    async def models(request: Request) -> Response:
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "w2c-tui-sim"} for m in s.models]
        return _json({"object": "list", "data": data})

    async def tokenize(request: Request) -> Response:
        if not s.conventions.tokenizer:
            return _json({"detail": "Not Found"}, 404)
        try:
            body = await _read_json(request)
        except protocol.BadRequest as exc:
            return _bad(str(exc))
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            return _bad("'prompt' must be a string")
        ids = encode(prompt)
        if s.conventions.bos and body.get("add_special_tokens", True):
            ids = [VOCAB.id_of(s.conventions.bos), *ids]
        payload: dict[str, Any] = {"tokens": ids, "count": len(ids), "max_model_len": MAX_MODEL_LEN}
        if body.get("return_token_strs"):
            payload["token_strs"] = pieces_of(ids)
        return _json(payload)

    async def detokenize(request: Request) -> Response:
        try:
            body = await _read_json(request)
        except protocol.BadRequest as exc:
            return _bad(str(exc))
        tokens = body.get("tokens")
        if not isinstance(tokens, list):
            return _bad("'tokens' must be a list of token ids")
        try:
            return _json({"prompt": decode(tokens)})
        except UnknownTokenId as exc:
            return _bad(str(exc))

    async def health(request: Request) -> Response:
        return _json({"status": "ok", "simulated": True})

    async def stats(request: Request) -> Response:
        return _json(state.stats.snapshot())

    async def reset(request: Request) -> Response:
        state.reset()
        return _json(state.stats.snapshot())

    routes = [
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/tokenize", tokenize, methods=["POST"]),
        Route("/v1/tokenize", tokenize, methods=["POST"]),
        Route("/detokenize", detokenize, methods=["POST"]),
        Route("/v1/detokenize", detokenize, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
        Route("/sim/stats", stats, methods=["GET"]),
        Route("/sim/reset", reset, methods=["POST"]),
    ]
    return _Tagged(Starlette(routes=routes), state.stats), state
