"""session_summary.json (issue 25 item 3): listing reads one small file per session, never a stale one.

A summary is written when a launch's pipelines end (first launch and each resume) and by a
listing that had to read the rows (only in a folder of ours that no launch holds, never in
the earlier suite's). A summary older than the rows, damaged or of the wrong shape is
ignored, and the listing is the same with and without summaries.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from w2c_tui.cli import main
from w2c_tui.config import load_config
from w2c_tui.engine.launch import Launch
from w2c_tui.session import summary as summary_file
from w2c_tui.session.models import SessionSummary
from w2c_tui.session.reader import list_sessions, read_session
from w2c_tui.store.layout import SUMMARY_FILE, SessionPaths
from w2c_tui.testing.synthetic_session import write_session

from configs import write_config

RUN = """
[data]
n_per_label = 2
[mlflow]
enabled = false
"""

EARLIER = Path(__file__).parent / "fixtures" / "earlier_suite"


def launch(folder: Path, base_url: str):
    config = write_config(folder, base_url, RUN)
    [outcome] = asyncio.run(Launch(load_config(config, environ={}), run_key="summary", only=["mcq", "mcq_logprob"]).run())
    return outcome


def summary_of(root: Path) -> dict:
    return json.loads((root / SUMMARY_FILE).read_text())


def listing_json(capsys, workdir: Path) -> list[dict]:
    capsys.readouterr()
    assert main(["sessions", "--workdir", str(workdir), "--json"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return json.loads(out.out)


def listing_text(capsys, workdir: Path) -> str:
    capsys.readouterr()
    assert main(["sessions", "--workdir", str(workdir)]) == 0
    return capsys.readouterr().out


def remove_summaries(workdir: Path) -> None:
    for path in (workdir / "runs").glob(f"*/sessions/*/{SUMMARY_FILE}"):
        path.unlink()


@pytest.fixture
def synthetic(tmp_path) -> Path:
    """A complete session of ours (no summary yet: written by the synthetic writer, not a launch)."""
    return write_session(tmp_path / "w", n_examples=24, pipelines=("mcq", "mcq_logprob")).root


# -- written by the engine ----------------------------------------------------------------------


def test_a_launch_writes_the_summary_and_a_resume_writes_it_again(tmp_path, sim):
    outcome = launch(tmp_path, sim.base_url)
    root = outcome.plan.paths.root
    written = summary_of(root)
    n = written["n_examples"]
    assert written["status"] == "complete" and n == len(outcome.plan.examples)
    assert set(written["pipelines"]) == {"mcq", "mcq_logprob"}
    mcq = written["pipelines"]["mcq"]
    assert (mcq["done"], mcq["status"], mcq["n_obtained"], mcq["n_planned"]) == (True, "complete", n, n)
    assert mcq["metrics"] == json.loads(SessionPaths(root).metrics_file("mcq").read_text())
    assert {"manifest.json", "checkpoints/mcq/mcq_predictions.jsonl", "checkpoints/mcq/_DONE.json",
            "artifacts_local/mcq/metrics.json"} <= set(written["inputs"])
    assert summary_file.load_fresh(SessionPaths(root), ["mcq", "mcq_logprob"]) is not None

    (root / SUMMARY_FILE).unlink()
    again = launch(tmp_path, sim.base_url)  # the resume: every pipeline done, no request sent
    assert again.plan.paths.root == root and again.statuses == {"mcq": "complete", "mcq_logprob": "complete"}
    assert summary_of(root)["pipelines"] == written["pipelines"]
    assert summary_file.load_fresh(SessionPaths(root), ["mcq", "mcq_logprob"]) is not None


# -- freshness ----------------------------------------------------------------------------------


def test_the_first_listing_writes_it_the_next_reads_it(synthetic):
    workdir = synthetic.parents[3]
    assert not (synthetic / SUMMARY_FILE).exists()
    [cold] = list_sessions(workdir)
    assert (synthetic / SUMMARY_FILE).exists() and cold.inputs is not None
    [warm] = list_sessions(workdir)
    assert warm.inputs is None  # read from the summary, not the rows
    assert warm.summary() == cold.summary()
    assert all(p._rows is None for p in warm.pipelines)  # no row was read


def test_rows_appended_after_the_summary_are_read(synthetic):
    workdir = synthetic.parents[3]
    list_sessions(workdir)
    primary = synthetic / "checkpoints" / "mcq" / "mcq_predictions.jsonl"
    first = json.loads(primary.read_text().splitlines()[0])
    first["predicted_label"] = "direct" if first["predicted_label"] != "direct" else "tool_call"
    with primary.open("a") as fh:  # a later row of the same example, another label: metrics.json is stale
        fh.write(json.dumps(first) + "\n")
    assert summary_file.load_fresh(SessionPaths(synthetic), ["mcq", "mcq_logprob"]) is None
    [listed] = list_sessions(workdir)
    assert listed.inputs is not None  # read from the rows
    assert any("stale" in reason for reason in listed.damaged)
    assert listed.summary() == read_session(synthetic).summary()
    [again] = list_sessions(workdir)  # the summary written for the rows as they are now
    assert again.inputs is None and again.summary() == listed.summary()


def test_a_rewritten_metrics_json_is_read(synthetic):
    workdir = synthetic.parents[3]
    list_sessions(workdir)
    path = synthetic / "artifacts_local" / "mcq" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics["status"] = "cancelled"
    (synthetic / "checkpoints" / "mcq" / "_DONE.json").unlink()
    path.write_text(json.dumps(metrics))
    [listed] = list_sessions(workdir)
    assert listed.inputs is not None and listed.pipelines[0].status == "cancelled"
    assert listed.summary() == read_session(synthetic).summary()


def test_a_record_reused_between_listings_is_dropped_when_its_files_change(synthetic):
    """The app lists again and again: a session read from its summary is reused while its inputs hold."""
    workdir = synthetic.parents[3]
    list_sessions(workdir)  # writes the summary
    [first] = list_sessions(workdir, warm=True)
    [again] = list_sessions(workdir, warm=True)
    assert again is first  # nothing read
    path = synthetic / "artifacts_local" / "mcq" / "metrics.json"
    tmp = path.with_name("new.json")
    tmp.write_bytes(path.read_bytes())  # rewritten as the engine does (temporary file, rename): same size
    tmp.replace(path)
    [changed] = list_sessions(workdir, warm=True)
    assert changed is not first and changed.inputs is not None  # a new inode: read again
    assert changed.summary() == first.summary()


def test_a_new_pipeline_folder_makes_it_stale(synthetic):
    workdir = synthetic.parents[3]
    list_sessions(workdir)
    (synthetic / "checkpoints" / "llm_judge").mkdir()
    [listed] = list_sessions(workdir)
    assert listed.inputs is not None and [p.exp_name for p in listed.pipelines] == ["llm_judge", "mcq", "mcq_logprob"]


DAMAGED_SUMMARIES = {
    "cut": lambda text: text[: len(text) // 2],
    "not-an-object": lambda text: "[1, 2]",
    "empty": lambda text: "",
    "status-number": lambda text: json.dumps({**json.loads(text), "status": 5}),
    "inputs-text": lambda text: json.dumps({**json.loads(text), "inputs": {"manifest.json": ["a", "b"]}}),
    "inputs-short": lambda text: json.dumps({**json.loads(text), "inputs": {"manifest.json": [1]}}),
    "pipelines-list": lambda text: json.dumps({**json.loads(text), "pipelines": []}),
    "done-text": lambda text: json.dumps(
        {**json.loads(text), "pipelines": {k: {**v, "done": "yes"} for k, v in json.loads(text)["pipelines"].items()}}
    ),
    "metrics-wrong-types": lambda text: json.dumps(
        {**json.loads(text), "pipelines": {k: {**v, "metrics": {**v["metrics"], "accuracy": "high"}}
                                           for k, v in json.loads(text)["pipelines"].items()}}
    ),
    "other-version": lambda text: json.dumps({**json.loads(text), "schema_version": 99}),
}


@pytest.mark.parametrize("name", sorted(DAMAGED_SUMMARIES))
def test_a_damaged_summary_is_ignored_never_a_traceback(synthetic, capsys, name):
    workdir = synthetic.parents[3]
    clean = listing_json(capsys, workdir)  # writes the summary
    path = synthetic / SUMMARY_FILE
    path.write_text(DAMAGED_SUMMARIES[name](path.read_text()))
    assert summary_file.load_fresh(SessionPaths(synthetic), ["mcq", "mcq_logprob"]) is None
    assert listing_json(capsys, workdir) == clean
    assert SessionSummary.read(summary_of(synthetic)) is not None  # written again, whole


@pytest.mark.parametrize("kind", ["fifo", "link", "folder"])
def test_a_summary_that_is_no_plain_file_is_not_read_nor_written_through(synthetic, tmp_path, capsys, kind):
    import os

    workdir = synthetic.parents[3]
    clean = listing_json(capsys, workdir)
    path = synthetic / SUMMARY_FILE
    target = tmp_path / "elsewhere.json"
    target.write_text(path.read_text())
    before = target.read_bytes()
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        path.symlink_to(target)
    else:
        path.mkdir()
    assert summary_file.load_fresh(SessionPaths(synthetic), ["mcq", "mcq_logprob"]) is None
    assert listing_json(capsys, workdir) == clean  # no hang on the FIFO, no traceback
    assert target.read_bytes() == before
    if kind == "link":  # replaced by a file of its own; the link's target is untouched
        assert not path.is_symlink() and SessionSummary.read(summary_of(synthetic)) is not None


def test_a_summary_that_lies_about_fresh_inputs_is_still_checked(synthetic):
    """Hand-edited, but every input matches: the strict model still refuses wrong types."""
    assert SessionSummary.read({"schema_version": 1, "written_at": "x", "status": "complete", "inputs": {},
                                "pipelines": {"mcq": {"done_marker_found": 1, "done": True, "status": "complete",
                                                      "metrics": None, "reasons": [], "notes": []}}}) is None


# -- who writes ---------------------------------------------------------------------------------


def test_a_listing_writes_nothing_while_a_launch_holds_the_session(synthetic):
    (synthetic / "session.lock").write_text(json.dumps({"pid": 1, "host": "elsewhere"}))
    [listed] = list_sessions(synthetic.parents[3])
    assert listed.status == "complete" and not (synthetic / SUMMARY_FILE).exists()


def test_a_session_a_launch_is_writing_lists_from_its_rows_and_keeps_its_old_summary(synthetic):
    from w2c_tui.store.lock import SessionLock

    workdir = synthetic.parents[3]
    list_sessions(workdir)
    before = (synthetic / SUMMARY_FILE).read_bytes()
    with SessionLock(synthetic):  # a launch holds the session and appends rows
        primary = synthetic / "checkpoints" / "mcq" / "mcq_predictions.jsonl"
        with primary.open("a") as fh:
            fh.write(primary.read_text().splitlines()[-1] + "\n")
        [listed] = list_sessions(workdir)
        assert listed.inputs is not None and listed.summary() == read_session(synthetic).summary()
        assert (synthetic / SUMMARY_FILE).read_bytes() == before  # not rewritten under a launch


def test_the_earlier_suites_folders_get_no_summary(tmp_path, capsys):
    shutil.copytree(EARLIER, tmp_path / "e")
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "e").rglob("*"))
    first = listing_json(capsys, tmp_path / "e")
    assert listing_json(capsys, tmp_path / "e") == first
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "e").rglob("*")) == before


# -- the same listing either way ------------------------------------------------------------------


def test_listing_is_the_same_with_and_without_summaries(tmp_path, capsys, monkeypatch):
    """Our sessions (complete, partial, damaged) beside the earlier suite's fixture."""
    workdir = tmp_path / "w"
    shutil.copytree(EARLIER, workdir)
    good = write_session(workdir, run_key="good", fingerprint="600d000000000001", n_examples=24).root
    partial = write_session(workdir, run_key="partial", fingerprint="9a7100000000002", n_examples=24, pipelines=("mcq",)).root
    (partial / "checkpoints" / "mcq" / "_DONE.json").unlink()
    damaged = write_session(workdir, run_key="damaged", fingerprint="bad0000000000003", n_examples=24, pipelines=("mcq",)).root
    (damaged / "artifacts_local" / "mcq" / "metrics.json").write_text("{not json")

    monkeypatch.setattr(summary_file, "load_fresh", lambda *a: None)
    monkeypatch.setattr(summary_file, "may_write", lambda root: False)
    without_json, without_text = listing_json(capsys, workdir), listing_text(capsys, workdir)
    monkeypatch.undo()

    cold_json = listing_json(capsys, workdir)  # writes them
    assert {p.parent.name for p in (workdir / "runs").glob(f"*/sessions/*/{SUMMARY_FILE}")} == {
        good.name, partial.name, damaged.name
    }
    warm_json, warm_text = listing_json(capsys, workdir), listing_text(capsys, workdir)
    assert without_json == cold_json == warm_json
    assert without_text == warm_text
    assert any(s["damaged"] for s in warm_json) and any(s["origin"] == "earlier-suite" for s in warm_json)


def test_the_sessions_screen_shows_the_same_from_a_summary(synthetic):
    from w2c_tui.tui.screens.sessions import session_line, session_summary

    workdir = synthetic.parents[3]
    remove_summaries(workdir)
    [cold] = list_sessions(workdir, warm=True)
    [warm] = list_sessions(workdir, warm=True)
    assert cold.inputs is not None and warm.inputs is None
    assert session_line(warm) == session_line(cold)
    assert session_summary(warm) == session_summary(cold)
    assert session_summary(warm, short=True, narrow=True) == session_summary(cold, short=True, narrow=True)
