"""A session's documents as typed models: the manifest, a pipeline's metrics.json, its `_DONE.json`.

Every model keeps the keys it does not declare (`extra="allow"`), so nothing a file holds is
lost, and `document` is the file's JSON object as it was read (what `show --json` prints).
The reader (`session/reader.py`) checks the types first (`session/documents.py`: a wrongly
typed key is dropped and named as damage), so validating here never fails on a file; older
names are migrated in `model_validator`s, so readers never see which version wrote a file.

The metrics renderers (CLI `show`, the TUI's tables, exports) iterate the groups declared on
the fields (`Field(json_schema_extra={"group": ..., "label": ...})`): a new metric shown
beside the others is its computation plus one field here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Iterator, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

Number = Union[int, float]  # smart union: an int stays an int (counts), a float a float


@dataclass(frozen=True)
class Shown:
    """How a renderer shows one field of a document's group (declared with `shown`)."""

    key: str  # the field
    group: str
    label: str  # the TUI's column or title
    cli: str = ""  # `show`'s name for it, where its line has it
    paper: str = ""  # the exports' column title
    interval: bool = False  # a `<key>_ci95` goes with it
    count: bool = False  # a count (shown as written; `–` when absent), not a ratio


def shown(group: str, label: str, **more: Any) -> Any:
    """A field shown in `group` under `label` (see `Document.group`); `more`: the other `Shown` hints."""
    return Field(default=None, json_schema_extra={"group": group, "label": label, **more})


