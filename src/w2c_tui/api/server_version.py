"""What a server says about its own version, for the session manifest.

vLLM answers `GET /version` at its root (beside /v1) with `{"version": "0.32.0"}`. Servers
without it (most gateways, the simulated endpoint) give nothing, and nothing is recorded:
this is a note about the server, never a reason to stop, nor to wait: the request has the
whole-attempt deadline of every other (a trickling answer ends at it, as unknown).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from w2c_tui.api.attempt import exchange
from w2c_tui.api.providers import auth_headers
from w2c_tui.api.transport import AiohttpSender, Timeouts

VERSION_ENDPOINT = "/version"


def version_url(base_url: str) -> str:
    """`/version` at the server root: the base URL's path without its trailing /v1."""
    parts = urlsplit(base_url)
    root = parts.path.rstrip("/").removesuffix("/v1")
    return urlunsplit(parts._replace(path=root + VERSION_ENDPOINT, query=""))


async def server_version(base_url: str, token: str | None, *, timeout: float = 5.0) -> dict[str, Any] | None:
    """{"url", "answer"} when the server answers /version with a JSON object naming a version
    within `timeout` seconds (the whole exchange), else None."""
    url = version_url(base_url)
    http = AiohttpSender(auth_headers(token), Timeouts(connect=timeout, read=timeout), max_connections=1)
    try:
        outcome = await exchange(http, "GET", url, None, expect_choices=False, deadline_seconds=timeout)
    finally:
        await http.aclose()
    body = outcome.data if outcome.ok and outcome.status == 200 else None
    if not isinstance(body, dict) or "version" not in body:
        return None
    # Bounded: a server's note, not a place for whatever a gateway sends back.
    answer = {str(k)[:50]: v if isinstance(v, (int, float, bool)) else str(v)[:200] for k, v in list(body.items())[:10]}
    return {"url": url, "answer": answer}
