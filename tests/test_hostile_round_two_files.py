"""Issue 26, part A: hostile inputs against compare, export, packed traces, the lock, config headers.

Each test is a case of the hunt: a silently wrong number, a destroyed file, or a traceback,
which now ends in a right number or one readable line. Sessions are synthetic, on disk.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from w2c_tui.analysis import export as exporting
from w2c_tui.analysis.compare import compare_sessions, load_sessions
from w2c_tui.cli import main
from w2c_tui.data.when2call import file_sha256
from w2c_tui.labels import LABELS
from w2c_tui.store import call_files
from w2c_tui.store.call_files import CallIndex, TracePacker, pack_calls, packed_path
from w2c_tui.store.layout import MCQ_PREDICTIONS, SessionPaths
from w2c_tui.store.lock import SessionLock
from w2c_tui.session.data import SessionData
from w2c_tui.testing.synthetic_session import write_dataset, write_session

from configs import write_config


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("w2c-tui:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def set_manifest(root: Path, **changes) -> None:
    manifest_path = SessionPaths(root).manifest
    manifest = json.loads(manifest_path.read_text())
    for key, value in changes.items():
        manifest[key] = value
    manifest_path.write_text(json.dumps(manifest))


def record_real_sha(root: Path, dataset: Path) -> None:
    """The synthetic writer records "synthetic"; a real run records the file's sha256."""
    manifest = json.loads(SessionPaths(root).manifest.read_text())
    set_manifest(root, dataset={**manifest["dataset"], "sha256": file_sha256(dataset)})


def relabel(dataset: Path, out: Path, count: int) -> None:
    """`dataset` with the gold label of its first `count` examples moved to the next label."""
    lines = dataset.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for record in records[:count]:
        record["correct_answer"] = LABELS[(LABELS.index(record["correct_answer"]) + 1) % len(LABELS)]
    out.write_text("".join(json.dumps(r) + "\n" for r in records))


def mcq_rows(root: Path) -> list[dict]:
    path = SessionPaths(root).checkpoint_file("mcq", MCQ_PREDICTIONS)
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- 1. gold labels are each session's own ----------------------------------------------------


@pytest.fixture
def two_datasets(tmp_path) -> tuple[Path, Path]:
    """A and B on dataset files with the same uuids, 8 of 24 with another gold label in B's."""
    first = tmp_path / "data" / "a.jsonl"
    write_dataset(first, 24)
    second = tmp_path / "data" / "b.jsonl"
    relabel(first, second, 8)
    workdir = tmp_path / "w"
    a = write_session(workdir, dataset=first, pipelines=("mcq",), seed=1).root
    b = write_session(workdir, fingerprint="5e55a0c0ffee0002", dataset=second, pipelines=("mcq",), seed=2).root
    record_real_sha(a, first)
    record_real_sha(b, second)
    return a, b


def own_accuracy(root: Path, uuids: set[str]) -> float:
    rows = [r for r in mcq_rows(root) if r["uuid"] in uuids]
    return sum(r["predicted_label"] == r["gold_label"] for r in rows) / len(rows)


def test_compare_scores_each_session_with_its_own_gold_on_the_examples_they_share(two_datasets, capsys):
    a, b = two_datasets
    pair = compare_sessions(load_sessions([a, b]), n_resamples=50).pairs[0].pipelines["mcq"]
    gold_a = {r["uuid"]: r["gold_label"] for r in mcq_rows(a)}
    gold_b = {r["uuid"]: r["gold_label"] for r in mcq_rows(b)}
    shared = {u for u in gold_a if gold_a[u] == gold_b[u]}
    assert pair.n_common == len(shared) == 16 and pair.n_gold_differs == 8
    assert pair.accuracy_a == pytest.approx(own_accuracy(a, shared))
    assert pair.accuracy_b == pytest.approx(own_accuracy(b, shared))
    assert "8 with another gold label" in pair.warning
    reversed_pair = compare_sessions(load_sessions([b, a]), n_resamples=50).pairs[0].pipelines["mcq"]
    assert (reversed_pair.accuracy_a, reversed_pair.accuracy_b) == (pair.accuracy_b, pair.accuracy_a)
    code, out, _ = run_cli(capsys, "compare", str(a), str(b), "--resamples", "50")
    assert code == 0 and "ran on different dataset files" in out and "another gold label" in out


