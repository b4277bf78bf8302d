"""session_summary.json: what listing a session needs, so `sessions` and the Sessions screen
read one small file per session instead of every pipeline's rows.

It holds each pipeline's verdict (done, status, metrics as checked or recomputed, reasons,
notes) and the size, mtime, inode and ctime of every file that verdict was computed from
(`inputs`: the manifest, each pipeline's checkpoint files but its audit log, its
metrics.json). A summary is used only while it is ours and fresh: owned by this user, its
own digest (first key, over the rest of the file) matching, so a hand-edited figure is never
shown; every input as it records (the ctime moves on every write to a file, and no user can
put it back: a same-size edit whose mtime was set back shows); the pipeline folders the same.
Otherwise (rows appended, metrics.json rewritten, a damaged, edited or missing summary) the
session is read from its rows as before. It is a cache: nothing reads it as the truth, and
failing to write it never fails a run or a listing.

Written by a launch when its pipelines end (under its lock), and by a listing that had to
read the rows, only in a folder of ours that no launch holds (no `session.lock`) and that
belongs to this user. Never in the earlier suite's folders. A temporary file a killed
writer left is removed by the next writer, or by a listing allowed to write there
(`store/temporary.py`).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from w2c_tui.readable_file import open_regular
from w2c_tui.redaction import scrub
from w2c_tui.session.documents import check_metrics
from w2c_tui.session.models import PipelineSummary, SessionSummary
from w2c_tui.store.audit import utc_now
from w2c_tui.store.layout import AUDIT_FILE, MANIFEST_FILE, METRICS_FILE, SUMMARY_FILE, SessionPaths
from w2c_tui.store.lock import LOCK_FILE
from w2c_tui.store.temporary import remove_leftovers, temporary_path

Inputs = dict[str, list[int]]

MAX_BYTES = 4 << 20  # ours are a few KB; a larger file is not one (and is not read)


def _stat(path: str) -> list[int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    # The inode too: a document replaced by a rename within the clock's tick, at the same size, shows.
    # The ctime: any write moves it, and unlike the mtime it cannot be set back.
    return [found.st_size, found.st_mtime_ns, found.st_ino, found.st_ctime_ns]


def snapshot(paths: SessionPaths, exp_names: list[str]) -> Inputs:
    """Size, mtime, inode and ctime of every file a listing's verdict depends on (absent files are left out)."""
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


def _read_ours(path: str) -> bytes | None:
    """The summary's bytes when it is ours: a regular file of this user (a FIFO put there must
    not block the listing, a link is not followed) within MAX_BYTES, whose digest holds; None
    otherwise."""
    try:
        with open_regular(path, follow_links=False) as fh:
            found = os.fstat(fh.fileno())
            if found.st_size > MAX_BYTES or (hasattr(os, "getuid") and found.st_uid != os.getuid()):
                return None
            data = fh.read(found.st_size + 1)  # a file grown since fails its digest
    except OSError:
        return None
    return data if _signed_body(data) is not None else None


# The file starts with its digest, over the bytes that follow it (the document as written):
_HEAD = b'{\n "digest": "'
_DIGEST_HEX = 32


def _digest(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=_DIGEST_HEX // 2, person=b"w2c-summary").hexdigest()


def _signed(body: bytes) -> bytes:
    """The document's bytes (`{` + its keys) with its digest as first key."""
    return _HEAD + _digest(body).encode() + b'",' + body[1:]


def _signed_body(data: bytes) -> bytes | None:
    """The document under the digest when the digest matches it; None for any other file."""
    start = len(_HEAD) + _DIGEST_HEX
    if not data.startswith(_HEAD) or data[start : start + 2] != b'",':
        return None
    body = b"{" + data[start + 2 :]
    return body if data[len(_HEAD) : start] == _digest(body).encode() else None


def load_fresh(paths: SessionPaths, exp_names: list[str]) -> SessionSummary | None:
    """The session's summary when it is ours and still describes its files; None when missing,
    damaged, edited or older."""
    data = _read_ours(os.path.join(str(paths.root), SUMMARY_FILE))
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
    tmp = temporary_path(path)
    data = _signed((scrub(json.dumps(document, ensure_ascii=False, indent=1)) + "\n").encode("utf-8"))
    remove_leftovers(path)  # a killed writer's, whoever it was
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


def remove_leftovers_of(root: Path) -> None:
    """A listing that may write here removes the temporary files killed writers left (`may_write`)."""
    if may_write(root):
        remove_leftovers(root / SUMMARY_FILE)


def may_write(root: Path) -> bool:
    """A listing may write the summary: the folder is this user's and no launch holds it (or left
    its lock behind: a `session.lock` that exists is never second-guessed here)."""
    try:
        if os.path.lexists(root / LOCK_FILE):
            return False
        return os.stat(root).st_uid == os.getuid() and os.access(root, os.W_OK)
    except (OSError, AttributeError):  # AttributeError: no getuid (not POSIX)
        return False
