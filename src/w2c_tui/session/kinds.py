"""The pipeline kinds as data: one description per kind, asked by everyone else.

A kind states its name, endpoint, checkpoint files (primary first) with their row fields,
how a label is read from a primary row, how its sweeps are named, what it costs per
example, whether it needs prompt log-probabilities and how its calls read in the Trace
screen. Plan, runner, finalize, launch, capabilities, the session reader, the estimate and
the Trace screen ask this module; nothing else matches kind names.

Only the data half lives here, because the session reader and config (below the
pipelines) need file names and label fields of every kind. The code half (pipeline class,
prompt measure, sweep run) is declared by each pipeline class itself (`kind` and its
methods, `pipelines/base.py`); `pipelines/catalog.py` lists those classes. The file names
come from `store.layout`, the one place that names session files.

A new kind is its pipeline class (carrying a `Kind`) plus `pipelines.catalog.register`.

Words, one per thing, in code and docs:
- **exp_name**: one pipeline run of a session, the name of its checkpoints/ folder and of its
  entry in the manifest's `exp_names`: a kind's name (`mcq`), or a sweep's
  `stability_<method>_k=<k>_T=<t>`.
- **kind**: what a run does (a `Kind` here); **method**: the kind a sweep repeats.
- **pipeline**: the class that runs a kind (`pipelines/`), and the user's word for a run. The
  `pipeline` key of call records and audit events is the call's stage (target, judge,
  run3-judge), kept under the earlier suite's name; in code it is `stage`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from w2c_tui.store.layout import (
    JUDGE_CHECK_LABELS,
    JUDGE_DECISIONS,
    LOGPROB_DEBUG,
    LOGPROB_PREDICTIONS,
    MCQ_PREDICTIONS,
    PREFERENCE_CALLS,
    TARGET_RESPONSES,
)
from w2c_tui.store.layout import stability_exp_name as sweep_exp_name  # noqa: F401 - the registry's name for it

CHAT = "/chat/completions"
COMPLETIONS = "/completions"

#: a sweep's exp_name: stability_<method>_k=<k>_T=<temperature>
SWEEP_SELECTOR = "stability"
_SWEEP_NAME = re.compile(r"^stability_(?P<method>.+)_k=(?P<k>\d+)_T=(?P<t>[0-9.]+)$")

@dataclass(frozen=True)
class CheckpointFile:
    """One JSONL file under checkpoints/<exp_name>/; "{exp_name}" in `name` is filled in."""

    name: str
    fields: tuple[str, ...] = ()  # the row schema (fields every row carries)
    per_uuid: bool = True  # False: several rows per UUID (e.g. one per answer choice)
    trace_role: str = ""  # what the Trace screen shows it as ("target", "choices"), "" for none

    def file_name(self, exp_name: str) -> str:
        return self.name.format(exp_name=exp_name)


@dataclass(frozen=True)
class Kind:
    name: str
    endpoint: str
    files: tuple[CheckpointFile, ...]  # primary first: its rows mean "this UUID is finished"
    label_fields: tuple[str, ...] = ("predicted_label",)  # the first of these a primary row has is its label
    # The cost of one example (one run of a sweep): requests to `endpoint`.
    requests_per_example: int = 1
    cost_note: str = ""
    # Completion tokens of one example: typically (the estimate), and at most: the sum of these
    # [pipelines] max_tokens keys, or the typical figure when the kind names none.
    completion_tokens: int = 0
    completion_limit_keys: tuple[str, ...] = ()
    needs_prompt_logprobs: bool = False  # the capability probe runs first and may refuse the kind
    uses_judge: bool = False  # the judge model is called too (its token is checked at launch)
    # May be the method of a stability sweep (its pipeline class then has `sweep_run`).
    sweepable: bool = False
    fixed_temperature: bool = False  # sweeps only at T=0 (nothing samples)
    # Extra label variants (metrics per variant): label field is variant_field.format(variant=...).
    variants: tuple[str, ...] = ()
    primary_variant: str = ""
    variant_field: str = "predicted_label_{variant}"
    row_counts: Mapping[str, Callable[[dict[str, Any]], bool]] = field(default_factory=dict)  # metric -> row test
    summary: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None  # (rows) -> merged into metrics.json
    trace_view: str = "row"  # the Trace screen's body: "judge", "mcq", "logprob", "stability", "preference" or "row"
    trace_hint: str = ""  # how this kind's calls read (the tooltip of its Trace section)
    selectable: bool = True  # one of the pipelines (config do_<name>, --only <name>)
    # A row's label predicts the example's behaviour. False (preference calls): the label is
    # auxiliary and may be absent (a tie), so a missing one is not audited as a coercion.
    predicts_labels: bool = True
    short_name: str = ""  # in narrow table columns ("lp"); the name itself when empty

    @property
    def short(self) -> str:
        return self.short_name or self.name

    @property
    def primary(self) -> CheckpointFile:
        return self.files[0]

    def primary_file_name(self, exp_name: str | None = None) -> str:
        return self.primary.file_name(exp_name or self.name)

    def file(self, trace_role: str) -> CheckpointFile | None:
        return next((f for f in self.files if f.trace_role == trace_role), None)

    def label(self, row: Mapping[str, Any] | None) -> str | None:
        if row is None:
            return None
        for name in self.label_fields:
            if name in row:
                value = row[name]
                return value if isinstance(value, str) else None
        return None

    def variant_label(self, row: Mapping[str, Any], variant: str) -> Any:
        return row.get(self.variant_field.format(variant=variant))


_KINDS: dict[str, Kind] = {}


def register(kind: Kind, *, replace: bool = False) -> Kind:
    """Add a kind (the registration order is the order of pipelines in a plan)."""
    if kind.name in _KINDS and not replace:
        raise ValueError(f"pipeline kind {kind.name!r} is registered already")
    if kind.name == SWEEP_SELECTOR or kind.name.startswith("stability_"):
        raise ValueError(f"{kind.name!r} is reserved for stability sweeps")
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    _KINDS.pop(name, None)


def kinds() -> list[Kind]:
    """Every selectable kind, in registration order (stability sweeps are not among them)."""
    return [k for k in _KINDS.values() if k.selectable]


def names() -> list[str]:
    return [k.name for k in kinds()]


def get(name: str) -> Kind:
    """The kind called `name`; KeyError names the known ones."""
    try:
        return _KINDS[name]
    except KeyError:
        raise KeyError(f"unknown pipeline kind {name!r}; known: {', '.join(_KINDS)}") from None


def parse_sweep(exp_name: str) -> tuple[str, int, float] | None:
    """(method, k, temperature) of a sweep's exp_name, None for anything else."""
    match = _SWEEP_NAME.match(exp_name)
    return (match["method"], int(match["k"]), float(match["t"])) if match else None