class Document(BaseModel):
    """One JSON object of a session; keys it does not declare are kept as they were."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    _document: dict[str, Any] = PrivateAttr(default_factory=dict)

    @classmethod
    def of(cls, document: dict[str, Any]) -> Any:
        """The model of a file's object. Never raises: a key of a type the model cannot take
        (the reader's checks name the ones that matter as damage) is left to `document` only."""
        try:
            model = cls.model_validate(document)
        except ValidationError as exc:
            wrong = {error["loc"][0] for error in exc.errors() if error["loc"]}
            model = cls.model_validate({k: v for k, v in document.items() if k not in wrong})
        model._document = document
        return model

    @classmethod
    def written(cls, document: dict[str, Any]) -> dict[str, Any]:
        """`document` unchanged once the model takes every key it declares: writers pass what
        they write through here, so a value the reader would drop fails where it is made."""
        cls.model_validate(document)
        return document

    @property
    def document(self) -> dict[str, Any]:
        """The object as read (key order kept) by `of`; a nested or built one: its keys as given
        (declared ones first; a renamed key under its new name)."""
        return self._document or self.model_dump(mode="json", exclude_unset=True)

    # The file's keys by name, as in the dict it was read from: for generic readers (a document
    # flattened for MLflow, tests that compare with the file). Typed readers use the attributes.
    def __getitem__(self, key: str) -> Any:
        return self.document[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.document.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.document

    def __len__(self) -> int:  # an empty document is falsy, as its dict was
        return len(self.document)

    def has(self, key: str) -> bool:
        """Whether the file held `key` (a key present with null counts)."""
        return key in self.model_fields_set or key in (self.model_extra or {})

    def extra(self, key: str, default: Any = None) -> Any:
        """A key no model declares (a newer version's, or the earlier suite's)."""
        return (self.model_extra or {}).get(key, default)

    @classmethod
    def group(cls, name: str) -> list[Shown]:
        """How to show every field declared in group `name`, in declaration order."""
        return [
            Shown(key, **extra)  # type: ignore[arg-type]
            for key, info in cls.model_fields.items()
            if isinstance(extra := info.json_schema_extra, dict) and extra.get("group") == name
        ]


# -- metrics.json --------------------------------------------------------------------------


class Interval(Document):
    """A 95% bootstrap interval (`accuracy_ci95`)."""

    low: Number | None = None
    high: Number | None = None
    n_boot: Any = None  # shown as written (the checks look at low and high only)


class Rate(Document):
    """A rate with what it is over (`tool_hallucination_rate`)."""

    rate: Number | None = None
    numerator: Number | None = None
    denominator: Number | None = None


class ClassScores(Document):
    """One label's scores in `per_class`."""

    precision: Number | None = shown("per_class", "prec")
    recall: Number | None = shown("per_class", "recall")
    f1: Number | None = shown("per_class", "F1")
    support: Number | None = shown("per_class", "gold", count=True)
    predicted: Number | None = shown("per_class", "pred", count=True)


class UsageCounts(Document):
    """Token usage the server reported (store/usage.Usage.as_dict), with its role in `by_model`."""

    requests: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    requests_without_usage: int = 0
    requests_implausible_usage: int = 0
    role: str | None = None


class SessionUsage(Document):
    """A finished session's usage beside its estimate (store/usage.session_usage)."""

    seconds: Number | None = None
    pipelines: dict[str, Any] = Field(default_factory=dict)
    total: UsageCounts | None = None
    by_model: dict[str, Any] = Field(default_factory=dict)
    cost: dict[str, Any] | None = None
    estimate: dict[str, Any] | None = None


class Cost(Document):
    """What a pipeline's tokens cost at the configured prices (store/usage.cost_of)."""

    input: Number | None = None
    output: Number | None = None
    total: Number | None = None
    priced_models: list[Any] = Field(default_factory=list)
    unpriced_models: list[Any] = Field(default_factory=list)
    lower_bound: bool = False  # a priced model has requests without usage


class ConfusionMatrix(Document):
    labels: list[str] | None = None
    matrix: list[list[Number]] | None = None


class OfficialRate(Rate):
    """The official block's tool hallucination rate, with its Wilson interval."""

    ci95: dict[str, Any] | None = None


class OfficialFigures(Document):
    """mcq_logprob's figures as NVIDIA's lm-eval task computes them (metrics/official.py), for a
    session in an official When2Call format."""

    family: str | None = None
    n: int | None = None
    n_unscored: int | None = None
    acc: Number | None = None
    acc_ci95: Interval | None = None
    acc_norm: Number | None = None
    acc_norm_ci95: Interval | None = None
    macro_f1: Number | None = None
    macro_f1_ci95: Interval | None = None
    macro_f1_labels: list[Any] | None = None
    macro_f1_no_direct: Number | None = None
    tool_hallucination_rate: OfficialRate | None = None


class Metrics(Document):
    """A pipeline's metrics.json (docs/metrics.md), or ours recomputed from its rows.

    Groups: `headline` (the summary line and table: `label` in the TUI, `cli` in `show`,
    `paper` in exports, `interval` when a `<key>_ci95` goes with it), `hallucination`
    (rates; exported as `<name>_hallucination_*`), `stability` (`cli`: also on `show`'s
    line). A field in no group is read by name only.
    """

    status: str | None = None
    exp_name: str | None = None
    origin: str | None = None
    primary_variant: str | None = None
    # Coverage: see `coverage` (older files had n_examples and n_missing_predictions only).
    n_planned: int | None = None
    n_obtained: int | None = None
    n_total: int | None = None
    n_examples: int | None = None
    n_missing_predictions: int | None = None
    n_invalid_labels: int | None = None
    # llm_judge and its sweeps: labels the judge gave unreadably, and the rule that counted them
    # ("left_out": out of every figure, n_total = the rest; "cannot_answer": the earlier suite's)
    n_unreadable_labels: int | None = None
    judge_unreadable_as: str | None = None
    n_string_fallback: int | None = None
    n_lcp_split: int | None = None
    complete: bool | None = None
    recomputed_from_rows: bool | None = None

    accuracy: Number | None = shown("headline", "acc", cli="acc", paper="accuracy", interval=True)
    macro_f1: Number | None = shown("headline", "F1", cli="macro_f1", paper="macro-F1", interval=True)
    macro_f1_4: Number | None = shown("headline", "F1₄", cli="f1_4", paper="macro-F1 (4)")
    macro_f1_no_direct: Number | None = shown("headline", "F1-dir", cli="f1_no_direct", paper="macro-F1 (no direct)")
    accuracy_ci95: Interval | None = None
    macro_f1_ci95: Interval | None = None
    macro_f1_labels: list[Any] | None = None
    per_class: dict[str, ClassScores] | None = None
    confusion_matrix: ConfusionMatrix | None = None

    tool_hallucination_rate: Rate | Number | None = shown("hallucination", "tool", paper="ToolHall")
    answer_hallucination_rate: Rate | Number | None = shown("hallucination", "answer", paper="AnswerHall")
    parameter_hallucination_rate: Rate | Number | None = shown("hallucination", "param", paper="ParamHall")

    # Stability sweeps (metrics/stability.py).
    k: int | None = shown("stability", "k", count=True)
    stability_at_k: Number | None = shown("stability", "stable@k", cli="stability@k")
    mean_consistency_at_k: Number | None = shown("stability", "consistency", cli="consistency")
    stable_correct_rate: Number | None = shown("stability", "stable ✓")
    stable_wrong_rate: Number | None = shown("stability", "stable ✗")
    mode_correct_rate: Number | None = shown("stability", "mode ✓")
    mean_accuracy_across_runs: Number | None = shown("stability", "mean acc")
    mean_entropy: Number | None = shown("stability", "entropy")
    mean_normalized_entropy: Number | None = shown("stability", "norm. entropy")
    mean_flip_rate: Number | None = shown("stability", "flip rate")

    variants: dict[str, "Metrics"] | None = None  # mcq_logprob's scoring variants, each its own metrics
    missing_as_cannot_answer: "Metrics | None" = None  # the earlier convention, beside ours
    judge_check: dict[str, Any] | None = None  # judge-check figures (metrics/judge_check.py)
    official: OfficialFigures | None = None  # the paper's figures, official-format mcq_logprob only
    cost: Cost | None = None

    # Renamed keys: the old name is read as the new one (sessions written before the rename).
    RENAMED: ClassVar[dict[str, str]] = {"param_hallucination_rate": "parameter_hallucination_rate"}

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, dict) and any(old in data and new not in data for old, new in cls.RENAMED.items()):
            data = dict(data)
            for old, new in cls.RENAMED.items():
                if old in data and new not in data:
                    data[new] = data[old]
        return data

    @property
    def coverage(self) -> tuple[int | None, int | None]:
        """(obtained, planned), also of a file written before n_planned/n_obtained existed."""
        planned = self.n_planned if self.has("n_planned") else self.n_examples
        obtained = self.n_obtained
        if obtained is None and isinstance(planned, int):
            obtained = planned - int(self.n_missing_predictions or 0)
        return obtained, planned

    @property
    def scored(self) -> bool:
        """Whether anything was scored (a file written before the first answer has no accuracy)."""
        return self.has("accuracy")

    @property
    def is_sweep(self) -> bool:
        return self.has("stability_at_k") or self.has("k")

    def interval(self, key: str) -> Interval | None:
        value = getattr(self, f"{key}_ci95", None)
        return value if isinstance(value, Interval) else None

    def class_scores(self, label: str) -> ClassScores:
        return (self.per_class or {}).get(label) or ClassScores()

    def values(self, group: str) -> Iterator[tuple[Shown, Any]]:
        """(how to show it, value) of `group`'s fields this document holds (null ones skipped)."""
        for field in self.group(group):
            value = getattr(self, field.key)
            if value is not None:
                yield field, value


def metrics_of(document: dict[str, Any] | None) -> Metrics | None:
    return Metrics.of(document) if document is not None else None


def as_metrics(metrics: Metrics | dict[str, Any] | None) -> Metrics:
    """A renderer's input as the model (a dict from code, or none: an empty document)."""
    if isinstance(metrics, Metrics):
        return metrics
    return Metrics.of(metrics) if metrics else Metrics()


# -- manifest.json ------------------------------------------------------------------------


class DatasetRecord(Document):
    """Where the session's When2Call file was (its readers check the values: hand-edited files)."""

    path: Any = None
    sha256: Any = None
    size_bytes: Any = None


class ServerIdentity(Document):
    model: str | None = None
    system_fingerprint: str | None = None
    server: str | None = None
    observed_at: str | None = None


class Manifest(Document):
    """A session's manifest.json (operations guide §5; written by engine/manifest.py and
    store/session.py). The earlier suite's holds a flat config (config.target_model)."""

    schema_version: int | None = None
    fingerprint: str | None = None
    run_key: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    resumed: int | None = None
    config: dict[str, Any] | None = None
    target_model: str | list[str] | None = None
    judge_model: str | None = None
    template_family: str | None = None
    exp_names: list[str] | None = None
    n_examples: int | None = None
    dataset: DatasetRecord | None = None
    simulated: bool | None = None
    endpoint: dict[str, Any] | None = None
    endpoints_used: list[Any] | None = None
    providers: Any = None
    w2c_tui_version: Any = None  # any value marks a session of ours (the earlier suite wrote none)
    server_version: Any = None
    estimate: Any = None
    logprob_probe: Any = None
    refused_pipelines: dict[str, Any] | None = None
    base_url: str | None = None
    server_identity: dict[str, Any] | None = None
    server_identity_changes: list[dict[str, Any]] | None = None

    def setting(self, section: str, key: str) -> Any:
        """A configured value: config.<section>.<key>, or the earlier suite's flat config.<key>."""
        config = self.config or {}
        table = config.get(section)
        return (table.get(key) if isinstance(table, dict) else None) or config.get(key)


def manifest_of(document: dict[str, Any] | None) -> Manifest | None:
    return Manifest.of(document) if document is not None else None


# -- _DONE.json ---------------------------------------------------------------------------


class DoneMarker(Document):
    """checkpoints/<exp>/_DONE.json: the pipeline finished (store/session.mark_done)."""

    exp_name: str | None = None
    finished_at: str | None = None
    n_examples: int | None = None
    fingerprint: str | None = None


Metrics.model_rebuild()


# -- session_summary.json ---------------------------------------------------------------


class PipelineSummary(BaseModel):
    """One pipeline as the reader last found it: its verdict over the rows (session/summary.py)."""

    model_config = ConfigDict(strict=True, extra="ignore")

    done_marker_found: bool  # `_DONE.json` exists
    done: bool  # ... and the rows bear it out
    status: str
    n_obtained: int | None = None
    n_planned: int | None = None
    metrics: dict[str, Any] | None  # metrics.json as checked, or recomputed from the rows
    reasons: list[str]  # why its files cannot be taken as written (damage)
    notes: list[str]  # shown differently from the files, without damage


class SessionSummary(BaseModel):
    """session_summary.json: what listing a session needs, and the sizes and mtimes of the files
    it was computed from (`inputs`: path under the session -> [size, mtime_ns, inode, ctime_ns]). Strict: a
    summary of any other shape is not used (`read` gives None), never half-trusted."""

    model_config = ConfigDict(strict=True, extra="ignore")

    SCHEMA_VERSION: ClassVar[int] = 2  # 2: inputs carry ctime_ns, the file its own digest (summary.py)

    schema_version: int
    written_at: str
    status: str
    n_examples: int | None = None
    inputs: dict[str, list[int]]
    pipelines: dict[str, PipelineSummary]

    @classmethod
    def read(cls, document: dict[str, Any]) -> "SessionSummary | None":
        """The model of a summary's object; None when it is not of this shape or version."""
        try:
            return cls._usable(cls.model_validate(document))
        except ValidationError:
            return None

    @classmethod
    def read_json(cls, data: bytes) -> "SessionSummary | None":
        """`read` of the file's bytes, parsed and checked in one pass (a listing reads hundreds)."""
        try:
            return cls._usable(cls.model_validate_json(data))
        except ValidationError:  # not JSON, cut, or another shape
            return None

    @classmethod
    def _usable(cls, summary: "SessionSummary") -> "SessionSummary | None":
        if summary.schema_version != cls.SCHEMA_VERSION or any(len(v) != 4 for v in summary.inputs.values()):
            return None
        return summary


# -- what the reader derives --------------------------------------------------------------


class ComparedMetric(Document):
    """The earlier suite's stored metric beside ours recomputed (session/earlier_suite.compare)."""

    key: str  # its name
    ours_key: str  # ours (a path into our metrics: "variants.raw.accuracy")
    stored: Number
    ours: Number
    differs: bool
    by_design: bool  # a known difference (the spec's "Defects")
    note: str  # why, when it differs by design


class MlflowIds(Document):
    """mlflow_ids.json: the MLflow runs a tracked session was logged to."""

    parent_run_id: str | None = None
    child_run_ids: dict[str, Any] | None = None
    logged: dict[str, Any] | None = None


class AuditSummary(Document):
    """A pipeline's audit counts (store/audit.summarize): events still outstanding, and resolved by a resume."""

    total_events: int = 0
    n_uuids_affected: int = 0
    by_fallback_type: dict[str, int] = Field(default_factory=dict)
    by_stage: dict[str, int] = Field(default_factory=dict)
    by_severity: dict[str, int] = Field(default_factory=dict)
    forced_fallback_events: int = 0
    forced_fallback_uuids: int = 0
    resolved_by_resume: dict[str, int] = Field(default_factory=dict)
    n_resolved_events: int = 0
    n_outstanding_missing: int = 0
    history_total_events: int = 0

    @property
    def outstanding_problems(self) -> int:
        """Outstanding warnings and errors: an info note (the pacing summary, the logprob split
        chosen) records how the run went, nothing left to look at."""
        return sum(n for severity, n in self.by_severity.items() if severity != "info")

    @property
    def info_notes(self) -> int:
        return self.by_severity.get("info", 0)
