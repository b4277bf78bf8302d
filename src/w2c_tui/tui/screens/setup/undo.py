"""ctrl+z on Setup: the form and its providers as they were before the last edit.

Each change of the form is noted; keystrokes into one field make one step (undo gives the
field's previous value, not the value less one letter). Kept free of Textual: the screen
reads the form into a `Snapshot` and writes a restored one back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from w2c_tui.tui.screens.setup.values import FormValues, changed_keys

LIMIT = 100  # steps kept; an afternoon of edits, not an unbounded list


@dataclass(frozen=True)
class Snapshot:
    values: FormValues
    providers: dict[str, Any] = field(default_factory=dict)  # name -> ProviderSettings
    renamed: dict[str, str] = field(default_factory=dict)


class FormHistory:
    def __init__(self, start: Snapshot) -> None:
        self.current = start
        self._steps: list[Snapshot] = []
        self._typing: list[str] | None = None  # the keys the last step changed, while one field is typed into

    def note(self, now: Snapshot) -> None:
        """The form now reads `now`: the state before it becomes one undo step."""
        if now == self.current:
            return
        keys = changed_keys(self.current.values, now.values) if now.providers == self.current.providers else None
        one_field = keys is not None and len(keys) == 1
        if not (one_field and keys == self._typing and self._steps):
            self._steps.append(self.current)
            del self._steps[:-LIMIT]
        self._typing = keys if one_field else None
        self.current = now

    def undo(self) -> Snapshot | None:
        """The state before the last step (now current), or None when there is none."""
        if not self._steps:
            return None
        self.current = self._steps.pop()
        self._typing = None
        return self.current

    def __len__(self) -> int:
        return len(self._steps)