def is_sweep(exp_name: str) -> bool:
    return exp_name.startswith("stability_")


def method_of(exp_name: str) -> str:
    """The kind an exp_name runs: itself, or the method of a sweep."""
    sweep = parse_sweep(exp_name)
    return sweep[0] if sweep else exp_name


def kind_of(exp_name: str) -> Kind | None:
    """The kind whose files an exp_name holds: the sweep kind for sweeps, None when unknown."""
    if is_sweep(exp_name):
        return SWEEP
    return _KINDS.get(exp_name)


def method_kind(exp_name: str) -> Kind | None:
    """The kind whose requests an exp_name sends (a sweep's method)."""
    return _KINDS.get(method_of(exp_name))


def primary_file_name(exp_name: str) -> str:
    """The primary checkpoint's file name; `<exp_name>.jsonl` for kinds nobody registered."""
    kind = kind_of(exp_name)
    return kind.primary_file_name(exp_name) if kind else f"{exp_name}.jsonl"


def secondary_file_names(exp_name: str) -> set[str]:
    """Checkpoint files of any kind that are not a primary (audit output aside)."""
    return {f.file_name(exp_name) for k in (*_KINDS.values(), SWEEP) for f in k.files[1:]}


def label_of(exp_name: str, row: Mapping[str, Any] | None) -> str | None:
    """The prediction of a primary row, as its kind defines it (docs/metrics.md §1)."""
    kind = kind_of(exp_name)
    if kind is None:  # an unknown kind of an older session: the common field
        value = None if row is None else row.get("predicted_label")
        return value if isinstance(value, str) else None
    return kind.label(row)


