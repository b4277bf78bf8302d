"""The session's documents as typed models (session/models.py): nothing in a file is lost, older
names read as today's, a wrong type never fails the reader, and the renderers follow the model."""

from __future__ import annotations

from w2c_tui.session.live import Snapshot
from w2c_tui.session.models import Manifest, Metrics, Rate, as_metrics
from w2c_tui.session.row_models import LogprobRow, row_model


def test_unknown_keys_are_kept_and_the_document_is_the_file():
    document = {"accuracy": 0.5, "a_newer_metric": {"x": 1}, "n_obtained": 4}
    metrics = Metrics.of(document)
    assert metrics.accuracy == 0.5 and metrics.extra("a_newer_metric") == {"x": 1}
    assert metrics.document is document and metrics["a_newer_metric"] == {"x": 1}
    assert isinstance(Metrics.of({"n_obtained": 3}).n_obtained, int)  # a count stays an int


def test_the_old_name_of_a_rate_reads_as_the_new_one():
    metrics = Metrics.of({"param_hallucination_rate": {"rate": 0.25, "numerator": 1, "denominator": 4}})
    assert isinstance(metrics.parameter_hallucination_rate, Rate)
    assert metrics.parameter_hallucination_rate.rate == 0.25


def test_coverage_of_a_file_written_before_n_planned():
    assert Metrics.of({"n_examples": 10, "n_missing_predictions": 3}).coverage == (7, 10)
    assert Metrics.of({"n_planned": 6, "n_obtained": 2}).coverage == (2, 6)
    assert as_metrics(None).coverage == (None, None)


def test_a_wrong_type_is_left_to_the_document_not_raised():
    manifest = Manifest.of({"fingerprint": 7, "target_model": "m", "config": {"models": {"judge_model": "j"}}})
    assert manifest.fingerprint is None and manifest.document["fingerprint"] == 7
    assert manifest.target_model == "m" and manifest.setting("models", "judge_model") == "j"
    assert Manifest.of({"config": {"judge_model": "flat"}}).setting("models", "judge_model") == "flat"  # the earlier suite's


def test_renderers_follow_the_declared_groups():
    from w2c_tui.analysis.export import SUMMARY_COLUMNS
    from w2c_tui.tui.widgets.metric_table import summary_rows

    headline = [field.key for field in Metrics.group("headline")]
    assert headline == ["accuracy", "macro_f1", "macro_f1_4", "macro_f1_no_direct"]
    assert len(summary_rows([])[0]) == 3 + len(headline)
    assert all(key in SUMMARY_COLUMNS for key in headline)


def test_rows_and_snapshots_as_models():
    assert row_model("mcq_logprob") is LogprobRow and row_model("stability_mcq_k=3_T=0.7").__name__ == "StabilityRow"
    row = LogprobRow.of({"uuid": "u", "mode": "string_fallback", "something_new": 1})
    assert row.mode == "string_fallback" and row.extra("something_new") == 1
    snap = Snapshot.of({"pipelines": {"mcq": {"done": 3, "total": 6, "status": "running"}}, "errors": None})
    assert snap.pipelines["mcq"].done == 3 and snap.errors == 0  # a null count reads as none yet
