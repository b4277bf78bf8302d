"""Cross-paradigm agreement within one session: do judge, MCQ and log-prob label alike?

For every pair of pipelines that produced labels (the selectable kinds of `session.kinds`;
stability sweeps are repeated runs of one of them, not another paradigm) and the examples
**both** obtained: the 4×4 table of labels (rows the first pipeline, columns the second,
both in LABELS order), Cohen's κ, percent agreement, n, and the examples they disagree on.

An example a pipeline did not obtain has no row in its primary checkpoint and is left out
of every pair with that pipeline. A row whose label is not one of the four is a prediction
coerced to `cannot_answer`, exactly as the metrics count it (docs/metrics.md §1); a judge
label that could not be read is left out as the session's figures leave it out (its
`judge_unreadable_as`), or scored as `cannot_answer` where that says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from w2c_tui.labels import LABELS
from w2c_tui.metrics.agreement import kappa_of_matrix
from w2c_tui.metrics.classification import Matrix, confusion_matrix
from w2c_tui.session import kinds
from w2c_tui.session.reader import SessionInfo
from w2c_tui.session.rows import SessionRows, load_session_rows


@dataclass(frozen=True)
class Disagreement:
    uuid: str
    gold: str | None  # None when the dataset and the rows do not say
    first: str  # the first pipeline's label
    second: str


@dataclass
class PairAgreement:
    first: str  # exp_name of the rows of `matrix`
    second: str  # exp_name of its columns
    matrix: Matrix
    disagreements: list[Disagreement] = field(default_factory=list)

    @property
    def n(self) -> int:
        return sum(sum(row) for row in self.matrix)

    @property
    def n_agree(self) -> int:
        return sum(self.matrix[i][i] for i in range(len(self.matrix)))

    @property
    def percent_agreement(self) -> float | None:
        """Share of the common examples with the same label (p_o), None when there are none."""
        return self.n_agree / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        return kappa_of_matrix(self.matrix)

    def to_json(self) -> dict[str, Any]:
        return {
            "first": self.first,
            "second": self.second,
            "n": self.n,
            "n_agree": self.n_agree,
            "percent_agreement": self.percent_agreement,
            "kappa": self.kappa,
            "matrix": {"labels": list(LABELS), "rows": self.first, "columns": self.second, "matrix": self.matrix},
            "n_disagreements": len(self.disagreements),
            "disagreements": [
                {"uuid": d.uuid, "gold": d.gold, self.first: d.first, self.second: d.second} for d in self.disagreements
            ],
        }


@dataclass
class SessionAgreement:
    pipelines: list[str]  # the pipelines that produced labels, in the session's order
    pairs: list[PairAgreement]

    def to_json(self) -> dict[str, Any]:
        return {"pipelines": self.pipelines, "pairs": [p.to_json() for p in self.pairs]}


def labelled_pipelines(rows: SessionRows) -> list[str]:
    """The session's pipelines whose kind gives one label per example (sweeps and unknown kinds aside)."""
    selectable = set(kinds.names())
    return [name for name in rows.exp_names if name in selectable]


def obtained_labels(rows: SessionRows, exp_name: str) -> dict[str, str]:
    """uuid -> label of every example the pipeline obtained, as the metrics score it (invalid
    labels coerced; an unreadable judge label left out when the session's rule says so)."""
    scored = {uuid: rows.scored(exp_name, uuid)[0] for uuid in rows.primary.get(exp_name, {})}
    return {uuid: label for uuid, label in scored.items() if label is not None}


def pair_agreement(rows: SessionRows, first: str, second: str, labels: dict[str, dict[str, str]] | None = None) -> PairAgreement:
    """The agreement of two pipelines over the examples both obtained (sorted by UUID)."""
    a = labels[first] if labels else obtained_labels(rows, first)
    b = labels[second] if labels else obtained_labels(rows, second)
    common = sorted(a.keys() & b.keys())
    matrix = confusion_matrix([a[u] for u in common], [b[u] for u in common])
    disagreements = [Disagreement(u, _gold(rows, u), a[u], b[u]) for u in common if a[u] != b[u]]
    return PairAgreement(first, second, matrix, disagreements)


def session_agreement(source: SessionRows | SessionInfo | Path) -> SessionAgreement:
    """Every pair of labelled pipelines of one session. Blocking (reads the rows unless given)."""
    rows = source if isinstance(source, SessionRows) else load_session_rows(source)
    names = labelled_pipelines(rows)
    labels = {name: obtained_labels(rows, name) for name in names}
    return SessionAgreement(names, [pair_agreement(rows, x, y, labels) for x, y in combinations(names, 2)])


def _gold(rows: SessionRows, uuid: str) -> str | None:
    row = rows.row(uuid)
    return row.gold if row is not None else None
