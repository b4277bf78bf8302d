"""session_summary.json: what listing a session needs, so `sessions` and the Sessions screen
read one small file per session instead of every pipeline's rows.

It holds each pipeline's verdict (done, status, metrics as checked or recomputed, reasons,
notes) and the size, mtime and inode of every file that verdict was computed from
(`inputs`: the manifest, each pipeline's checkpoint files but its audit log, its
metrics.json). A summary is used only while every input is as it records and the pipeline
folders are the same; otherwise (rows appended, metrics.json rewritten, a damaged or
missing summary) the session is read from its rows as before. It is a cache: nothing reads
it as the truth, and failing to write it never fails a run or a listing.

Written by a launch when its pipelines end (under its lock), and by a listing that had to
read the rows, only in a folder of ours that no launch holds (no `session.lock`) and that
belongs to this user. Never in the earlier suite's folders.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from w2c_tui.redaction import scrub
from w2c_tui.session.documents import check_metrics
from w2c_tui.session.models import PipelineSummary, SessionSummary
from w2c_tui.store.audit import utc_now
from w2c_tui.store.layout import AUDIT_FILE, MANIFEST_FILE, METRICS_FILE, SUMMARY_FILE, SessionPaths
from w2c_tui.store.lock import LOCK_FILE

Inputs = dict[str, list[int]]

MAX_BYTES = 4 << 20  # ours are a few KB; a larger file is not one (and is not read)


def _stat(path: str) -> list[int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    # The inode too: a document replaced by a rename within the clock's tick, at the same size, shows.
    return [found.st_size, found.st_mtime_ns, found.st_ino]


def snapshot(paths: SessionPaths, exp_names: list[str]) -> Inputs:
    """Size, mtime and inode of every file a listing's verdict depends on (absent files are left out)."""
    root = str(paths.root)
    inputs: Inputs = {}

    def add(relative: str) -> None:  # plain strings: hundreds of sessions are stat'ed per listing
        found = _stat(os.path.join(root, relative))
        if found is not None:
            inputs[relative] = found

    add(MANIFEST_FILE)
    for exp_name in exp_names:
        folder = f"checkpoints/{exp_name}"
        try:
            names = sorted(os.listdir(os.path.join(root, folder)))
        except OSError:
            names = []
        for name in names:
            if name != AUDIT_FILE:  # events only: appended after the metrics (MLflow), never in a listing
                add(f"{folder}/{name}")
        add(f"artifacts_local/{exp_name}/{METRICS_FILE}")
    return inputs


def _read_bytes(path: str) -> bytes | None:
    """A regular file's bytes (None when absent, not a regular file or unreadable): a FIFO
    put there must not block the listing, a link is not followed."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_BYTES:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def load_fresh(paths: SessionPaths, exp_names: list[str]) -> SessionSummary | None:
    """The session's summary when it still describes its files; None when missing, damaged or older."""
    data = _read_bytes(os.path.join(str(paths.root), SUMMARY_FILE))
    summary = SessionSummary.read_json(data) if data else None
    if summary is None or list(summary.pipelines) != exp_names:
        return None
    if any(p.metrics is not None and check_metrics(p.metrics)[1] for p in summary.pipelines.values()):
        return None
    if summary.inputs != snapshot(paths, exp_names):
        return None
    return summary


def document(status: str, n_examples: Any, pipelines: dict[str, PipelineSummary], inputs: Inputs) -> dict[str, Any]:
    return {
        "schema_version": SessionSummary.SCHEMA_VERSION,
        "written_at": utc_now(),
        "status": status,
        "n_examples": n_examples if isinstance(n_examples, int) else None,
        "inputs": inputs,
        "pipelines": {name: summary.model_dump() for name, summary in pipelines.items()},
    }


def save(paths: SessionPaths, document: dict[str, Any], inputs: Inputs) -> bool:
    """Write the summary if the files did not change while they were read; False when not written."""
    if snapshot(paths, list(document["pipelines"])) != inputs:
        return False  # written meanwhile (a launch): the next listing reads the rows again
    path = paths.root / SUMMARY_FILE
    # Temporary file and rename: a reader never sees half of it. No fsync: a cache lost in a
    # crash is read as missing (or damaged) and recomputed.
    tmp = path.with_name(f".{SUMMARY_FILE}.{os.getpid()}.tmp")
    data = (scrub(json.dumps(document, ensure_ascii=False, indent=1)) + "\n").encode("utf-8")
    try:
        tmp.unlink(missing_ok=True)  # one left by a killed listing of this pid (a link: the link itself)
        # O_EXCL and no link followed: nothing put there is written through.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        return False
    return True


def may_write(root: Path) -> bool:
    """A listing may write the summary: the folder is this user's and no launch holds it (or left
    its lock behind: a `session.lock` that exists is never second-guessed here)."""
    try:
        if os.path.lexists(root / LOCK_FILE):
            return False
        return os.stat(root).st_uid == os.getuid() and os.access(root, os.W_OK)
    except (OSError, AttributeError):  # AttributeError: no getuid (not POSIX)
        return False
