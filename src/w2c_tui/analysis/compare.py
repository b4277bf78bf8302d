"""Paired comparison of sessions, per pipeline, on the examples they both answered.

For `w2c-tui compare` and the TUI Compare screen (which only display what this returns).
Sessions are read as `SessionRows` (session/rows.py); the numbers come from
`metrics/paired.py` and `metrics/classification.py`. Differences are B − A, where A is the
session named first and B the one named second.

Gold labels are each session's own (session/dataset.py): two sessions run on dataset
files that give an example different gold labels are compared on the examples they share,
the same uuid with the same gold label; the others are counted and named in the warning.
A session whose dataset file changed since its run, and whose rows do not hold the gold
labels it was scored with, is refused (CompareError, one line naming the file).

Which examples are compared (docs/metrics.md, "Comparing sessions"): an example counts as
answered by a pipeline when it has a row in that pipeline's primary checkpoint, as in
`metrics.json` (`metrics/compute.py`): an example without a row was not obtained
(`missing_prediction_uuid`) and is never scored, in either session; a row whose label is
not one of the four is the model's answer, scored as `cannot_answer` and counted. A judge
label that could not be read is left out as the session's figures leave it out (its
`judge_unreadable_as`; scored as `cannot_answer` under the earlier suite's rule, not counted
as coerced). A pair is compared on the examples both answered (and whose gold label is
known) with a readable label in both; the others are counted as dropped and a warning names them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Sequence

from w2c_tui.labels import LABELS
from w2c_tui.metrics.classification import classification_summary
from w2c_tui.metrics.paired import DEFAULT_RESAMPLES, discordant, holm, mcnemar_exact, paired_bootstrap, single_bootstrap
from w2c_tui.session.rows import SessionRows, load_session_rows

SIGN = "B − A"
COMPARED_EXAMPLES = (
    "examples answered in both sessions (a row in the pipeline's primary checkpoint, as in metrics.json) "
    "with a known gold label, the same in both (each session's own); an example without a row was not obtained and is dropped, never scored; "
    "an invalid label in a row is the model's answer, scored as cannot_answer; "
    "a judge label that could not be read is dropped (scored as cannot_answer where the session's judge_unreadable_as says so)"
)
RIGHT_TO_WRONG = "right→wrong"  # A right, B wrong
WRONG_TO_RIGHT = "wrong→right"  # A wrong, B right
BOTH_WRONG = "both wrong"


MAX_RESAMPLES = 100_000  # beyond, an interval's third decimal does not move; the wait does
SEED_MAX = 2**63 - 1  # numpy takes no negative seed


class CompareError(ValueError):
    """A session cannot be compared (one readable line)."""


def check_settings(n_resamples: int, seed: int) -> None:
    """CompareError (one line) for a number of resamples or a seed the bootstrap cannot take."""
    if not 1 <= n_resamples <= MAX_RESAMPLES:
        raise CompareError(f"--resamples must lie in 1..{MAX_RESAMPLES:,} (got {n_resamples:,})")
    if not 0 <= seed <= SEED_MAX:
        raise CompareError(f"--seed must lie in 0..2^63-1 (got {str(seed)[:24]})")


@dataclass(frozen=True)
class SessionRef:
    """A compared session, by its letter (A, B, C, …) and what identifies it."""

    name: str
    root: str
    run_key: str
    fingerprint: str
    target_model: str
    simulated: bool
    damaged: tuple[str, ...] = ()
    dataset_sha256: str | None = None  # as the manifest recorded it (None: not recorded)

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.name,
            "path": self.root,
            "run_key": self.run_key,
            "fingerprint": self.fingerprint,
            "target_model": self.target_model,
            "simulated": self.simulated,
            "damaged": list(self.damaged),
            "dataset_sha256": self.dataset_sha256,
        }


@dataclass(frozen=True)
class Disagreement:
    """One example the two sessions labelled differently in one pipeline."""

    uuid: str
    gold: str | None
    exp_name: str
    a: str | None
    b: str | None

    @property
    def flip(self) -> str:
        """right→wrong (A right, B wrong), wrong→right, or both wrong."""
        if self.a == self.gold and self.b != self.gold:
            return RIGHT_TO_WRONG
        if self.b == self.gold and self.a != self.gold:
            return WRONG_TO_RIGHT
        return BOTH_WRONG

    def to_json(self) -> dict[str, Any]:
        return {"uuid": self.uuid, "gold": self.gold, "a": self.a, "b": self.b}


@dataclass
class Answers:
    """One pipeline of one session: uuid -> (gold, label as scored), and how many labels were coerced."""

    labels: dict[str, tuple[str, str]]
    coerced: set[str]
    no_gold: set[str]  # rows whose gold label is unknown (not in the dataset, none in the row): not scorable
    # judge labels that could not be read, left out by the session's rule: uuid -> gold
    unreadable: dict[str, str] = field(default_factory=dict)


@dataclass
class PairedPipeline:
    """B − A for one pipeline of one pair of sessions."""

    exp_name: str
    a: SessionRef
    b: SessionRef
    n_common: int
    n_only_a: int  # answered in A only: dropped
    n_only_b: int
    n_no_gold: int
    n_gold_differs: int  # answered in both, with another gold label in each (different dataset files): dropped
    n_unreadable: int  # answered in both, a judge label could not be read in A or B (left out): dropped
    n_unreadable_a: int  # ... in A
    n_unreadable_b: int
    n_coerced_a: int  # invalid labels scored as cannot_answer, among the compared examples
    n_coerced_b: int
    accuracy_a: float | None
    accuracy_b: float | None
    macro_f1_a: float | None
    macro_f1_b: float | None
    delta_accuracy: float | None
    delta_accuracy_ci95: dict[str, Any] | None
    delta_macro_f1: float | None
    delta_macro_f1_ci95: dict[str, Any] | None
    mcnemar_p: float | None
    n_b_right_a_wrong: int
    n_a_right_b_wrong: int
    per_class_f1_a: dict[str, float]
    per_class_f1_b: dict[str, float]
    disagreements: list[Disagreement]
    mcnemar_p_holm: float | None = None  # set when the pair is one of several (3+ sessions)

    @property
    def delta_per_class_f1(self) -> dict[str, float]:
        if not self.n_common:
            return {}
        return {label: self.per_class_f1_b[label] - self.per_class_f1_a[label] for label in LABELS}

    @property
    def right_to_wrong(self) -> list[Disagreement]:
        return [d for d in self.disagreements if d.flip == RIGHT_TO_WRONG]

    @property
    def wrong_to_right(self) -> list[Disagreement]:
        return [d for d in self.disagreements if d.flip == WRONG_TO_RIGHT]

    @property
    def warning(self) -> str | None:
        """Said whenever the two example sets differ: the numbers cover fewer examples than either side."""
        if not (self.n_only_a or self.n_only_b or self.n_no_gold or self.n_gold_differs or self.n_unreadable):
            return None
        parts = []
        if self.n_only_a or self.n_only_b:
            parts.append(
                f"example sets differ: {self.n_only_a} answered only in {self.a.name}, "
                f"{self.n_only_b} only in {self.b.name}"
            )
        if self.n_no_gold:
            parts.append(f"{self.n_no_gold} without a known gold label")
        if self.n_gold_differs:
            parts.append(
                f"{self.n_gold_differs} with another gold label in {self.a.name} than in {self.b.name} "
                "(their dataset files differ)"
            )
        if self.n_unreadable:
            parts.append(
                f"{self.n_unreadable} unreadable judge label(s) ({self.n_unreadable_a} in {self.a.name}, "
                f"{self.n_unreadable_b} in {self.b.name}, out of their figures too)"
            )
        same = " with the same gold label" if self.n_gold_differs else ""
        readable = ", readable in both" if self.n_unreadable else ""
        return "; ".join(parts) + f" — dropped; compared on the {self.n_common} answered in both{same}{readable}"

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a.name,
            "b": self.b.name,
            "sign": SIGN,
            "n_common": self.n_common,
            "n_only_a": self.n_only_a,
            "n_only_b": self.n_only_b,
            "n_no_gold": self.n_no_gold,
            "n_gold_differs": self.n_gold_differs,
            "n_unreadable_a": self.n_unreadable_a,
            "n_unreadable_b": self.n_unreadable_b,
            "n_unreadable": self.n_unreadable,
            "n_coerced_a": self.n_coerced_a,
            "n_coerced_b": self.n_coerced_b,
            "warning": self.warning,
            "accuracy_a": self.accuracy_a,
            "accuracy_b": self.accuracy_b,
            "macro_f1_a": self.macro_f1_a,
            "macro_f1_b": self.macro_f1_b,
            "delta_accuracy": self.delta_accuracy,
            "delta_accuracy_ci95": self.delta_accuracy_ci95,
            "delta_macro_f1": self.delta_macro_f1,
            "delta_macro_f1_ci95": self.delta_macro_f1_ci95,
            "mcnemar_p": self.mcnemar_p,
            "mcnemar_p_holm": self.mcnemar_p_holm,
            "n_b_right_a_wrong": self.n_b_right_a_wrong,
            "n_a_right_b_wrong": self.n_a_right_b_wrong,
            "per_class_f1_a": self.per_class_f1_a,
            "per_class_f1_b": self.per_class_f1_b,
            "delta_per_class_f1": self.delta_per_class_f1,
            "right_to_wrong": [d.to_json() for d in self.right_to_wrong],
            "wrong_to_right": [d.to_json() for d in self.wrong_to_right],
        }


@dataclass
class PairComparison:
    a: SessionRef
    b: SessionRef
    pipelines: dict[str, PairedPipeline]  # exp_names present in both sessions, in A's order
    only_in_a: list[str] = field(default_factory=list)  # pipelines not compared
    only_in_b: list[str] = field(default_factory=list)

    @property
    def dataset_note(self) -> str | None:
        """Said when the two sessions ran on different dataset files (their manifests' sha256)."""
        a, b = self.a.dataset_sha256, self.b.dataset_sha256
        if a is None or b is None or a == b:
            return None
        return (
            f"{self.a.name} and {self.b.name} ran on different dataset files (sha256 {a[:12]}… and {b[:12]}…): "
            "compared on the examples with the same uuid and the same gold label in both"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a.name,
            "b": self.b.name,
            "sign": SIGN,
            "dataset_note": self.dataset_note,
            "pipelines": {name: p.to_json() for name, p in self.pipelines.items()},
            "pipelines_only_in_a": self.only_in_a,
            "pipelines_only_in_b": self.only_in_b,
        }


@dataclass
class LeaderboardRow:
    session: SessionRef
    n: int
    accuracy: float | None
    accuracy_ci95: dict[str, Any] | None
    macro_f1: float | None
    macro_f1_ci95: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session.name,
            "n": self.n,
            "accuracy": self.accuracy,
            "accuracy_ci95": self.accuracy_ci95,
            "macro_f1": self.macro_f1,
            "macro_f1_ci95": self.macro_f1_ci95,
        }


