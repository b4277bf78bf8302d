"""`w2c-tui` starts fast: building its argument parser imports no heavy library.

Every command, `--help` and `--version` included, builds the whole parser, so each
`cli/*_cmd.py` keeps only argparse set-up at import time and imports what it runs inside its
handler. A fresh interpreter shows what the import really pulled in.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pydantic", "httpx", "numpy", "mlflow", "aiohttp", "textual", "asyncio")

PROBE = """
import json, sys
import w2c_tui.cli
w2c_tui.cli.build_parser()
heavy = json.loads(sys.argv[1])
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & set(heavy))))
"""


def test_building_the_parser_imports_no_heavy_library():
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [], f"imported while building the parser: {result.stdout}"


def test_version_and_help_answer_without_the_heavy_libraries():
    for flag in ("--version", "--help"):
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "w2c_tui", flag], capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        imported = {line.split("|")[-1].strip().split(".")[0] for line in result.stderr.splitlines() if "|" in line}
        assert not imported & set(HEAVY), f"{flag} imported {sorted(imported & set(HEAVY))}"
