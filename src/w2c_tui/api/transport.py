"""The network of a session's calls: one aiohttp pool per provider.

A call needs one thing of HTTP: send these bytes, get status, headers and body back. httpx
over httpcore cost 0.5-0.7 ms of CPU per request at 32 connections on this 2-core box;
aiohttp, used directly, 0.2 ms (benchmarks/http_client_cost.py, issue 25), and its pool
does not walk every connection per request, so one pool serves a provider.

httpx stays the vocabulary: every aiohttp failure leaves as the httpx error naming the same
event (a cut body is a RemoteProtocolError, a stalled read a ReadTimeout), which is what
retry.py judges, and tests replace the network with an httpx transport (`HttpxSender`).
What no later attempt can change (an answer past the bounds below, an untrusted
certificate, a proxy we cannot speak) leaves as a `PermanentTransportError`, never retried.

Every answer is bounded: MAX_ANSWER_BYTES of body after decompression (decompressed here,
as it arrives, so a gzip bomb stops at the bound), MAX_HEADER_BYTES per header line.
"""

from __future__ import annotations

import functools
import os
import ssl
import zlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

import aiohttp
import certifi
import httpx
from aiohttp.http_exceptions import LineTooLong

from w2c_tui.api.proxy import UnsupportedProxy, proxy_for

KEEPALIVE_SECONDS = 4.0
# An answer is a few KB, an example's log-prob echoes a few hundred (store/trace_rollover.py:
# 32 MB is ~80 examples): 64 MiB leaves two orders of magnitude, and is what a row may hold at most.
MAX_ANSWER_BYTES = 64 << 20
MAX_HEADER_BYTES = 8190  # one header line, aiohttp's and nginx's default
DECODED = "gzip, deflate"  # the encodings read_bounded inflates, and so the only ones asked for


class PermanentTransportError(httpx.TransportError):
    """What no later attempt changes: its message is the whole line (retry.py gives it no cause)."""


@functools.cache
def shared_tls() -> ssl.SSLContext:
    """One TLS context for every client of the process: loading the CA certificates costs
    ~20 ms, paid once instead of per provider, per session and per preflight request.

    `SSL_CERT_FILE`, else `SSL_CERT_DIR`, else the certifi bundle (as httpx and requests)."""
    for variable, keyword in (("SSL_CERT_FILE", "cafile"), ("SSL_CERT_DIR", "capath")):
        where = os.environ.get(variable)
        if where:
            try:
                return ssl.create_default_context(**{keyword: where})
            except (OSError, ssl.SSLError) as exc:
                reason = getattr(exc, "strerror", None) or str(exc)
                raise PermanentTransportError(
                    f"{variable}={where} cannot be read as CA certificates ({reason}): "
                    f"point it at a PEM file (SSL_CERT_DIR at a folder of them) or unset it"
                ) from None
    return ssl.create_default_context(cafile=certifi.where())


def network_problem(urls: list[str]) -> str | None:
    """One line on what in the environment would stop every request to these URLs (a SOCKS
    proxy, an unreadable SSL_CERT_FILE), else None: said before a launch sends anything."""
    try:
        if any(urlsplit(url).scheme == "https" for url in urls):
            shared_tls()
        for url in urls:
            proxy_for(url)
    except (UnsupportedProxy, PermanentTransportError) as exc:
        return str(exc)
    return None


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
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return PermanentTransportError(untrusted_certificate(exc.host, exc.port, exc.certificate_error))
    cause = exc.__cause__  # aiohttp's words, without its wrapping
    if _header_too_large(cause):
        return PermanentTransportError(
            f"the answer has a header line past {MAX_HEADER_BYTES} bytes, or too many headers (the bound on "
            "an answer's header): the server or a proxy before it is broken; not retried"
        )
    kind = next(target for source, target in _ERRORS if isinstance(exc, source))
    return kind(getattr(cause, "message", None) or str(exc) or type(exc).__name__)


def _header_too_large(cause: BaseException | None) -> bool:
    # aiohttp wraps the parser's LineTooLong in a bare HttpProcessingError (kept as its cause);
    # too many headers has no class of its own.
    origin = getattr(cause, "__cause__", None)
    return isinstance(origin, LineTooLong) or "Too many headers" in str(getattr(cause, "message", ""))


def untrusted_certificate(host: str, port: int, error: BaseException) -> str:
    reason = getattr(error, "verify_message", None) or str(error)
    return (
        f"the TLS certificate of {host}:{port} is not trusted ({reason}): if an institution's own authority "
        "signs it, set SSL_CERT_FILE to a PEM file of that authority's certificates (or SSL_CERT_DIR to a folder)"
    )


