"""What llama-cpp-python's server answers to the requests log-probability scoring needs, and
what an echo costs. Starts the server of tests/realserver (SmolLM2-135M, `make test` fetches
it) on a free loopback port, unless --base-url points at a running one.

    .venv/bin/python benchmarks/realserver_echo.py [--base-url http://127.0.0.1:PORT/v1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from realserver.conftest import start_server, stop_server  # noqa: E402
from realserver.fetch_model import gguf_path  # noqa: E402

FRANCE = "The capital of France is"


def post(client: httpx.Client, url: str, body: dict) -> tuple[int, object, float]:
    started = time.perf_counter()
    response = client.post(url, json=body, timeout=1800)
    seconds = time.perf_counter() - started
    try:
        payload = response.json()
    except ValueError:
        payload = response.text
    return response.status_code, payload, seconds


def prompt_of(client: httpx.Client, root: str, n_tokens: int) -> str:
    """A prefix of README.md that the server's tokenizer makes exactly `n_tokens` long."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    count = lambda s: len(client.post(f"{root}/extras/tokenize", json={"input": s}).json()["tokens"])  # noqa: E731
    low, high = 1, len(text)
    while low < high:
        middle = (low + high) // 2
        if count(text[:middle]) < n_tokens:
            low = middle + 1
        else:
            high = middle
    return text[:low]


def observe(client: httpx.Client, base: str, root: str) -> dict:
    facts: dict = {}
    completions = f"{base}/completions"
    one = {"max_tokens": 1, "temperature": 0}
    facts["prompt_list_of_2_strings"] = post(client, completions, {"prompt": ["Hello", "World"], **one})[:2]
    facts["prompt_list_of_1_string"] = post(client, completions, {"prompt": [FRANCE], **one})[0]
    facts["prompt_token_ids"] = post(client, completions, {"prompt": [504, 3575, 282], **one})[:2]
    for max_tokens in (1, 0):
        status, body, seconds = post(client, completions, {"prompt": FRANCE, "echo": True, "logprobs": 1, "max_tokens": max_tokens, "temperature": 0})
        choice = body["choices"][0] if status == 200 else {}
        facts[f"france_echo_max_tokens_{max_tokens}"] = {
            "status": status, "seconds": round(seconds, 3), "text": choice.get("text"),
            "logprobs": choice.get("logprobs") if max_tokens else {k: v[:8] for k, v in (choice.get("logprobs") or {}).items()},
            "usage": body.get("usage") if status == 200 else body,
        }
    # SmolLM2's BOS id is <|im_start|>'s: a prompt that starts with it changes the echo.
    status, body, _ = post(client, completions, {"prompt": "<|im_start|>user\n" + FRANCE, "echo": True, "logprobs": 1, **one})
    facts["france_after_im_start_echo_max_tokens_1"] = {"logprobs": body["choices"][0]["logprobs"], "usage": body["usage"]} if status == 200 else [status, body]
    facts["france_no_echo"] = post(client, completions, {"prompt": FRANCE, "logprobs": 1, **one})[1]["choices"][0]["logprobs"]
    for path, body in [
        ("/extras/tokenize", {"input": FRANCE}),
        ("/extras/tokenize", {"input": "<|im_start|>user\nHi<|im_end|>"}),
        ("/extras/tokenize", {"input": FRANCE, "add_special": False}),
        ("/extras/tokenize/count", {"input": FRANCE}),
        ("/extras/detokenize", {"tokens": [504, 3575, 282, 4649, 314]}),
        ("/tokenize", {"prompt": FRANCE}),
        ("/v1/tokenize", {"prompt": FRANCE}),
        ("/detokenize", {"tokens": [504]}),
    ]:
        facts[f"{path} {json.dumps(body)}"] = post(client, f"{root}{path}", body)[:2]
    return facts


def timings(client: httpx.Client, base: str, root: str, repeat: int) -> list[dict]:
    rows = []
    for n_tokens in (5, 50, 200):
        prompt = prompt_of(client, root, n_tokens)
        for echo in (False, True):
            body = {"prompt": prompt, "echo": echo, "logprobs": 1, "max_tokens": 1, "temperature": 0}
            seconds = [post(client, f"{base}/completions", body)[2] for _ in range(repeat)]
            rows.append({"prompt_tokens": n_tokens, "echo": echo, "median_s": round(statistics.median(seconds), 3), "runs": [round(s, 3) for s in seconds]})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="a running llama_cpp.server, ending in /v1")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    server = None
    if args.base_url:
        base = args.base_url.rstrip("/")
    else:
        log = Path(tempfile.mkdtemp(prefix="w2c-llama-")) / "server.log"
        server = start_server(gguf_path(), log)
        base = server.base_url
        print(f"server start: {server.start_seconds:.2f} s (log {log})", file=sys.stderr)
    root = base.removesuffix("/v1")
    try:
        with httpx.Client() as client:
            report = {"observations": observe(client, base, root), "echo_cost": timings(client, base, root, args.repeat)}
        if server:
            report["server_start_s"] = round(server.start_seconds, 2)
        print(json.dumps(report, indent=1))
    finally:
        if server:
            stop_server(server.process)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
