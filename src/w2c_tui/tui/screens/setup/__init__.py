"""The Setup screen, one module per concern.

`screen` composes and wires the rest: `providers` (the list, add / edit / remove) with
`connection` (the connection test), `form` (the form's panels) with `values` (the form as
plain data, no Textual), `sweeps` (stability sweeps), `estimate`, `save` and `launch` (the
status line and the buttons); `preview` is the first frame's plain summary of the
visible panels, replaced by the form right after it.
"""

from w2c_tui.tui.screens.setup.screen import SetupScreen

__all__ = ["SetupScreen"]
