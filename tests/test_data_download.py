"""`w2c-tui data download`: line counts checked, offline failure explained."""

from __future__ import annotations

import functools
import socket
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from w2c_tui.cli import main


@pytest.fixture
def file_server(tmp_path):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(upstream))
    handler.log_message = lambda *args: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield upstream, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_download_checks_line_counts(file_server, tmp_path, capsys):
    upstream, url = file_server
    (upstream / "when2call_test_mcq.jsonl").write_text('{"uuid": "x"}\n' * 3652)
    (upstream / "when2call_test_llm_judge.jsonl").write_text('{"uuid": "y"}\n' * 300)
    dest = tmp_path / "data"
    assert main(["data", "download", "--dest", str(dest), "--base-url", url]) == 0
    assert len((dest / "when2call_test_mcq.jsonl").read_text().splitlines()) == 3652
    assert "3652 examples" in capsys.readouterr().out


def test_download_refuses_a_truncated_file(file_server, tmp_path, capsys):
    upstream, url = file_server
    (upstream / "when2call_test_mcq.jsonl").write_text('{"uuid": "x"}\n' * 100)
    dest = tmp_path / "data"
    assert main(["data", "download", "--dest", str(dest), "--base-url", url]) == 2
    assert "expected 3652 lines, got 100" in capsys.readouterr().err
    assert not (dest / "when2call_test_mcq.jsonl").exists()


def test_download_offline_says_so(tmp_path, capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert main(["data", "download", "--dest", str(tmp_path), "--base-url", f"http://127.0.0.1:{port}/"]) == 2
    err = capsys.readouterr().err
    assert "offline" in err and "Traceback" not in err
