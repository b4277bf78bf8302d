"""Which provider serves a model, and what the client needs to know about each provider."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from w2c_tui.api.limits import Pacing


class MissingTokenError(RuntimeError):
    """A remote provider is about to be used but nobody gave us its token."""

    def __init__(self, provider: str, variable: str) -> None:
        self.provider = provider
        self.variable = variable
        super().__init__(
            f"provider '{provider}' has no token: set {variable} in .env or the environment, "
            f"or [providers.{provider}] token_env"
        )


@dataclass
class ProviderSettings:
    name: str
    base_url: str
    token: str | None = field(default=None, repr=False)
    # The variable a user should set; only used in messages, never read here.
    token_env_hint: str = ""
    model_prefixes: list[str] = field(default_factory=list)
    max_concurrency: int = 16
    requests_per_minute: int = 0  # 0 = unlimited
    is_default: bool = False
    tokens_per_minute: int = 0  # 0 = unlimited
    initial_concurrency: int = 0  # 0 = min(16, max_concurrency); the live limit adapts under max_concurrency
    min_concurrency: int = 1
    adaptive_concurrency: bool = True

    def __post_init__(self) -> None:
        self.base_url = self.base_url.strip().rstrip("/")
        if not self.token_env_hint:
            self.token_env_hint = f"TOKEN_{self.name.upper().replace('-', '_')}"
        if self.max_concurrency < 1:
            raise ValueError(f"provider '{self.name}': max_concurrency must be at least 1")

    @property
    def pacing(self) -> Pacing:
        return Pacing(
            requests_per_minute=self.requests_per_minute,
            tokens_per_minute=self.tokens_per_minute,
            initial_concurrency=self.initial_concurrency,
            min_concurrency=self.min_concurrency,
            adaptive=self.adaptive_concurrency,
        )

    @property
    def is_loopback(self) -> bool:
        return is_loopback_url(self.base_url)

    def check_token(self) -> None:
        """Local servers (the simulator, a local vLLM) need no token; remote ones do."""
        if not self.token and not self.is_loopback:
            raise MissingTokenError(self.name, self.token_env_hint)


def auth_headers(token: str | None) -> dict[str, str]:
    """The Authorization header every request to a provider carries (none without a token)."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def endpoint_url(base_url: str, endpoint: str) -> str:
    """`endpoint` ("/chat/completions") under `base_url`, before any query the base URL carries
    (gateways such as Azure's want `?api-version=...` on every request)."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + endpoint))


def is_loopback_url(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_provider(providers: list[ProviderSettings]) -> ProviderSettings:
    """The marked default, else the first catch-all (no prefixes), else the first."""
    if not providers:
        raise ValueError("no providers configured")
    for provider in providers:
        if provider.is_default:
            return provider
    for provider in providers:
        if not provider.model_prefixes:
            return provider
    return providers[0]


def route(model: str, providers: list[ProviderSettings]) -> ProviderSettings:
    """The provider with the longest prefix matching `model`, else the default provider."""
    best: ProviderSettings | None = None
    best_length = -1
    for provider in providers:
        for prefix in provider.model_prefixes:
            if prefix and model.startswith(prefix) and len(prefix) > best_length:
                best, best_length = provider, len(prefix)
    return best if best is not None else default_provider(providers)
