"""The exceptions for a provider answer we cannot read (the runner records them as `bad_response`).

Only the code that reads a provider's answer raises them, so a ValueError, KeyError or
TypeError anywhere else is our own bug and stops the pipeline instead of hiding among
per-example provider faults.
"""

from __future__ import annotations

from w2c_tui.api.retry import PermanentApiError


class BadResponse(ValueError):
    """The provider answered, but the answer does not hold what the request asked for.

    `kind` names the sort of non-answer (html, redirect, not_object, no_choices, ...), so a
    run can say each sort once and count it instead of repeating it per example.
    """

    def __init__(self, message: str, kind: str = "unreadable") -> None:
        self.kind = kind
        super().__init__(message)


class BadAnswerError(PermanentApiError, BadResponse):
    """An HTTP answer that is no answer at all (a web page, a redirect, JSON of the wrong shape).

    Also an ApiError, so the probes that catch ApiError treat it like any refusal.
    """

    def __init__(self, provider: str, status: int | None, message: str, url: str | None, kind: str) -> None:
        PermanentApiError.__init__(self, provider, status, message, url)
        self.kind = kind
