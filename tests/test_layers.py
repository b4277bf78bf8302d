"""The architecture rules, checked: layer contracts (import-linter, `[tool.importlinter]` in
pyproject.toml) and, at run time, a headless job that loads no Textual module."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def test_import_contracts_hold():
    # --no-cache: nothing written into the working tree; the graph takes a fraction of a second.
    result = subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache", "--no-logo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


HEADLESS_RUN = """
import sys

from w2c_tui.cli import main
import w2c_tui.engine.launch  # noqa: F401 - the engine, as a library user would import it

code = main(["run", "--config", sys.argv[1], "--only", "mcq"])
print("exit", code)
print("textual loaded", any(m == "textual" or m.startswith(("textual.", "textual_plotext", "plotext")) for m in sys.modules))
"""


def test_headless_run_loads_no_textual(tmp_path):
    """`w2c-tui run` on the embedded simulator, in a fresh interpreter, never imports Textual."""
    config = tmp_path / "config.toml"
    config.write_text(
        textwrap.dedent(
            f"""
            [run]
            workdir_base = "{tmp_path / 'workdir'}"
            [data]
            n_per_label = 1
            [mlflow]
            enabled = false
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-c", HEADLESS_RUN, str(config)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "exit 0" in result.stdout, result.stdout + result.stderr
    assert "textual loaded False" in result.stdout, result.stdout
    assert list((tmp_path / "workdir").rglob("mcq_predictions*.jsonl")), "the run wrote no mcq rows"
