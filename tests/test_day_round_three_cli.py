"""Issue 36, the CLI's part: exits that tell the truth, messages that match the numbers.

Each test replays what a user met in a day of CLI use, against a standalone `w2c-tui sim`
(the `sim` fixture) or a session written by a launch in the test.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

from configs import write_config
from w2c_tui.cli import main


def sim_config(folder, sim, **tables):
    tables.setdefault("data", {"n_per_label": 2})
    tables.setdefault("mlflow", {"enabled": False})
    return write_config(folder, sim.base_url, **tables)


# -- 1. an interrupt never exits 0, and names every model that did not run -------------------


def test_ctrl_c_as_the_first_session_ends_names_the_second_and_exits_1(sim, tmp_path, capsys, monkeypatch):
    from w2c_tui.engine.launch import Launch

    run_session = Launch._run_session

    async def then_ctrl_c(self, plan, providers):
        outcome = await run_session(self, plan, providers)
        os.kill(os.getpid(), signal.SIGINT)  # the headless run's own handler takes it
        await asyncio.sleep(0.05)
        return outcome

    monkeypatch.setattr(Launch, "_run_session", then_ctrl_c)
    config = sim_config(tmp_path, sim)
    code = main(["--config", str(config), "run", "--model", "ma", "--model", "mb", "--only", "mcq", "--run-key", "k1"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "mb  session" in out and "not started" in out
    assert "mb not started: stopped by the user" in err
    assert "w2c-tui --config" in err and "run --run-key k1 --model ma --model mb --only mcq" in err
    # The resume it prints finishes the run: exit 0, both sessions.
    monkeypatch.setattr(Launch, "_run_session", run_session)
    assert main(["--config", str(config), "run", "--run-key", "k1", "--model", "ma", "--model", "mb", "--only", "mcq"]) == 0
    out, _ = capsys.readouterr()
    assert out.count("/sessions/") == 2


def test_ctrl_c_mid_session_names_the_model_it_stopped_and_the_one_never_started(sim, tmp_path, capsys, monkeypatch):
    from w2c_tui.engine.runner import SessionRunner

    finalize = SessionRunner._finalize

    def ctrl_c_then_finalize(self, pipeline, progress):  # the first pipeline to end, as the user presses Ctrl+C
        if not getattr(ctrl_c_then_finalize, "sent", False):
            ctrl_c_then_finalize.sent = True
            self.cancel()
            os.kill(os.getpid(), signal.SIGINT)
        return finalize(self, pipeline, progress)

    monkeypatch.setattr(SessionRunner, "_finalize", ctrl_c_then_finalize)
    config = sim_config(tmp_path, sim)
    code = main(["--config", str(config), "run", "--model", "ma", "--model", "mb", "--only", "mcq", "--only", "llm_judge", "--run-key", "k2"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "mb not started" in err and "to resume: w2c-tui --config" in err
    for line in err.splitlines():  # a pipeline the interrupt stopped is named with its model
        if " cancelled: " in line:
            assert line.startswith("w2c-tui: ma "), line


# -- 4. a standalone `w2c-tui sim` as the provider: every summary says [SIMULATED] ------------


def small_config(folder, sim, **tables):
    from test_judge_check import small_dataset

    small_dataset(folder)
    return sim_config(folder, sim, data={"eval_data_path": "data.jsonl"}, **tables)


def first_line(capsys, argv) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out.splitlines()[0] if out else "", err


def test_every_summary_says_simulated_when_the_provider_is_a_standalone_sim(sim, tmp_path, capsys):
    config = str(small_config(tmp_path, sim))
    code, line, err = first_line(capsys, ["run", "--config", config, "--model", "ma", "--model", "mb", "--only", "llm_judge", "--run-key", "r"])
    assert code == 0, err
    assert line.startswith("ma  session") and line.endswith("[SIMULATED]")
    sessions = sorted(str(p) for p in (tmp_path / "workdir" / "runs" / "r" / "sessions").iterdir())
    for argv in (["judge-check"], ["prefer", *sessions], ["prefer-check"]):
        code, line, err = first_line(capsys, [*argv, "--config", config])
        assert code == 0, err
        assert line.endswith("[SIMULATED]"), (argv[0], line)
        assert main([*argv, "--config", config, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["simulated"] is True


def test_a_real_server_gets_no_simulated_mark(tmp_path):
    from w2c_tui.cli.simulated import MARK, simulated_mark

    class Info:
        simulated = False

    assert simulated_mark(Info()) == "" and MARK.strip() == "[SIMULATED]"


# -- 3. end messages that match the numbers ----------------------------------------------------


def test_judge_check_end_note_says_unlabelled_answers_are_left_out(make_sim, tmp_path, capsys):
    sim = make_sim("--seed", "7", "--judge-malformed-rate", "0.3")
    config = str(small_config(tmp_path, sim, http={"max_retries": 0}))
    capsys.readouterr()
    main(["judge-check", "--config", config])
    out, err = capsys.readouterr()
    assert "not labelled by the judge" in out
    [note] = [line for line in err.splitlines() if "no readable label" in line]
    assert "left out of every figure" in note and "cannot_answer" not in note


def test_llm_judge_end_note_says_unreadable_labels_are_left_out():
    from w2c_tui.cli.progress import end_notes
    from w2c_tui.engine.state import RunState

    state = RunState("m")
    for name in ("llm_judge", "judge_check"):
        progress = state.pipeline(name)
        progress.done, progress.forced_labels = 10, 3
    notes = {line.split(" answers; ")[0].split()[-1]: line for line in end_notes(state)}
    assert "left out of the figures (n_unreadable_labels" in notes["llm_judge"]  # docs/metrics.md §1
    assert "left out of every figure" in notes["judge_check"]


# -- 7. headless progress fits 80 columns -------------------------------------------------------


def test_headless_progress_fits_80_columns():
    from w2c_tui.cli.progress import render
    from w2c_tui.engine.state import RunState

    state = RunState("llama-3.3-70b-instruct · 0123456789abcdef")
    for name in ("llm_judge", "mcq_logprob", "llm_judge_t0.7_r3"):
        progress = state.pipeline(name)
        progress.total, progress.done, progress.failed, progress.status = 3652, 1234, 0, "running"
    state.on_request_start("sim")
    state.on_request_end("sim", 120.0, True)
    lines = render(state)
    assert all(len(line) < 80 for line in lines), [line for line in lines if len(line) >= 80]


# -- 6. estimates: the finishing phase, each model's pipelines, the resume's in the manifest ----


def test_the_estimate_includes_the_finishing_phase_even_with_nothing_left():
    from w2c_tui.config.schema import Settings
    from w2c_tui.engine.estimate import FINISH_SECONDS, TRACK_SECONDS, estimate, left_after

    settings = Settings.model_validate({"pipelines": {"do_llm_judge": False, "do_mcq": True, "do_mcq_logprob": False}})
    full = estimate(settings, 100)
    assert full.finish_seconds == FINISH_SECONDS + (TRACK_SECONDS + 1.0 if settings.mlflow.enabled else 0.0)
    nothing_left = left_after(full, {"mcq": 100})
    assert nothing_left.total_requests == 0 and nothing_left.session_seconds == 0
    assert nothing_left.total_seconds == full.finish_seconds > 0
    assert nothing_left.as_dict()["seconds"] == round(full.finish_seconds, 1)
    assert nothing_left.as_dict()["resumed_examples"] == {"mcq": 100}


def test_the_setup_estimate_shows_each_models_pipelines():
    from w2c_tui.config.schema import Settings
    from w2c_tui.tui.screens.setup.estimate import estimate_markup

    settings = Settings.model_validate(
        {"models": {"target_model": ["a", "b"]}, "pipelines": {"do_llm_judge": False, "do_mcq": True, "do_mcq_logprob": False}}
    )
    text = estimate_markup(settings, 100, None, {"a": {"mcq": 100}, "b": {"mcq": 40}})
    lines = text.splitlines()
    assert any("a:" in line and "mcq 0" in line for line in lines), text
    assert any("b:" in line and "mcq 60" in line for line in lines), text
    assert "≈ [b]60[/b] requests" in text


def test_a_resume_records_the_estimate_of_what_it_sends(sim, tmp_path, capsys):
    from w2c_tui.store.jsonl import read_json

    config = str(sim_config(tmp_path, sim))
    argv = ["run", "--config", config, "--model", "ma", "--only", "mcq", "--run-key", "again"]
    assert main(argv) == 0
    root = capsys.readouterr().out.splitlines()[-1]
    first = read_json(Path(root) / "manifest.json")["estimate"]
    assert first["requests"] > 0 and "resumed_examples" not in first
    assert main(argv) == 0
    second = read_json(Path(root) / "manifest.json")["estimate"]
    assert second["requests"] == 0 and second["resumed_examples"] == {"mcq": first["n_examples"]}
    assert second["seconds"] == second["finish_seconds"] > 0


# -- 7. show and compare by fingerprint or run key; sessions --paths; --help descriptions -------


def two_sessions(sim, tmp_path, capsys) -> tuple[str, list[Path]]:
    config = str(sim_config(tmp_path, sim))
    assert main(["run", "--config", config, "--model", "ma", "--model", "mb", "--only", "mcq", "--run-key", "pair"]) == 0
    roots = [Path(line) for line in capsys.readouterr().out.splitlines() if "/sessions/" in line]
    return config, roots


def test_show_and_compare_take_a_fingerprint_or_a_run_key(sim, tmp_path, capsys):
    config, (a, b) = two_sessions(sim, tmp_path, capsys)
    assert main(["--config", config, "show", a.name]) == 0
    assert capsys.readouterr().out.startswith(f"session {a.name}  run pair")
    assert main(["--config", config, "compare", a.name, b.name, "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert str(a) in out and str(b) in out
    # A run key of two sessions is ambiguous: one line naming both, exit 2.
    assert main(["--config", config, "show", "pair"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "run key pair has 2 sessions" in line and str(a) in line and str(b) in line
    # The same fingerprint in two run keys: both named.
    twin = tmp_path / "workdir" / "runs" / "other" / "sessions" / a.name
    twin.parent.mkdir(parents=True)
    import shutil

    shutil.copytree(a, twin)
    assert main(["--config", config, "show", a.name]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert f"fingerprint {a.name} is in 2 run keys" in line and str(twin) in line
    # A run key as it was typed at launch, not its folder's name: the launch's sanitising finds it.
    odd = tmp_path / "workdir" / "runs" / "my run_1" / "sessions" / b.name
    odd.parent.mkdir(parents=True)
    shutil.copytree(b, odd)
    assert main(["--config", config, "show", "my run:1"]) == 0
    assert capsys.readouterr().out.startswith(f"session {b.name}")


def test_sessions_paths_prints_one_folder_a_line(sim, tmp_path, capsys):
    config, roots = two_sessions(sim, tmp_path, capsys)
    assert main(["--config", config, "sessions", "--paths"]) == 0
    assert sorted(capsys.readouterr().out.splitlines()) == sorted(str(r) for r in roots)


def _commands(parser, prefix=()):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                yield (*prefix, name), command
                yield from _commands(command, (*prefix, name))


def test_every_subcommand_help_has_a_description_line(capsys):
    from w2c_tui.cli import build_parser

    commands = list(_commands(build_parser()))
    assert len(commands) >= 13
    for words, _ in commands:
        with pytest.raises(SystemExit) as stop:
            main([*words, "--help"])
        assert stop.value.code == 0
        text = capsys.readouterr().out
        paragraphs = text.split("\n\n")
        assert len(paragraphs) > 2 and not paragraphs[1].lstrip().startswith(("positional", "options")), words


# -- 5. mlflow-ui: "ready" only once the server answers; a TERM stops its whole process group ---

FAKE_UI = """
import http.server, os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])  # a worker, as mlflow's
open(sys.argv[2], "w").write(f"{os.getpid()} {child.pid}")
time.sleep(0.4)  # MLflow takes a while before it answers
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is gone, only not reaped yet
        return stat.read().split(") ")[-1][0] != "Z"


