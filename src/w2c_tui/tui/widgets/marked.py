"""Checkboxes and radio buttons whose state reads in plain text, not only in colour.

Textual draws `X` (and `●`) whether the box is on or off, only the colour differs: on a
monochrome terminal, in a screen reader or a pasted screenshot `default provider` on and off
looked alike. Here an empty box is blank (`○` for a radio button).
"""

from __future__ import annotations

from textual.widgets import Checkbox, RadioButton


class MarkedCheckbox(Checkbox):
    @property
    def BUTTON_INNER(self) -> str:  # type: ignore[override]  # read by ToggleButton._button at each render
        return "X" if self.value else " "


class MarkedRadioButton(RadioButton):
    @property
    def BUTTON_INNER(self) -> str:  # type: ignore[override]
        return "●" if self.value else "○"