# -- the built-in kinds ------------------------------------------------------------------

# The summaries import metrics when called: config reads this module before the TUI's first
# frame, and the metrics package (with the dataset loader under it) is not needed for that.


def stability_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from w2c_tui.metrics.stability import stability_summary as summary

    return summary(rows)


def judge_check_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from w2c_tui.metrics.judge_check import judge_check_summary as summary

    return summary(rows)


def preference_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from w2c_tui.metrics.preference import preference_summary as summary

    return summary(rows)


def preference_check_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    from w2c_tui.metrics.preference import preference_check_summary as summary

    return summary(rows)


STABILITY_FIELDS = (
    "uuid", "gold_label", "n_runs", "run_labels", "mode_label", "mode_count", "consistency", "is_stable",
    "is_mode_correct", "is_stable_and_correct", "is_stable_but_wrong", "mean_accuracy_across_runs",
    "entropy", "normalized_entropy", "flip_rate", "eval_type", "target_model", "temperature",
    "judge_model", "forced_delimiter", "ckpt_name",
)

#: the kind of every stability sweep (stability_<method>_k=<k>_T=<t>); not selectable itself
SWEEP = Kind(
    name=SWEEP_SELECTOR,
    endpoint="",  # the method's
    files=(CheckpointFile("{exp_name}.jsonl", STABILITY_FIELDS),),
    label_fields=("mode_label",),
    summary=stability_summary,
    trace_view="stability",
    trace_hint="k runs of its method per example; the label is the most frequent one",
    selectable=False,
)

LLM_JUDGE = register(
    Kind(
        name="llm_judge",
        endpoint=CHAT,
        files=(
            CheckpointFile(
                JUDGE_DECISIONS,
                (
                    "uuid", "predicted_label", "judge_raw", "judge_rationale", "judge_parse_failed_first",
                    "judge_parse_failed_second", "judge_used_retry", "judge_fallback_to_cannot_answer",
                    "judge_exception_first", "judge_exception_second",
                ),
            ),
            CheckpointFile(
                TARGET_RESPONSES, ("uuid", "raw_text", "target_model", "temperature", "api_seed"), trace_role="target"
            ),
        ),
        requests_per_example=2,
        cost_note="target + judge; a judge repair adds one more, rarely",
        completion_tokens=60,  # a short free answer (~35) and the judge's JSON label (~25)
        completion_limit_keys=("target_max_tokens", "judge_max_tokens"),
        uses_judge=True,
        sweepable=True,
        short_name="judge",
        trace_view="judge",
        trace_hint="the target answers freely; the judge labels the answer",
    )
)

MCQ = register(
    Kind(
        name="mcq",
        endpoint=CHAT,
        files=(
            CheckpointFile(
                MCQ_PREDICTIONS,
                (
                    "uuid", "gold_label", "gold_index", "answer_names", "predicted_index", "predicted_label",
                    "raw_mcq_output", "target_model", "temperature", "api_seed",
                ),
            ),
        ),
        completion_tokens=3,  # a digit, perhaps with a word around it
        completion_limit_keys=("mcq_max_tokens",),
        sweepable=True,
        trace_view="mcq",
        trace_hint="the four candidate answers as options 0-3; one digit back",
    )
)