@dataclass
class Comparison:
    sessions: list[SessionRef]
    pairs: list[PairComparison]
    leaderboards: dict[str, list[LeaderboardRow]]  # 3+ sessions: per pipeline present in all, on the examples all answered
    n_resamples: int
    seed: int

    def to_json(self) -> dict[str, Any]:
        return {
            "sign": SIGN,
            "compared_examples": COMPARED_EXAMPLES,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "holm": "McNemar p-values adjusted over the pairwise comparisons of each pipeline" if len(self.sessions) > 2 else None,
            "sessions": [s.to_json() for s in self.sessions],
            "pairs": [p.to_json() for p in self.pairs],
            "leaderboards": {name: [row.to_json() for row in rows] for name, rows in self.leaderboards.items()},
        }


# -- reading ----------------------------------------------------------------------------


def session_name(index: int) -> str:
    """A, B, …, Z, then S27, S28 …"""
    return chr(ord("A") + index) if index < 26 else f"S{index + 1}"


def session_ref(rows: SessionRows, index: int) -> SessionRef:
    from w2c_tui.session.dataset import recorded_sha256

    info = rows.info
    return SessionRef(
        name=session_name(index),
        root=str(info.paths.root),
        run_key=info.run_key,
        fingerprint=info.fingerprint,
        target_model=info.target_model,
        simulated=bool(info.simulated),
        damaged=tuple(info.damaged),
        dataset_sha256=recorded_sha256(info.manifest),
    )


