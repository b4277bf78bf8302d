"""A provider on loopback that misbehaves in one named way: the hostile-server fixture.

GET /models lists the model `stub` unless the mode is about the model list; every POST is
answered in the mode's way. Each mode is one line of `MODES` with what a server in the wild
does; tests/test_hostile_inputs.py runs a whole evaluation against each.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "stub"
TOKEN = "sk-HOSTILE-SENTINEL-7731"  # must never reach a file we write


def chat(content) -> dict:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}


# mode -> what the server does (the test table's "input" column)
MODES: dict[str, str] = {
    "null_content": "every answer has content null",
    "empty_content_length": "every answer is empty with finish_reason length",
    "content_parts": "content is a list of text parts instead of a string",
    "string_body": "the body is a JSON string, not an object",
    "array_body": "the body is a JSON array",
    "choices_null": "choices is null",
    "choices_empty": "choices is an empty list",
    "message_string": "message is a string where an object belongs",
    "invalid_json": "HTTP 200 with a body that is not JSON",
    "empty_200": "HTTP 200 with an empty body",
    "non_utf8": "HTTP 200 with bytes that are not UTF-8",
    "html_200": "HTTP 200 with a login web page",
    "html_503": "HTTP 503 with an HTML error page",
    "redirect": "HTTP 302 to another host",
    "redirect_loop": "HTTP 307 to itself, forever",
    "gzip_lie": "Content-Encoding gzip on a plain body",
    "event_stream": "a text/event-stream answer to a non-streaming request",
    "cut_body": "Content-Length promises more than is sent, then the connection closes",
    "reset": "the connection closes without an answer",
    "slow_headers": "no headers until long after the timeout",
    "trickle": "headers at once, then one body byte a second",
    "status_401": "HTTP 401 invalid API key",
    "status_403": "HTTP 403 forbidden",
    "status_404_model": "HTTP 404 model not found",
    "status_400": "HTTP 400 with the server's reason",
    "status_413": "HTTP 413 request too large",
    "status_422": "HTTP 422 with a validation error list",
    "status_500_forever": "HTTP 500 to every request",
    "status_502_text": "HTTP 502 with a plain-text body",
    "status_429_forever": "HTTP 429 with Retry-After 1 to every request",
    "retry_after_huge": "HTTP 429 with Retry-After of a day",
    "retry_after_date": "HTTP 429 with Retry-After as an HTTP date",
    "retry_after_garbage": "HTTP 429 with an unreadable Retry-After",
    "error_in_200": "HTTP 200 with an error object and no choices",
    "echo_token_500": "HTTP 500 whose body repeats the Authorization header",
    "echo_token_200": "an answer whose content repeats the Authorization header",
    "models_404": "GET /models answers 404",
    "models_html": "GET /models answers a web page",
    "models_empty": "GET /models lists no model",
    "models_other": "GET /models lists only another model",
    "models_not_list": "GET /models answers an object without data",
    "models_slow": "GET /models takes longer than the timeout",
    # Values no answer can hold (issue 26). The logprob_* modes answer through the simulated
    # server and change its log-probabilities: everywhere, or only in scoring echoes (prompts
    # longer than the probe's), so that the probe passes and the run meets them.
    "logprob_positive": "every log-probability is +3.0 (probe and scoring)",
    "logprob_true": "every log-probability is JSON true (probe and scoring)",
    "logprob_infinity": "every log-probability is +Infinity (probe and scoring)",
    "logprob_nan_scoring": "scoring echoes hold NaN log-probabilities",
    "logprob_null_scoring": "scoring echoes hold null log-probabilities after the first token",
    "logprob_inf_pair_scoring": "scoring echoes hold -Infinity and +Infinity",
    "logprob_huge_int_scoring": "scoring echoes hold an integer of 400 digits",
    "usage_negative": "usage counts -5 prompt tokens",
    "usage_fraction": "usage counts 12.5 prompt tokens",
    "usage_string": "usage counts the string '12' prompt tokens",
    "usage_nan": "usage counts NaN prompt tokens",
    "usage_huge": "usage counts 10^18 prompt tokens",
    "judge_garbage": "every chat answer is prose with no label or digit",
    # Echoes that are not of what was sent (issue 35). Through the simulated server too; the
    # *_scoring modes leave the first scoring answer whole, so that a row scored before stays.
    "echoed_swap": "every list echo has the indexes of its last two prompts swapped (probe and scoring)",
    "echoed_swap_scoring": "scoring list echoes have the indexes of their last two prompts swapped",
    "echoed_ids_short_scoring": "scoring echoes list each prompt's ids one short, with no usage",
    "echoed_ids_merge_scoring": "scoring echoes list another id as the context's last: every choice looks merged",
    "echoed_choices_strings_scoring": "scoring echoes' choices are strings",
    "echoed_index_mixed_scoring": "a scoring echo's second choice has index \"1\" (a string)",
    "echoed_index_missing_scoring": "a scoring echo's second choice has no index",
    "echoed_index_duplicate_scoring": "a scoring echo's second choice has index 0, as the first",
    "echoed_index_out_of_range_scoring": "a scoring echo's last choice has an index past the prompts",
    "echoed_choices_object_scoring": "scoring echoes' choices are an object keyed by index",
    "echoed_extra_entry_scoring": "scoring echoes list one more token after the prompt than was generated",
    "echoed_tokens_ints_scoring": "scoring echoes list their tokens as numbers",
    "echoed_logprobs_short_scoring": "scoring echoes list one log-probability fewer than tokens",
    "echoed_offsets_shifted_scoring": "scoring echoes' text_offset all two characters early",
    "tokenizer_negative_scoring": "scoring /tokenize answers list -1 as their first id",
}
# Modes that answer through the simulated server, changing one value of its answers.
THROUGH_SIM = {mode for mode in MODES if mode.startswith(("logprob_", "echoed_", "tokenizer_"))}
_PROBE_PROMPT = 200  # characters or token ids: the probe's prompts are shorter, scoring prompts longer
_USAGE = {
    "usage_negative": -5, "usage_fraction": 12.5, "usage_string": "12", "usage_nan": float("nan"), "usage_huge": 10**18,
}


def _prompt_size(prompt) -> int:
    """Characters or token ids of a prompt, or the largest of a list of prompts."""
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], (str, list)):
        return max(len(p) for p in prompt)
    return len(prompt) if isinstance(prompt, (str, list)) else 0


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # a client hanging up is not news here
        pass


class MisbehavingServer:
    def __init__(self, mode: str, *, timeout_seconds: float = 1.0, conventions=None) -> None:
        """`conventions`: the sim's (sim/settings.py) for the modes through it; vLLM's by default."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        self.mode = mode
        self.timeout_seconds = timeout_seconds
        self.stopping = threading.Event()
        self.posts = 0
        self.scoring_answers = 0
        self._counting = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                server._models(self)

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                server.posts += 1
                if server.mode in THROUGH_SIM:
                    server._through_sim(self, body)
                else:
                    server._answer(self)

        self.sim = None
        if mode in THROUGH_SIM:
            from w2c_tui.sim import SimServer, SimSettings

            self.sim = SimServer(SimSettings(seed=7) if conventions is None else SimSettings(seed=7, conventions=conventions))
            self.sim.__enter__()
        self.http = _QuietServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def stop(self) -> None:
        self.stopping.set()
        self.http.shutdown()
        self.http.server_close()
        if self.sim is not None:
            self.sim.__exit__(None, None, None)

    # ---- answers through the simulated server, one value changed

    def _through_sim(self, h, body: bytes) -> None:
        import httpx

        root = self.sim.base_url.removesuffix("/v1")
        response = httpx.post(root + h.path, content=body, headers={"Content-Type": "application/json"}, timeout=30)
        data = response.json()
        request = json.loads(body or b"{}")
        prompt = request.get("prompt")
        scoring = _prompt_size(prompt) >= _PROBE_PROMPT
        if h.path.endswith("/completions") and isinstance(data, dict) and self.mode.startswith("echoed_"):
            with self._counting:
                self.scoring_answers += scoring
                later = scoring and self.scoring_answers > 1
            if self.mode == "echoed_swap" or later:
                self._alter_echo(data)
        elif h.path.endswith("/tokenize") and self.mode == "tokenizer_negative_scoring" and scoring:
            data["tokens"] = [-1, *data["tokens"][1:]]
        elif h.path.endswith("/completions") and isinstance(data, dict):
            for choice in data.get("choices") or []:
                lp = choice.get("logprobs")
                if isinstance(lp, dict) and isinstance(lp.get("token_logprobs"), list):
                    lp["token_logprobs"] = self._tamper(lp["token_logprobs"], scoring)
        self._send(h, response.status_code, json.dumps(data))  # NaN and Infinity as JavaScript spells them

    def _tamper(self, values: list, scoring: bool) -> list:
        mode = self.mode
        if mode.endswith("_scoring") and not scoring:
            return values
        everywhere = {"logprob_positive": 3.0, "logprob_true": True, "logprob_infinity": float("inf")}
        if mode in everywhere:
            return [v if v is None else everywhere[mode] for v in values]
        out = list(values)
        if mode == "logprob_inf_pair_scoring" and len(out) > 2:
            out[1], out[2] = float("-inf"), float("inf")
        else:
            bad = {"logprob_nan_scoring": float("nan"), "logprob_null_scoring": None, "logprob_huge_int_scoring": 10**400}[mode]
            out[-2] = bad  # the last prompt token: inside every choice's continuation
        return out

    def _alter_echo(self, data: dict) -> None:  # noqa: C901 - one branch per mode reads best as a table
        mode, choices = self.mode, data["choices"]
        if mode in ("echoed_swap", "echoed_swap_scoring") and len(choices) >= 2:
            choices[-1]["index"], choices[-2]["index"] = choices[-2]["index"], choices[-1]["index"]
        elif mode == "echoed_ids_short_scoring":
            data.pop("usage", None)
            for choice in choices:
                if "prompt_token_ids" in choice:
                    choice["prompt_token_ids"] = choice["prompt_token_ids"][:-1]
        elif mode == "echoed_ids_merge_scoring" and "prompt_token_ids" in choices[0]:
            context = choices[0]["prompt_token_ids"]
            context[-1] = context[0] if context[0] != context[-1] else context[1]  # an id of another token
        elif mode == "echoed_choices_strings_scoring":
            data["choices"] = [json.dumps(c) for c in choices]
        elif mode == "echoed_index_mixed_scoring" and len(choices) > 1:
            choices[1]["index"] = "1"
        elif mode == "echoed_index_missing_scoring" and len(choices) > 1:
            del choices[1]["index"]
        elif mode == "echoed_index_duplicate_scoring" and len(choices) > 1:
            choices[1]["index"] = 0
        elif mode == "echoed_index_out_of_range_scoring":
            choices[-1]["index"] = len(choices)
        elif mode == "echoed_choices_object_scoring":
            data["choices"] = {str(c["index"]): c for c in choices}
        else:
            for choice in choices:
                lp = choice.get("logprobs") or {}
                if mode == "echoed_extra_entry_scoring":
                    for name, value in (("tokens", " extra"), ("token_logprobs", -1.0), ("text_offset", len(choice["text"]))):
                        lp[name].append(value)
                    choice["text"] += " extra"
                elif mode == "echoed_tokens_ints_scoring":
                    lp["tokens"] = list(range(len(lp["tokens"])))
                elif mode == "echoed_logprobs_short_scoring":
                    lp["token_logprobs"] = lp["token_logprobs"][:-1]
                elif mode == "echoed_offsets_shifted_scoring":
                    lp["text_offset"] = [o - 2 for o in lp["text_offset"]]

    # ---- answers

    @staticmethod
    def _send(h, status: int, body: bytes | str, kind: str = "application/json", headers: dict | None = None) -> None:
        data = body.encode() if isinstance(body, str) else body
        h.send_response(status)
        h.send_header("Content-Type", kind)
        h.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            h.send_header(name, value)
        h.end_headers()
        h.wfile.write(data)

    def _json(self, h, status: int, payload, headers: dict | None = None) -> None:
        self._send(h, status, json.dumps(payload), headers=headers)

    def _models(self, h) -> None:
        mode = self.mode
        if mode == "models_404":
            self._json(h, 404, {"detail": "Not Found"})
        elif mode == "models_html":
            self._send(h, 200, "<html><body>Sign in</body></html>", "text/html")
        elif mode == "models_empty":
            self._json(h, 200, {"object": "list", "data": []})
        elif mode == "models_other":
            self._json(h, 200, {"object": "list", "data": [{"id": "another-model"}]})
        elif mode == "models_not_list":
            self._json(h, 200, {"object": "list"})
        elif mode == "models_slow":
            self.stopping.wait(self.timeout_seconds * 4)
            self._json(h, 200, {"object": "list", "data": [{"id": MODEL}]})
        elif mode in ("status_401", "status_403"):
            self._answer(h)
        else:
            self._json(h, 200, {"object": "list", "data": [{"id": MODEL}]})

    def _answer(self, h) -> None:  # noqa: C901 - one branch per mode reads best as a table
        mode = self.mode
        auth = h.headers.get("Authorization", "")
        if mode == "null_content":
            self._json(h, 200, chat(None))
        elif mode == "empty_content_length":
            body = chat("")
            body["choices"][0]["finish_reason"] = "length"
            self._json(h, 200, body)
        elif mode == "content_parts":
            self._json(h, 200, chat([{"type": "text", "text": "1"}]))
        elif mode == "string_body":
            self._json(h, 200, "model is warming up")
        elif mode == "array_body":
            self._json(h, 200, [1, 2])
        elif mode == "choices_null":
            self._json(h, 200, {"id": "x", "choices": None})
        elif mode == "choices_empty":
            self._json(h, 200, {"id": "x", "choices": []})
        elif mode == "message_string":
            self._json(h, 200, {"choices": [{"index": 0, "message": "1", "finish_reason": "stop"}]})
        elif mode == "invalid_json":
            self._send(h, 200, '{"choices": [')
        elif mode == "empty_200":
            self._send(h, 200, b"")
        elif mode == "non_utf8":
            self._send(h, 200, b"\xff\xfe\xfa not utf-8 \xc3\x28")
        elif mode == "html_200":
            self._send(h, 200, "<!DOCTYPE html><html><title>Gateway login</title></html>", "text/html")
        elif mode == "html_503":
            self._send(h, 503, "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>", "text/html")
        elif mode == "redirect":
            self._send(h, 302, b"", headers={"Location": "http://127.0.0.1:1/elsewhere/v1/chat/completions"})
        elif mode == "redirect_loop":
            self._send(h, 307, b"", headers={"Location": h.path})
        elif mode == "gzip_lie":
            self._send(h, 200, json.dumps(chat("1")), headers={"Content-Encoding": "gzip"})
        elif mode == "event_stream":
            self._send(h, 200, 'data: {"choices": []}\n\ndata: [DONE]\n\n', "text/event-stream")
        elif mode == "cut_body":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", "5000")
            h.end_headers()
            h.wfile.write(b'{"choices": [{"index"')
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
        elif mode == "reset":
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
        elif mode == "slow_headers":
            self.stopping.wait(self.timeout_seconds * 4)
            if not self.stopping.is_set():
                self._json(h, 200, chat("1"))
        elif mode == "trickle":
            body = json.dumps(chat("1")).encode()
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            for byte in body:
                if self.stopping.wait(1.0):
                    return
                try:
                    h.wfile.write(bytes([byte]))
                    h.wfile.flush()
                except OSError:
                    return
        elif mode == "status_401":
            self._json(h, 401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}})
        elif mode == "status_403":
            self._json(h, 403, {"error": {"message": "Your organisation has no access to this model"}})
        elif mode == "status_404_model":
            self._json(h, 404, {"error": {"message": f"The model `{MODEL}` does not exist"}})
        elif mode == "status_400":
            self._json(h, 400, {"error": {"message": "max_tokens is too large for this model"}})
        elif mode == "status_413":
            self._send(h, 413, "Request Entity Too Large", "text/plain")
        elif mode == "status_422":
            self._json(h, 422, {"detail": [{"loc": ["body", "messages"], "msg": "field required", "type": "missing"}]})
        elif mode == "status_500_forever":
            self._json(h, 500, {"error": {"message": "internal server error"}})
        elif mode == "status_502_text":
            self._send(h, 502, "Bad Gateway", "text/plain")
        elif mode == "status_429_forever":
            self._json(h, 429, {"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "1"})
        elif mode == "retry_after_huge":
            self._json(h, 429, {"error": {"message": "Daily quota exhausted"}}, headers={"Retry-After": "86400"})
        elif mode == "retry_after_date":
            when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 1))
            self._json(h, 429, {"error": {"message": "slow down"}}, headers={"Retry-After": when})
        elif mode == "retry_after_garbage":
            self._json(h, 429, {"error": {"message": "slow down"}}, headers={"Retry-After": "soon-ish"})
        elif mode == "error_in_200":
            self._json(h, 200, {"error": {"message": "upstream model crashed", "type": "server_error"}})
        elif mode == "echo_token_500":
            self._json(h, 500, {"error": {"message": f"upstream rejected credentials {auth}"}})
        elif mode == "echo_token_200":
            self._json(h, 200, chat(f"1 (you sent {auth})"))
        elif mode in _USAGE:
            self._send(h, 200, json.dumps({**chat("1"), "usage": {"prompt_tokens": _USAGE[mode], "completion_tokens": 1}}))
        elif mode == "judge_garbage":
            self._json(h, 200, chat("Well, it depends on what the user wanted, really."))
        else:  # the models_* modes answer chats properly
            self._json(h, 200, chat("1"))