def test_mlflow_ui_says_ready_once_it_answers_and_a_term_stops_the_whole_group(tmp_path):
    import subprocess
    import sys
    import time

    from w2c_tui.tracking.ui import answers

    port, pids = _free_port(), tmp_path / "pids"
    fake = [sys.executable, "-c", FAKE_UI, str(port), str(pids)]
    wrapper = subprocess.Popen(
        [sys.executable, "-c", f"import sys; from w2c_tui.tracking.ui import serve; sys.exit(serve({fake!r}, {port}, print))"],
        stdout=subprocess.PIPE, text=True,
    )
    assert "starting" in wrapper.stdout.readline()
    ready = wrapper.stdout.readline()
    assert ready.startswith("MLflow UI ready: http://127.0.0.1:") and answers(port)
    server, worker = map(int, pids.read_text().split())
    wrapper.send_signal(signal.SIGTERM)
    assert wrapper.wait(timeout=15) == 0
    deadline = time.monotonic() + 5
    while (_alive(server) or _alive(worker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(server) and not _alive(worker) and not answers(port)


def test_mlflow_ui_refuses_a_port_another_server_holds(sim, tmp_path, capsys):
    config = str(sim_config(tmp_path, sim))
    port = sim.base_url.split(":")[-1].split("/")[0]
    assert main(["mlflow-ui", "--config", config, "--port", port]) == 2
    assert f"port {port} on 127.0.0.1 already answers" in capsys.readouterr().err


# -- 3. a pipeline the probe refused: the session is failed, as docs/metrics.md §10 says ---------


def test_a_probe_refused_pipeline_makes_the_session_failed(make_sim, tmp_path, capsys):
    sim = make_sim("--seed", "7", "--imitate", "tgi")  # no log-probabilities from /completions
    config = str(sim_config(tmp_path, sim))
    assert main(["run", "--config", config, "--model", "ma", "--only", "mcq", "--only", "mcq_logprob"]) == 2
    out = capsys.readouterr().out
    refused = next(line for line in out.splitlines() if line.strip().startswith("mcq_logprob"))
    assert "refused" in refused and "not run" in refused and "log-probabilities" in refused
    root = out.splitlines()[-1]
    assert main(["show", root]) == 0
    assert "status failed" in capsys.readouterr().out.splitlines()[0]
    assert main(["--config", config, "sessions", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["status"] == "failed"


def test_session_status_counts_refused_as_failed():
    from w2c_tui.status import session_status

    assert session_status(["complete", "refused"]) == "failed"
    assert session_status(["complete"]) == "complete"


# -- 7. a provider on this machine is not told to set a token ----------------------------------


def test_a_loopback_provider_is_not_told_to_set_a_token():
    from w2c_tui.config.schema import ProviderSettings
    from w2c_tui.tui.widgets.provider_list import describe_provider

    local = describe_provider("local", ProviderSettings(base_url="http://127.0.0.1:8000/v1"), "TOKEN_LOCAL", None)
    assert "TOKEN_LOCAL" not in local.plain and "no token needed" in local.plain
    remote = describe_provider("gemini", ProviderSettings(base_url="https://example.com/v1"), "TOKEN_GEMINI", None)
    assert "set TOKEN_GEMINI in .env" in remote.plain


def test_show_counts_only_warnings_and_errors_as_outstanding():
    from w2c_tui.cli.sessions_cmd import _audit_line

    summary = {"total_events": 5, "by_severity": {"info": 4, "warning": 1}, "by_fallback_type": {"pacing_summary": 4, "x": 1}}
    line = _audit_line(summary)
    assert "audit: 1 outstanding (warnings and errors)" in line and "4 info notes" in line


def test_show_says_a_resumes_estimate_is_the_last_launchs():
    from w2c_tui.report.usage_text import session_usage_lines

    estimate = {"requests": 0, "seconds": 0.5, "resumed_examples": {"mcq": 6}}
    total = {"requests": 6, "prompt_tokens": 600, "completion_tokens": 6}
    lines = session_usage_lines({"estimate": estimate, "total": total, "seconds": 1.0})
    assert any("a resume: examples already on disk mcq 6" in line for line in lines), lines
    assert not any("resume" in line for line in session_usage_lines({"estimate": {"requests": 6}, "total": total}))
