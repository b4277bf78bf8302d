"""Hostile inputs, round three: the siblings of the cases fixed first.

`data download` on the run's transport (a SOCKS proxy, a trickle, a body inflating past the
bound, redirect loops and downgrades, an untrusted certificate); the Setup screen's
connection test on that transport too; the MLflow sync uploading regular files only;
`show --json` carrying the notes `show` prints; an export's leftover temporary file cleaned.
"""

from __future__ import annotations

import json
import ssl
import time

import pytest
from test_hostile_round_three_network import bomb, head, self_signed, serve  # noqa: F401 - serve is a fixture

from w2c_tui.api import transport
from w2c_tui.api.transport import shared_tls
from w2c_tui.cli import data_cmd, main

MCQ, JUDGE = data_cmd.FILES


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    shared_tls.cache_clear()
    yield
    shared_tls.cache_clear()


def files(path: str) -> list[bytes]:
    """The two test files, whole, whatever folder `path` names."""
    lines = data_cmd.FILES.get(path.rsplit("/", 1)[-1])
    if lines is None:
        return [head(404, {"content-length": "0"})]
    body = b'{"uuid": "x"}\n' * lines
    return [head(200, {"content-length": str(len(body))}), body]


def download(root: str, dest, capsys) -> tuple[int, str]:
    code = main(["data", "download", "--dest", str(dest), "--base-url", root])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def root_of(server) -> str:
    return server.base_url.removesuffix("v1")


@pytest.fixture
def tls(tmp_path):
    """A server context whose authority SSL_CERT_FILE may name, and that authority's file."""
    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context, cert


# -- data download ---------------------------------------------------------------------------------


@pytest.mark.parametrize("variable", ["ALL_PROXY", "HTTPS_PROXY"])
def test_download_through_a_socks_proxy_is_refused_in_one_line(variable, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(variable, "socks5://proxy.invalid:1080")
    code, err = download("https://files.invalid/data/", tmp_path, capsys)  # never reached: said before sending
    assert code == 2 and variable in err and "socks5 proxy" in err and "HTTP proxy" in err, err
    assert len(err.strip().splitlines()) == 1


def test_a_trickled_download_ends_at_its_deadline(serve, tmp_path, monkeypatch, capsys):
    def trickle(path):
        yield head(200, {"content-length": "100000"})
        for _ in range(400):
            yield b"{"
            time.sleep(0.05)

    monkeypatch.setattr(data_cmd, "DEADLINE_SECONDS", 0.5)
    started = time.monotonic()
    code, err = download(root_of(serve(trickle)), tmp_path, capsys)
    assert code == 2 and "not complete within 0.5 s" in err, err
    assert "\rwhen2call_test_mcq.jsonl" in err and err.splitlines()[-1].split("error: ")[1].startswith("cannot download")  # on a line of its own
    assert time.monotonic() - started < 5
    assert not list(tmp_path.iterdir())  # no partial file left


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_download_inflating_past_the_bound_stops_there(encoding, serve, tmp_path, capsys):
    body = bomb(encoding, gigabytes=1)
    server = serve(lambda path: [head(200, {"content-encoding": encoding, "content-length": str(len(body))}), body])
    code, err = download(root_of(server), tmp_path, capsys)
    assert code == 2 and f"larger than {transport.MAX_ANSWER_BYTES >> 20} MiB once inflated" in err, err
    assert not list(tmp_path.iterdir())


def test_a_download_declaring_more_than_the_bound_is_refused_before_its_body(serve, tmp_path, capsys):
    server = serve(lambda path: [head(200, {"content-length": str(200 << 20)})])
    code, err = download(root_of(server), tmp_path, capsys)
    assert code == 2 and "64 MiB" in err, err


def test_a_redirect_to_https_is_followed(serve, tls, tmp_path, monkeypatch, capsys):
    context, cert = tls
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))

    def cdn(path):
        if path.startswith("/cdn/"):
            return files(path)
        return [head(302, {"location": "/cdn" + path, "content-length": "0"})]

    server = serve(cdn, context)
    code, err = download(root_of(server), tmp_path, capsys)
    assert code == 0, err
    assert len((tmp_path / MCQ).read_text().splitlines()) == data_cmd.FILES[MCQ]
    assert sum(path.startswith("/cdn/") for path in server.paths) == 2


