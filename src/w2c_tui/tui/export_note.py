"""The notification after an export key: where the tables went."""

from __future__ import annotations

from w2c_tui.analysis.export import ExportFiles
from w2c_tui.tui.formatting import display_path


def exported_message(files: ExportFiles) -> str:
    folder = display_path(files.markdown.parent)
    return f"{folder}/: " + ", ".join(path.name for path in files.paths)