def load_sessions(roots: Sequence[Path | str]) -> list[SessionRows]:
    """Read each session folder; CompareError (one line) for a folder that is not a readable session. Blocking."""
    from w2c_tui.session.reader import NotASession, open_session
    from w2c_tui.session.dataset import DatasetFiles

    loaded = []
    files = DatasetFiles()  # sessions that name the same files parse them once (each keeps its own gold)
    for root in roots:
        try:
            info = open_session(Path(root))
        except NotASession as exc:
            raise CompareError(str(exc)) from None
        info.dataset.share_files(files)
        rows = load_session_rows(info)
        check_gold(rows)
        loaded.append(rows)
    return loaded


def check_gold(rows: SessionRows) -> None:
    """CompareError when some of the session's gold labels are known only from a dataset file
    changed since its run (scoring them would score the session against another benchmark)."""
    if rows.n_without_gold:
        raise CompareError(f"{rows.info.paths.root}: {rows.dataset_problem}")


def answers(rows: SessionRows, exp_name: str) -> Answers:
    """What one pipeline answered: only examples with a primary row; invalid labels coerced and
    counted; unreadable judge labels apart when the session's rule leaves them out."""
    primary = rows.primary.get(exp_name, {})
    labels: dict[str, tuple[str, str]] = {}
    coerced: set[str] = set()
    no_gold: set[str] = set()
    unreadable: dict[str, str] = {}
    for uuid in primary:
        example = rows.row(uuid)
        gold = example.gold if example is not None else None
        if gold is None:
            no_gold.add(uuid)
            continue
        label, was_coerced = rows.scored(exp_name, uuid)
        if label is None:  # an unreadable judge label, left out
            unreadable[uuid] = gold
            continue
        labels[uuid] = (gold, label)
        if was_coerced:
            coerced.add(uuid)
    return Answers(labels, coerced, no_gold, unreadable)


