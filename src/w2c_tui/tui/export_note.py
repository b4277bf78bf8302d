"""The notification after an export key: where the tables went."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from w2c_tui.analysis.export import ExportFiles
from w2c_tui.tui.formatting import display_path


def exported_message(files: ExportFiles, *, first: Sequence[Path] = ()) -> str:
    """`<folder>/: a, b, …`; `first`: files written beside them, named before (Compare's comparison)."""
    folder = display_path(files.markdown.parent)
    return f"{folder}/: " + ", ".join(path.name for path in [*first, *files.paths])
