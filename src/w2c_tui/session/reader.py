"""The one reader of a session folder, for `sessions`, `show`, exports and the TUI.

It turns a folder (ours of any schema version, or the earlier suite's layout) into a
`SessionInfo`: the manifest as a `Manifest`, each pipeline's metrics as `Metrics` (checked
against its rows; the earlier suite's recomputed by our formulas), and what cannot be read
as `damaged` reasons. Which layout a session has is decided here once (`SessionInfo.earlier`).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

from w2c_tui.session import earlier_suite, kinds
from w2c_tui.session import summary as summary_file
from w2c_tui.session.dataset import SessionDataset
from w2c_tui.session.documents import check_manifest, check_metrics, disagreement
from w2c_tui.session.models import DoneMarker, Manifest, Metrics, MlflowIds, PipelineSummary, manifest_of, metrics_of
from w2c_tui.status import COMPLETE, FAILED, PARTIAL, REFUSED, normalize, session_status
from w2c_tui.store.jsonl import BadLine, read_document, read_keyed
from w2c_tui.store.layout import METRICS_FILE, SessionPaths

_UNSET: Any = object()

# A session none of whose pipelines could be read (operations guide §11a).
DAMAGED = "damaged"


@dataclass
class _Verdict:
    """What a pipeline's files say once checked against its rows (computed once, see PipelineInfo)."""

    done: bool
    document: dict[str, Any] | None  # metrics.json as checked, or ours recomputed from the rows

    @cached_property
    def metrics(self) -> Metrics | None:
        """The document as the model, built on first use (a listing needs only the status)."""
        return metrics_of(self.document)