# -- comparing --------------------------------------------------------------------------


def shared_examples(per_session: Sequence[Answers]) -> tuple[list[str], list[str]]:
    """(uuids every session answered with the same gold label and a readable label, uuids all
    answered with different gold labels), sorted: each session is scored against its own gold,
    so only those are compared."""
    same, differs = [], []
    for uuid in _same_gold(per_session, differs):
        if all(uuid in a.labels for a in per_session):
            same.append(uuid)
    return same, differs


def _answered(answered: Answers) -> set[str]:
    """The examples with a row and a known gold label, whether or not the judge's label could be read."""
    return set(answered.labels) | set(answered.unreadable)


def _same_gold(per_session: Sequence[Answers], differs: list[str] | None = None) -> list[str]:
    """The uuids every session answered with the same gold label, sorted (the others to `differs`)."""
    same = []
    for uuid in sorted(set.intersection(*(_answered(a) for a in per_session))):
        golds = {a.labels[uuid][0] if uuid in a.labels else a.unreadable[uuid] for a in per_session}
        (same if len(golds) == 1 else differs if differs is not None else []).append(uuid)
    return same


def unreadable_shared(answers_a: Answers, answers_b: Answers) -> tuple[set[str], set[str]]:
    """The examples both answered with the same gold label whose judge label could not be read in A, in B."""
    both = set(_same_gold([answers_a, answers_b]))
    return both & answers_a.unreadable.keys(), both & answers_b.unreadable.keys()


