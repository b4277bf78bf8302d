"""Turn the test GGUF into what vLLM serves: SmolLM2-135M-Instruct as fp32 safetensors plus its tokenizer.

Runs in the vLLM venv (it needs torch, transformers, gguf and accelerate):

    .cache/vllm-venv/bin/python tests/realserver/vllm_convert.py GGUF OUT_DIR

transformers dequantizes the Q4_1 GGUF on load (`gguf_file=`), but a model loaded that way
refuses `save_pretrained` ("quantized"); a plain LlamaForCausalLM built from the same config
without `quantization_config` takes its state dict and saves. The weights file is checked
against its SHA-256, so the server and the in-process truth read the same numbers on every
machine. OUT_DIR appears only when complete (written beside it, then renamed).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")  # one line per step in `make test`'s log, not progress bars

# SHA-256 of model.safetensors as written by transformers 5.19.0 from the GGUF of fetch_model.py.
WEIGHTS_SHA256 = "a672150fb4f99d7c8f4168cecdd464069c0ef3a37d8113f22ddb9d48031d03cd"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def convert(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.torch_dtype = torch.float32
    model = LlamaForCausalLM(config).to(torch.float32)
    model.load_state_dict(loaded.state_dict(), strict=True)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)

    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial, safe_serialization=True)
    tokenizer.save_pretrained(partial)
    found = sha256(partial / "model.safetensors")
    if found != WEIGHTS_SHA256:
        shutil.rmtree(partial)
        raise SystemExit(f"{gguf}: converted weights have SHA-256 {found}, expected {WEIGHTS_SHA256}")
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    print(f"{out}: model.safetensors sha256 {found}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    convert(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve())