class PipelineInfo:
    """One pipeline of a session as read: its done marker, metrics and rows.

    Rows on disk are the truth: the first read of `done`, `metrics`, `status` or `reasons`
    checks metrics.json and `_DONE.json` against them once (`_verdict`), and every later
    read returns that verdict. The earlier suite's pipelines have no metrics.json: theirs
    are ours recomputed from its rows, once, on first use (or in `SessionInfo.warm`).
    """

    def __init__(
        self,
        exp_name: str,
        done: bool,
        metrics: dict[str, Any] | None = None,
        *,
        paths: SessionPaths | None = None,
        manifest: Manifest | None = None,
        origin: str = earlier_suite.ORIGIN_OURS,
        stored: dict[str, Any] | None = None,
        planned: Callable[[], set[str]] | None = None,
        dataset: SessionDataset | None = None,
        reasons: list[str] | None = None,
    ) -> None:
        self.exp_name = exp_name
        self.done_marker_found = done  # `_DONE.json` exists (whether the rows bear it out: `done`)
        self.paths = paths
        self._manifest = manifest
        self.origin = origin
        self.earlier = origin == earlier_suite.ORIGIN_EARLIER  # decided once, by the reader
        self.stored = stored  # the earlier suite's own {"header", "metrics"}
        self._planned = planned  # earlier suite: the UUIDs its session was run on
        self._dataset = dataset  # the session's, shared by its pipelines
        self._stored_metrics = metrics  # metrics.json as read and type-checked (ours)
        self._rows: dict[str, dict[str, Any]] | None = None
        self._audit: dict[str, Any] | None = None
        self._done_record: Any = _UNSET
        self._verdict_: _Verdict | None = None
        self._earlier_metrics: Any = _UNSET
        self._reasons = list(reasons or [])  # why this pipeline's files cannot be taken as written
        self.notes: list[str] = []  # what is shown differently from the files, without damage

    @property
    def _verdict(self) -> _Verdict:
        if self._verdict_ is None:
            self._verdict_ = self._check()
        return self._verdict_

    @property
    def done(self) -> bool:
        """Finished: `_DONE.json` written and the rows it counts on disk."""
        return self._verdict.done

    @property
    def verdict_document(self) -> dict[str, Any] | None:
        """metrics.json as checked against the rows, or recomputed from them (what a summary keeps)."""
        return self._verdict.document

    @classmethod
    def summarised(cls, exp_name: str, summary: PipelineSummary, **context: Any) -> "PipelineInfo":
        """The pipeline as a fresh session_summary.json found it: its verdict without reading the rows
        (they are still read when asked for: `rows`, `audit_summary`)."""
        pipeline = cls(exp_name, summary.done_marker_found, summary.metrics, reasons=summary.reasons, **context)
        pipeline._verdict_ = _Verdict(summary.done, summary.metrics)
        pipeline.notes = list(summary.notes)
        return pipeline

    @property
    def reasons(self) -> list[str]:
        """What is damaged or stale in this pipeline's files (checked against the rows once)."""
        self._verdict  # noqa: B018 - the check adds its reasons
        return self._reasons

    def _check(self) -> _Verdict:
        """`_DONE.json` without its rows is partial; metrics.json that does not describe the rows
        is recomputed from them (a stale one is damage, one behind a run in progress a note)."""
        done = self.done_marker_found
        if self.earlier:
            return _Verdict(done, None)  # its metrics: `_earlier_suite_metrics`
        stored = self._stored_metrics
        n_rows = len(self.rows)
        done_says = self.done_record.n_examples if self.done_record else None
        if done and (n_rows == 0 or (isinstance(done_says, int) and n_rows < done_says)):
            done = False
            self._reasons.append(f"_DONE.json says done, the checkpoint holds {n_rows} rows: partial")
        if stored is None and not self._reasons:
            return _Verdict(done, None)  # no metrics.json yet (a pipeline still running): nothing to compare
        kind = kinds.kind_of(self.exp_name)
        labels = [kinds.label_of(self.exp_name, row) for row in self.rows.values()]
        stale = disagreement(stored, labels, check_labels=kind is not None and kind.summary is None) if stored else None
        if stored is not None and not stale and not self._reasons:
            return _Verdict(done, stored)
        metrics = self._recomputed(stored)
        counted = (stored or {}).get("n_obtained")
        if stale and not self._reasons and isinstance(counted, int) and counted < n_rows:
            # Rows written after metrics.json (a run in progress, or one stopped before finalizing): not damage.
            self.notes.append(f"metrics.json counts {counted} rows, the checkpoint holds {n_rows}: shown recomputed from the rows")
        else:
            self._reasons.append(f"stale, recomputed from the rows: {stale}" if stale else "metrics recomputed from the rows")
        return _Verdict(done, metrics)

    def _recomputed(self, stored: dict[str, Any] | None) -> dict[str, Any] | None:
        """Metrics from the checkpoint rows, planned as metrics.json or `_DONE.json` said."""
        if self.paths is None:
            return stored
        planned = next(
            (n for n in ((stored or {}).get("n_planned"), self.done_record.n_examples if self.done_record else None) if isinstance(n, int)),
            None,
        )
        try:
            metrics = earlier_suite.recompute(self._manifest, self.paths, self.exp_name, self.rows, examples_from=self._dataset)
        except Exception as exc:  # noqa: BLE001 - rows of any shape: say so instead of failing the reader
            self._reasons.append(f"rows could not be scored ({type(exc).__name__}: {exc})")
            return None
        if metrics is None:
            self._reasons.append("dataset not found: metrics cannot be recomputed")
            return None
        metrics.pop("origin", None)
        if planned is not None and planned >= int(metrics.get("n_obtained") or 0):
            metrics["n_planned"] = planned
            metrics["n_missing_predictions"] = planned - int(metrics.get("n_obtained") or 0)
        metrics["recomputed_from_rows"] = True
        return metrics

    @property
    def done_record(self) -> DoneMarker | None:
        """The pipeline's `_DONE.json` (None when absent or unusable), read once."""
        if self._done_record is _UNSET:
            document = read_document(self.paths.done_file(self.exp_name))[0] if self.paths else None
            self._done_record = DoneMarker.of(document) if document is not None else None
        return self._done_record

    @property
    def rows(self) -> dict[str, dict[str, Any]]:
        """uuid -> row of the primary checkpoint (read once)."""
        if self._rows is None:
            from w2c_tui.session.checkpoints import primary_file

            bad: list[BadLine] = []
            try:
                path = primary_file(self.paths.root, self.exp_name) if self.paths else None
                self._rows = read_keyed(path, on_bad=bad.append) if path else {}
            except OSError as exc:
                self._rows = {}
                self._reasons.append(f"checkpoint unreadable ({exc.strerror or exc})")
            if bad:  # a line no row could be read from is said, as a resume audits it
                self.notes.append(_bad_lines_note(bad))
        return self._rows

    @property
    def metrics(self) -> Metrics | None:
        """metrics.json as checked (ours), or ours recomputed from the rows (the earlier suite's)."""
        if self.earlier:
            return self._earlier_suite_metrics()
        return self._verdict.metrics

    def _earlier_suite_metrics(self) -> Metrics | None:
        if self._earlier_metrics is _UNSET:
            self._earlier_metrics = None
            if self.paths is not None:
                planned = self._planned() if self._planned else None
                self._earlier_metrics = metrics_of(
                    earlier_suite.recompute(self._manifest, self.paths, self.exp_name, self.rows, planned, examples_from=self._dataset)
                )
        return self._earlier_metrics

    @property
    def status(self) -> str:
        if self.done:
            return COMPLETE
        stored = (self._verdict.document or {}).get("status")
        return normalize(stored) if stored else PARTIAL

    @property
    def n_planned(self) -> int | None:
        if self.earlier:
            return len(self._planned()) if self._planned else len(self.rows)
        return self.metrics.coverage[1] if self.metrics else None

    @property
    def comparison(self) -> list[dict[str, Any]]:
        """Earlier suite only: its stored metrics against ours recomputed."""
        if not self.earlier:
            return []
        return earlier_suite.compare(self.stored, self.metrics.document if self.metrics else None)

    @property
    def audit_summary(self) -> dict[str, Any]:
        """Audit counts from the events and rows on disk: outstanding, and resolved by a resume."""
        if self._audit is None:
            from w2c_tui.store.audit import read_events, summarize

            try:
                events = read_events(self.paths.audit_file(self.exp_name)) if self.paths else []
            except OSError as exc:
                events = []
                self._reasons.append(f"audit file unreadable ({exc.strerror or exc})")
            self._audit = summarize(events, self.rows.keys())
        return self._audit