def test_a_dataset_file_changed_after_the_run_changes_neither_compare_nor_export(two_datasets, capsys):
    a, b = two_datasets
    dataset = Path(json.loads(SessionPaths(a).manifest.read_text())["dataset"]["path"])
    before_export = run_cli(capsys, "export", str(a), "--per-example", "--format", "csv")
    before = compare_sessions(load_sessions([a, b]), n_resamples=50).pairs[0].pipelines["mcq"]
    relabel(dataset, dataset, 24)  # every gold label of A's file changed after its run
    after_export = run_cli(capsys, "export", str(a), "--per-example", "--format", "csv")
    after = compare_sessions(load_sessions([a, b]), n_resamples=50).pairs[0].pipelines["mcq"]
    assert after_export[:2] == before_export[:2] and after_export[0] == 0
    assert (after.n_common, after.accuracy_a, after.accuracy_b) == (before.n_common, before.accuracy_a, before.accuracy_b)


def test_a_changed_dataset_without_gold_in_the_rows_is_refused_in_one_line(two_datasets, capsys):
    a, b = two_datasets
    path = SessionPaths(a).checkpoint_file("mcq", MCQ_PREDICTIONS)
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "gold_label"}) + "\n" for r in mcq_rows(a)))
    dataset = Path(json.loads(SessionPaths(a).manifest.read_text())["dataset"]["path"])
    relabel(dataset, dataset, 3)
    for argv in (("compare", str(a), str(b)), ("export", str(a), "--per-example", "--format", "csv")):
        code, out, err = run_cli(capsys, *argv)
        line = one_error_line(err)
        assert code == 2 and out == "" and str(dataset) in line and "changed since the run" in line


# -- 5. export: n, duplicates, cells -----------------------------------------------------------


def test_a_judge_check_export_gives_the_n_and_interval_its_accuracy_is_over(tmp_path, capsys):
    root = write_session(tmp_path / "w", pipelines=("mcq",)).root
    metrics_path = SessionPaths(root).metrics_file("mcq")
    metrics = json.loads(metrics_path.read_text())
    interval = {"low": 0.61, "high": 0.74, "n_boot": 1000}
    metrics.update(accuracy_ci95=None, macro_f1_ci95=None,
                   judge_check={"n_answers": 24, "n_labelled": 19, "accuracy_ci95": interval}, n_judge_labelled=19)
    metrics_path.write_text(json.dumps(metrics))
    code, out, _ = run_cli(capsys, "export", str(root), "--format", "json")
    [row] = json.loads(out)["rows"]
    assert code == 0 and row["n_scored"] == 19 and (row["accuracy_ci95_low"], row["accuracy_ci95_high"]) == (0.61, 0.74)
    code, out, _ = run_cli(capsys, "export", str(root), "--format", "md")
    assert "| 19/24 |" in out and "[0.610, 0.740]" in out


def test_a_session_named_twice_is_exported_once_and_said(tmp_path, capsys):
    root = write_session(tmp_path / "w", pipelines=("mcq",)).root
    code, out, err = run_cli(capsys, "export", str(root), str(root) + "/", "--per-example", "--format", "csv")
    assert code == 0 and len(out.splitlines()) == 1 + 24 and "named more than once" in err
    code, out, _ = run_cli(capsys, "export", str(root), str(root), "--format", "csv")
    assert len(out.splitlines()) == 2


def test_csv_cells_that_would_run_as_formulas_are_text_and_negative_numbers_stay_numbers(tmp_path, capsys):
    root = write_session(tmp_path / "w", target_model="=HYPERLINK(\"http://x\")", pipelines=("mcq_logprob",)).root
    code, out, _ = run_cli(capsys, "export", str(root), "--format", "csv")
    [row] = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and row["target_model"] == "'=HYPERLINK(\"http://x\")"
    assert {exporting._csv_value(v) for v in ("+1", "-1", "@x", "\tx", "\rx")} == {"'+1", "'-1", "'@x", "'\tx", "'\rx"}
    assert exporting._csv_value(-4.25) == "-4.25" and exporting._csv_value(-3) == -3
    code, out, _ = run_cli(capsys, "export", str(root), "--per-example", "--format", "csv")
    scores = [r["mcq_logprob_score_direct"] for r in csv.DictReader(io.StringIO(out)) if r["mcq_logprob_score_direct"]]
    assert scores and all(float(s) < 0 for s in scores)  # written as numbers, no quote


