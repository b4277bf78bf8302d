"""Each session is read in isolation (issue 17 item 4).

One good session (a real run against the simulated endpoint) is copied into damaged
variants beside it. Every reader (`sessions`, `show`, `--json`, the TUI) lists the good one
and each damaged one with its reason; none hides, blocks or crashes the others. Rows on
disk are the truth over `_DONE.json`, and a duplicated uuid with another label is audited.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from w2c_tui.cli import main
from w2c_tui.config import load_config
from w2c_tui.engine.launch import Launch
from w2c_tui.store.audit import read_events
from w2c_tui.session.reader import list_sessions, read_session

from configs import write_config

RUN = """
[data]
n_per_label = 2
[mlflow]
enabled = false
"""

EXP = "mcq"
PRIMARY = "mcq_predictions.jsonl"


def _rewrite_json(path: Path, change) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def _duplicate_with_other_label(root: Path) -> None:
    path = root / "checkpoints" / EXP / PRIMARY
    first = json.loads(path.read_text().splitlines()[0])
    other = "tool_call" if first["predicted_label"] != "tool_call" else "direct"
    first.update(predicted_label=other, predicted_index=first["answer_names"].index(other))
    with path.open("a") as fh:
        fh.write(json.dumps(first) + "\n")


def _unreadable_checkpoints(root: Path) -> None:
    os.chmod(root / "checkpoints", 0)


def _checkpoints_is_a_file(root: Path) -> None:
    shutil.rmtree(root / "checkpoints")
    (root / "checkpoints").write_text("not a folder")


# name -> how the copy of the good session is damaged
DAMAGE = {
    "manifest-list": lambda r: (r / "manifest.json").write_text("[1, 2, 3]"),
    "manifest-model-number": lambda r: _rewrite_json(r / "manifest.json", lambda m: {**m, "target_model": 5, "config": {**m["config"], "mlflow": "on"}}
    ),
    "metrics-accuracy-str": lambda r: _rewrite_json(
        r / "artifacts_local" / EXP / "metrics.json", lambda m: {**m, "accuracy": "high", "per_class": {"direct": {"f1": "x"}}, "confusion_matrix": [[1]]}
    ),
    "metrics-not-json": lambda r: (r / "artifacts_local" / EXP / "metrics.json").write_text("{not json"),
    "ckpt-unreadable": _unreadable_checkpoints,
    "ckpt-is-a-file": _checkpoints_is_a_file,
    "done-but-empty": lambda r: (r / "checkpoints" / EXP / PRIMARY).write_text(""),
    "dup-uuid": _duplicate_with_other_label,
}


def _chmod_blocks_reading(path: Path) -> bool:
    """Running as root, chmod 000 still reads: then that case cannot be made."""
    return not os.access(path, os.R_OK)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, sim):
    folder = tmp_path_factory.mktemp("damaged")
    config = write_config(folder, sim.base_url, RUN)
    [outcome] = asyncio.run(Launch(load_config(config, environ={}), run_key="good", only=[EXP]).run())
    good = outcome.plan.paths.root
    work = good.parents[3]
    for name, damage in DAMAGE.items():
        copy = work / "runs" / "bad" / "sessions" / name
        shutil.copytree(good, copy)
        damage(copy)
    yield work
    os.chmod(work / "runs" / "bad" / "sessions" / "ckpt-unreadable" / "checkpoints", 0o755)


def _session(workdir: Path, name: str) -> Path:
    return workdir / "runs" / "bad" / "sessions" / name


def _skip_if_readable(workdir: Path, name: str) -> None:
    if name == "ckpt-unreadable" and not _chmod_blocks_reading(_session(workdir, name) / "checkpoints"):
        pytest.skip("running as root: chmod 000 does not stop reading")


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# -- the store ------------------------------------------------------------------------------


def test_every_session_is_listed_and_damaged_ones_carry_a_reason(workdir):
    found = {s.fingerprint: s for s in list_sessions(workdir)}
    assert set(DAMAGE) <= set(found) and len(found) == len(DAMAGE) + 1
    good = next(s for s in found.values() if s.run_key == "good")
    assert good.damaged == [] and good.status == "complete"
    for name in ("manifest-list", "manifest-model-number", "metrics-accuracy-str", "metrics-not-json",
                 "ckpt-is-a-file", "done-but-empty"):
        assert found[name].damaged, name
    assert "manifest.json" in found["manifest-list"].damaged[0]
    assert "target_model" in " ".join(found["manifest-model-number"].damaged)
    assert "config: mlflow is text" in " ".join(found["manifest-model-number"].damaged)
    assert "accuracy" in " ".join(found["metrics-accuracy-str"].damaged)
    assert "metrics.json" in " ".join(found["metrics-not-json"].damaged)
    assert "checkpoints" in " ".join(found["ckpt-is-a-file"].damaged)


def test_unreadable_checkpoints_folder_is_damaged(workdir):
    _skip_if_readable(workdir, "ckpt-unreadable")
    info = read_session(_session(workdir, "ckpt-unreadable"))
    assert any("checkpoints" in reason for reason in info.damaged)
    assert info.status == "damaged"


def test_a_checkpoints_folder_that_cannot_be_listed_is_damaged(workdir, monkeypatch, capsys):
    """The chmod 000 case without depending on the user: listing the folder fails."""
    blocked = _session(workdir, "manifest-model-number") / "checkpoints"
    real_iterdir = Path.iterdir

    def iterdir(self):
        if self == blocked:
            raise PermissionError(13, "Permission denied", str(self))
        return real_iterdir(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    info = read_session(blocked.parent)
    assert "checkpoints: unreadable (Permission denied)" in info.damaged and not info.pipelines
    code, out, err = run_cli(capsys, "sessions", "--workdir", str(workdir))
    line = next(line for line in out.splitlines() if "manifest-model-number" in line)
    assert code == 0 and "good" in out and " damaged " in line and "more)" in line
    code, out, err = run_cli(capsys, "show", str(blocked.parent))
    assert code == 0 and "damaged: " in out and "Permission denied" in out


def test_rows_are_the_truth_over_done(workdir):
    info = read_session(_session(workdir, "done-but-empty"))
    [pipeline] = info.pipelines
    assert pipeline.status == "partial"  # _DONE.json says done, but no row is on disk
    assert pipeline.metrics["n_obtained"] == 0
    assert any("_DONE.json" in reason for reason in info.damaged)


def test_metrics_that_disagree_with_rows_are_recomputed(workdir):
    info = read_session(_session(workdir, "dup-uuid"))
    [pipeline] = info.pipelines
    good = next(s for s in list_sessions(workdir) if s.run_key == "good").pipelines[0]
    # the duplicate (last write wins) changed one prediction: metrics.json is stale
    assert pipeline.metrics.get("recomputed_from_rows") is True
    assert pipeline.metrics["accuracy"] != good.metrics["accuracy"] or pipeline.metrics != good.metrics
    assert any("stale" in reason for reason in info.damaged)


# -- the CLI ----------------------------------------------------------------------------------


def test_sessions_lists_good_and_damaged_without_traceback(workdir, capsys):
    code, out, err = run_cli(capsys, "sessions", "--workdir", str(workdir))
    assert code == 0 and "Traceback" not in out + err
    assert "good" in out
    for name in DAMAGE:
        line = next(line for line in out.splitlines() if name[:16] in line)
        if name in ("manifest-list", "manifest-model-number", "metrics-accuracy-str", "metrics-not-json",
                    "ckpt-is-a-file", "done-but-empty"):
            assert "damaged" in line.lower() or "damaged" in out, name
    code, out, err = run_cli(capsys, "sessions", "--workdir", str(workdir), "--json")
    listing = json.loads(out)
    assert code == 0 and len(listing) == len(DAMAGE) + 1
    by_fp = {s["fingerprint"]: s for s in listing}
    assert by_fp["manifest-list"]["damaged"]
    assert not next(s for s in listing if s["run_key"] == "good")["damaged"]


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_show_on_a_damaged_session_says_why_in_one_line(workdir, capsys, name):
    _skip_if_readable(workdir, name)
    root = _session(workdir, name)
    code, out, err = run_cli(capsys, "show", str(root))
    assert "Traceback" not in out + err
    assert code in (0, 2)
    if name != "dup-uuid":
        assert "damaged" in out + err
    code, out, err = run_cli(capsys, "show", str(root), "--json")
    assert "Traceback" not in out + err and code in (0, 2)
    if code == 0:
        json.loads(out)


def test_show_an_emptied_checkpoint_is_partial_with_zero_rows(workdir, capsys):
    code, out, _ = run_cli(capsys, "show", str(_session(workdir, "done-but-empty")))
    assert code == 0
    line = next(line for line in out.splitlines() if line.strip().startswith(EXP))
    assert "partial" in line and "0/6" in line and "acc " not in line


# -- duplicates while finalizing --------------------------------------------------------------


def test_duplicate_uuid_with_another_label_is_audited_and_metrics_recomputed(tmp_path, sim):
    config = write_config(tmp_path, sim.base_url, RUN)
    [first] = asyncio.run(Launch(load_config(config, environ={}), run_key="dup", only=[EXP]).run())
    root = first.plan.paths.root
    _duplicate_with_other_label(root)
    # A resume finds every row present and finalizes again from the rows on disk.
    [again] = asyncio.run(Launch(load_config(config, environ={}), run_key="dup", only=[EXP]).run())
    assert again.plan.paths.root == root
    events = read_events(first.plan.paths.audit_file(EXP))
    duplicates = [e for e in events if e.get("fallback_type") == "duplicate_uuid_label_conflict"]
    assert len(duplicates) == 1 and duplicates[0]["details"]["kept"] != duplicates[0]["details"]["earlier"]
    info = read_session(root)
    assert not info.damaged  # metrics.json now agrees with the rows
    assert "recomputed_from_rows" not in info.pipelines[0].metrics


# -- the TUI ----------------------------------------------------------------------------------


async def _wait_for(pilot, condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.05)


async def test_sessions_tab_lists_every_session_and_highlighting_damaged_ones_is_safe(workdir, monkeypatch):
    from textual.widgets import Static, Tree

    from w2c_tui.tui.app import W2cApp
    from w2c_tui.tui.screens.compare import CompareScreen
    from w2c_tui.tui.screens.session_view import SessionViewScreen
    from w2c_tui.tui.screens.sessions import SessionsScreen

    folder = workdir.parent
    monkeypatch.chdir(folder)
    write_config(folder, name="tui.toml", run={"workdir_base": str(workdir)}, mlflow={"enabled": False})
    app = W2cApp("tui.toml")
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.press("3")
        await _wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen))
        screen = app.screen
        await _wait_for(pilot, lambda: len(screen.sessions) == len(DAMAGE) + 1)
        tree = screen.query_one("#sessions-tree", Tree)
        leaves = [leaf for run in tree.root.children for leaf in run.children]
        assert len(leaves) == len(DAMAGE) + 1
        for leaf in leaves:
            tree.move_cursor(leaf)
            await pilot.pause()
            summary = str(screen.query_one("#session-summary", Static).render())
            assert "reading the workdir" not in summary
            if leaf.data.damaged:
                assert "damaged" in summary
        # every damaged session opens in the Session view and in Compare without crashing
        for leaf in leaves:
            if leaf.data.run_key == "good":
                continue
            tree.move_cursor(leaf)
            await pilot.pause()
            await pilot.press("o")
            await _wait_for(pilot, lambda: isinstance(app.screen, SessionViewScreen))
            view = app.screen
            await _wait_for(pilot, lambda: view.info is not None and view.data is not None)
            await pilot.press("g")  # charts
            await pilot.pause(0.2)
            await pilot.press("escape")
            await _wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen))
        good = next(leaf for leaf in leaves if leaf.data.run_key == "good")
        for leaf in leaves:
            if leaf is good:
                continue
            screen.marked = [str(good.data.paths.root), str(leaf.data.paths.root)]
            screen.action_compare()
            await _wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
            await pilot.pause(0.3)
            await pilot.press("3")
            await _wait_for(pilot, lambda: isinstance(app.screen, SessionsScreen))
        assert app.return_code is None


def test_show_exits_2_with_one_line_when_nothing_can_be_read(tmp_path, capsys):
    root = tmp_path / "runs" / "rk" / "sessions" / "fp"
    root.mkdir(parents=True)
    (root / "manifest.json").write_text("{torn")
    (root / "checkpoints").write_text("")
    code, out, err = run_cli(capsys, "show", str(root))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "damaged session" in err and "manifest.json: not JSON" in err
    code, out, err = run_cli(capsys, "sessions", "--workdir", str(tmp_path))
    assert code == 0 and "damaged" in out and "manifest.json: not JSON" in out


def test_rows_written_after_metrics_json_are_a_note_not_damage(workdir, tmp_path):
    """A run in progress (or one stopped before finalizing) has more rows than its metrics.json counted."""
    good = next(s for s in list_sessions(workdir) if s.run_key == "good")
    copy = tmp_path / "runs" / "growing" / "sessions" / good.fingerprint
    shutil.copytree(good.paths.root, copy)
    (copy / "checkpoints" / EXP / "_DONE.json").unlink()
    _rewrite_json(copy / "artifacts_local" / EXP / "metrics.json", lambda m: {**m, "n_obtained": 2})
    info = read_session(copy)
    [pipeline] = info.pipelines
    assert info.damaged == []
    assert pipeline.notes and "recomputed from the rows" in pipeline.notes[0]
    assert pipeline.metrics["recomputed_from_rows"] is True and pipeline.metrics["n_obtained"] == 6
