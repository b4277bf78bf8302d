"""`w2c-tui data download`: fetch the official When2Call test files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from w2c_tui.cli.errors import CliError

UPSTREAM = "https://raw.githubusercontent.com/NVIDIA/When2Call/main/data/test/"
# File name -> expected number of lines (one example per line).
FILES = {"when2call_test_mcq.jsonl": 3652, "when2call_test_llm_judge.jsonl": 300}
# One file's whole download, redirects included: the MCQ file (~20 MB) at 0.3 Mbit/s. The size
# bound is the transport's answer bound (64 MiB once inflated), three times the largest file.
DEADLINE_SECONDS = 600.0
MAX_REDIRECTS = 5  # raw.githubusercontent.com and Hugging Face's resolve URLs redirect once or twice
REDIRECTS = (301, 302, 303, 307, 308)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("data", help="dataset tools")
    data_sub = parser.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    download = data_sub.add_parser("download", help="download the official When2Call test files")
    download.add_argument("--dest", default="When2Call/data/test", metavar="DIR", help="target folder")
    download.add_argument("--base-url", default=UPSTREAM, help=argparse.SUPPRESS)
    download.set_defaults(handler=run_download)


def run_download(args: argparse.Namespace) -> int:
    import asyncio

    dest = Path(args.dest)
    if dest.exists() and not dest.is_dir():
        raise CliError(f"{dest}: exists and is not a folder")
    dest.mkdir(parents=True, exist_ok=True)
    for name, expected in FILES.items():
        url = args.base_url.rstrip("/") + "/" + name
        target = dest / name
        partial = target.with_suffix(".part")
        body = asyncio.run(_fetch(url, name))
        partial.write_bytes(body)
        lines = sum(1 for line in body.splitlines() if line.strip())
        if lines != expected:
            partial.unlink(missing_ok=True)
            raise CliError(f"{name}: expected {expected} lines, got {lines}; the download is incomplete or changed")
        partial.replace(target)
        print(f"{target}  ({lines} examples)")
    return 0


async def _fetch(url: str, name: str) -> bytes:
    """The file at `url`, through the run's transport (its proxy rule, TLS context and answer
    bound), following at most MAX_REDIRECTS redirects, each to https; the whole within
    DEADLINE_SECONDS, so a server trickling it cannot hold the command."""
    import asyncio

    import httpx  # the transport's error vocabulary

    from w2c_tui.api.transport import AiohttpSender, PermanentTransportError, Timeouts, network_problem

    problem = network_problem([url])  # a SOCKS proxy, an unreadable SSL_CERT_FILE
    if problem:
        raise CliError(f"cannot download {url}: {problem}")
    sender = AiohttpSender({}, Timeouts(connect=30.0, read=60.0), max_connections=1)
    asked = url
    drawn = False

    def progress(received: int, total: int) -> None:
        nonlocal drawn
        drawn = True
        _progress(name, received, total)

    try:
        async with asyncio.timeout(DEADLINE_SECONDS):
            for _ in range(MAX_REDIRECTS + 1):
                reply = await sender.send("GET", url, None, progress)
                if reply.status not in REDIRECTS:
                    break
                url = _redirect_target(asked, url, reply.headers.get("location", ""))
            else:
                raise CliError(f"cannot download {asked}: more than {MAX_REDIRECTS} redirects (the bound); last to {url}")
    except TimeoutError:
        raise CliError(
            f"cannot download {asked}: not complete within {DEADLINE_SECONDS:g} s (the bound on one file's download); "
            "the connection is too slow or the server trickles: try again, or copy the file by hand"
        ) from None
    except PermanentTransportError as exc:  # the answer bound, an untrusted certificate, a SOCKS proxy
        raise CliError(f"cannot download {url}: {exc}") from None
    except httpx.HTTPError as exc:
        raise CliError(
            f"cannot download {url} ({type(exc).__name__}); are you offline? "
            "Copy the file by hand from github.com/NVIDIA/When2Call or the nvidia/When2Call dataset"
        ) from None
    finally:
        await sender.aclose()
        if drawn:  # end the bar's line, before what follows (a result, or the error)
            print(file=sys.stderr)
    if reply.status != 200:
        raise CliError(f"{url}: HTTP {reply.status}; the file could not be downloaded")
    return reply.content


def _redirect_target(asked: str, url: str, location: str) -> str:
    """Where a redirect from `url` points: https only (a CDN's; never down to plain HTTP)."""
    target = urljoin(url, location)
    if not location or urlsplit(target).scheme != "https":
        raise CliError(
            f"cannot download {asked}: {url} redirects to {target or '(no Location)'}; only redirects to https are followed"
        )
    return target


def _progress(name: str, received: int, total: int) -> None:
    if total:
        width = 30
        filled = int(width * received / total)
        sys.stderr.write(f"\r{name}  {'█' * filled}{'░' * (width - filled)} {received / 1e6:5.1f}/{total / 1e6:.1f} MB")
    else:
        sys.stderr.write(f"\r{name}  {received / 1e6:5.1f} MB")
    sys.stderr.flush()
