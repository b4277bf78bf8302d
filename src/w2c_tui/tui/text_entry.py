"""Whether a key is text: the app's and the screens' keys without a modifier stand back while a field takes text."""

from __future__ import annotations

import sys

from textual.screen import Screen
from textual.widgets import Input


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