def test_a_redirect_loop_ends_at_the_bound(serve, tls, tmp_path, monkeypatch, capsys):
    context, cert = tls
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    server = serve(lambda path: [head(302, {"location": path, "content-length": "0"})], context)
    code, err = download(root_of(server), tmp_path, capsys)
    assert code == 2 and f"more than {data_cmd.MAX_REDIRECTS} redirects" in err, err
    assert len(server.paths) == data_cmd.MAX_REDIRECTS + 1


@pytest.mark.parametrize("location", ["http://127.0.0.1:9/elsewhere", "ftp://files.invalid/x", ""])
def test_a_redirect_to_anything_but_https_is_refused(location, serve, tmp_path, capsys):
    server = serve(lambda path: [head(302, {"location": location, "content-length": "0"} if location else {"content-length": "0"})])
    code, err = download(root_of(server), tmp_path, capsys)
    assert code == 2 and "only redirects to https are followed" in err, err
    assert len(server.paths) == 1


def test_a_download_from_an_untrusted_certificate_names_ssl_cert_file(serve, tls, tmp_path, capsys):
    server = serve(files, tls[0])
    code, err = download(root_of(server), tmp_path, capsys)
    assert code == 2 and "not trusted" in err and "SSL_CERT_FILE" in err, err


# -- the Setup screen's connection test ------------------------------------------------------------


def provider_answers(chat):
    """/models answers at once, /completions is refused at once (the capability probe ends),
    /chat/completions as `chat` says."""
    def respond(path):
        if path.endswith("/models"):
            body = json.dumps({"data": [{"id": "m"}]}).encode()
            return [head(200, {"content-type": "application/json", "content-length": str(len(body))}), body]
        if path.endswith("/chat/completions"):
            return chat()
        return [head(404, {"content-length": "0"})]
    return respond


async def test_the_connection_tests_chat_ends_at_its_whole_deadline_on_a_trickle(serve):
    from w2c_tui.api.probe import probe_provider

    def trickle():
        yield head(200, {"content-type": "application/json", "content-length": "1000"})
        for _ in range(200):
            yield b" "
            time.sleep(0.05)

    server = serve(provider_answers(trickle))
    started = time.monotonic()
    result = await probe_provider("trickle", server.base_url, None, "m", timeout=1.0)
    assert time.monotonic() - started < 5
    assert result.checks["models"].ok and not result.checks["chat"].ok
    assert "no complete answer within 1 s" in result.checks["chat"].detail


async def test_the_connection_tests_chat_goes_through_the_runs_transport(serve, monkeypatch):
    from w2c_tui.api.probe import probe_provider

    body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "OK"}}]}).encode()
    server = serve(provider_answers(lambda: [head(200, {"content-type": "application/json", "content-length": str(len(body))}), body]))
    sent: list[str] = []
    send = transport.AiohttpSender.send

    async def recording(self, method, url, content, progress=None):
        sent.append(f"{method} {url.split('/v1', 1)[-1]}")
        return await send(self, method, url, content, progress)

    monkeypatch.setattr(transport.AiohttpSender, "send", recording)
    result = await probe_provider("plain", server.base_url, None, None, timeout=2.0)
    assert result.checks["chat"].ok and result.checks["chat"].detail == "m"
    assert "GET /models" in sent and "POST /chat/completions" in sent


async def test_the_connection_tests_chat_says_a_status_with_the_servers_words(serve):
    from w2c_tui.api.probe import probe_provider

    words = b'{"error": {"message": "model m is not served here"}}'
    server = serve(provider_answers(lambda: [head(404, {"content-type": "application/json", "content-length": str(len(words))}), words]))
    result = await probe_provider("wrong", server.base_url, None, "m", timeout=2.0)
    assert result.checks["chat"].detail.startswith("HTTP 404: ") and "not served here" in result.checks["chat"].detail


# -- an export's leftover temporary file -----------------------------------------------------------


def test_an_export_removes_a_killed_exports_temporary_file(tmp_path):
    import os

    from w2c_tui.analysis.export import write_atomic

    target = tmp_path / "table.md"
    dead = tmp_path / ".table.md.999999999.tmp"  # no such process
    dead.write_text("half a table")
    os.utime(dead, (time.time() - 3600,) * 2)
    live = tmp_path / f".table.md.{os.getppid()}.tmp"  # a live writer's, just begun: kept
    live.write_text("being written")
    other = tmp_path / ".notes.md.999999999.tmp"  # another file's
    other.write_text("x")
    write_atomic(target, "| a |\n")
    assert target.read_text() == "| a |\n"
    assert not dead.exists() and live.exists() and other.exists()


