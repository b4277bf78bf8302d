"""A loopback gateway that spoils every Nth request on its way to an upstream server (issue 21).

It stands for the gateways researchers run behind: most requests pass through untouched,
every `every`-th one (counting every request: /models, /tokenize, probes, model calls) is
answered with the next of eight passing faults instead, in turn:

* `429_date`: 429 with an HTTP-date `Retry-After` about a second ahead;
* `429_ms`: 429 with `retry-after-ms`;
* `503_empty`: 503 with no body;
* `html_200`: 200 with a web page (a login or maintenance page);
* `cut_body`: 200 with the upstream's JSON cut in half (and a length that matches the cut);
* `drop_after_headers`: the headers of a 200, then the connection closes;
* `502_json`: 502 with a JSON error;
* `trickle`: the upstream's answer, one byte every `trickle_interval` seconds (slower than
  any attempt deadline: its whole body takes minutes).

`always` names paths spoiled on every request with a kind of their own (`{"/version":
"trickle"}`: a server whose version endpoint trickles while the rest answers).

A plain asyncio HTTP/1.1 server in a thread of its own, so tests and benchmarks that run
their launches with `asyncio.run` can use it; `stop()` ends it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from email.utils import formatdate

import httpx

KINDS = ("429_date", "429_ms", "503_empty", "html_200", "cut_body", "drop_after_headers", "502_json", "trickle")
# Hop-by-hop and length headers are ours to write, not the upstream's.
PASSED_HEADERS = ("content-type", "retry-after", "retry-after-ms")
REASONS = {200: "OK", 429: "Too Many Requests", 502: "Bad Gateway", 503: "Service Unavailable"}
HTML_PAGE = b"<!DOCTYPE html><html><head><title>Gateway maintenance</title></head><body>Back soon.</body></html>"


class ChaosGateway:
    def __init__(
        self, upstream_base_url: str, *, every: int = 5, trickle_interval: float = 0.5, always: dict[str, str] | None = None
    ) -> None:
        self.upstream = upstream_base_url.rstrip("/").removesuffix("/v1")
        self.every = every
        self.always = dict(always or {})
        self.trickle_interval = trickle_interval
        self.requests = 0
        self.spoiled: Counter[str] = Counter()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-gateway", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the chaos gateway did not start")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    # -- the server ---------------------------------------------------------------
    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())
        self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        self._client = httpx.AsyncClient(base_url=self.upstream, timeout=None)
        self._handlers: set[asyncio.Task] = set()
        server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._client.aclose()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._handlers.add(task)
        try:
            while await self._one_request(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._handlers.discard(task)
            writer.close()

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection is to be closed."""
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
        body = await reader.readexactly(int(headers.get("content-length") or 0))
        self.requests += 1
        kind = self.always.get(path)
        if kind is None and self.requests % self.every == 0:
            kind = KINDS[(self.requests // self.every - 1) % len(KINDS)]
        if kind is not None:
            self.spoiled[kind] += 1
        if kind in ("429_date", "429_ms", "503_empty", "html_200", "502_json", "drop_after_headers"):
            return await self._fault(writer, kind)
        status, upstream_headers, content = await self._forward(method, path, headers, body)
        if kind == "cut_body":
            content = content[: max(1, len(content) // 2)]
        if kind == "trickle":
            await self._trickle(writer, status, upstream_headers, content)
            return False
        await self._send(writer, status, upstream_headers, content)
        return True

    async def _forward(self, method: str, path: str, headers: dict[str, str], body: bytes):
        sent = {k: v for k, v in headers.items() if k in ("authorization", "content-type")}
        response = await self._client.request(method, path, content=body, headers=sent)
        kept = {k: v for k, v in response.headers.items() if k.lower() in PASSED_HEADERS}
        return response.status_code, kept, response.content

    async def _fault(self, writer: asyncio.StreamWriter, kind: str) -> bool:
        error = {"error": {"message": f"chaos gateway: {kind}", "type": "gateway_error"}}
        if kind == "429_date":
            retry = {"retry-after": formatdate(time.time() + 1.0, usegmt=True)}
            await self._send(writer, 429, {"content-type": "application/json", **retry}, json.dumps(error).encode())
        elif kind == "429_ms":
            await self._send(writer, 429, {"content-type": "application/json", "retry-after-ms": "300"}, json.dumps(error).encode())
        elif kind == "503_empty":
            await self._send(writer, 503, {}, b"")
        elif kind == "html_200":
            await self._send(writer, 200, {"content-type": "text/html; charset=utf-8"}, HTML_PAGE)
        elif kind == "502_json":
            await self._send(writer, 502, {"content-type": "application/json"}, json.dumps(error).encode())
        else:  # drop_after_headers: promise a body, send none, hang up
            writer.write(self._head(200, {"content-type": "application/json"}, 512))
            await writer.drain()
            return False
        return True

    async def _trickle(self, writer: asyncio.StreamWriter, status: int, headers: dict[str, str], content: bytes) -> None:
        writer.write(self._head(status, headers, len(content)))
        for i in range(len(content)):
            writer.write(content[i : i + 1])
            await writer.drain()  # raises once the client has hung up at its deadline
            await asyncio.sleep(self.trickle_interval)

    async def _send(self, writer: asyncio.StreamWriter, status: int, headers: dict[str, str], content: bytes) -> None:
        writer.write(self._head(status, headers, len(content)) + content)
        await writer.drain()

    @staticmethod
    def _head(status: int, headers: dict[str, str], length: int) -> bytes:
        lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}", f"content-length: {length}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
