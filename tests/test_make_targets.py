"""What `make run` and `make test` would do on a fresh machine, read from `make -n`; one test runs
the vLLM bed's install for real, on a stand-in torch wheel. Nothing leaves the machine.

The vLLM test bed pins torch 2.13.0+cpu, a build PyPI does not have: pip finds it where it is
configured to look, and only where it does not (a plain pip on a fresh machine) the Makefile takes
it from the PyTorch CPU wheel index. A fresh machine's pip is stood in for by PIP_CONFIG_FILE=
/dev/null, an empty local index and an empty find-links folder, every PIP_* variable of this
environment (PIP_FIND_LINKS is set on our machines) cleared first.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TORCH_PIN = "torch==2.13.0+cpu"
PYTORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
BED_INSTALL = "-m pip install --quiet --no-deps --only-binary=:all: -r tests/realserver/vllm-requirements.txt"

# An outer `make test` passes its flags and command-line variables down through these.
MAKE_VARIABLES = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def _empty_pip(tmp_path: Path, find_links: Path | None = None) -> dict[str, str]:
    empty = tmp_path / "empty-index"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in MAKE_VARIABLES and not k.startswith("PIP_")}
    env.update(
        PIP_CONFIG_FILE=os.devnull,  # pip then reads no configuration file at all
        PIP_INDEX_URL=empty.as_uri(),  # stands for PyPI, which has no +cpu build, without the network
        PIP_FIND_LINKS=str(find_links or empty),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    return env


def _ours_offline(tmp_path: Path) -> dict[str, str]:
    # This machine's pip configuration (files and PIP_* variables) with PyPI swapped for an empty
    # local index: the test asks no remote host.
    empty = tmp_path / "empty-index"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in MAKE_VARIABLES}
    env["PIP_INDEX_URL"] = empty.as_uri()
    return env


def _dry_run(target: str, env: dict[str, str], tmp_path: Path, **variables: str) -> list[str]:
    variables.setdefault("PYTHON", sys.executable)
    variables.setdefault("VENV", str(tmp_path / "venv"))
    variables.setdefault("VLLM_VENV", str(tmp_path / "vllm-venv"))
    if target == "bed":
        target = f"{variables['VLLM_VENV']}/.installed-packages"
    args = ["make", "-n", "--no-print-directory", "-C", str(REPO), target, *(f"{k}={v}" for k, v in variables.items())]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _torch_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if f"'{TORCH_PIN}'" in line]


def _fake_torch_wheel(folder: Path) -> Path:
    """A wheel named and described as the pinned torch (an empty package)."""
    folder.mkdir(parents=True)
    wheel = folder / "torch-2.13.0+cpu-py3-none-any.whl"
    info = "torch-2.13.0+cpu.dist-info"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("torch/__init__.py", "")
        archive.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0+cpu\n")
        archive.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{info}/RECORD", "")
    return folder


def test_empty_pip_configuration_takes_torch_from_the_pytorch_cpu_index(tmp_path):
    lines = _dry_run("bed", _empty_pip(tmp_path), tmp_path)
    (torch,) = _torch_lines(lines)
    assert f"--index-url {PYTORCH_CPU_INDEX} '{TORCH_PIN}'" in torch
    # One line says what is downloaded, from where, and how to use a mirror.
    assert re.search(rf"echo \"[^\"]*{re.escape(TORCH_PIN)}[^\"]*{re.escape(PYTORCH_CPU_INDEX)}[^\"]*TORCH_CPU_INDEX=URL", torch)
    # torch first, then the rest, which finds torch installed.
    (rest,) = [i for i, line in enumerate(lines) if BED_INSTALL in line]
    assert lines.index(torch) < rest


def test_the_fallback_installs_torch_then_the_rest(tmp_path):
    # A real run of the bed's install, on a one-line requirements file and a local stand-in for the
    # PyTorch index (pip reads a file: index folder's index.html): torch comes from the index, and
    # the plain install that follows finds it installed instead of failing.
    index = tmp_path / "mirror"
    _fake_torch_wheel(index / "torch")
    wheel = "torch-2.13.0+cpu-py3-none-any.whl"
    (index / "torch" / "index.html").write_text(f'<html><body><a href="{wheel}">{wheel}</a></body></html>')
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(TORCH_PIN + "\n")
    # The bed's venv made beforehand (pyvenv.cfg newer than the requirements, so make keeps it),
    # borrowing the base interpreter's pip where it has one: 0.1 s where a venv with pip takes seconds.
    bed = tmp_path / "vllm-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(bed)], check=True)
    if subprocess.run([str(bed / "bin" / "python"), "-c", "import pip"], capture_output=True).returncode != 0:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(bed)], check=True)
    args = ["make", "--no-print-directory", "-C", str(REPO), f"{bed}/.installed-packages", f"PYTHON={sys.executable}",
            f"VLLM_VENV={bed}", f"VLLM_REQUIREMENTS={requirements}", f"TORCH_CPU_INDEX={index.as_uri()}"]
    done = subprocess.run(args, env=_empty_pip(tmp_path), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"pip finds no {TORCH_PIN} where it is configured to look: downloading it" in done.stdout
    assert f"from {index.as_uri()} (for a mirror: make test TORCH_CPU_INDEX=URL)" in done.stdout
    version = subprocess.run([str(bed / "bin" / "python"), "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                             capture_output=True, text=True, check=True)
    assert version.stdout.strip() == "2.13.0+cpu"
    assert (bed / ".installed-packages").exists()


def test_a_mirror_replaces_the_pytorch_index(tmp_path):
    mirror = "https://mirror.example/whl/cpu"
    lines = _dry_run("bed", _empty_pip(tmp_path), tmp_path, TORCH_CPU_INDEX=mirror)
    (torch,) = _torch_lines(lines)
    assert f"--index-url {mirror} '{TORCH_PIN}'" in torch
    assert "download.pytorch.org" not in "\n".join(lines)


def test_the_pinned_wheel_in_find_links_keeps_the_plain_install(tmp_path):
    env = _empty_pip(tmp_path, find_links=_fake_torch_wheel(tmp_path / "wheels"))
    lines = _dry_run("bed", env, tmp_path)
    assert _torch_lines(lines) == []
    assert "--index-url" not in "\n".join(lines)
    assert any(BED_INSTALL in line for line in lines)


def test_our_pip_configuration_keeps_the_plain_install(tmp_path):
    env = _ours_offline(tmp_path)
    probe = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
         "--only-binary=:all:", "--quiet", TORCH_PIN],
        env=env, capture_output=True, text=True, timeout=120,
    )
    if probe.returncode != 0:
        pytest.skip(f"this machine's pip configuration has no {TORCH_PIN}")
    lines = _dry_run("bed", env, tmp_path)
    assert _torch_lines(lines) == []
    assert "download.pytorch.org" not in "\n".join(lines)


def test_a_pip_that_fails_otherwise_keeps_the_plain_install(tmp_path):
    # No pip module at all (as with a Debian python3 without python3-pip): not "no such
    # distribution", so the plain install runs and its own error is the one shown.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "nopip")], check=True)
    lines = _dry_run("bed", _empty_pip(tmp_path), tmp_path, PYTHON=str(tmp_path / "nopip" / "bin" / "python"))
    assert _torch_lines(lines) == []
    assert any(BED_INSTALL in line for line in lines)


def test_make_run_installs_no_test_extras(tmp_path):
    lines = _dry_run("run", _empty_pip(tmp_path), tmp_path)
    venv = tmp_path / "venv"
    assert f"{venv}/bin/python -m pip install --quiet -e ." in lines
    assert not [line for line in lines if "[test" in line or "realserver" in line or "vllm" in line]
    assert lines[-1] == f"{venv}/bin/w2c-tui"


def test_make_test_installs_test_extras_on_a_fresh_machine(tmp_path):
    lines = _dry_run("test", _empty_pip(tmp_path), tmp_path)
    venv = tmp_path / "venv"
    assert lines[0] == f"{sys.executable} -m venv {venv}"
    extras = lines.index(f"{venv}/bin/python -m pip install --quiet -e '.[test]'")
    assert lines.index(f"{venv}/bin/python -m pip install --quiet -e .") < extras
    assert extras < lines.index(f"{venv}/bin/python -m pytest -q")


def test_readme_and_makefile_name_the_same_index():
    default = re.search(r"^TORCH_CPU_INDEX \?= (\S+)$", (REPO / "Makefile").read_text(), re.M)
    assert default and default.group(1) == PYTORCH_CPU_INDEX
    readme = (REPO / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (line,) = [line for line in quick_start.splitlines() if "TORCH_CPU_INDEX" in line]
    assert PYTORCH_CPU_INDEX in line and "make test" in line and "torch" in line
