"""Dataset paths that are no readable file: a FIFO, a device, a folder, a locked or undecodable file.

Each gives one clear line and exit 2; none may block (a FIFO blocks on open, /dev/zero never ends).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from w2c_tui.data import BUNDLED_PATH, DataError, load_examples
from w2c_tui.readable_file import unreadable_reason

from configs import write_config

SMALL = """
[data]
n_per_label = 1
use_full_dataset = true
eval_data_path = "{path}"
[mlflow]
enabled = false
"""


def run_cli(tmp_path: Path, dataset: str | Path) -> subprocess.CompletedProcess:
    """`w2c-tui run` in a child process, so a hang is a test failure instead of a stuck suite."""
    write_config(tmp_path, "http://127.0.0.1:9/v1", SMALL.format(path=dataset))
    env = {k: v for k, v in os.environ.items() if k != "RUN_KEY" and not k.startswith("TOKEN_")}
    return subprocess.run(
        [sys.executable, "-m", "w2c_tui", "run", "--run-key", "files"],
        cwd=tmp_path, capture_output=True, text=True, timeout=30, env=env,
    )


def test_a_fifo_dataset_is_refused_at_once(tmp_path):
    fifo = tmp_path / "data.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()
    result = run_cli(tmp_path, fifo)  # TimeoutExpired here would be the old hang
    assert time.monotonic() - started < 20
    assert result.returncode == 2, result.stderr
    assert "named pipe" in result.stderr and str(fifo) in result.stderr
    assert "Traceback" not in result.stderr
    assert len([line for line in result.stderr.splitlines() if "named pipe" in line]) == 1


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_a_device_dataset_is_refused(tmp_path):
    result = run_cli(tmp_path, "/dev/zero")
    assert result.returncode == 2 and "is a device, not a regular file" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda tmp: tmp, "is a folder"),
        (lambda tmp: tmp / "absent.jsonl", "not found"),
        (lambda tmp: _fifo(tmp), "named pipe"),
        (lambda tmp: Path("/dev/null"), "is a device"),
    ],
)
def test_the_loader_names_what_the_path_is(make, fragment, tmp_path):
    with pytest.raises(DataError, match=fragment):
        load_examples(make(tmp_path))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_dataset_is_refused(tmp_path):
    path = tmp_path / "locked.jsonl"
    path.write_text(BUNDLED_PATH.read_text())
    path.chmod(0)
    try:
        with pytest.raises(DataError, match="not readable"):
            load_examples(path)
    finally:
        path.chmod(0o600)


def test_an_undecodable_dataset_names_its_line(tmp_path):
    lines = BUNDLED_PATH.read_bytes().splitlines()[:3]
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b"\n".join([lines[0], lines[1] + b"\xff\xfe", lines[2]]) + b"\n")
    with pytest.raises(DataError, match=r"latin1\.jsonl:2: not UTF-8 text"):
        load_examples(path)


def test_readable_regular_files_pass(tmp_path):
    assert unreadable_reason(BUNDLED_PATH) is None
    assert load_examples(BUNDLED_PATH)


def _fifo(tmp: Path) -> Path:
    path = tmp / "pipe.jsonl"
    os.mkfifo(path)
    return path