def test_a_newline_or_bar_in_a_model_name_does_not_split_a_markdown_row(tmp_path, capsys):
    root = write_session(tmp_path / "w", target_model="evil\n| x | y |\r\nmodel", pipelines=("mcq",)).root
    code, out, _ = run_cli(capsys, "export", str(root), "--format", "md")
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert code == 0 and len(table) == 3 and all(line.endswith("|") for line in table)
    assert "evil \\| x \\| y \\| model" in table[2]


ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x9b31m"


@pytest.mark.parametrize("command", ["show", "sessions", "export-md", "export-latex", "compare"])
def test_escape_sequences_from_names_never_reach_the_terminal(tmp_path, capsys, command):
    workdir = tmp_path / "w"
    root = write_session(workdir, target_model=f"model{ESCAPES}", pipelines=("mcq",)).root
    manifest = json.loads(SessionPaths(root).manifest.read_text())
    set_manifest(root, endpoint={"server": f"vllm{ESCAPES}", "system_fingerprint": f"fp{ESCAPES}", "model": f"m{ESCAPES}"},
                 providers={"jrc": manifest["providers"]["jrc"]})
    other = write_session(workdir, fingerprint="5e55a0c0ffee0002", target_model=f"b{ESCAPES}", pipelines=("mcq",)).root
    argv = {
        "show": ["show", str(root)],
        "sessions": ["sessions", "--workdir", str(workdir)],
        "export-md": ["export", str(root), "--format", "md"],
        "export-latex": ["export", str(root), "--format", "latex"],
        "compare": ["compare", str(root), str(other), "--resamples", "20"],
    }[command]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0 and "model" in out + err
    assert not any(ch in out + err for ch in "\x1b\x07\x9b")


def test_the_guarded_stream_strips_controls_but_the_progress_display_moves_its_cursor(capsys):
    from w2c_tui.cli.output import GuardedStream

    raw = io.StringIO()
    stream = GuardedStream(raw, "stderr")
    stream.write(f"a{ESCAPES}b\tc\n")
    stream.raw.write("\x1b[2F")  # the progress display's own movement (cli/progress.py)
    assert raw.getvalue() == "a]0;pwned[2J31mb\tc\n\x1b[2F"


# -- 6. a closed stdout, a damaged trace -------------------------------------------------------


class _ClosedPipe(io.StringIO):
    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_stdout_keeps_a_failing_runs_exit_code_and_its_failure_lines(monkeypatch, capsys):
    from w2c_tui.cli import run_cmd

    def failing_run(args):
        print("llama  session 0123  run r")  # the summary, to the reader that left
        print("w2c-tui: mcq failed: HTTP 404 model not found", file=sys.stderr)
        return 2

    monkeypatch.setattr(run_cmd, "run", failing_run)
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    code = main(["run"])
    err = capsys.readouterr().err
    assert code == 2 and "mcq failed: HTTP 404" in err and "Traceback" not in err


def test_show_piped_into_a_reader_that_left_exits_as_it_would_have(tmp_path):
    root = write_session(tmp_path / "w", pipelines=("mcq",)).root
    shown = subprocess.run(  # `w2c-tui show S | true`
        f"'{sys.executable}' -m w2c_tui show '{root}' | true; exit ${{PIPESTATUS[0]}}",
        shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=60,
    )
    assert shown.returncode == 0 and "Traceback" not in shown.stderr and "Exception ignored" not in shown.stderr
    missing = subprocess.run(
        f"'{sys.executable}' -m w2c_tui show '{tmp_path}/nowhere' | true; exit ${{PIPESTATUS[0]}}",
        shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=60,
    )
    assert missing.returncode == 2 and "no such session folder" in missing.stderr


