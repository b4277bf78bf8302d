"""Client CPU per chat request: how much is the HTTP library and how much is ours (issue 25, item 2).

Starts `w2c-tui sim` (another process), then sends the same POST /v1/chat/completions body
(a When2Call MCQ prompt, as `pipelines/mcq.py` builds it) at a fixed concurrency through each
client below, and divides this process's CPU time (user + system) by the requests sent.
The variants are interleaved round by round and each keeps its best round: this 2-core
machine is shared, so a slow round says more about the neighbours than about the client.

    .venv/bin/python benchmarks/http_client_cost.py                       # 50 ms latency, C=32, 3 rounds
    .venv/bin/python benchmarks/http_client_cost.py --latency-ms 0 --requests 1000 --rounds 5

Rows (library rows send pre-encoded bytes and read the body as bytes, no JSON either way;
the JSON rows give that cost on its own):
  a   `api/transport.AiohttpSender` as `api/client.py` builds it
      (one aiohttp pool of C connections), auth header, Timeout, the shared TLS context
  a+  the same through `api/attempt.exchange`: encode, deadline, parse, judge
  b1  httpx, lightest: one client, one pool of C connections, timeout=None, trust_env=False
  b2  httpx, lightest, sharded: C clients of one connection each (api/pool.py's ShardedHttp until issue 25)
  c1  httpcore.AsyncConnectionPool directly, one pool of C connections
  c2  httpcore, sharded like (b2)
  d   aiohttp.ClientSession (TCPConnector(limit=C)), if aiohttp is importable
  f   a hand-written HTTP/1.1 keep-alive client on asyncio streams: the event loop's floor
  e0  `ApiClient.chat` with the no-op CallObserver: our per-call work without call records
  e   `ApiClient.chat`, the whole path: limits, retries, redaction, call records written by
      a SessionObserver into a temp dir, as a session does
  m0  httpx.AsyncClient.post over httpx.MockTransport (the sim's answer, no socket): httpx's client layer
  m   (e) over the same MockTransport: m - m0 is our own per-call work, without the network's noise
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpcore  # noqa: E402
import httpx  # noqa: E402
import orjson  # noqa: E402

from throughput import start_sim  # noqa: E402
from w2c_tui.api.client import ApiClient  # noqa: E402
from w2c_tui.api.observer import CallObserver  # noqa: E402
from w2c_tui.api.attempt import exchange  # noqa: E402
from w2c_tui.api.transport import AiohttpSender, Timeouts, shared_tls  # noqa: E402
from w2c_tui.api.providers import ProviderSettings, auth_headers  # noqa: E402
from w2c_tui.api.trace import CallContext  # noqa: E402
from w2c_tui.data import load_examples  # noqa: E402
from w2c_tui.engine.observer import SessionObserver  # noqa: E402
from w2c_tui.engine.state import RunState  # noqa: E402
from w2c_tui.prompts.mcq import build_mcq_messages  # noqa: E402
from w2c_tui.runtime import tune_gc  # noqa: E402
from w2c_tui.store.layout import SessionPaths  # noqa: E402

GOAL_MS = 0.5  # issue 25: client CPU per chat request
MODEL = "sim-model"
TOKEN = "sk-bench-not-a-secret-0123456789"
TIMEOUT = 30.0

Send = Callable[[int], Awaitable[None]]  # one request; the int is the request's number
ANSWER = b""  # the sim's answer to the body, read once; the MockTransport rows return it


def mock_transport() -> httpx.MockTransport:
    headers = {"content-type": "application/json"}
    return httpx.MockTransport(lambda request: httpx.Response(200, headers=headers, content=ANSWER))


def chat_body(index: int = 0) -> dict[str, Any]:
    example = load_examples()[index]
    return {"model": MODEL, "messages": build_mcq_messages(example), "temperature": 0.0, "max_tokens": 8, "seed": 0}


# --- the clients -------------------------------------------------------------------------


class Variant:
    """open() -> send(i) for each request -> close(); `send` returns once the body is read."""

    key = ""
    label = ""

    def __init__(self, url: str, concurrency: int, body: dict[str, Any]) -> None:
        self.url, self.concurrency, self.body = url, concurrency, body
        self.chat_url = url + "/chat/completions"
        self.payload = orjson.dumps(body)

    async def open(self) -> None: ...

    async def send(self, i: int) -> None: ...

    async def close(self) -> None: ...


def _least_busy(busy: list[int]) -> int:
    return min(range(len(busy)), key=busy.__getitem__)


class Ours(Variant):
    key, label = "a", "our sender as `api/client.py` builds it (AiohttpSender: auth, timeouts, TLS ctx)"
    as_exchange = False

    async def open(self) -> None:
        shared_tls()  # loaded before the clock, as a session's first provider does
        self.http = AiohttpSender(auth_headers(TOKEN), Timeouts(connect=10.0, read=TIMEOUT), self.concurrency)

    async def send(self, i: int) -> None:
        if self.as_exchange:
            outcome = await exchange(self.http, "POST", self.chat_url, self.body, True, TIMEOUT)
            assert outcome.ok
        else:
            reply = await self.http.send("POST", self.chat_url, self.payload)
            assert reply.status == 200 and reply.content

    async def close(self) -> None:
        await self.http.aclose()


class OursExchange(Ours):
    key, label = "a+", "  (a) through `attempt.exchange`: encode, deadline, parse, judge"
    as_exchange = True


class HttpxLight(Variant):
    key, label = "b1", "httpx lightest: one client, one pool of C, timeout=None, trust_env=False"
    shards = False

    def _client(self, connections: int) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            timeout=None, trust_env=False,
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        )

    async def open(self) -> None:
        self.clients = [self._client(1) for _ in range(self.concurrency)] if self.shards else [self._client(self.concurrency)]
        self.busy = [0] * len(self.clients)
        self.headers = {"content-type": "application/json"}

    async def send(self, i: int) -> None:
        index = _least_busy(self.busy)
        self.busy[index] += 1
        try:
            response = await self.clients[index].post(self.chat_url, content=self.payload, headers=self.headers)
        finally:
            self.busy[index] -= 1
        assert response.status_code == 200 and response.content

    async def close(self) -> None:
        for client in self.clients:
            await client.aclose()


class HttpxLightSharded(HttpxLight):
    key, label = "b2", "httpx lightest, sharded: C clients of one connection"
    shards = True


class Httpcore(Variant):
    key, label = "c1", "httpcore.AsyncConnectionPool directly, one pool of C"
    shards = False

    async def open(self) -> None:
        n = self.concurrency
        self.pools = [httpcore.AsyncConnectionPool(max_connections=1) for _ in range(n)] if self.shards else [
            httpcore.AsyncConnectionPool(max_connections=n, max_keepalive_connections=n)]
        self.busy = [0] * len(self.pools)
        host = self.chat_url.split("/")[2]
        self.headers = [(b"host", host.encode()), (b"content-type", b"application/json"),
                        (b"content-length", str(len(self.payload)).encode())]

    async def send(self, i: int) -> None:
        index = _least_busy(self.busy)
        self.busy[index] += 1
        try:
            response = await self.pools[index].request("POST", self.chat_url, headers=self.headers, content=self.payload)
        finally:
            self.busy[index] -= 1
        assert response.status == 200 and response.content

    async def close(self) -> None:
        for pool in self.pools:
            await pool.aclose()


class HttpcoreSharded(Httpcore):
    key, label = "c2", "httpcore, sharded like (b2)"
    shards = True


class Aiohttp(Variant):
    key, label = "d", "aiohttp.ClientSession, TCPConnector(limit=C)"

    async def open(self) -> None:
        import aiohttp

        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=self.concurrency))
        self.headers = {"content-type": "application/json"}

    async def send(self, i: int) -> None:
        async with self.session.post(self.chat_url, data=self.payload, headers=self.headers) as response:
            content = await response.read()
        assert response.status == 200 and content

    async def close(self) -> None:
        await self.session.close()


class RawStreams(Variant):
    """The least an asyncio client can do: one keep-alive connection per slot, Content-Length only."""

    key, label = "f", "hand-written HTTP/1.1 on asyncio streams (the event loop's floor)"

    async def open(self) -> None:
        host_port = self.chat_url.split("/")[2]
        self.host, port = host_port.split(":")
        self.port = int(port)
        path = "/" + self.chat_url.split("/", 3)[3]
        self.request = (
            f"POST {path} HTTP/1.1\r\nhost: {host_port}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(self.payload)}\r\n\r\n"
        ).encode() + self.payload
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def send(self, i: int) -> None:
        reader, writer = self.idle.pop() if self.idle else await asyncio.open_connection(self.host, self.port)
        writer.write(self.request)
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        content = await reader.readexactly(length)
        assert head.startswith(b"HTTP/1.1 200") and content
        self.idle.append((reader, writer))

    async def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


class OurClient(Variant):
    key, label = "e", "ApiClient.chat, the whole path (call records written to a temp dir)"
    records = True
    mock = False

    async def open(self) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="w2c-http-cost-")
        paths = SessionPaths(Path(self.tmp.name) / "session")
        self.observer = SessionObserver(paths, RunState("bench")) if self.records else CallObserver()
        provider = ProviderSettings(
            "sim", self.url, token=TOKEN, max_concurrency=self.concurrency, is_default=True,
            adaptive_concurrency=False,
        )
        transport = mock_transport() if self.mock else None
        self.client = ApiClient([provider], timeout_seconds=TIMEOUT, observer=self.observer, transport=transport)
        self.messages = self.body["messages"]

    async def send(self, i: int) -> None:
        result = await self.client.chat(
            MODEL, self.messages, temperature=0.0, max_tokens=8, seed=0,
            ctx=CallContext(exp_name="mcq_bench", stage="mcq", uuid=f"ex-{i}"),
        )
        assert result.content is not None

    async def close(self) -> None:
        await self.client.aclose()
        if isinstance(self.observer, SessionObserver):
            self.observer.close()
        self.tmp.cleanup()


class OurClientNoRecords(OurClient):
    key, label = "e0", "ApiClient.chat, no call records (the no-op CallObserver)"
    records = False


class MockHttpx(Variant):
    key, label = "m0", "httpx.AsyncClient.post over httpx.MockTransport (no socket: httpx's client layer)"

    async def open(self) -> None:
        self.client = httpx.AsyncClient(transport=mock_transport())
        self.headers = {"content-type": "application/json"}

    async def send(self, i: int) -> None:
        response = await self.client.post(self.chat_url, content=self.payload, headers=self.headers)
        assert response.status_code == 200 and response.content

    async def close(self) -> None:
        await self.client.aclose()


class MockOurClient(OurClient):
    key, label = "m", "(e) over the same MockTransport: m - m0 = our own per-call work"
    mock = True


VARIANTS: list[type[Variant]] = [
    Ours, OursExchange, HttpxLight, HttpxLightSharded, Httpcore, HttpcoreSharded, Aiohttp, RawStreams,
    OurClientNoRecords, OurClient, MockHttpx, MockOurClient,
]


# --- measuring ---------------------------------------------------------------------------


async def drive(send: Send, requests: int, concurrency: int, first: int = 0) -> None:
    """`requests` sends, `concurrency` at a time (one worker per slot, as the engine's slots)."""
    counter = iter(range(first, first + requests))

    async def worker() -> None:
        for i in counter:
            await send(i)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def measure(variant: Variant, requests: int) -> tuple[float, float]:
    """(client CPU ms per request, requests per second), connections opened before the clock starts."""
    await variant.open()
    try:
        await drive(variant.send, 2 * variant.concurrency, variant.concurrency, first=10**6)  # warm: connect
        cpu, wall = time.process_time(), time.perf_counter()
        await drive(variant.send, requests, variant.concurrency)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        await variant.close()
    return 1000.0 * cpu / requests, requests / wall


def answer_bytes(url: str, body: dict[str, Any]) -> bytes:
    response = httpx.post(url + "/chat/completions", content=orjson.dumps(body),
                          headers={"content-type": "application/json"}, timeout=TIMEOUT)
    response.raise_for_status()
    return response.content


def json_rows(answer: bytes, body: dict[str, Any], repeat: int = 20000) -> list[tuple[str, float]]:
    """CPU ms per call: parse a chat answer and encode the request body, orjson against the standard library."""

    def per_call(fn: Callable[[], Any]) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            for _ in range(repeat):
                fn()
            best = min(best, (time.process_time() - start) / repeat)
        return 1000.0 * best

    return [
        (f"parse chat answer ({len(answer)} B): orjson.loads", per_call(lambda: orjson.loads(answer))),
        ("parse chat answer: json.loads (stdlib)", per_call(lambda: json.loads(answer))),
        (f"encode request body ({len(orjson.dumps(body))} B): orjson.dumps", per_call(lambda: orjson.dumps(body))),
        ("encode request body: json.dumps as httpx json= does",
         per_call(lambda: json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode())),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=50.0, help="the sim's latency per request")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--requests", type=int, default=1500, help="measured requests per variant and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="+", help="variant keys to run (a a+ b1 b2 c1 c2 d f e0 e m0 m)")
    args = parser.parse_args()
    tune_gc()  # as `w2c-tui run` does

    variants = [v for v in VARIANTS if not args.only or v.key in args.only]
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        variants = [v for v in variants if v is not Aiohttp]
        print("aiohttp is not installed: row (d) skipped", file=sys.stderr)

    process, url = start_sim(args.latency_ms, "vllm")
    body = chat_body()
    results: dict[str, list[tuple[float, float]]] = {v.key: [] for v in variants}
    try:
        global ANSWER
        answer = ANSWER = answer_bytes(url, body)
        for round_number in range(args.rounds):
            order = variants if round_number % 2 == 0 else variants[::-1]  # neither end always first
            for cls in order:
                cpu_ms, rate = asyncio.run(measure(cls(url, args.concurrency, body), args.requests))
                results[cls.key].append((cpu_ms, rate))
                print(f"round {round_number + 1} {cls.key}: {cpu_ms:.3f} ms/req, {rate:.0f} req/s", file=sys.stderr, flush=True)
        parse = json_rows(answer, body)
    finally:
        process.terminate()
        process.wait()

    best = {key: min(rounds) for key, rounds in results.items()}
    base = best.get("a", (None,))[0]
    print(f"\nsim latency {args.latency_ms:g} ms, concurrency {args.concurrency}, {args.requests} requests per "
          f"variant and round, best of {args.rounds} interleaved rounds; python {sys.version.split()[0]}, "
          f"httpx {httpx.__version__}, httpcore {httpcore.__version__}\n")
    print(f"| row | client | CPU ms/request (best) | median of rounds | goal {GOAL_MS} ms: x goal | ratio to (a) | req/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for cls in variants:
        cpu_ms, rate = best[cls.key]
        median = statistics.median(r[0] for r in results[cls.key])
        ratio = f"{cpu_ms / base:.2f}" if base else "-"
        rate_cell = "-" if cls.key.startswith("m") else f"{rate:.0f}"  # no socket, no latency: not a throughput
        print(f"| {cls.key} | {cls.label.strip()} | {cpu_ms:.3f} | {median:.3f} | {cpu_ms / GOAL_MS:.2f} | {ratio} | {rate_cell} |")
    for label, ms in parse:
        ratio = f"{ms / base:.3f}" if base else "-"
        print(f"| json | {label} | {ms:.4f} | - | {ms / GOAL_MS:.3f} | {ratio} | - |")


if __name__ == "__main__":
    main()
