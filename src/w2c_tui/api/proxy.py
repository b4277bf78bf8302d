"""Which proxy a request goes through: one rule for every request the product makes.

Read from the environment as curl and requests read it: `<scheme>_proxy` (lower case first,
then upper), else `ALL_PROXY`; `NO_PROXY` is a comma-separated list of `*`, host names
(`example.com` and `.example.com` both match the domain and its subdomains), `host:port`,
IP addresses and CIDR ranges (`10.0.0.0/8`). A loopback address is never proxied: the
built-in simulator and a local vLLM must not go out to an institution's proxy.
"""

from __future__ import annotations

import ipaddress
import urllib.request
from urllib.parse import urlsplit

from w2c_tui.api.providers import is_loopback_url
from w2c_tui.redaction import redact_url

DEFAULT_PORTS = {"http": 80, "https": 443}


class UnsupportedProxy(ValueError):
    """The environment names a proxy this client cannot speak to (SOCKS)."""


def proxy_for(url: str) -> str | None:
    """The proxy URL a request to `url` goes through, or None for a direct connection.

    Raises UnsupportedProxy when that proxy is a SOCKS one."""
    if is_loopback_url(url):
        return None
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    scheme = parts.scheme.lower()
    key = scheme if proxies.get(scheme) else "all"
    proxy = proxies.get(key)
    if not proxy or bypassed(parts.hostname or "", parts.port or DEFAULT_PORTS.get(scheme), proxies.get("no", "")):
        return None
    if "://" not in proxy:
        proxy = "http://" + proxy  # `proxy:3128`, as curl and requests read it
    if not proxy.lower().startswith(("http://", "https://")):
        variable = f"{key.upper()}_PROXY"
        raise UnsupportedProxy(
            f"{variable} names a {proxy.split(':', 1)[0]} proxy ({redact_url(proxy)}), which w2c-tui does not support: "
            f"unset {variable} or set {scheme.upper()}_PROXY to an HTTP proxy (http://host:port)"
        )
    return proxy


def bypassed(host: str, port: int | None, no_proxy: str) -> bool:
    """Whether a NO_PROXY list names `host` (at `port`)."""
    host = host.lower().rstrip(".")
    address = _address(host)
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        name, wanted_port = _split_port(entry)
        if wanted_port is not None and wanted_port != port:
            continue
        if address is not None and "/" in name:
            try:
                if address in ipaddress.ip_network(name, strict=False):
                    return True
            except ValueError:
                pass
            continue
        if address is not None and _address(name) == address:
            return True
        name = name.removeprefix("*").lstrip(".").rstrip(".")
        if name and (host == name or host.endswith("." + name)):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    """`host:port`, `[v6]:port`, `[v6]` or a bare name/address/CIDR, and its port if any."""
    if entry.startswith("["):
        inside, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":")
        return inside, int(port) if port.isdigit() else None
    name, colon, port = entry.rpartition(":")
    if colon and port.isdigit() and ":" not in name:  # a bare IPv6 address has colons of its own
        return name, int(port)
    return entry, None


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None

