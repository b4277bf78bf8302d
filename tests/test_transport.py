"""The aiohttp sender on real sockets: each failure leaves as the httpx error retry.py judges."""

from __future__ import annotations

import socket

import httpx
import orjson
import pytest
from misbehaving_server import MisbehavingServer

from w2c_tui.api.retry import cause_for_exception
from w2c_tui.api.transport import KEEPALIVE_SECONDS, AiohttpSender, Timeouts, shared_tls

BODY = orjson.dumps({"model": "stub", "messages": [{"role": "user", "content": "hi"}]})


def sender(timeout: float = 1.0) -> AiohttpSender:
    return AiohttpSender({"Authorization": "Bearer t"}, Timeouts(connect=timeout, read=timeout), max_connections=2)


async def send(mode: str, timeout: float = 1.0):
    server = MisbehavingServer(mode, timeout_seconds=timeout)
    http = sender(timeout)
    try:
        return await http.send("POST", server.base_url + "/chat/completions", BODY)
    finally:
        await http.aclose()
        server.stop()


@pytest.mark.parametrize(
    "mode, error, cause",
    [
        ("cut_body", httpx.RemoteProtocolError, "connection"),
        ("gzip_lie", httpx.DecodingError, "connection"),
        ("reset", httpx.RemoteProtocolError, "connection"),
        ("slow_headers", httpx.ReadTimeout, "timeout"),
    ],
)
async def test_a_failure_on_the_wire_is_the_httpx_error_of_the_same_event(mode, error, cause):
    with pytest.raises(error) as caught:
        await send(mode)
    assert cause_for_exception(caught.value) == cause


async def test_nobody_listening_is_a_connect_error():
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    http = sender()
    with pytest.raises(httpx.ConnectError) as caught:
        await http.send("POST", f"http://127.0.0.1:{port}/v1/chat/completions", BODY)
    await http.aclose()
    assert cause_for_exception(caught.value) == "connection"


async def test_an_answer_comes_back_whole_with_case_insensitive_headers():
    reply = await send("status_429_forever")
    assert reply.status == 429
    assert reply.headers["Retry-After"] == reply.headers["retry-after"] == "1"
    assert reply.content


async def test_a_redirect_is_answered_not_followed():
    reply = await send("redirect")
    assert 300 <= reply.status < 400 and reply.headers.get("location")


def test_proxies_come_from_the_environment_once_per_host(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "inside.example")
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    http = sender()
    assert http._proxy("https://api.example/v1/chat/completions") == "http://proxy.example:3128"
    assert http._proxy("https://inside.example/v1/chat/completions") is None
    assert http._proxy("http://api.example/v1/models") is None  # no HTTP_PROXY
    monkeypatch.setenv("HTTPS_PROXY", "http://other.example:1")
    assert http._proxy("https://api.example/v1/chat/completions") == "http://proxy.example:3128"  # read once per URL


async def test_a_provider_is_one_pool_of_its_connections_on_the_shared_tls_context():
    assert shared_tls() is shared_tls()
    session = sender()._open("https://api.example/v1/chat/completions")
    assert session.connector.limit == 2
    assert session.connector._ssl is shared_tls()
    assert session.connector._keepalive_timeout == KEEPALIVE_SECONDS < 5  # uvicorn closes idle ones at 5 s
    await session.close()


async def test_a_request_goes_through_the_proxy_the_environment_names(monkeypatch):
    """A gateway behind an institution's proxy: the request reaches the proxy, in absolute form."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[str] = []

    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append(self.requestline)
            body = b'{"choices": []}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.server_address[1]}")
    http = sender()
    try:
        reply = await http.send("POST", "http://gateway.invalid/v1/chat/completions", BODY)
    finally:
        await http.aclose()
        server.shutdown()
        server.server_close()
    assert reply.status == 200 and reply.content == b'{"choices": []}'
    assert seen == ["POST http://gateway.invalid/v1/chat/completions HTTP/1.1"]
