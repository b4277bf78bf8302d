"""The status words of a pipeline and of a session, defined once for every output.

A pipeline that has ended is one of:

    complete   every planned example has an answer (`_DONE.json` written)
    partial    some examples could not be obtained; a resume with the same run key retries them
    cancelled  stopped by the user; resumable like `partial`
    failed     stopped by an error no further example could get past (e.g. HTTP 401); resumable
               once the cause is fixed

While a launch runs a pipeline is also `queued` or `running`; a pipeline the server cannot
serve (the capability probe found, e.g., misaligned log-probabilities) is `refused` before
its first example and never runs. A session counts a refused pipeline as `failed` (docs/metrics.md
§10: the session did not get what was asked, and `w2c-tui run` exits 2 for it).
"""

from __future__ import annotations

from typing import Iterable

COMPLETE = "complete"
PARTIAL = "partial"
CANCELLED = "cancelled"
FAILED = "failed"
QUEUED = "queued"
RUNNING = "running"
REFUSED = "refused"

FINAL = (COMPLETE, PARTIAL, CANCELLED, FAILED)
RESUMABLE = frozenset({PARTIAL, CANCELLED, FAILED})

# How a word is shown where colour or a hint helps (CLI, TUI).
HINT = {PARTIAL: "resumable", CANCELLED: "resumable", FAILED: "resumable once fixed"}

# The session's status is its pipelines' worst.
_RANK = {COMPLETE: 0, PARTIAL: 1, CANCELLED: 2, FAILED: 3}


def normalize(word: object) -> str:
    """A stored status (older files said `done`) in today's words; unknown words read as partial."""
    text = str(word or "")
    if text in ("done", "finished"):
        return COMPLETE
    if text in ("incomplete", "empty"):
        return PARTIAL
    return text if text in _RANK or text in (QUEUED, RUNNING) else PARTIAL


def session_status(pipeline_statuses: Iterable[str]) -> str:
    """complete when every pipeline is; otherwise the worst of failed > cancelled > partial
    (a refused pipeline counts as failed)."""
    words = [FAILED if s == REFUSED else normalize(s) for s in pipeline_statuses]
    if not words:
        return PARTIAL
    return max(words, key=lambda w: _RANK.get(w, 1))


def with_hint(word: str) -> str:
    """`partial (resumable)`: the word plus what the user can do about it."""
    hint = HINT.get(word)
    return f"{word} ({hint})" if hint else word
