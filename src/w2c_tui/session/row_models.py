"""A session's JSONL rows as typed models: one per pipeline kind's checkpoint files (their fields
are the kind's `CheckpointFile.fields`), the audit events and the API call records.

Rows are read as written, by any version, by hand or damaged: every field is optional, types are
those the writers give (a value of another type is left to `document`, never an error), and
keys a model does not declare are kept. The readers that score rows (metrics, labels) read the
dicts; these models are for those that show one row (the Trace screen, `show`).
"""

from __future__ import annotations

from typing import Any

from w2c_tui.session.models import Document

# Text a model or server produced, stored as received (usually a string; shown with str()).
Text = Any


class Row(Document):
    """The fields every primary checkpoint row of ours carries."""

    uuid: str | None = None
    gold_label: Any = None
    predicted_label: Any = None
    target_model: Any = None
    temperature: Any = None
    api_seed: Any = None


class LlmJudgeRow(Row):
    """checkpoints/llm_judge/judge_decisions.jsonl."""

    judge_raw: Text = None
    judge_raw_retry: Text = None
    judge_rationale: Text = None
    judge_parse_path: Any = None
    judge_parse_failed_first: Any = None
    judge_parse_failed_second: Any = None
    judge_used_retry: Any = None
    judge_fallback_to_cannot_answer: Any = None
    judge_exception_first: Any = None
    judge_exception_second: Any = None
    target_raw: Text = None  # older rows kept the target's answer here, not in target_responses


class TargetRow(Document):
    """checkpoints/llm_judge/target_responses.jsonl: the target's answer, apart from the decision."""

    uuid: str | None = None
    raw_text: Text = None
    reasoning_text: Text = None
    native_tool_calls: Any = None
    target_model: Any = None
    temperature: Any = None
    api_seed: Any = None


class McqRow(Row):
    """checkpoints/mcq/mcq_predictions.jsonl."""

    gold_index: Any = None
    answer_names: Any = None
    predicted_index: Any = None
    raw_mcq_output: Text = None


class LogprobRow(Row):
    """checkpoints/mcq_logprob/predictions.jsonl (labels per scoring variant)."""

    predicted_label_raw: Any = None
    predicted_label_norm_bytes: Any = None
    predicted_label_norm_tokens: Any = None
    predicted_label_norm_chars: Any = None
    mode: Any = None  # "logprob", or "string_fallback" when every score was non-finite
    split: Any = None
    used_lcp_split: Any = None
    fallback_trigger: Any = None
    string_fallback_raw_output: Text = None
    scores_raw: Any = None
    scores_norm_chars: Any = None
    gold_index: Any = None


class ChoiceRow(Document):
    """checkpoints/mcq_logprob/debug_per_choice.jsonl: one answer choice of one example."""

    uuid: str | None = None
    gold_label: Any = None
    answer_name: Any = None
    choice_text_preview: Text = None
    len_chars: Any = None
    len_bytes: Any = None
    num_tokens: Any = None
    raw_score: Any = None
    token_norm_score: Any = None
    char_norm_score: Any = None
    byte_norm_score: Any = None
    used_lcp_split: Any = None
    prompt_tok_count: Any = None
    lcp: Any = None
    context_tail_tokens: Any = None
    continuation_tokens: Any = None


class StabilityRow(Row):
    """checkpoints/stability_<method>_k=<k>_T=<t>/…jsonl: k runs of one example."""

    n_runs: Any = None
    run_labels: Any = None
    mode_label: Any = None
    mode_count: Any = None
    consistency: Any = None
    is_stable: Any = None
    is_mode_correct: Any = None
    is_stable_and_correct: Any = None
    is_stable_but_wrong: Any = None
    mean_accuracy_across_runs: Any = None
    entropy: Any = None
    normalized_entropy: Any = None
    flip_rate: Any = None
    eval_type: Any = None
    judge_model: Any = None
    forced_delimiter: Any = None
    ckpt_name: Any = None
    run_target_texts: Any = None
    run_judge_raw_outputs: Any = None
    run_aux: Any = None


class JudgeCheckRow(Row):
    """checkpoints/judge_check/judge_check_labels.jsonl: one reference answer, keyed <uuid>#<label>."""

    example_uuid: Any = None
    reference_label: Any = None
    judge_labels: Any = None
    judge_raw: Text = None
    judge_used_retry: Any = None
    judge_model: Any = None
    k: Any = None
    answer_text: Text = None


class PreferenceRow(Row):
    """checkpoints/prefer|prefer_check/preference_calls.jsonl: one judge call on one pair,
    keyed <pair>#<call>; `predicted_label` is the label of the answer it preferred."""

    pair: Any = None
    example_uuid: Any = None
    call: Any = None
    order: Any = None  # "AB": A in position 1; "BA": B in position 1
    verdict: Any = None  # "1", "2", "tie"; None when unreadable
    preferred: Any = None  # "A", "B", "tie"; None when unreadable
    reason: Text = None
    judge_raw: Text = None
    judge_used_retry: Any = None
    label_a: Any = None
    label_b: Any = None
    answer_a: Text = None
    answer_b: Text = None
    judge_model: Any = None
    k: Any = None


# The row model of each kind's primary checkpoint (by kind name; sweeps share "stability").
ROW_MODELS: dict[str, type[Row]] = {
    "llm_judge": LlmJudgeRow,
    "mcq": McqRow,
    "mcq_logprob": LogprobRow,
    "stability": StabilityRow,
    "judge_check": JudgeCheckRow,
    "prefer": PreferenceRow,
    "prefer_check": PreferenceRow,
}


def row_model(exp_name: str) -> type[Row]:
    """The model of `exp_name`'s primary rows (`Row` for a kind nobody registered)."""
    if exp_name.startswith("stability_"):
        return StabilityRow
    return ROW_MODELS.get(exp_name, Row)


class AuditEvent(Document):
    """One line of checkpoints/<exp>/audit (operations guide §12)."""

    ts_utc: Any = None
    uuid: Any = None
    exp_name: Any = None
    pipeline: Any = None  # older events named the pipeline here
    stage: Any = None
    severity: Any = None
    fallback_type: Any = None
    details: Any = None


class CallRecord(Document):
    """One API attempt of llm_calls/<exp>.jsonl; `request` and `response` are the raw bodies."""

    ts_utc: Any = None
    uuid: Any = None
    pipeline: Any = None
    provider: Any = None
    base_url: Any = None
    endpoint: Any = None
    model: Any = None
    attempt: Any = None
    status: Any = None
    latency_ms: Any = None
    retry_cause: Any = None
    error: Any = None
    settings: Any = None
    usage: Any = None
    request: Any = None
    response: Any = None


class Usage(Document):
    """A call's `usage` as the server reported it (any of its numbers may be missing or odd)."""

    prompt_tokens: Any = None
    completion_tokens: Any = None
    total_tokens: Any = None