async def read_bounded(chunks: AsyncIterator[bytes], encoding: str) -> bytes:
    """The body, inflated as it arrives; PermanentTransportError past MAX_ANSWER_BYTES of
    either what came or what it inflates to, so a gzip bomb stops at the bound."""
    encoding = encoding.strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
        raise PermanentTransportError(f"the answer came in content-encoding {encoding!r}, which was not asked for ({DECODED})")
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS) if "gzip" in encoding else None
    parts: list[bytes] = []
    raw = size = 0
    async for chunk in chunks:
        raw += len(chunk)
        if encoding == "deflate" and decoder is None:
            # "deflate" is zlib-wrapped by the standard, raw in some servers: the first byte tells.
            decoder = zlib.decompressobj(zlib.MAX_WBITS if chunk[0] & 0x0F == 8 else -zlib.MAX_WBITS)
        if decoder is None:
            parts.append(chunk)
            size += len(chunk)
        else:
            try:
                # At most one byte past the bound is ever inflated: the rest waits in unconsumed_tail.
                while chunk and size <= MAX_ANSWER_BYTES:
                    piece = decoder.decompress(chunk, MAX_ANSWER_BYTES + 1 - size)
                    parts.append(piece)
                    size += len(piece)
                    chunk = decoder.unconsumed_tail
            except zlib.error as exc:
                raise httpx.DecodingError(f"Can not decode content-encoding: {encoding} ({exc})") from None
        if size > MAX_ANSWER_BYTES or raw > MAX_ANSWER_BYTES:
            raise answer_too_large()
    return parts[0] if len(parts) == 1 else b"".join(parts)


def answer_too_large() -> PermanentTransportError:
    return PermanentTransportError(
        f"the answer is larger than {MAX_ANSWER_BYTES >> 20} MiB once inflated (the bound on one answer): "
        "not kept, not retried"
    )


def _declared_too_large(headers: Mapping[str, str]) -> bool:
    length = headers.get("content-length", "")
    return length.isdigit() and int(length) > MAX_ANSWER_BYTES


Progress = Callable[[int, int], None]


async def _counted(chunks: AsyncIterator[bytes], declared: int, progress: Progress) -> AsyncIterator[bytes]:
    received = 0
    async for chunk in chunks:
        received += len(chunk)
        progress(received, declared)
        yield chunk


class AiohttpSender:
    """One provider's connections: at most `max_connections`, with its headers on every request."""

    def __init__(self, headers: Mapping[str, str], timeouts: Timeouts, max_connections: int) -> None:
        self.headers = {"content-type": "application/json", "accept-encoding": DECODED, **headers}
        self.timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeouts.connect, sock_read=timeouts.read)
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._proxies: dict[str, str | None] = {}

    def _open(self, url: str) -> aiohttp.ClientSession:
        # Made on first use, inside the running loop aiohttp binds to. The CA certificates
        # only for a provider that needs them: an unreadable SSL_CERT_FILE stops no plain-HTTP one.
        tls = shared_tls() if urlsplit(url).scheme == "https" else True
        return aiohttp.ClientSession(
            # Idle connections go before uvicorn (vLLM, llama-cpp-python) closes its own at 5 s:
            # one reused as the server closes it is a failed attempt (aiohttp keeps them 15 s).
            connector=aiohttp.TCPConnector(limit=self.max_connections, ssl=tls, keepalive_timeout=KEEPALIVE_SECONDS),
            headers=self.headers,
            cookie_jar=aiohttp.DummyCookieJar(),  # an API call carries no cookies
            timeout=self.timeout,
            auto_decompress=False,  # read_bounded inflates, within the bound
            max_line_size=MAX_HEADER_BYTES,
            max_field_size=MAX_HEADER_BYTES,
        )

    def _proxy(self, url: str) -> str | None:
        """The proxy of api/proxy.py's rule. Once per URL (a provider has a handful): aiohttp's
        own `trust_env` looks on every request, 0.25 ms each."""
        if url not in self._proxies:
            try:
                self._proxies[url] = proxy_for(url)
            except UnsupportedProxy as exc:
                raise PermanentTransportError(str(exc)) from None
        return self._proxies[url]

    async def send(self, method: str, url: str, content: bytes | None, progress: Progress | None = None) -> Reply:
        """One request, no redirect followed; `progress(received, declared)` after each piece of
        the body as it came (declared: its content-length, 0 when none), for a download's bar."""
        proxy = self._proxy(url)
        session = self._session or self._open(url)
        self._session = session
        try:
            async with session.request(method, url, data=content, allow_redirects=False, proxy=proxy) as response:
                if _declared_too_large(response.headers):
                    raise answer_too_large()
                encoding = response.headers.get("content-encoding", "")
                chunks = response.content.iter_any()
                if progress is not None:
                    chunks = _counted(chunks, response.content_length or 0, progress)
                return Reply(response.status, response.headers, await read_bounded(chunks, encoding))
        except aiohttp.ClientError as exc:
            raise _as_httpx(exc) from exc

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


class HttpxSender:
    """The same over an httpx transport: how tests put a fake server (MockTransport) in place.
    The body is read as AiohttpSender reads it (read_bounded)."""

    def __init__(self, headers: Mapping[str, str], timeouts: Timeouts, transport: httpx.AsyncBaseTransport) -> None:
        timeout = httpx.Timeout(timeouts.read, connect=timeouts.connect)
        headers = {"content-type": "application/json", "accept-encoding": DECODED, **headers}
        self.client = httpx.AsyncClient(headers=headers, timeout=timeout, transport=transport)

    async def send(self, method: str, url: str, content: bytes | None) -> Reply:
        async with self.client.stream(method, url, content=content) as response:
            if _declared_too_large(response.headers):
                raise answer_too_large()
            encoding = response.headers.get("content-encoding", "")
            # The stream itself, not aiter_raw: a fake server may answer twice with one Response.
            raw = aiter(response.stream)  # type: ignore[call-overload]
            return Reply(response.status_code, response.headers, await read_bounded(raw, encoding))

    async def aclose(self) -> None:
        await self.client.aclose()
