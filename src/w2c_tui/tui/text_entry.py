"""Keys and text fields: the app's and the screens' keys without a modifier stand back while a
field takes text (`typing_into`), and a field's editing keys act in the order they were typed
(`TextInput`)."""

from __future__ import annotations

import sys

from textual import events
from textual.screen import Screen
from textual.widgets import Input


class TextInput(Input):
    """An Input whose own keys (backspace, delete, arrows, home, end, …) act as they arrive.

    Textual runs a widget's bindings only once the key has bubbled up to the app, while a typed
    character is inserted at once: in a burst of keys (a fast typist, or the app busy while a
    launch runs) `backspace 3` in `day2` gave `day2` (the 3 typed, then deleted), not `day3`.

    Focus leaves the text as it is, with the cursor at its end (as shells and editors do):
    Textual's select-all on focus made the next letter after a Tab replace the whole value.
    """

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("select_on_focus", False)
        super().__init__(*args, **kwargs)

    def _on_focus(self, event: events.Focus) -> None:
        if not event.from_app_focus:  # the app regaining focus keeps the cursor where it was
            self.cursor_position = len(self.value)
        super()._on_focus(event)

    async def _on_key(self, event: events.Key) -> None:
        if not event.is_printable:
            for binding in self._bindings.key_to_bindings.get(event.key, ()):
                if not binding.priority and await self.app.run_action(binding.action, self):
                    event.stop()
                    event.prevent_default()
                    return
        await super()._on_key(event)


def typing_into(screen: Screen) -> bool:
    """Whether the focused widget takes typed text (an Input, an editable TextArea): a letter or
    a digit is text there, never a key of the app or of the screen."""
    focused = screen.focused
    if focused is None:
        return False
    if isinstance(focused, Input):
        return True
    text_area = sys.modules.get("textual.widgets._text_area")  # not imported here: only where one is shown
    return text_area is not None and isinstance(focused, text_area.TextArea) and not focused.read_only
