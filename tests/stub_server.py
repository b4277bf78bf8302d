"""A tiny misbehaving 'provider' on loopback, for tests of what bad servers do to a run."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # a client hanging up is not news here
        pass


class StubServer:
    """`mode` chooses the misbehaviour: html, 401, no_choices, 404_model, echo_auth_500."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, body: str, kind: str = "application/json") -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                stub.handle(self, "GET")

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                stub.handle(self, "POST")

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def handle(self, handler, method: str) -> None:
        models = json.dumps({"object": "list", "data": [{"id": "stub"}]})
        if self.mode == "html":
            handler._send(200, "<html><body>Login</body></html>", "text/html")
        elif self.mode == "401":
            handler._send(401, json.dumps({"error": {"message": "invalid api key"}}))
        elif method == "GET":
            handler._send(200, models)
        elif self.mode == "no_choices":
            handler._send(200, json.dumps({"id": "x", "choices": []}))
        elif self.mode == "404_model":
            handler._send(404, json.dumps({"error": {"message": "The model does not exist"}}))
        elif self.mode == "echo_auth_500":
            seen = handler.headers.get("Authorization", "")
            handler._send(500, json.dumps({"error": {"message": f"upstream failed for credentials {seen}"}}))
        else:
            handler._send(500, "{}")

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
