"""A real third-party OpenAI-compatible server: llama-cpp-python 0.3.36 serving SmolLM2-135M.

`make test` installs llama-cpp-python (extra `realserver`) and fetches the model
(fetch_model.py). A missing piece fails these tests; W2C_SKIP_REAL_SERVER=1 skips them
instead (for a quick local run; `make test` and CI never set it). W2C_REAL_SERVER_MODEL
names another GGUF file.

Fixtures: `real_server` (the server process, session scope, its base URL ending in /v1),
`real_llama` (the same model in-process with every position's logits) and `loglik`, the
model's own conditional log-likelihood, the truth scores are checked against.

vLLM 0.32.0 (vllm_bed.py; `make test` builds its venv and fp32 weights under .cache/):
`vllm_server` (session scope, started with the hermes tool parser) and `vllm_truth`
(transformers' log-likelihoods from the same weights, in the vLLM venv). A missing bed
fails these tests; W2C_SKIP_REAL_SERVER=1 skips them, except under CI=true.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from .fetch_model import gguf_path
from .server_process import ServerProcess, start, stop

MODEL_ALIAS = "smollm2-135m-instruct"
# The longest request of test_pipelines (a judge repair) is ~1,150 tokens; 2048 leaves room.
# The logits of every position are kept (n_ctx x 49152 floats, 400 MB), which is what makes
# echo log-probabilities possible.
N_CTX = 2048
N_THREADS = 2
SKIP_ENV = "W2C_SKIP_REAL_SERVER"
# ggml's OpenMP threads spin while they wait. On the busy 2-core machine (several test runs
# at once) a 750-token prompt took 44 s with two spinning threads against 20 s with one; with
# passive waiting two threads took 10 s against 13 s with one (benchmarks/README.md).
OMP_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}


def _require() -> Path:
    """The model path; fail (or skip when W2C_SKIP_REAL_SERVER=1) if something is missing."""
    model = Path(os.environ.get("W2C_REAL_SERVER_MODEL") or gguf_path())
    missing = []
    if importlib.util.find_spec("llama_cpp") is None:
        missing.append("llama_cpp is not installed (pip install -e '.[realserver]')")
    if not model.is_file():
        missing.append(f"{model} is missing (python tests/realserver/fetch_model.py)")
    if missing:
        message = "; ".join(missing) + " — `make test` installs both"
        if os.environ.get(SKIP_ENV) == "1":
            pytest.skip(message)
        pytest.fail(message, pytrace=False)
    return model


RealServer = ServerProcess


def start_server(model: Path, log: Path, timeout: float = 120) -> RealServer:
    def command(port: int) -> list[str]:
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model), "--model_alias", MODEL_ALIAS,
            "--logits_all", "true", "--n_ctx", str(N_CTX), "--n_threads", str(N_THREADS),
            "--host", "127.0.0.1", "--port", str(port),
        ]

    return start("llama_cpp.server", command, MODEL_ALIAS, log, env={**OMP_ENV, **os.environ}, timeout=timeout)


stop_server = stop


@pytest.fixture(scope="session")
def real_model_path() -> Path:
    return _require()


@pytest.fixture(scope="session")
def real_server(real_model_path, tmp_path_factory) -> Iterator[RealServer]:
    server = start_server(real_model_path, tmp_path_factory.mktemp("llama_server") / "server.log")
    yield server
    stop_server(server.process)


@pytest.fixture(scope="session")
def real_llama(real_model_path):
    for name, value in OMP_ENV.items():  # read when llama_cpp loads its library
        os.environ.setdefault(name, value)
    from llama_cpp import Llama

    return Llama(model_path=str(real_model_path), logits_all=True, n_ctx=N_CTX, n_threads=N_THREADS, verbose=False)


def log_softmax(rows: np.ndarray) -> np.ndarray:
    rows = rows.astype(np.float64)
    shifted = rows - rows.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def token_logprobs(llama, context: Sequence[int], continuation: Sequence[int]) -> list[float]:
    """log P(continuation[j] | context + continuation[:j]) for each j, from the model in-process.

    The logits row of position i predicts token i+1, so token j of the continuation is read
    from the row of the position just before it.
    """
    if not context:
        raise ValueError("the context needs at least one token (the first token has no prediction)")
    tokens = [*context, *continuation]
    llama.reset()
    llama.eval(tokens)
    rows = np.asarray(llama.scores[len(context) - 1 : len(tokens) - 1, :])
    logprobs = log_softmax(rows)
    return [float(logprobs[j, token]) for j, token in enumerate(continuation)]


def conditional_loglik(llama, context: Sequence[int], continuation: Sequence[int]) -> float:
    """The model's own log-likelihood of `continuation` given `context` (token ids)."""
    return float(sum(token_logprobs(llama, context, continuation)))


@pytest.fixture(scope="session")
def loglik(real_llama):
    """conditional_loglik bound to the in-process model: loglik(context_ids, continuation_ids)."""
    return lambda context, continuation: conditional_loglik(real_llama, context, continuation)


# --------------------------------------------------------------------------- vLLM (vllm_bed.py)
# One vLLM server for the session, started with a tool parser (a chat without tools is served
# the same either way); the refusal test starts a second one without it (test_vllm_tools.py).
# W2C_VLLM_URL=http://127.0.0.1:PORT points the fixture at a server already running (a quick
# local loop; `make test` and CI never set it).
VLLM_URL_ENV = "W2C_VLLM_URL"


def require_vllm_bed() -> None:
    """Fail when the vLLM bed is missing; skip instead only with W2C_SKIP_REAL_SERVER=1 outside CI."""
    from . import vllm_bed

    problems = vllm_bed.missing()
    if not problems:
        return
    message = "; ".join(problems) + " — `make test` (target vllm-bed) builds it"
    if os.environ.get(SKIP_ENV) == "1" and os.environ.get("CI", "").lower() not in ("true", "1"):
        pytest.skip(message)
    pytest.fail(message, pytrace=False)


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    from . import vllm_bed

    url = os.environ.get(VLLM_URL_ENV)
    if url:
        yield ServerProcess(f"{url.rstrip('/')}/v1", vllm_bed.SERVED_NAME, None, Path("/dev/null"), 0.0)
        return
    require_vllm_bed()
    server = vllm_bed.start(tmp_path_factory.mktemp("vllm") / "server.log", vllm_bed.TOOL_PARSER_ARGS)
    print(f"\nvLLM {vllm_bed.VLLM_VERSION} ready at {server.base_url} after {server.start_seconds:.0f} s")
    yield server
    vllm_bed.stop(server.process)


@pytest.fixture(scope="session")
def vllm_truth():
    """truth(pairs) -> [{"loglik", "greedy", "token_logprobs"}]: transformers in the vLLM venv,
    on the weights the server reads, for [(context_ids, continuation_ids), ...]."""
    from . import vllm_bed

    require_vllm_bed()

    def truth(pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[dict]:
        script = Path(__file__).with_name("vllm_truth.py")
        env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "HF_HUB_OFFLINE": "1"}
        done = subprocess.run(
            [str(vllm_bed.VENV_PYTHON), str(script), str(vllm_bed.MODEL_DIR)],
            input=json.dumps([[list(c), list(t)] for c, t in pairs]), capture_output=True, text=True, env=env, timeout=900,
        )
        if done.returncode != 0:
            raise RuntimeError(f"vllm_truth.py exited {done.returncode}: {done.stderr[-2000:]}")
        return json.loads(done.stdout)

    return truth
