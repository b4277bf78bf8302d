"""The network of a session's calls: one aiohttp pool per provider.

A call needs one thing of HTTP: send these bytes, get status, headers and body back. httpx
over httpcore cost 0.5-0.7 ms of CPU per request at 32 connections on this 2-core box;
aiohttp, used directly, 0.2 ms (benchmarks/http_client_cost.py, issue 25), and its pool
does not walk every connection per request, so one pool serves a provider.

httpx stays the vocabulary: every aiohttp failure leaves as the httpx error naming the same
event (a cut body is a RemoteProtocolError, a stalled read a ReadTimeout), which is what
retry.py judges, and tests replace the network with an httpx transport (`HttpxSender`).
"""

from __future__ import annotations

import functools
import ssl
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

import aiohttp
import httpx
from aiohttp.http_exceptions import ContentEncodingError


KEEPALIVE_SECONDS = 4.0


@functools.cache
def shared_tls() -> ssl.SSLContext:
    """One TLS context for every client of the process: loading the CA certificates costs
    ~20 ms, paid once instead of per provider, per session and per preflight request."""
    return httpx.create_ssl_context()


@dataclass(slots=True)
class Reply:
    status: int
    headers: Mapping[str, str]  # case-insensitive
    content: bytes


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect: float
    read: float  # between two reads, as httpx's: a whole attempt's deadline is attempt.py's


class Sender(Protocol):
    async def send(self, method: str, url: str, content: bytes | None) -> Reply: ...

    async def aclose(self) -> None: ...


# Most specific first: aiohttp's classes inherit from each other (a connector error is an
# OS error is a connection error).
_ERRORS: tuple[tuple[type[BaseException], type[httpx.TransportError]], ...] = (
    (aiohttp.ConnectionTimeoutError, httpx.ConnectTimeout),
    (aiohttp.ServerTimeoutError, httpx.ReadTimeout),
    (aiohttp.InvalidURL, httpx.UnsupportedProtocol),
    (aiohttp.ClientConnectorError, httpx.ConnectError),
    (aiohttp.ServerDisconnectedError, httpx.RemoteProtocolError),
    (aiohttp.ClientPayloadError, httpx.RemoteProtocolError),
    (aiohttp.ClientResponseError, httpx.RemoteProtocolError),  # a reply that is not HTTP
    (aiohttp.ClientOSError, httpx.ReadError),
    (aiohttp.ClientConnectionError, httpx.NetworkError),
    (aiohttp.ClientError, httpx.TransportError),
)


def _as_httpx(exc: aiohttp.ClientError) -> httpx.TransportError:
    cause = exc.__cause__  # a body aiohttp could not read says why here, in words without its wrapping
    if isinstance(cause, ContentEncodingError):
        kind: type[httpx.TransportError] = httpx.DecodingError
    else:
        kind = next(target for source, target in _ERRORS if isinstance(exc, source))
    return kind(getattr(cause, "message", None) or str(exc) or type(exc).__name__)


class AiohttpSender:
    """One provider's connections: at most `max_connections`, with its headers on every request."""

    def __init__(self, headers: Mapping[str, str], timeouts: Timeouts, max_connections: int) -> None:
        self.headers = {"content-type": "application/json", **headers}
        self.timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeouts.connect, sock_read=timeouts.read)
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._proxies: dict[str, str | None] = {}

    def _open(self) -> aiohttp.ClientSession:
        # Made on first use, inside the running loop aiohttp binds to.
        return aiohttp.ClientSession(
            # Idle connections go before uvicorn (vLLM, llama-cpp-python) closes its own at 5 s:
            # one reused as the server closes it is a failed attempt (aiohttp keeps them 15 s).
            connector=aiohttp.TCPConnector(limit=self.max_connections, ssl=shared_tls(), keepalive_timeout=KEEPALIVE_SECONDS),
            headers=self.headers,
            cookie_jar=aiohttp.DummyCookieJar(),  # an API call carries no cookies
            timeout=self.timeout,
        )

    def _proxy(self, url: str) -> str | None:
        """HTTP(S)_PROXY / ALL_PROXY unless NO_PROXY names the host, as httpx reads them.
        Once per URL (a provider has a handful): aiohttp's own `trust_env` looks on every
        request, 0.25 ms each."""
        if url not in self._proxies:
            parts = urlsplit(url)
            proxies = urllib.request.getproxies()
            proxy = proxies.get(parts.scheme) or proxies.get("all")
            bypass = proxy is None or urllib.request.proxy_bypass(parts.hostname or "")
            self._proxies[url] = None if bypass else proxy
        return self._proxies[url]

    async def send(self, method: str, url: str, content: bytes | None) -> Reply:
        session = self._session or self._open()
        self._session = session
        try:
            async with session.request(method, url, data=content, allow_redirects=False, proxy=self._proxy(url)) as response:
                return Reply(response.status, response.headers, await response.read())
        except aiohttp.ClientError as exc:
            raise _as_httpx(exc) from exc

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


class HttpxSender:
    """The same over an httpx transport: how tests put a fake server (MockTransport) in place."""

    def __init__(self, headers: Mapping[str, str], timeouts: Timeouts, transport: httpx.AsyncBaseTransport) -> None:
        timeout = httpx.Timeout(timeouts.read, connect=timeouts.connect)
        headers = {"content-type": "application/json", **headers}
        self.client = httpx.AsyncClient(headers=headers, timeout=timeout, transport=transport)

    async def send(self, method: str, url: str, content: bytes | None) -> Reply:
        response = await self.client.request(method, url, content=content)
        return Reply(response.status_code, response.headers, response.content)

    async def aclose(self) -> None:
        await self.client.aclose()