def _damage(packed: Path, how: str) -> None:
    data = packed.read_bytes()
    if how == "cut":
        packed.write_bytes(data[: len(data) // 2])
    elif how == "corrupted":
        middle = len(data) // 2
        packed.write_bytes(data[:middle] + b"\x00" * 64 + data[middle + 64 :])
    else:
        packed.write_bytes(b"")


@pytest.fixture
def packed_session(tmp_path) -> Path:
    root = write_session(tmp_path / "w", pipelines=("mcq",)).root
    pack_calls(SessionPaths(root).calls_file("mcq"))
    assert packed_path(SessionPaths(root).calls_file("mcq")).is_file()
    return root


def test_an_intact_packed_trace_is_not_damaged(packed_session, capsys):
    path = SessionPaths(packed_session).calls_file("mcq")
    assert call_files.trace_damage(path) is None and CallIndex.build(path).damaged is None
    code, out, _ = run_cli(capsys, "show", str(packed_session))
    assert code == 0 and "trace:" not in out


@pytest.mark.parametrize("how", ["cut", "corrupted", "empty"])
def test_a_damaged_packed_trace_is_said_in_show_and_the_trace_view(packed_session, capsys, how):
    path = SessionPaths(packed_session).calls_file("mcq")
    _damage(packed_path(path), how)
    damage = call_files.trace_damage(path)
    assert damage and f"{how}" in damage and "mcq.jsonl.zst" in damage
    data = SessionData.load(packed_session)
    last = data.rows.rows[-1].uuid
    [trace] = data.trace(last).pipelines
    assert trace.calls_damaged == damage  # the trace screen says this, not "no API calls recorded"
    code, out, _ = run_cli(capsys, "show", str(packed_session))
    assert code == 0 and f"trace: {damage}" in out
    code, out, _ = run_cli(capsys, "show", str(packed_session), "--json")
    assert json.loads(out)["pipelines"]["mcq"]["trace_damaged"] == damage


def test_the_trace_screen_shows_the_damage_line(packed_session):
    from w2c_tui.tui.screens.trace import pipeline_section

    path = SessionPaths(packed_session).calls_file("mcq")
    _damage(packed_path(path), "empty")
    data = SessionData.load(packed_session)
    [trace] = data.trace(data.rows.rows[0].uuid).pipelines
    section = pipeline_section(trace, None)
    texts = " ".join(str(getattr(child, "content", "")) for child in section._contents_list)
    assert "packed trace damaged" in texts and "no API calls recorded" not in texts


def test_packing_never_cuts_off_what_follows_a_corrupted_member(tmp_path):
    path = tmp_path / "calls.jsonl"
    for examples in ("abc", "def"):  # two packings: two members (small examples share one)
        path.write_text("".join(json.dumps({"uuid": u, "request": {"prompt": u}, "response": None}) + "\n" for u in examples))
        pack_calls(path)
    packed = packed_path(path)
    data = bytearray(packed.read_bytes())
    data[20:30] = b"\xff" * 10  # the first member corrupted; a whole member follows
    packed.write_bytes(bytes(data))
    path.write_text(json.dumps({"uuid": "g", "request": {}, "response": None}) + "\n")
    with pytest.raises(OSError, match="not appended to"):
        TracePacker(path).pack_file(path)
    assert packed.read_bytes() == bytes(data) and path.exists()  # nothing cut, the plain file kept


def test_mlflow_sync_of_a_damaged_trace_warns_and_exits_1(packed_session, tmp_path, capsys):
    pytest.importorskip("mlflow")
    _damage(packed_path(SessionPaths(packed_session).calls_file("mcq")), "cut")
    config = write_config(tmp_path, run={"workdir_base": str(tmp_path / "w")}, mlflow={"enabled": True})
    code, out, err = run_cli(capsys, "mlflow", "sync", "--config", str(config), str(packed_session))
    assert code == 1 and "parent run" in out
    assert "mcq: mcq.jsonl.zst: packed trace damaged (cut" in err and "Traceback" not in err


# -- 7. export --out never destroys a file -----------------------------------------------------


@pytest.fixture
def session(tmp_path) -> Path:
    return write_session(tmp_path / "w", pipelines=("mcq",)).root


def test_export_out_never_replaces_a_symbolic_link(session, tmp_path, capsys):
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    link = tmp_path / "table.md"
    link.symlink_to(target)
    code, out, err = run_cli(capsys, "export", str(session), "--out", str(link))
    assert code == 2 and "symbolic link" in one_error_line(err)
    assert link.is_symlink() and target.read_text() == "keep me\n"


def test_export_out_never_replaces_a_device_or_a_pipe(session, tmp_path, capsys):
    # A device node of its own (like /dev/null: char 1,3), never the system's: a run of this
    # test against code that has the bug must not replace the machine's /dev/null.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    targets = [fifo]
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        targets.append(device)
    except (PermissionError, OSError):
        pass  # not root: the pipe stands for every node that is not a regular file
    for target in targets:
        code, _, err = run_cli(capsys, "export", str(session), "--out", str(target))
        assert code == 2 and "not a regular file" in one_error_line(err)
    assert fifo.is_fifo() and (device.is_char_device() or device not in targets)


@pytest.mark.parametrize("inside", ["manifest.json", "checkpoints/mcq/mcq_predictions.jsonl", "artifacts_local/new.md", "x.md"])
def test_export_out_never_writes_into_a_session_folder(session, capsys, inside):
    target = session / inside
    before = target.read_bytes() if target.exists() else None
    code, _, err = run_cli(capsys, "export", str(session), "--format", "json", "--out", str(target))
    assert code == 2 and "inside the session folder" in one_error_line(err)
    assert (target.read_bytes() if target.exists() else None) == before
    assert json.loads(SessionPaths(session).manifest.read_text())["fingerprint"]


def test_export_out_may_write_into_a_sessions_exports_folder_and_replace_a_regular_file(session, capsys):
    target = session / "exports" / "table.md"
    for _ in range(2):
        code, out, _ = run_cli(capsys, "export", str(session), "--out", str(target))
        assert code == 0 and target.read_text().startswith("| session")


# -- 8. the session lock ------------------------------------------------------------------------


def test_the_session_lock_never_writes_through_a_symbolic_link(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    root = tmp_path / "session"
    root.mkdir()
    (root / "session.lock").symlink_to(target)
    with pytest.raises(OSError, match="symbolic link"):
        SessionLock(root).acquire()
    assert target.read_text() == "keep me\n"


def test_the_session_lock_refuses_a_hard_link_and_a_fifo_without_hanging(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    for number, make in enumerate((lambda p: os.link(target, p), os.mkfifo)):
        root = tmp_path / f"session{number}"
        root.mkdir()
        make(root / "session.lock")
        with pytest.raises(OSError, match="not a lock file"):
            SessionLock(root).acquire()
    assert target.read_text() == "keep me\n"


def test_a_launch_on_a_linked_lock_ends_in_one_line(tmp_path):
    from w2c_tui.engine.launch import LaunchError

    root = tmp_path / "session"
    root.mkdir()
    (root / "session.lock").symlink_to(tmp_path / "elsewhere")
    lock = SessionLock(root)
    try:
        lock.acquire()
    except OSError as exc:
        message = f"{root}: cannot create the session lock ({exc.strerror})"  # as engine/launch.py says it
    assert "symbolic link" in message and "remove it" in message and LaunchError
    assert not (tmp_path / "elsewhere").exists()


# -- config values that go into HTTP headers ----------------------------------------------------


@pytest.mark.parametrize("token", ["t\u00f6ken", "tok\u2019en", "tok\x7fen", "tok\x01en"])
def test_a_token_the_http_client_cannot_send_is_refused_at_load(tmp_path, token):
    from w2c_tui.config import load_config
    from w2c_tui.config.errors import ConfigError

    config = tmp_path / "config.toml"
    config.write_text(f'[providers.remote]\nbase_url = "http://127.0.0.1:9/v1"\ntoken = {json.dumps(token)}\n')
    with pytest.raises(ConfigError) as caught:
        load_config(config, environ={})
    message = str(caught.value)
    assert "config.toml:3 (providers.remote.token)" in message and token not in message
    environment = tmp_path / "env"
    environment.mkdir()
    (environment / "config.toml").write_text('[providers.remote]\nbase_url = "http://127.0.0.1:9/v1"\n')
    with pytest.raises(ConfigError, match="TOKEN_REMOTE"):
        load_config(environment / "config.toml", environ={"TOKEN_REMOTE": token})


def test_every_token_accepted_at_load_is_sent_by_httpx_and_h11():
    import h11
    import httpx

    from w2c_tui.config.schema import check_header_token

    samples = ["abc", "sk-proj_AZ09.~+/=", "a b", "a\tb", " a", "a ", "é", "a\u00a0b", "x" * 4000, "a:b@c"]
    for token in samples:
        if check_header_token(token) is not None:
            continue
        request = httpx.Request("GET", "http://x/", headers={"Authorization": f"Bearer {token}"})
        connection = h11.Connection(h11.CLIENT)
        connection.send(h11.Request(method="GET", target="/", headers=list(request.headers.raw)))


def test_an_mlflow_token_that_cannot_be_sent_is_refused_at_load(tmp_path):
    from w2c_tui.config import load_config
    from w2c_tui.config.errors import ConfigError

    config = write_config(tmp_path, mlflow={"tracking_uri": "https://mlflow.example.org"})
    with pytest.raises(ConfigError, match="MLFLOW_TRACKING_TOKEN"):
        load_config(config, environ={"MLFLOW_TRACKING_TOKEN": "t\u00f6ken"})
    with pytest.raises(ConfigError, match="MLFLOW_TRACKING_PASSWORD"):
        load_config(config, environ={"MLFLOW_TRACKING_PASSWORD": "p\u2019w"})
    assert load_config(config, environ={"MLFLOW_TRACKING_PASSWORD": "p\u00e9w"})  # latin-1: Basic auth sends it


# -- tracebacks that are one line now ------------------------------------------------------------


@pytest.mark.parametrize("command", ["show", "sessions", "export"])
def test_stdout_on_a_full_disk_is_one_line_and_a_non_zero_exit(session, command):
    argv = {"show": ["show", str(session)], "sessions": ["sessions", "--workdir", str(session.parents[3])],
            "export": ["export", str(session)]}[command]
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "w2c_tui", *argv], stdout=full, stderr=subprocess.PIPE,
                                text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "w2c-tui: error: cannot write to stdout (No space left on device); nothing more was printed"
    ]


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--seed", "-1"], ["--seed", "0..2^63-1"]),
        (["--resamples", "1e12"], ["--resamples", "100,000"]),
        (["--resamples", "1000000000000"], ["--resamples", "100,000"]),
        (["--resamples", "1e8"], ["--resamples", "100,000"]),
        (["--resamples", "0"], ["--resamples"]),
        (["--resamples", "1.5"], ["--resamples", "whole number"]),
    ],
)
def test_compare_settings_the_bootstrap_cannot_take_are_one_line(tmp_path, capsys, extra, words):
    workdir = tmp_path / "w"
    a = write_session(workdir, pipelines=("mcq",)).root
    b = write_session(workdir, fingerprint="5e55a0c0ffee0002", pipelines=("mcq",)).root
    code, out, err = run_cli(capsys, "compare", str(a), str(b), *extra)
    line = one_error_line(err)
    assert code == 2 and out == "" and all(word in line for word in words)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--resume-session", "a" * 5000],
        ["run", "--resume-session", "a/" * 2500],
        ["show", "s" * 5000],
        ["export", "s" * 5000],
        ["compare", "s" * 5000, "t"],
        ["mlflow", "sync", "s" * 5000],
        ["sessions", "--config", "c" * 5000],
        ["export", ".", "--out", "o" * 5000],
    ],
)
def test_a_path_too_long_for_the_system_is_one_short_line(tmp_path, monkeypatch, capsys, argv):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, *argv)
    line = one_error_line(err)
    assert code == 2 and len(line) < 300 and "too long" in line
