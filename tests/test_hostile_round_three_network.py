"""Hostile inputs, round three (issue 35): the network.

Each case is a fake server (or proxy) on 127.0.0.1 doing one thing a server, a proxy or an
environment in the wild does, and the one line or the right result it must end in:
an answer that inflates past the bound, a header past the bound, statuses the docs say are
retried, NO_PROXY and SOCKS proxies, the demo under HTTP_PROXY, an untrusted certificate, a
/version that trickles, and the simulator's numeric options.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import re
import socket
import socketserver
import ssl
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

import httpx
import pytest
from chaos_gateway import ChaosGateway
from configs import write_config

from w2c_tui.api import ApiClient, PermanentApiError, ProviderSettings, RetriesExhaustedError, RetryPolicy
from w2c_tui.api import transport
from w2c_tui.api.probe import list_models
from w2c_tui.api.proxy import bypassed, proxy_for
from w2c_tui.api.server_version import server_version
from w2c_tui.api.transport import AiohttpSender, PermanentTransportError, Timeouts, read_bounded, shared_tls
from w2c_tui.cli import main

ROOT = Path(__file__).resolve().parents[1]
CHAT = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
# A small run: two examples a label, no judge, no log-probabilities.
SMALL = {"data": {"n_per_label": 2}, "pipelines": {"do_llm_judge": False, "do_mcq_logprob": False}, "mlflow": {"enabled": False}}


@pytest.fixture(autouse=True)
def _no_proxy_environment(monkeypatch):
    for name in PROXY_VARIABLES + ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    shared_tls.cache_clear()
    yield
    shared_tls.cache_clear()


# -- a loopback server that answers each request with the chunks a test gives -------------------


def head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} Status", "connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class RawServer:
    """`respond(path)` gives the bytes to write, in chunks; the connection closes after them."""

    def __init__(self, respond: Callable[[str], Iterable[bytes]], tls: ssl.SSLContext | None = None) -> None:
        self.paths: list[str] = []
        owner = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                data = b""
                while b"\r\n\r\n" not in data:
                    more = self.request.recv(65536)
                    if not more:
                        return
                    data += more
                first, _, _ = data.partition(b"\r\n")
                owner.paths.append(first.split(b" ")[1].decode())
                try:
                    for chunk in respond(owner.paths[-1]):
                        self.request.sendall(chunk)
                except OSError:  # the client hung up, as it should past a bound
                    pass

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

            def get_request(self):
                sock, address = super().get_request()
                return (tls.wrap_socket(sock, server_side=True) if tls else sock), address

            def handle_error(self, request, client_address):  # a refused handshake is the point of a test
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        scheme = "https" if tls else "http"
        self.base_url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve():
    started: list[RawServer] = []

    def start(respond, tls=None) -> RawServer:
        server = RawServer(respond, tls)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def client_for(server: RawServer, **policy) -> ApiClient:
    provider = ProviderSettings(name="hostile", base_url=server.base_url, token=None)
    return ApiClient([provider], RetryPolicy(base_delay_seconds=0.0, jitter=False, **policy), timeout_seconds=10.0)


async def chat(server: RawServer, **policy):
    async with client_for(server, **policy) as client:
        return await client.chat("m", [{"role": "user", "content": "hi"}])


def bomb(encoding: str, gigabytes: int = 2) -> bytes:
    """A body of `encoding` inflating to `gigabytes` GiB of zeros, ~1 KB per MiB: one full-flushed
    block of a MiB of zeros, repeated (each restarts the window, so the stream stays valid)."""
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS, "raw-deflate": -zlib.MAX_WBITS}[encoding]
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    start = packer.compress(b"\0" * (1 << 20)) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(b"\0" * (1 << 20)) + packer.flush(zlib.Z_FULL_FLUSH)
    return start + block * (gigabytes * 1024 - 1)


# -- 1. an answer inflating to gigabytes stops at the bound ----------------------------------------


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
async def test_a_compressed_body_inflating_to_gigabytes_stops_at_the_bound(encoding):
    body = bomb(encoding)

    async def chunks():
        for i in range(0, len(body), 65536):
            yield body[i : i + 65536]

    tracemalloc.start()
    try:
        with pytest.raises(PermanentTransportError) as caught:
            await read_bounded(chunks(), encoding.removeprefix("raw-"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "64 MiB" in str(caught.value) and "bound" in str(caught.value)
    assert peak < 3 * transport.MAX_ANSWER_BYTES  # never the gigabytes: the bound, a copy, a chunk


async def test_a_gzip_bomb_on_the_wire_fails_the_call_in_one_line_naming_the_endpoint(serve):
    body = bomb("gzip")
    server = serve(lambda path: [head(200, {"content-type": "application/json", "content-encoding": "gzip",
                                            "content-length": str(len(body))}), body])
    with pytest.raises(PermanentApiError) as caught:
        await chat(server)
    message = str(caught.value)
    assert server.base_url + "/chat/completions" in message and "64 MiB" in message
    assert "\n" not in message and len(server.paths) == 1  # refused, not retried


# -- 2. a 200 MB answer is not kept ------------------------------------------------------------------


async def test_an_answer_declaring_200_mb_is_refused_before_its_body(serve):
    server = serve(lambda path: [head(200, {"content-type": "application/json", "content-length": str(200 << 20)}),
                                 b"{" * 65536])
    with pytest.raises(PermanentApiError) as caught:
        await chat(server)
    assert "larger than 64 MiB" in str(caught.value) and len(server.paths) == 1


async def test_an_answer_streaming_past_the_bound_without_a_length_is_cut_there(serve, monkeypatch):
    monkeypatch.setattr(transport, "MAX_ANSWER_BYTES", 1 << 20)  # the same code path, a smaller bound

    def endless(path):
        yield head(200, {"content-type": "application/json"})  # no length: read until close
        for _ in range(200 * 16):  # 200 MB if nobody stops it
            yield b" " * 65536

    records = []
    server = serve(endless)
    async with client_for(server) as client:
        client.observer.on_attempt = records.append
        with pytest.raises(PermanentApiError) as caught:
            await client.chat("m", [{"role": "user", "content": "hi"}])
    assert "larger than 1 MiB" in str(caught.value)
    [record] = records  # one attempt, its row holds the line and none of the body
    assert "larger than 1 MiB" in record["error"] and record["response"] is None
    assert len(json.dumps(record, default=str)) < 10_000


# -- 3. an oversized header is the server's fault, said once ---------------------------------------


@pytest.mark.parametrize("header", [b"x-big: " + b"a" * 10_240, b"".join(b"x-h%d: v\r\n" % i for i in range(200)).rstrip()])
async def test_a_header_past_the_bound_is_refused_at_once_not_retried_for_the_budget(serve, header):
    server = serve(lambda path: [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n" + header + b"\r\n\r\n{}"])
    started = time.monotonic()
    with pytest.raises(PermanentApiError) as caught:
        await chat(server, max_retries=10)
    message = str(caught.value)
    assert "header" in message and str(transport.MAX_HEADER_BYTES) in message and "not retried" in message
    assert len(server.paths) == 1 and time.monotonic() - started < 5


# -- 4. statuses: what the docs say is retried is retried --------------------------------------------


def scripted(*statuses: int):
    sent: list[int] = []

    def handle(request: httpx.Request) -> httpx.Response:
        status = statuses[min(len(sent), len(statuses) - 1)]
        sent.append(status)
        return httpx.Response(status, json=CHAT if status == 200 else {"error": {"message": f"status {status}"}})

    return handle, sent


async def no_sleep(seconds: float) -> None:
    pass


def mock_client(handler) -> ApiClient:
    provider = ProviderSettings(name="gw", base_url="http://gw.test/v1", token="sk-test")
    return ApiClient([provider], RetryPolicy(max_retries=10, base_delay_seconds=0.0, jitter=False), 30.0,
                     transport=httpx.MockTransport(handler), sleep=no_sleep)


@pytest.mark.parametrize("status", [425, 499, 418, 409])
async def test_a_status_the_docs_call_passing_or_unknown_is_retried(status):
    handler, sent = scripted(status, status, 200)
    async with mock_client(handler) as client:
        result = await client.chat("m", [{"role": "user", "content": "hi"}])
    assert result.attempts == 3 and sent == [status, status, 200]


@pytest.mark.parametrize("status, attempts", [(425, 11), (499, 11), (418, 4)])
async def test_passing_statuses_are_waited_out_others_end_after_four_alike(status, attempts):
    handler, sent = scripted(status)
    async with mock_client(handler) as client:
        with pytest.raises(RetriesExhaustedError):
            await client.chat("m", [{"role": "user", "content": "hi"}])
    assert len(sent) == attempts


@pytest.mark.parametrize("status", [400, 401, 402, 403, 404, 413, 422])
async def test_a_status_saying_the_request_is_wrong_is_refused_at_once(status):
    handler, sent = scripted(status)
    async with mock_client(handler) as client:
        with pytest.raises(PermanentApiError):
            await client.chat("m", [{"role": "user", "content": "hi"}])
    assert sent == [status]


def test_the_docs_name_the_statuses_the_code_refuses_and_waits_out():
    from w2c_tui.api.retry import PASSING_CAUSES, REFUSING_STATUSES

    text = (ROOT / "docs" / "configuration.md").read_text()
    section = text[text.index("A request is refused for good only on evidence"):]
    section = section[: section.index("\n\n")]
    refused = re.search(r"HTTP ([\d,\sor]+) \(the request itself is wrong", section)
    assert refused and set(map(int, re.findall(r"\d+", refused.group(1)))) == set(REFUSING_STATUSES)
    passing = {c.removeprefix("5xx:") for c in PASSING_CAUSES if c[:1].isdigit()}
    waited = re.search(r"for a cause other than (.+?)\(those are waited out", section, re.DOTALL)
    assert waited and passing == set(re.findall(r"\d{3}", waited.group(1)))
    assert "418" in section


# -- 5. one proxy rule: NO_PROXY as curl and requests read it ----------------------------------------


@pytest.mark.parametrize(
    "no_proxy, url, bypass",
    [
        ("gw.example:8000", "http://gw.example:8000/v1", True),
        ("gw.example:8000", "http://gw.example:9000/v1", False),
        ("gw.example:443", "https://gw.example/v1", True),  # the scheme's port
        (".example.org", "https://api.example.org/v1", True),
        (".example.org", "https://example.org/v1", True),
        ("example.org", "https://api.example.org/v1", True),
        ("example.org", "https://badexample.org/v1", False),
        ("*.example.org", "https://a.b.example.org/v1", True),
        ("*", "https://anything.test/v1", True),
        ("10.0.0.0/8", "http://10.1.2.3:8000/v1", True),
        ("10.0.0.0/8", "http://11.1.2.3:8000/v1", False),
        ("192.168.1.5", "http://192.168.1.5/v1", True),
        ("fd00::/8", "http://[fd00::1]:8000/v1", True),
        ("[fd00::1]:8000", "http://[fd00::1]:8000/v1", True),
        (" other.test , gw.example ", "http://gw.example/v1", True),
        ("", "http://gw.example/v1", False),
    ],
)
def test_no_proxy_entries_are_read_as_curl_and_requests_read_them(no_proxy, url, bypass, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.test:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    assert (proxy_for(url) is None) == bypass


@pytest.mark.parametrize("url", ["http://127.0.0.1:8765/v1", "http://127.5.6.7/v1", "http://[::1]:8000/v1", "http://localhost:8000/v1"])
def test_loopback_is_never_proxied(url, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.test:3128")
    monkeypatch.setenv("ALL_PROXY", "socks5://proxy.test:1080")
    assert proxy_for(url) is None


def test_a_proxy_without_a_scheme_is_an_http_proxy(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "proxy.test:3128")
    assert proxy_for("https://api.test/v1") == "http://proxy.test:3128"
    assert not bypassed("api.test", 443, "api.test:80")


class RecordingProxy(RawServer):
    def __init__(self) -> None:
        super().__init__(lambda path: [head(200, {"content-type": "application/json", "content-length": "13"}),
                                       b'{"data": []}\n'])


async def test_the_run_and_the_preflight_take_the_same_proxy_for_the_same_no_proxy(monkeypatch):
    """NO_PROXY=host:port: the preflight's listing and the run's calls both go direct for that
    host and port, both through the proxy for another port (one function decides for both)."""
    proxy = RecordingProxy()
    try:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server.server_address[1]}")
        monkeypatch.setenv("NO_PROXY", "gateway.invalid:8000")
        listing = await list_models("http://gateway.invalid:9000/v1", None, timeout=5)
        http = AiohttpSender({}, Timeouts(5, 5), 1)
        try:
            reply = await http.send("GET", "http://gateway.invalid:9000/v1/models", None)
            assert http._proxy("http://gateway.invalid:8000/v1/models") is None
        finally:
            await http.aclose()
        assert listing.ok and reply.status == 200
        assert proxy.paths == ["http://gateway.invalid:9000/v1/models"] * 2
    finally:
        proxy.stop()


# -- 6. a SOCKS proxy: one line, exit 2 --------------------------------------------------------------


@pytest.mark.parametrize("variable", ["ALL_PROXY", "HTTPS_PROXY", "all_proxy"])
def test_a_socks_proxy_is_refused_in_one_line_with_what_to_set(variable, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(variable, "socks5://user:pw-secret@proxy.test:1080")
    write_config(tmp_path, "https://llm.example.org/v1", provider_keys={"token": "sk-test-token-1234"}, **SMALL)
    assert main(["run", "--run-key", "socks"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "socks5 proxy" in err and "not support" in err and variable.upper() in err and "HTTP proxy" in err
    assert "pw-secret" not in err


# -- 7. the built-in demo runs whatever proxy the environment names -----------------------------------


def test_the_demo_runs_with_http_proxy_set(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with socket.socket() as closed:  # a proxy nobody answers: any request sent to it fails
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}"
    monkeypatch.setenv("HTTP_PROXY", dead)
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1")
    write_config(tmp_path, None, **SMALL)
    assert main(["run", "--run-key", "demo"]) == 0, capsys.readouterr().err


# -- 8. an untrusted certificate is named, with SSL_CERT_FILE ----------------------------------------


def self_signed(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "w2c test authority")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture
def tls_server(serve, tmp_path):
    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    body = json.dumps({"data": [{"id": "m"}]}).encode()
    server = serve(lambda path: [head(200, {"content-type": "application/json", "content-length": str(len(body))}), body], context)
    return server, cert


async def test_an_untrusted_certificate_is_named_with_ssl_cert_file(tls_server, monkeypatch):
    server, cert = tls_server
    listing = await list_models(server.base_url, None, timeout=5)
    assert listing.unreachable is not None
    assert "certificate" in listing.unreachable and "not trusted" in listing.unreachable
    assert "SSL_CERT_FILE" in listing.unreachable and "ConnectError" not in listing.unreachable
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the authority that signs it: trusted
    shared_tls.cache_clear()
    listing = await list_models(server.base_url, None, timeout=5)
    assert listing.ok and listing.models == ["m"]


def test_the_launch_stops_on_an_untrusted_certificate_in_one_line(tls_server, tmp_path, monkeypatch, capsys):
    server, _ = tls_server
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, server.base_url, **SMALL)
    assert main(["run", "--run-key", "tls"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "not trusted" in err and "SSL_CERT_FILE" in err, err


def test_an_unreadable_ssl_cert_file_is_said_before_the_launch(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "absent.pem"))
    write_config(tmp_path, "https://llm.example.org/v1", provider_keys={"token": "sk-test-token-1234"}, **SMALL)
    assert main(["run", "--run-key", "tls"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "SSL_CERT_FILE=" in err and "absent.pem" in err and "unset it" in err, err


# -- 9. a trickling /version holds nothing past the deadline -----------------------------------------


async def test_a_trickling_version_ends_at_the_deadline_as_unknown(serve):
    def trickle(path):
        yield head(200, {"content-type": "application/json", "content-length": "100"})
        for _ in range(100):
            yield b" "
            time.sleep(0.2)

    server = serve(trickle)
    started = time.monotonic()
    assert await server_version(server.base_url, None, timeout=1.0) is None
    assert time.monotonic() - started < 3


def test_a_launch_goes_on_past_a_trickling_version_within_its_timeout(sim, tmp_path, monkeypatch, capsys):
    gateway = ChaosGateway(sim.base_url, every=10**9, trickle_interval=1.0, always={"/version": "trickle"})
    try:
        monkeypatch.chdir(tmp_path)
        write_config(tmp_path, gateway.base_url, http={"timeout_seconds": 3}, **SMALL)
        started = time.monotonic()
        assert main(["run", "--run-key", "trickle"]) == 0, capsys.readouterr().err
        elapsed = time.monotonic() - started
    finally:
        gateway.stop()
    assert gateway.spoiled["trickle"] == 1 and elapsed < 20
    session = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert "server_version" not in json.loads((session / "manifest.json").read_text())


# -- 10. the simulator's numbers are numbers -----------------------------------------------------------


@pytest.mark.parametrize("option", ["--latency-ms", "--jitter-ms", "--slow-ms", "--fault-rate", "--judge-malformed-rate",
                                    "--judge-error-rate", "--judge-position-bias"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "1e12"])
def test_the_sim_refuses_a_number_that_is_no_delay_or_share(option, value, capsys):
    assert main(["sim", "--port", "0", f"{option}={value}"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert option.removeprefix("--").replace("-", "_") in err and "must be between" in err