def _bad_lines_note(bad: list[BadLine]) -> str:
    """The checkpoint lines that are no row, in one line: the file, their numbers, the first's reason."""
    first = bad[0]
    if len(bad) == 1:
        what = "cut short (a write killed mid-line)" if first.torn else f"not a JSON row ({first.reason})"
        return f"{first.path.name} line {first.line:,}: {what}; skipped, not counted"
    numbers = ", ".join(f"{b.line:,}" for b in bad[:5]) + (f" and {len(bad) - 5:,} more" if len(bad) > 5 else "")
    return f"{first.path.name}: {len(bad):,} lines are no JSON row (lines {numbers}; line {first.line:,}: {first.reason}); skipped, not counted"


@dataclass
class SessionInfo:
    paths: SessionPaths
    manifest: Manifest | None
    pipelines: list[PipelineInfo] = field(default_factory=list)
    origin: str = earlier_suite.ORIGIN_OURS
    # Why parts of it cannot be read as written ("manifest.json: not JSON"); see `damaged`.
    problems: list[str] = field(default_factory=list)
    # Its When2Call examples, resolved once for every reader of this session.
    dataset: SessionDataset = field(init=False, repr=False)
    # Read from the rows: the sizes, mtimes, inodes and ctimes of the files read (session/summary.py), taken
    # before reading them, so a summary can be written; None when read from a fresh summary.
    inputs: dict[str, list[int]] | None = field(default=None, repr=False)
    # Read from a fresh summary: the inputs it vouched for (a later listing reuses this record
    # while they hold: `_listed`).
    summary_inputs: dict[str, list[int]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # Gold labels are the session's own: those its rows stored (session/dataset.py).
        self.dataset = SessionDataset(self.manifest, self.paths.root, stored_gold=self._stored_gold)

    @property
    def earlier(self) -> bool:
        """Written by the earlier script suite (decided once, when the session was read)."""
        return self.origin == earlier_suite.ORIGIN_EARLIER

    @property
    def manifest_json(self) -> dict[str, Any] | None:
        """manifest.json's object as read (its keys checked), for JSON output and dict readers."""
        return self.manifest.document if self.manifest is not None else None

    def _stored_gold(self) -> dict[str, str]:
        """Row key -> the gold label the session's rows stored when it ran (the first pipeline's wins)."""
        from w2c_tui.labels import LABELS

        found: dict[str, str] = {}
        for pipeline in self.pipelines:
            for key, row in pipeline.rows.items():
                label = row.get("gold_label") if isinstance(row, dict) else None
                if label in LABELS:
                    found.setdefault(key, label)
        return found

    @property
    def run_key(self) -> str:
        return self.paths.run_key

    @property
    def damaged(self) -> list[str]:
        """Every reason this session is damaged, its pipelines' included ([] when it reads cleanly)."""
        return self.problems + [f"{p.exp_name}: {reason}" for p in self.pipelines for reason in p.reasons]

    @property
    def unreadable(self) -> bool:
        """Nothing of it could be read: no manifest and no pipeline, but a reason."""
        return bool(self.problems) and self.manifest is None and not self.pipelines

    @property
    def fingerprint(self) -> str:
        return self.paths.fingerprint

    def _config(self, section: str, key: str) -> Any:
        return self.manifest.setting(section, key) if self.manifest is not None else None

    @property
    def target_model(self) -> str:
        value = (self.manifest.target_model if self.manifest else None) or self._config("models", "target_model")
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        return str(value or "?")

    @property
    def judge_model(self) -> str:
        return str((self.manifest.judge_model if self.manifest else None) or self._config("models", "judge_model") or "")

    @property
    def created_at(self) -> str:
        return str((self.manifest.created_at if self.manifest else None) or "")

    @property
    def refused(self) -> dict[str, str]:
        """Pipelines the capability probe refused (never run, so no folder): name -> reason."""
        refused = (self.manifest.refused_pipelines if self.manifest else None) or {}
        ran = {p.exp_name for p in self.pipelines}
        return {str(k): str(v) for k, v in refused.items() if k not in ran}

    def summary_pipelines(self) -> list[tuple[str, str, Metrics | None]]:
        """(name, status, metrics) of every pipeline, refused ones included, for summary tables."""
        return [(p.exp_name, p.status, p.metrics) for p in self.pipelines] + [(n, "refused", None) for n in self.refused]

    @property
    def mlflow_ids(self) -> MlflowIds:
        """The MLflow run ids written when the session was tracked (none set when it was not)."""
        from w2c_tui.store.session import read_mlflow_ids

        return MlflowIds.of(read_mlflow_ids(self.paths))

    @property
    def simulated(self) -> bool:
        """The embedded simulator, or a standalone `w2c-tui sim` as a provider (its answers say so)."""
        from w2c_tui.session.simulated import is_simulator

        return bool(self.manifest and (self.manifest.simulated or is_simulator(self.manifest.server_identity)))

    @property
    def n_examples(self) -> int | None:
        """Examples planned per pipeline."""
        value = self.manifest.n_examples if self.manifest else None
        if isinstance(value, int):
            return value
        counts = [p.n_planned for p in self.pipelines]
        return max((c for c in counts if isinstance(c, int)), default=None)

    @property
    def status(self) -> str:
        if self.problems and not self.pipelines:  # e.g. checkpoints/ that cannot be listed
            return DAMAGED
        if self.manifest is None and not self.pipelines:
            return FAILED
        return session_status([*(p.status for p in self.pipelines), *(REFUSED for _ in self.refused)])

    def warm(self) -> "SessionInfo":
        """Compute what is computed lazily (the earlier suite's metrics), e.g. in a thread worker."""
        for pipeline in self.pipelines:
            pipeline.metrics  # noqa: B018 - evaluated for its cache
        return self

    def summary(self) -> dict[str, Any]:
        return {
            "run_key": self.run_key,
            "fingerprint": self.fingerprint,
            "path": str(self.paths.root),
            "origin": self.origin,
            "target_model": self.target_model,
            "judge_model": self.judge_model,
            "status": self.status,
            "created_at": self.created_at,
            "n_examples": self.n_examples,
            "simulated": self.simulated,
            "pipelines": {p.exp_name: p.status for p in self.pipelines},
            "damaged": self.damaged,
        }


def read_session(root: Path, *, use_summary: bool = False) -> SessionInfo:
    """One session as far as it can be read; what cannot be is in `damaged`, never raised.
    `use_summary`: take the pipelines' verdicts from a fresh session_summary.json (listings)."""
    paths = SessionPaths(Path(root))
    try:
        return _read_session(paths, use_summary)
    except Exception as exc:  # noqa: BLE001 - one session's damage must not hide the others
        return SessionInfo(paths, None, problems=[f"unreadable: {type(exc).__name__}: {exc}"])


class NotASession(ValueError):
    """A folder a user named is no readable session (one line saying why)."""


def open_session(root: Path) -> SessionInfo:
    """`read_session` of a folder a user named on the command line: NotASession when it is
    missing, no session, or damaged beyond reading; a session damaged in part is returned."""
    root = Path(root)
    if not root.is_dir():
        raise NotASession(f"{root}: no such session folder (expected runs/<RUN_KEY>/sessions/<FINGERPRINT>)")
    info = read_session(root)
    if info.unreadable:
        raise NotASession(f"{root}: damaged session: {'; '.join(info.damaged)}")
    if info.manifest is None and not info.pipelines:
        raise NotASession(f"{root}: not a session folder (no manifest.json and no checkpoints/)")
    return info


def _read_session(paths: SessionPaths, use_summary: bool = False) -> SessionInfo:
    problems: list[str] = []
    manifest, reason = read_document(paths.manifest)
    problems += [reason] if reason else []
    if manifest is not None:
        manifest, reasons = check_manifest(manifest)
        problems += reasons
    manifest = manifest_of(manifest)
    exp_names = _exp_names(paths, problems)
    # Which layout the session has is decided here, once: readers ask `info.earlier`.
    origin = earlier_suite.ORIGIN_EARLIER if earlier_suite.is_earlier_suite(paths, manifest) else earlier_suite.ORIGIN_OURS
    info = SessionInfo(paths, manifest, origin=origin, problems=problems)
    if origin == earlier_suite.ORIGIN_OURS:  # the earlier suite's folders get no summary (we never write there)
        fresh = summary_file.load_fresh(paths, exp_names) if use_summary else None
        if fresh is not None:
            for exp_name, verdict in fresh.pipelines.items():
                info.pipelines.append(
                    PipelineInfo.summarised(exp_name, verdict, paths=paths, manifest=manifest, dataset=info.dataset)
                )
            info.summary_inputs = fresh.inputs
            return info
        info.inputs = summary_file.snapshot(paths, exp_names)  # before the files are read: a change meanwhile shows

    def planned() -> set[str]:
        return set().union(*(p.rows.keys() for p in info.pipelines))

    for exp_name in exp_names:
        done = paths.done_file(exp_name).exists()
        if origin == earlier_suite.ORIGIN_EARLIER:
            pipeline = PipelineInfo(
                exp_name, done, paths=paths, manifest=manifest, origin=origin,
                stored=earlier_suite.read_stored(paths, exp_name), planned=planned, dataset=info.dataset,
            )
        else:
            metrics, reason = read_document(paths.artifacts(exp_name) / METRICS_FILE)
            reasons = [reason] if reason else []
            if metrics is not None:
                metrics, wrong = check_metrics(metrics)
                if wrong:  # scored again from the rows rather than shown with holes
                    reasons += wrong
                    metrics = None
            pipeline = PipelineInfo(
                exp_name, done, metrics, paths=paths, manifest=manifest, dataset=info.dataset, reasons=reasons
            )
        info.pipelines.append(pipeline)
    return info


def _exp_names(paths: SessionPaths, problems: list[str]) -> list[str]:
    """The pipeline folders under checkpoints/; a folder that cannot be listed is a reason."""
    folder = paths.root / "checkpoints"
    if not folder.exists():
        return []
    if not folder.is_dir():
        problems.append("checkpoints: a file where a folder belongs")
        return []
    try:
        return sorted(p.name for p in folder.iterdir() if p.is_dir())
    except OSError as exc:
        problems.append(f"checkpoints: unreadable ({exc.strerror or exc})")
        return []


def session_started(root: Path) -> bool:
    """Whether a launch got as far as writing the session's manifest."""
    return SessionPaths(Path(root)).manifest.exists()


def list_sessions(workdir: Path, *, warm: bool = False) -> list[SessionInfo]:
    """Every runs/<RUN_KEY>/sessions/<FP> under the workdir, newest first (`warm`: see SessionInfo.warm).

    A session with a fresh session_summary.json is read from it; one read from its rows gets
    a summary written for the next listing where that is allowed (session/summary.py)."""
    runs = Path(workdir) / "runs"
    sessions = []
    if runs.is_dir():
        found = _session_dirs(runs)
        _forget_gone(runs, found)
        for session_dir in found:
            with _reading(session_dir):  # two listings at once: the second reuses the first's read
                info = _listed(session_dir)
                if info is None:
                    info = read_session(session_dir, use_summary=True)
                    _summarise(info)
                    if not info.earlier:  # never a write in the earlier suite's folders
                        summary_file.remove_leftovers_of(session_dir)
                info = _warmed(info) if warm else info
                if info.summary_inputs is not None:
                    with _LISTED_LOCK:
                        _LISTED[session_dir] = info
            sessions.append(info)
    sessions.sort(key=lambda s: (s.created_at, s.run_key), reverse=True)
    return sessions


# Sessions a listing read from a fresh summary, by folder: the next listing (the app scans again
# on reload, on returning to its Sessions screen, and several times as it starts) reuses the
# record while every input the summary vouched for is unchanged (their sizes, mtimes, inodes and ctimes
# are all it reads).
_LISTED: dict[Path, SessionInfo] = {}
_LISTED_LOCK = threading.Lock()  # guards the two maps
_READING: dict[Path, threading.Lock] = {}  # one listing reads a session at a time


def _reading(session_dir: Path) -> threading.Lock:
    with _LISTED_LOCK:
        return _READING.setdefault(session_dir, threading.Lock())


def _forget_gone(runs: Path, found: list[Path]) -> None:
    """Drop the records of sessions under `runs` that are gone (deleted, moved)."""
    present = set(found)
    with _LISTED_LOCK:
        for key in [k for k in _LISTED if k not in present and k.parents[2] == runs]:
            del _LISTED[key]
            _READING.pop(key, None)


def _listed(session_dir: Path) -> SessionInfo | None:
    with _LISTED_LOCK:
        info = _LISTED.get(session_dir)
    if info is None or info.summary_inputs is None:
        return None
    exp_names = [p.exp_name for p in info.pipelines]
    try:
        with os.scandir(session_dir / "checkpoints") as entries:
            found = sorted(entry.name for entry in entries if entry.is_dir())
    except OSError:
        found = None
    if found != exp_names or summary_file.snapshot(info.paths, exp_names) != info.summary_inputs:
        with _LISTED_LOCK:
            _LISTED.pop(session_dir, None)
        return None
    return info


def _session_dirs(runs: Path) -> list[Path]:
    """runs/*/sessions/* folders; a run folder that cannot be listed is skipped, not fatal."""
    found = []
    try:
        run_dirs = sorted(runs.iterdir())
    except OSError:
        return []
    for run_dir in run_dirs:
        try:
            found += [d for d in (run_dir / "sessions").iterdir() if d.is_dir()]
        except OSError:
            continue  # no sessions/ folder, or one that cannot be read
    return found


def save_summary(info: SessionInfo) -> bool:
    """Write session_summary.json of a session read from its rows (its verdicts computed here if
    not yet); False when it was not written. Never raises: the summary is a cache."""
    if info.inputs is None or info.earlier or not info.pipelines:
        return False
    pipelines = {}
    for p in info.pipelines:
        obtained, planned = p.metrics.coverage if p.metrics else (None, None)
        pipelines[p.exp_name] = PipelineSummary(
            done_marker_found=p.done_marker_found,
            done=p.done,
            status=p.status,
            n_obtained=obtained if isinstance(obtained, int) else None,
            n_planned=planned if isinstance(planned, int) else None,
            metrics=p.verdict_document,
            reasons=list(p.reasons),
            notes=list(p.notes),
        )
    try:
        document = summary_file.document(info.status, info.n_examples, pipelines, info.inputs)
        return summary_file.save(info.paths, document, info.inputs)
    except Exception:  # noqa: BLE001 - a cache that cannot be written must not fail a listing or a run
        return False


def _summarise(info: SessionInfo) -> None:
    """Write the summary of a session just read from its rows, where a listing may."""
    if summary_file.may_write(info.paths.root):
        save_summary(info)


def _warmed(info: SessionInfo) -> SessionInfo:
    try:
        return info.warm()
    except Exception as exc:  # noqa: BLE001 - a session whose files fail late still lists
        info.problems.append(f"unreadable: {type(exc).__name__}: {exc}")
        return info
