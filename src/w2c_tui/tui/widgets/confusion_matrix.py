"""A 4×4 confusion matrix (gold rows, predicted columns) with the diagonal highlighted."""

from __future__ import annotations

from typing import Sequence

from textual.content import Content
from textual.widgets import Static

from w2c_tui.labels import LABELS
from w2c_tui.tui.formatting import label as short_label


def describe_matrix(matrix: Sequence[Sequence[int]] | None, labels: Sequence[str] = LABELS) -> str:
    if not matrix:
        return "[$text-muted]no predictions yet[/]"
    cell = max(5, max((len(f"{v:,}") for row in matrix for v in row), default=1) + 1)
    # Rows are gold labels, columns predictions; narrow enough to sit beside the requests at 80 columns.
    header = "gold".ljust(6) + "".join(short_label(l).rjust(cell) for l in labels) + "recall".rjust(7)
    lines = [f"[b]{header}[/b]"]
    for i, (name, row) in enumerate(zip(labels, matrix)):
        cells = []
        for j, value in enumerate(row):
            text = f"{value:,}".rjust(cell)
            if value == 0:
                cells.append(f"[$text-muted]{text}[/]")
            elif i == j:
                cells.append(f"[b $success]{text}[/]")
            else:
                cells.append(f"[$error]{text}[/]")
        total = sum(row)
        recall = f"{row[i] / total:.2f}" if total and i < len(row) else "–"
        lines.append(f"{short_label(name).ljust(6)}{''.join(cells)}{recall.rjust(7)}")
    return "\n".join(lines)


class ConfusionMatrix(Static):
    DEFAULT_CSS = """
    ConfusionMatrix { height: auto; padding: 0 1; }
    """

    def show(self, matrix: Sequence[Sequence[int]] | None, labels: Sequence[str] = LABELS) -> None:
        self.update(Content.from_markup(describe_matrix(matrix, labels)))
