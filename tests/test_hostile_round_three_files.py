"""Issue 35, reading files: hostile inputs against packed traces, the session summary, run keys,
export and checkpoints (round three; rounds one and two: test_hostile_files.py,
test_hostile_round_two_files.py).

Each test is a case of the hunt: a traceback, a hang, a blank screen or a silently wrong
figure, which now ends in the right result or one readable line naming the file and the bound.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import zstandard

from w2c_tui.cli import main
from w2c_tui.session import summary as summary_file
from w2c_tui.session.data import SessionData
from w2c_tui.session.reader import list_sessions, read_session
from w2c_tui.store import call_files, members
from w2c_tui.store.call_files import CallIndex, gzip_path, iter_calls, pack_calls, packed_path, trace_damage
from w2c_tui.store.jsonl import write_json_atomic
from w2c_tui.store.layout import MAX_RUN_KEY_LENGTH, MCQ_PREDICTIONS, SUMMARY_FILE, SessionPaths, sanitize_run_key
from w2c_tui.store.members import Damage, MemberError, decompress, iter_members
from w2c_tui.testing.synthetic_session import write_session

SIZE = (100, 30)


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def finishes(function, *args, seconds: float = 30.0):
    """`function(*args)`'s result, or a failure if it has not returned in `seconds` (a hang)."""
    result: dict = {}

    def call() -> None:
        try:
            result["value"] = function(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            result["error"] = exc

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"{getattr(function, '__name__', function)} hung"
    if "error" in result:
        raise result["error"]
    return result["value"]


def rle_bomb(inflated: int, *, declare: bool = False) -> bytes:
    """A zstd frame of RLE blocks (4 bytes each for 128 KB of zeros): `inflated` bytes from a
    file of inflated / 32768; `declare` writes the content size in its header too."""
    block = 128 << 10
    n = inflated // block
    head = b"\x28\xb5\x2f\xfd" + (bytes([0xC0, 7 << 3]) + inflated.to_bytes(8, "little") if declare else bytes([0x00, 7 << 3]))
    blocks = [((i == n - 1) | (1 << 1) | (block << 3)).to_bytes(3, "little") + b"\x00" for i in range(n)]
    return head + b"".join(blocks)


def no_content_size_frame(data: bytes) -> bytes:
    """A frame as `zstd` writes from a pipe: streamed, no content size in its header."""
    out = io.BytesIO()
    with zstandard.ZstdCompressor(write_checksum=True).stream_writer(out, closefd=False) as writer:
        writer.write(data)
    frame = out.getvalue()
    assert zstandard.get_frame_parameters(frame).content_size == zstandard.CONTENTSIZE_UNKNOWN
    return frame


@pytest.fixture
def packed_session(tmp_path) -> Path:
    root = write_session(tmp_path / "w", n_examples=6, pipelines=("mcq",)).root
    pack_calls(SessionPaths(root).calls_file("mcq"))
    return root


def trace_of(root: Path) -> Path:
    return SessionPaths(root).calls_file("mcq")


# -- 1. a member that inflates to gigabytes ---------------------------------------------------


def test_the_rle_bomb_is_what_it_claims():
    small = rle_bomb(4 << 20)
    assert len(small) < 200 and zstandard.ZstdDecompressor().decompressobj().decompress(small) == bytes(4 << 20)


@pytest.mark.parametrize("declare", [False, True])
def test_a_member_inflating_past_the_bound_stops_the_reading_there_and_says_the_bound(monkeypatch, declare):
    monkeypatch.setattr(members, "MAX_MEMBER_BYTES", 1 << 20)
    good = members.Compressor().member(b'{"uuid":"a"}\n')
    data = good + rle_bomb(64 << 20, declare=declare) + good
    damage: list[Damage] = []
    found = list(iter_members(data, damage))
    assert [blob for _, _, blob in found] == [b'{"uuid":"a"}\n']
    assert damage == [Damage("too large", len(good), len(data), 1 << 20)]
    text = damage[0].text("mcq.jsonl.zst")
    assert "mcq.jsonl.zst" in text and "1 MB" in text and f"byte {len(good):,}" in text
    with pytest.raises(MemberError, match="1 MB"):
        decompress(rle_bomb(64 << 20, declare=declare))


def test_a_two_gigabyte_frame_is_refused_at_the_stated_bound_without_a_memory_error(packed_session, capsys):
    """The real bound (no monkeypatch): 2 GB from a 64 KB file, the trace read up to it."""
    packed = packed_path(trace_of(packed_session))
    whole = packed.read_bytes()
    packed.write_bytes(whole + rle_bomb(2 << 30, declare=True))
    damage = trace_damage(trace_of(packed_session))
    assert damage and "inflates past 128 MB (the bound on one member)" in damage and "mcq.jsonl.zst" in damage
    index = CallIndex.build(trace_of(packed_session))
    assert index.damaged == damage and index.n_lines > 0  # the calls before it are all there
    data = SessionData.load(packed_session)
    [trace] = data.trace(data.rows.rows[0].uuid).pipelines
    assert trace.calls and trace.calls_damaged == damage  # the Trace screen's line under the calls
    code, out, _ = run_cli(capsys, "show", str(packed_session))
    assert code == 0 and f"trace: {damage}" in out


def test_a_plain_line_past_the_bound_is_skipped_and_said_and_not_packed(tmp_path, monkeypatch):
    monkeypatch.setattr(call_files, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "calls.jsonl"
    good = json.dumps({"uuid": "a", "request": {}, "response": None}) + "\n"
    path.write_text(good + json.dumps({"uuid": "b", "response": "x" * 5000}) + "\n" + good.replace('"a"', '"c"'))
    assert [row["uuid"] for row in iter_calls(path)] == ["a", "c"]
    damage = trace_damage(path)
    assert damage == "calls.jsonl: line 2 is longer than 1,000 bytes (the bound on one call record): not read"
    index = CallIndex.build(path)
    assert index.damaged == damage and index.uuids == {"a", "c"}
    assert [row["uuid"] for row in index.rows("c")] == ["c"]  # offsets after the skipped line hold
    with pytest.raises(OSError, match="line 2 is longer"):
        pack_calls(path)
    assert path.exists() and not packed_path(path).exists()  # kept whole, nothing packed


def test_the_packer_splits_an_example_past_the_member_bound_and_reads_it_back(tmp_path, monkeypatch):
    monkeypatch.setattr(members, "MAX_MEMBER_BYTES", 4000)
    monkeypatch.setattr(call_files, "MAX_MEMBER_BYTES", 4000)
    path = tmp_path / "calls.jsonl"
    lines = [json.dumps({"uuid": "big", "attempt": n, "response": "y" * 1500}) + "\n" for n in range(6)]
    path.write_text("".join(lines))
    pack_calls(path)
    assert len(list(iter_members(packed_path(path).read_bytes()))) >= 3
    assert trace_damage(path) is None
    assert [row["attempt"] for row in CallIndex.build(path).rows("big")] == list(range(6))


def test_the_trace_screen_says_a_read_problem_instead_of_going_blank(packed_session, tmp_path, monkeypatch):
    import asyncio

    from w2c_tui.config import LoadedConfig
    from w2c_tui.config.schema import Settings
    from w2c_tui.tui.app import W2cApp
    from w2c_tui.tui.screens.trace import TraceScreen

    monkeypatch.chdir(tmp_path)
    workdir = packed_session.parents[3]
    data = SessionData.load(packed_session)
    uuid = data.rows.rows[0].uuid

    def out_of_memory(_uuid):
        raise MemoryError("inflating a member")

    monkeypatch.setattr(data, "trace", out_of_memory)
    settings = Settings.model_validate({"run": {"workdir_base": str(workdir)}, "mlflow": {"enabled": False}})
    app = W2cApp(loaded=LoadedConfig(settings, None, workdir.parent, {}), start_mode="sessions", poll_monitor=False)

    async def scenario() -> str:
        async with app.run_test(size=SIZE) as pilot:
            await app.push_screen(TraceScreen(data, uuid))
            screen = app.screen
            deadline = time.monotonic() + 20
            while not screen.query(".trace-problem"):
                assert time.monotonic() < deadline, "the Trace screen stayed blank"
                await pilot.pause(0.05)
            return str(screen.query_one(".trace-problem").render())

    text = asyncio.run(scenario())
    assert f"the files of {uuid} cannot be read: MemoryError: inflating a member" in text


# -- 2. a FIFO, a device or a link to one: refused, never waited on ---------------------------


def _fifo_trace(root: Path, part: str, tmp_path: Path) -> str:
    """Put a FIFO (or a link to one, or to a device) where a part of the trace is; what is said."""
    path = trace_of(root)
    target = {"open": path, "packed": packed_path(path), "old": gzip_path(path), "segment": call_files.segment_path(path, 1)}
    if part in ("link-fifo", "link-device"):
        fifo = tmp_path / "elsewhere.fifo"
        os.mkfifo(fifo)
        packed_path(path).unlink()
        packed_path(path).symlink_to(fifo if part == "link-fifo" else Path("/dev/null"))  # not /dev/zero: a regression must fail, not fill memory
        return "named pipe" if part == "link-fifo" else "a device"
    place = target[part]
    place.unlink(missing_ok=True)
    os.mkfifo(place)
    return "named pipe"


@pytest.mark.parametrize("part", ["open", "packed", "old", "segment", "link-fifo", "link-device"])
def test_a_trace_part_that_is_no_regular_file_is_refused_in_one_line_without_hanging(packed_session, tmp_path, capsys, part):
    words = _fifo_trace(packed_session, part, tmp_path)
    damage = finishes(trace_damage, trace_of(packed_session))
    assert damage and words in damage and "not read" in damage
    index = finishes(CallIndex.build, trace_of(packed_session))
    assert index.damaged == damage
    code, out, _ = finishes(run_cli, capsys, "show", str(packed_session))
    assert code == 0 and f"trace: {damage}" in out
    data = SessionData.load(packed_session)
    [trace] = finishes(data.trace, data.rows.rows[0].uuid).pipelines
    assert trace.calls_damaged == damage


def test_packing_into_a_fifo_is_refused_not_blocked(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps({"uuid": "a", "request": {}, "response": None}) + "\n")
    os.mkfifo(packed_path(path))
    with pytest.raises(OSError, match="named pipe"):
        finishes(pack_calls, path)
    assert path.exists() and packed_path(path).is_fifo()


def test_a_checkpoint_that_is_a_fifo_is_one_line_in_show(tmp_path, capsys):
    root = write_session(tmp_path / "w", n_examples=6, pipelines=("mcq",)).root
    primary = SessionPaths(root).checkpoint_file("mcq", MCQ_PREDICTIONS)
    primary.unlink()
    os.mkfifo(primary)
    code, out, _ = finishes(run_cli, capsys, "show", str(root))
    assert code == 0 and "mcq_predictions.jsonl: is a named pipe (FIFO), not a regular file" in out


# -- 3. a frame without a content size --------------------------------------------------------


def test_frames_without_a_content_size_are_read_by_show_the_index_and_the_trace(packed_session, capsys):
    path = trace_of(packed_session)
    packed = packed_path(path)
    lines = members.unpack(packed.read_bytes())
    packed.write_bytes(no_content_size_frame(lines))  # as `zstdcat x.zst | zstd > x.zst` leaves it
    assert trace_damage(path) is None
    data = SessionData.load(packed_session)
    uuid = data.rows.rows[0].uuid
    [trace] = data.trace(uuid).pipelines
    assert trace.calls and trace.calls_damaged is None
    assert all(call["uuid"] == uuid for call in trace.calls)
    assert len(list(iter_calls(path))) == lines.count(b"\n")
    code, out, _ = run_cli(capsys, "show", str(packed_session))
    assert code == 0 and "trace:" not in out


# -- 4. a .gz and a .zst of the same calls ----------------------------------------------------


def test_calls_in_both_the_gz_and_the_zst_are_shown_once_and_said(packed_session, capsys):
    path = trace_of(packed_session)
    lines = members.unpack(packed_path(path).read_bytes())
    gzip_path(path).write_bytes(gzip.compress(lines, mtime=0))  # the same calls, packed as an older version did
    n = lines.count(b"\n")
    assert len(list(iter_calls(path))) == n
    damage = trace_damage(path)
    assert damage == f"mcq.jsonl.zst: {n:,} calls are also in mcq.jsonl.gz: each shown once, from the .gz (packed first)"
    index = CallIndex.build(path)
    assert index.n_lines == n and index.damaged == damage
    data = SessionData.load(packed_session)
    uuid = data.rows.rows[0].uuid
    [trace] = data.trace(uuid).pipelines
    assert len(trace.calls) == len({json.dumps(c, sort_keys=True) for c in trace.calls}) > 0
    code, out, _ = run_cli(capsys, "show", str(packed_session))
    assert code == 0 and f"trace: {damage}" in out


def test_a_gz_and_a_zst_of_different_calls_are_both_read_without_a_word(packed_session):
    """A session packed by an older version and resumed: its new calls are in the .zst."""
    path = trace_of(packed_session)
    older = json.dumps({"uuid": "older", "request": {}, "response": None}).encode() + b"\n"
    gzip_path(path).write_bytes(gzip.compress(older, mtime=0))
    n = members.unpack(packed_path(path).read_bytes()).count(b"\n")
    assert len(list(iter_calls(path))) == n + 1 and trace_damage(path) is None


# -- 5. the session summary is trusted only when ours and fresh -------------------------------


@pytest.fixture
def listed(tmp_path) -> Path:
    """A session listed once: its summary written."""
    root = write_session(tmp_path / "w", n_examples=24, pipelines=("mcq",)).root
    list_sessions(root.parents[3])
    assert (root / SUMMARY_FILE).is_file()
    return root


def _listing_accuracy(root: Path) -> float:
    [info] = list_sessions(root.parents[3])
    return info.pipelines[0].metrics.accuracy


def _show_accuracy(capsys, root: Path) -> float:
    code, out, _ = run_cli(capsys, "show", str(root), "--json")
    return json.loads(out)["metrics"]["mcq"]["accuracy"]


def test_a_hand_edited_summary_never_shows_a_figure_show_does_not(listed, capsys):
    path = listed / SUMMARY_FILE
    text = path.read_text()
    real = _show_accuracy(capsys, listed)
    edited = text.replace(f'"accuracy": {real}', '"accuracy": 0.99', 1)
    assert edited != text
    path.write_text(edited)
    assert summary_file.load_fresh(SessionPaths(listed), ["mcq"]) is None
    assert _listing_accuracy(listed) == real == _show_accuracy(capsys, listed)


def test_a_summary_without_its_digest_or_of_the_earlier_schema_is_not_used(listed):
    path = listed / SUMMARY_FILE
    document = json.loads(path.read_text())
    document.pop("digest")
    path.write_text(json.dumps(document, indent=1))
    assert summary_file.load_fresh(SessionPaths(listed), ["mcq"]) is None
    list_sessions(listed.parents[3])  # written again, signed
    assert summary_file.load_fresh(SessionPaths(listed), ["mcq"]) is not None


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_summary_of_another_user_is_not_trusted(listed):
    os.chown(listed / SUMMARY_FILE, 65534, 65534)
    assert summary_file.load_fresh(SessionPaths(listed), ["mcq"]) is None


def test_a_same_size_row_edit_with_its_mtime_put_back_is_seen(listed, capsys):
    primary = SessionPaths(listed).checkpoint_file("mcq", MCQ_PREDICTIONS)
    before = os.stat(primary)
    real = _show_accuracy(capsys, listed)
    text = primary.read_text()
    # A right answer made wrong, padded to the same size (JSON allows the spaces).
    right = next(line for line in text.splitlines() if '"predicted_label":"tool_call"' in line and '"gold_label":"tool_call"' in line)
    wrong = right.replace('"predicted_index":1,"predicted_label":"tool_call"', '"predicted_index":0,"predicted_label":"direct"   ')
    assert len(wrong) == len(right) and wrong != right
    primary.write_text(text.replace(right, wrong))
    os.utime(primary, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(primary)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert summary_file.load_fresh(SessionPaths(listed), ["mcq"]) is None
    edited = _show_accuracy(capsys, listed)
    assert edited < real and _listing_accuracy(listed) == edited


# -- 6. temporary files a killed writer left --------------------------------------------------


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    return int(done.stdout)


def _leftovers(folder: Path, name: str) -> dict[str, Path]:
    """Temporary files of `name` as writers leave them, and files that only look alike."""
    old = time.time() - 3600
    made = {
        "dead": folder / f".{name}.{_dead_pid()}.tmp",
        "old": folder / f".{name}.{os.getppid()}.tmp",  # a live process, but an hour old
        "dotted": folder / f".{name}.{_dead_pid()}.9.tmp",  # not of the pattern
        "other": folder / f".other.json.{_dead_pid()}.tmp",
        "no-pid": folder / f".{name}.abc.tmp",
    }
    for path in made.values():
        path.write_text("{half a docu")
    os.utime(made["old"], (old, old))
    return made


def test_a_summary_temporary_file_a_killed_writer_left_is_removed_by_the_next_listing(listed, tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    made = _leftovers(listed, SUMMARY_FILE)
    link = listed / f".{SUMMARY_FILE}.{_dead_pid()}.tmp"
    link.symlink_to(precious)
    list_sessions(listed.parents[3])  # warm: the summary is fresh, nothing written; the scan cleans
    assert not made["dead"].exists() and not made["old"].exists() and not os.path.lexists(link)
    assert precious.read_text() == "keep me\n"
    assert made["other"].exists() and made["no-pid"].exists() and made["dotted"].exists()


def test_a_live_writers_fresh_temporary_file_is_kept(listed):
    busy = listed / f".{SUMMARY_FILE}.{os.getppid()}.tmp"
    busy.write_text("{being written")
    (listed / SUMMARY_FILE).unlink()
    list_sessions(listed.parents[3])  # cold: writes the summary
    assert busy.exists() and (listed / SUMMARY_FILE).is_file()


def test_no_listing_cleans_a_folder_a_launch_holds(listed):
    dead = listed / f".{SUMMARY_FILE}.{_dead_pid()}.tmp"
    dead.write_text("{")
    (listed / "session.lock").write_text(json.dumps({"pid": 1, "host": "elsewhere"}))
    list_sessions(listed.parents[3])
    assert dead.exists()


def test_a_document_writer_removes_what_a_killed_one_left(tmp_path):
    target = tmp_path / "metrics.json"
    made = _leftovers(tmp_path, target.name)
    write_json_atomic(target, {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1}
    assert not made["dead"].exists() and not made["old"].exists()
    assert made["other"].exists() and made["no-pid"].exists() and made["dotted"].exists()


# -- 7. export --out keeps the mode of the file it replaces ----------------------------------


def test_export_out_keeps_the_mode_of_the_file_it_replaces(tmp_path, capsys):
    root = write_session(tmp_path / "w", n_examples=6, pipelines=("mcq",)).root
    private = tmp_path / "private.md"
    private.write_text("old\n")
    private.chmod(0o600)
    code, _, _ = run_cli(capsys, "export", str(root), "--out", str(private))
    assert code == 0 and private.read_text().startswith("| session")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    shared = tmp_path / "shared.md"
    shared.write_text("old\n")
    shared.chmod(0o664)
    assert run_cli(capsys, "export", str(root), "--out", str(shared))[0] == 0
    assert stat.S_IMODE(shared.stat().st_mode) == 0o664


# -- 8. run keys longer than the cut ----------------------------------------------------------


def test_two_long_run_keys_get_two_folders_and_a_short_key_keeps_its_folder(tmp_path):
    common = "sweep " + "x" * (MAX_RUN_KEY_LENGTH + 20)
    first, second = sanitize_run_key(common + " run 1"), sanitize_run_key(common + " run 2")
    assert first != second and len(first) == len(second) == MAX_RUN_KEY_LENGTH
    assert first.startswith("sweep xxx") and sanitize_run_key(first) == first  # stable when applied again
    assert sanitize_run_key(common + " run 1") == first
    for short in ("2026-11 llama sweep", "a/b", "y" * MAX_RUN_KEY_LENGTH):  # the folders they always had
        assert sanitize_run_key(short) == {"a/b": "a_b"}.get(short, short)
    a = SessionPaths.under(tmp_path, common + " run 1", "f" * 16)
    b = SessionPaths.under(tmp_path, common + " run 2", "f" * 16)
    assert a.root != b.root and a.run_key == first


# -- 9. a garbage line in a checkpoint ---------------------------------------------------------


def test_show_reports_a_garbage_line_in_a_checkpoint_with_its_file_and_number(tmp_path, capsys):
    root = write_session(tmp_path / "w", n_examples=6, pipelines=("mcq",)).root
    primary = SessionPaths(root).checkpoint_file("mcq", MCQ_PREDICTIONS)
    lines = primary.read_text().splitlines(keepends=True)
    primary.write_text("".join(lines[:2]) + "garbage, not a row\n" + "".join(lines[2:]) + '{"uuid": "torn')
    code, out, _ = run_cli(capsys, "show", str(root))
    [note] = [line for line in out.splitlines() if "mcq_predictions.jsonl" in line]
    assert code == 0 and note.strip().startswith("note: mcq_predictions.jsonl: 2 lines are no JSON row (lines 3, 8;")
    assert "skipped, not counted" in note
    primary.write_text("".join(lines[:2]) + "garbage, not a row\n" + "".join(lines[2:]))
    [pipeline] = read_session(root).pipelines
    assert pipeline.rows and pipeline.notes[-1].startswith("mcq_predictions.jsonl line 3: not a JSON row (")
