"""`w2c-tui data download`: fetch the official When2Call test files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from w2c_tui.cli.errors import CliError

UPSTREAM = "https://raw.githubusercontent.com/NVIDIA/When2Call/main/data/test/"
# File name -> expected number of lines (one example per line).
FILES = {"when2call_test_mcq.jsonl": 3652, "when2call_test_llm_judge.jsonl": 300}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("data", help="dataset tools")
    data_sub = parser.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    download = data_sub.add_parser("download", help="download the official When2Call test files")
    download.add_argument("--dest", default="When2Call/data/test", metavar="DIR", help="target folder")
    download.add_argument("--base-url", default=UPSTREAM, help=argparse.SUPPRESS)
    download.set_defaults(handler=run_download)


def run_download(args: argparse.Namespace) -> int:
    import httpx

    dest = Path(args.dest)
    if dest.exists() and not dest.is_dir():
        raise CliError(f"{dest}: exists and is not a folder")
    dest.mkdir(parents=True, exist_ok=True)
    for name, expected in FILES.items():
        url = args.base_url.rstrip("/") + "/" + name
        target = dest / name
        partial = target.with_suffix(".part")
        try:
            with httpx.stream("GET", url, timeout=30, follow_redirects=True) as response:
                if response.status_code != 200:
                    raise CliError(f"{url}: HTTP {response.status_code}; the file could not be downloaded")
                total = int(response.headers.get("content-length") or 0)
                received = 0
                with partial.open("wb") as fh:
                    for chunk in response.iter_bytes(1 << 16):
                        fh.write(chunk)
                        received += len(chunk)
                        _progress(name, received, total)
        except httpx.HTTPError as exc:
            partial.unlink(missing_ok=True)
            raise CliError(
                f"cannot download {url} ({type(exc).__name__}); are you offline? "
                "Copy the file by hand from github.com/NVIDIA/When2Call or the nvidia/When2Call dataset"
            ) from None
        print(file=sys.stderr)
        lines = sum(1 for line in partial.open("rb") if line.strip())
        if lines != expected:
            partial.unlink(missing_ok=True)
            raise CliError(f"{name}: expected {expected} lines, got {lines}; the download is incomplete or changed")
        partial.replace(target)
        print(f"{target}  ({lines} examples)")
    return 0


def _progress(name: str, received: int, total: int) -> None:
    if total:
        width = 30
        filled = int(width * received / total)
        sys.stderr.write(f"\r{name}  {'█' * filled}{'░' * (width - filled)} {received / 1e6:5.1f}/{total / 1e6:.1f} MB")
    else:
        sys.stderr.write(f"\r{name}  {received / 1e6:5.1f} MB")
    sys.stderr.flush()