MCQ_LOGPROB = register(
    Kind(
        name="mcq_logprob",
        endpoint=COMPLETIONS,
        files=(
            CheckpointFile(
                LOGPROB_PREDICTIONS,
                (
                    "uuid", "gold_label", "predicted_label_raw", "predicted_label_norm_bytes",
                    "predicted_label_norm_tokens", "predicted_label_norm_chars", "mode", "target_model",
                    "scores_raw", "scores_norm_chars", "gold_index",
                ),
            ),
            CheckpointFile(
                LOGPROB_DEBUG,
                (
                    "uuid", "gold_label", "answer_name", "choice_text_preview", "len_chars", "len_bytes",
                    "num_tokens", "raw_score", "token_norm_score", "used_lcp_split", "prompt_tok_count", "lcp",
                ),
                per_uuid=False,
                trace_role="choices",
            ),
        ),
        label_fields=("predicted_label_raw", "predicted_label"),
        requests_per_example=1,
        completion_tokens=4,  # max_tokens = 1 for each of the four context + answer prompts
        cost_note=(
            "five prompts (the context, then context + each answer) in one /completions request "
            "(a second, of token ids, for the answers whose first token merges with the context), "
            "or five single requests where a server takes one prompt; a server that lists no token "
            "ids in the echo but has a tokenizer adds five small /tokenize calls"
        ),
        needs_prompt_logprobs=True,
        sweepable=True,
        fixed_temperature=True,
        variants=("raw", "norm_chars", "norm_bytes", "norm_tokens"),
        primary_variant="raw",
        row_counts={
            "n_string_fallback": lambda row: row.get("mode") == "string_fallback",
            "n_lcp_split": lambda row: bool(row.get("used_lcp_split")),
        },
        short_name="lp",
        trace_view="logprob",
        trace_hint="each candidate answer scored by its log-likelihood after the context",
    )
)

# Judge validation (`w2c-tui judge-check`): not selectable, so a normal launch, --only and the
# Setup screen's pipeline switches never run it; its own launch (judge_check/launch.py) does.
# Rows are keyed <uuid>#<label>, one per reference answer (session/answer_keys.py).
JUDGE_CHECK = register(
    Kind(
        name="judge_check",
        endpoint=CHAT,
        files=(
            CheckpointFile(
                JUDGE_CHECK_LABELS,
                (
                    "uuid", "example_uuid", "reference_label", "gold_label", "predicted_label", "judge_labels", "judge_raw",
                    "judge_used_retry", "judge_model", "temperature", "k", "api_seed", "answer_text",
                ),
            ),
        ),
        cost_note="one judge request per reference answer (k with --k); a repair adds one, rarely",
        completion_tokens=25,  # the judge's JSON label, as in llm_judge
        completion_limit_keys=("judge_max_tokens",),
        uses_judge=True,
        summary=judge_check_summary,
        trace_view="row",  # its row lists the k labels and replies; the calls show each request
        trace_hint="the judge labels one reference answer whose label is known",
        selectable=False,
        short_name="jchk",
    )
)

# Pairwise preference (`w2c-tui prefer A B`, `w2c-tui prefer-check`): not selectable either; their
# launches (preference/launch.py) run them. One row per judge call, keyed <pair>#<call>, so a
# resumed session sends only the missing calls; a call's label is that of the answer it preferred.
PREFERENCE_FIELDS = (
    "uuid", "pair", "example_uuid", "call", "order", "verdict", "preferred", "predicted_label", "reason",
    "judge_raw", "judge_used_retry", "gold_label", "label_a", "label_b", "answer_a", "answer_b", "judge_model",
    "temperature", "k", "api_seed",
)

PREFER = register(
    Kind(
        name="prefer",
        endpoint=CHAT,
        files=(CheckpointFile(PREFERENCE_CALLS, PREFERENCE_FIELDS),),
        cost_note="one judge request per pair and call (k per pair, order swapped on alternate calls); a repair adds one, rarely",
        completion_tokens=40,  # {"preferred": "1", "reason": "<one sentence>"}
        completion_limit_keys=("judge_max_tokens",),
        uses_judge=True,
        summary=preference_summary,
        trace_view="preference",
        trace_hint="the judge compares session A's and B's answers to one question (Response 1 / Response 2)",
        selectable=False,
        predicts_labels=False,
        short_name="pref",
    )
)

PREFER_CHECK = register(
    Kind(
        name="prefer_check",
        endpoint=CHAT,
        files=(CheckpointFile(PREFERENCE_CALLS, PREFERENCE_FIELDS),),
        cost_note="one judge request per (example, wrong reference answer) and call; a repair adds one, rarely",
        completion_tokens=40,
        completion_limit_keys=("judge_max_tokens",),
        uses_judge=True,
        summary=preference_check_summary,
        trace_view="preference",
        trace_hint="the judge compares the right reference answer (A) with a wrong one (B)",
        selectable=False,
        predicts_labels=False,
        short_name="pchk",
    )
)