def compare_pipeline(
    exp_name: str,
    a: SessionRef,
    b: SessionRef,
    answers_a: Answers,
    answers_b: Answers,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PairedPipeline:
    common, differs = shared_examples([answers_a, answers_b])
    unreadable_a, unreadable_b = unreadable_shared(answers_a, answers_b)
    gold = [answers_a.labels[u][0] for u in common]
    pred_a = [answers_a.labels[u][1] for u in common]
    pred_b = [answers_b.labels[u][1] for u in common]
    summary_a = classification_summary(gold, pred_a)
    summary_b = classification_summary(gold, pred_b)
    b_only, a_only = discordant(gold, pred_a, pred_b)
    intervals = paired_bootstrap(gold, pred_a, pred_b, n_resamples=n_resamples, seed=seed)
    n = len(common)
    found = [
        Disagreement(uuid, g, exp_name, la, lb) for uuid, g, la, lb in zip(common, gold, pred_a, pred_b) if la != lb
    ]
    return PairedPipeline(
        exp_name=exp_name,
        a=a,
        b=b,
        n_common=n,
        n_only_a=len(_answered(answers_a) - _answered(answers_b)),
        n_only_b=len(_answered(answers_b) - _answered(answers_a)),
        n_no_gold=len(answers_a.no_gold | answers_b.no_gold),
        n_gold_differs=len(differs),
        n_unreadable=len(unreadable_a | unreadable_b),
        n_unreadable_a=len(unreadable_a),
        n_unreadable_b=len(unreadable_b),
        n_coerced_a=sum(1 for u in common if u in answers_a.coerced),
        n_coerced_b=sum(1 for u in common if u in answers_b.coerced),
        accuracy_a=summary_a["accuracy"],
        accuracy_b=summary_b["accuracy"],
        macro_f1_a=summary_a["macro_f1"],
        macro_f1_b=summary_b["macro_f1"],
        delta_accuracy=(b_only - a_only) / n if n else None,
        delta_accuracy_ci95=intervals["delta_accuracy"],
        delta_macro_f1=summary_b["macro_f1"] - summary_a["macro_f1"] if n else None,
        delta_macro_f1_ci95=intervals["delta_macro_f1"],
        mcnemar_p=mcnemar_exact(b_only, a_only) if n else None,
        n_b_right_a_wrong=b_only,
        n_a_right_b_wrong=a_only,
        per_class_f1_a={label: c["f1"] for label, c in summary_a["per_class"].items()},
        per_class_f1_b={label: c["f1"] for label, c in summary_b["per_class"].items()},
        disagreements=found,
    )


def compare_pair(
    rows_a: SessionRows,
    rows_b: SessionRows,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    refs: tuple[SessionRef, SessionRef] | None = None,
    cache: dict[tuple[int, str], Answers] | None = None,
) -> PairComparison:
    """B − A for every pipeline the two sessions share."""
    a, b = refs or (session_ref(rows_a, 0), session_ref(rows_b, 1))
    cache = {} if cache is None else cache

    def answered(rows: SessionRows, exp_name: str) -> Answers:
        key = (id(rows), exp_name)
        if key not in cache:
            cache[key] = answers(rows, exp_name)
        return cache[key]

    shared = [name for name in rows_a.exp_names if name in rows_b.exp_names]
    pipelines = {
        name: compare_pipeline(
            name, a, b, answered(rows_a, name), answered(rows_b, name), n_resamples=n_resamples, seed=seed
        )
        for name in shared
    }
    return PairComparison(
        a,
        b,
        pipelines,
        only_in_a=[n for n in rows_a.exp_names if n not in rows_b.exp_names],
        only_in_b=[n for n in rows_b.exp_names if n not in rows_a.exp_names],
    )


def compare_sessions(
    sessions: Sequence[SessionRows], *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Comparison:
    """Every pair (A before B in the order given); with 3+ sessions, leaderboards and Holm-adjusted p-values."""
    if len(sessions) < 2:
        raise CompareError("compare needs at least two sessions")
    check_settings(n_resamples, seed)
    refs = [session_ref(rows, i) for i, rows in enumerate(sessions)]
    roots = [Path(r.root).resolve() for r in refs]
    if len(set(roots)) != len(roots):
        raise CompareError("the same session is given twice")
    cache: dict[tuple[int, str], Answers] = {}
    pairs = [
        compare_pair(sessions[i], sessions[j], n_resamples=n_resamples, seed=seed, refs=(refs[i], refs[j]), cache=cache)
        for i, j in combinations(range(len(sessions)), 2)
    ]
    leaderboards: dict[str, list[LeaderboardRow]] = {}
    if len(sessions) > 2:
        _adjust_holm(pairs)
        shared = [n for n in sessions[0].exp_names if all(n in s.exp_names for s in sessions[1:])]
        for name in shared:
            per_session = [cache.get((id(s), name)) or answers(s, name) for s in sessions]
            leaderboards[name] = _leaderboard(refs, per_session, n_resamples=n_resamples, seed=seed)
    return Comparison(refs, pairs, leaderboards, n_resamples, seed)


def _adjust_holm(pairs: list[PairComparison]) -> None:
    """Holm over the pairwise McNemar tests of each pipeline (the family: one pipeline, all pairs)."""
    names = {name for pair in pairs for name in pair.pipelines}
    for name in names:
        tested = [p.pipelines[name] for p in pairs if name in p.pipelines and p.pipelines[name].mcnemar_p is not None]
        for entry, adjusted in zip(tested, holm([e.mcnemar_p for e in tested])):
            entry.mcnemar_p_holm = adjusted


def _leaderboard(
    refs: list[SessionRef], per_session: list[Answers], *, n_resamples: int, seed: int
) -> list[LeaderboardRow]:
    """Each session's accuracy and macro-F1 on the examples every session answered, best accuracy first."""
    common, _ = shared_examples(per_session)
    rows = []
    for ref, answered in zip(refs, per_session):
        gold = [answered.labels[u][0] for u in common]
        pred = [answered.labels[u][1] for u in common]
        summary = classification_summary(gold, pred)
        intervals = single_bootstrap(gold, pred, n_resamples=n_resamples, seed=seed)
        rows.append(
            LeaderboardRow(ref, len(common), summary["accuracy"], intervals["accuracy"], summary["macro_f1"], intervals["macro_f1"])
        )
    return sorted(rows, key=lambda r: -(r.accuracy if r.accuracy is not None else -1.0))


def disagreements(rows_a: SessionRows, rows_b: SessionRows) -> list[Disagreement]:
    """Examples both sessions answered in a shared pipeline, labelled differently (no bootstrap)."""
    found = []
    for name in (n for n in rows_a.exp_names if n in rows_b.exp_names):
        answered_a, answered_b = answers(rows_a, name), answers(rows_b, name)
        for uuid in shared_examples([answered_a, answered_b])[0]:
            (gold, la), (_, lb) = answered_a.labels[uuid], answered_b.labels[uuid]
            if la != lb:
                found.append(Disagreement(uuid, gold, name, la, lb))
    return found