# -- show --json carries the notes show prints --------------------------------------------------------


def shown_notes(capsys, root) -> tuple[list[str], list[str]]:
    """(the note and trace lines `show` prints, the `notes` of `show --json`), for the mcq pipeline."""
    assert main(["show", str(root)]) == 0
    out = capsys.readouterr().out
    printed = [line.strip().removeprefix("note: ") for line in out.splitlines() if line.strip().startswith(("note: ", "trace: "))]
    assert main(["show", str(root), "--json"]) == 0
    return printed, json.loads(capsys.readouterr().out)["pipelines"]["mcq"]["notes"]


def test_show_json_names_the_garbage_lines_of_a_checkpoint_and_a_damaged_trace(tmp_path, capsys):
    from w2c_tui.store.call_files import pack_calls, packed_path
    from w2c_tui.store.layout import MCQ_PREDICTIONS, SessionPaths
    from w2c_tui.testing.synthetic_session import write_session

    root = write_session(tmp_path / "w", n_examples=6, pipelines=("mcq",)).root
    paths = SessionPaths(root)
    assert shown_notes(capsys, root) == ([], [])
    primary = paths.checkpoint_file("mcq", MCQ_PREDICTIONS)
    lines = primary.read_text().splitlines(keepends=True)
    primary.write_text("".join(lines[:2]) + "garbage, not a row\n" + "".join(lines[2:]))
    pack_calls(paths.calls_file("mcq"))
    packed = packed_path(paths.calls_file("mcq"))
    packed.write_bytes(packed.read_bytes()[: packed.stat().st_size // 2])
    for _ in range(2):  # the second read finds the summary the first wrote: the same notes, once each
        printed, notes = shown_notes(capsys, root)
        assert notes == printed and len(notes) == 2, (printed, notes)
        assert notes[0].startswith("mcq_predictions.jsonl line 3: not a JSON row") and notes[1].startswith("trace: ")


# -- the MLflow sync uploads regular files only ------------------------------------------------------


def test_mlflow_sync_uploads_regular_files_and_names_what_it_skipped(tmp_path, capsys):
    import os

    from configs import write_config
    from test_hostile_round_three_files import finishes

    from w2c_tui.store.layout import SessionPaths
    from w2c_tui.testing.synthetic_session import write_session
    from w2c_tui.tracking.mlflow_sink import MlflowSink, default_tracking_uri

    pytest.importorskip("mlflow")
    root = write_session(tmp_path / "w", pipelines=("mcq",)).root
    paths = SessionPaths(root)
    checkpoints, artifacts = paths.checkpoints("mcq"), paths.artifacts("mcq")
    artifacts.mkdir(parents=True, exist_ok=True)
    os.mkfifo(checkpoints / "pipe.jsonl")  # opening it for the upload would wait for a writer for ever
    (artifacts / "zeros").symlink_to("/dev/zero")  # a copy of it would never end
    (artifacts / "loop").symlink_to(artifacts)  # a folder walked through its own link
    (artifacts / "kept.txt").write_text("kept")
    config = write_config(tmp_path, run={"workdir_base": str(tmp_path / "w")}, mlflow={"enabled": True})
    capsys.readouterr()
    code = finishes(main, ["mlflow", "sync", "--config", str(config), str(root)], seconds=120)
    out, err = capsys.readouterr()
    assert code == 0 and "parent run" in out and "Traceback" not in err
    warnings = [line for line in err.splitlines() if line.startswith("w2c-tui: warning: mcq: ")]
    assert len(warnings) == 3, err
    assert "checkpoints/pipe.jsonl: is a named pipe (FIFO), not a regular file; not uploaded" in err
    assert "artifacts/zeros: is a device, not a regular file; not uploaded" in err
    assert "artifacts/loop: is a link to a folder, not followed" in err

    client = MlflowSink(default_tracking_uri(tmp_path / "w"), "w2c-tui").client
    child = json.loads(paths.mlflow_ids.read_text())["child_run_ids"]["mcq"]
    uploaded = {a.path for a in client.list_artifacts(child, "checkpoints")} | {a.path for a in client.list_artifacts(child, "artifacts")}
    assert "artifacts/kept.txt" in uploaded and "checkpoints/pipe.jsonl" not in uploaded
    assert {p.name for p in checkpoints.iterdir() if p.is_file()} <= {path.rsplit("/", 1)[-1] for path in uploaded}
    assert "pipe.jsonl" in client.get_run(child).data.tags["w2c.skipped_files"]
