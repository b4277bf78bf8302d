"""Bad input of every kind: one clear message naming what and where, exit code 2, no traceback,
no checkpoint row lost (or the run goes on with an audit event, where that is right)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from w2c_tui.cli import main
from w2c_tui.data import BUNDLED_PATH
from w2c_tui.store.jsonl import iter_rows

from configs import write_config
from stub_server import StubServer

SMALL = """
[data]
n_per_label = 2
[pipelines]
do_llm_judge = false
do_mcq_logprob = false
[mlflow]
enabled = false
"""


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def dataset(tmp: Path, lines: list[str], name: str = "data.jsonl") -> Path:
    path = tmp / name
    path.write_text("\n".join(lines) + ("\n" if lines else ""))
    return path


def bundled_lines(n: int = 6) -> list[str]:
    return BUNDLED_PATH.read_text().splitlines()[:n]


def edit(line: str, **changes) -> str:
    record = json.loads(line)
    record.update(changes)
    return json.dumps(record)


def data_at(path: str | Path) -> str:
    """The small run, reading every example of the dataset at `path`."""
    return SMALL.replace("[data]\n", f'[data]\neval_data_path = "{path}"\nuse_full_dataset = true\n', 1)


def with_data(lines_factory):
    """A case whose config points [data] at a generated dataset."""

    def make(tmp, sim):
        write_config(tmp, sim.base_url, data_at(lines_factory(tmp)))
        return ["run", "--run-key", "bad"]

    return make


def raw_config(text: str, args=("run",)):
    def make(tmp, sim):
        (tmp / "config.toml").write_text(text)
        return list(args)

    return make


def config_with(body: str, base_url: str | None = None, args=("run", "--run-key", "bad")):
    def make(tmp, sim):
        write_config(tmp, base_url or sim.base_url, SMALL + body)
        return list(args)

    return make


def stub(mode: str):
    def make(tmp, sim):
        server = StubServer(mode)
        make.servers.append(server)
        write_config(tmp, server.base_url, SMALL)
        return ["run", "--run-key", "bad"]

    make.servers = []
    return make


def provider_config(provider_body: str, extra: str = "", dotenv: bytes | None = None):
    """A config with one remote provider `[providers.remote]` (and an optional .env beside it)."""

    def make(tmp, sim):
        (tmp / "config.toml").write_text(f"[providers.remote]\n{provider_body}\n{extra}\n[mlflow]\nenabled = false\n")
        if dotenv is not None:
            (tmp / ".env").write_bytes(dotenv)
        return ["run", "--run-key", "bad"]

    return make


def url_config(url: str):
    return provider_config(f'base_url = "{url}"\ntoken = "sk-test-token-1234"')


def bounded(section: str, key: str, value: str):
    """The small sim config with `key = value` in [section] (in a sweep for "stability.sweeps")."""

    def make(tmp, sim):
        path = write_config(tmp, sim.base_url, SMALL)
        # The value replaces the one the small config already sets (every key here is unique to its section).
        text = "".join(line for line in path.read_text().splitlines(keepends=True) if not line.startswith(f"{key} = "))
        if section == "stability.sweeps":
            text += f"\n[stability]\nenabled = true\n[[stability.sweeps]]\nmethod = 'mcq'\n{key} = {value}\n"
        elif f"[{section}]\n" in text:
            text = text.replace(f"[{section}]\n", f"[{section}]\n{key} = {value}\n", 1)
        else:
            text += f"\n[{section}]\n{key} = {value}\n"
        path.write_text(text)
        return ["run", "--run-key", "bad"]

    return make


class NoModelsServer(StubServer):
    """An OpenAI-compatible server under /v1 that 404s everything else (a base_url without /v1)."""

    def handle(self, handler, method: str) -> None:
        if not handler.path.startswith("/v1/"):
            handler._send(404, json.dumps({"detail": "Not Found"}))
            return
        super().handle(handler, method)


def no_models(suffix: str):
    """The stub's root, without /v1 (suffix "") or with an endpoint path pasted on."""

    def make(tmp, sim):
        server = NoModelsServer("ok")
        make.servers.append(server)
        root = server.base_url.removesuffix("/v1")
        write_config(tmp, root + suffix, SMALL)
        return ["run", "--run-key", "bad"]

    make.servers = []
    return make


def binary_file(name: str, then):
    """Binary bytes in `name`, then the case `then`."""

    def make(tmp, sim):
        args = then(tmp, sim)
        (tmp / name).write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary")
        return args

    return make


# name, case factory, expected exit code, fragments of the message on stderr
CASES = [
    ("toml syntax", raw_config("[run\napi_seed = 1\n"), 2, ["config.toml", "invalid TOML", "line 1"]),
    ("unknown key", raw_config("[data]\nn_per_lable = 3\n"), 2, ["config.toml:2", "unknown key 'n_per_lable'", "n_per_label"]),
    ("unknown section", raw_config("[modles]\ntarget_model = 'x'\n"), 2, ["unknown key 'modles'", "models"]),
    ("wrong type", raw_config("[data]\nn_per_label = 'many'\n"), 2, ["config.toml:2", "data.n_per_label", "integer"]),
    ("negative count", raw_config("[data]\nn_per_label = -3\n"), 2, ["data.n_per_label", "greater than or equal to 1"]),
    (
        "log-prob sweep above T=0",
        raw_config("[stability]\n[[stability.sweeps]]\nmethod = 'mcq_logprob'\nk = 2\ntemperatures = [0.0, 0.7]\n"),
        2,
        ["config.toml:5", "stability.sweeps.0.temperatures", "temperatures = [0.0]"],
    ),
    ("bad template family", raw_config("[models]\ntemplate_family = 'gpt9'\n"), 2, ["template_family", "llama3"]),
    ("url without scheme", raw_config("[providers.x]\nbase_url = 'api.example.org/v1'\n"), 2, ["providers.x.base_url", "http://"]),
    ("missing config file", lambda tmp, sim: ["run", "--config", str(tmp / "absent.toml")], 2, ["absent.toml", "not found"]),
    ("config is a folder", lambda tmp, sim: ["run", "--config", str(tmp)], 2, ["is a folder"]),
    (
        "missing token",
        raw_config('[providers.remote]\nbase_url = "https://llm.example.org/v1"\n[mlflow]\nenabled = false\n'),
        2,
        ["provider 'remote'", "TOKEN_REMOTE"],
    ),
    ("unreachable base url", lambda tmp, sim: config_with("", closed_port_url())(tmp, sim), 2, ["cannot reach provider 'sim'", "base_url"]),
    ("401 from the server", stub("401"), 2, ["rejected the token", "HTTP 401", "TOKEN_SIM"]),
    ("server returns html", stub("html"), 2, ["does not answer like an OpenAI-compatible API", "/v1"]),
    ("non-existent dataset", with_data(lambda tmp: "missing/when2call.jsonl"), 2, ["missing/when2call.jsonl", "not found", "data download"]),
    ("empty dataset", with_data(lambda tmp: dataset(tmp, [])), 2, ["data.jsonl", "empty"]),
    ("malformed json line", with_data(lambda tmp: dataset(tmp, [bundled_lines()[0], "{oops"])), 2, ["data.jsonl:2", "malformed JSON"]),
    ("unknown label", with_data(lambda tmp: dataset(tmp, [edit(bundled_lines()[0], correct_answer="maybe")])), 2, ["data.jsonl:1", "unknown label 'maybe'"]),
    ("duplicate uuid", with_data(lambda tmp: dataset(tmp, [bundled_lines()[0], bundled_lines()[0]])), 2, ["data.jsonl:2", "duplicate uuid"]),
    ("tools not a list", with_data(lambda tmp: dataset(tmp, [edit(bundled_lines()[0], tools="get_weather")])), 2, ["data.jsonl:1", "'tools' must be a list"]),
    ("answers out of order", with_data(lambda tmp: dataset(tmp, [edit(bundled_lines()[0], answers={"tool_call": "a", "direct": "b", "request_for_info": "c", "cannot_answer": "d"})])), 2, ["data.jsonl:1", "'answers' keys"]),
    ("dataset is a folder", with_data(lambda tmp: tmp), 2, ["is a folder"]),
    ("unknown pipeline", config_with("", args=("run", "--only", "mcq_logprobs")), 2, ["unknown pipeline 'mcq_logprobs'"]),
    ("empty target model", config_with('\n[models]\ntarget_model = ""\n'), 2, ["no target model"]),
    ("run key of control characters", config_with("", args=("run", "--run-key", "\x00\x01")), 2, ["run key", "no usable characters"]),
    # URLs that do not parse (issue 17, item 6)
    ("url with a bad port", url_config("http://llm.example.org:99999/v1"), 2, ["config.toml", "providers.remote.base_url", "not a valid URL", "Port out of range"]),
    ("url with no host", url_config("http:///v1"), 2, ["providers.remote.base_url", "names no host"]),
    ("url with a space", url_config("http://llm.example .org/v1"), 2, ["providers.remote.base_url", "spaces"]),
    ("url with a broken ipv6 host", url_config("http://[::1/v1"), 2, ["providers.remote.base_url", "not a valid URL"]),
    ("url of another scheme", url_config("ftp://llm.example.org/v1"), 2, ["providers.remote.base_url", "http://"]),
    ("empty url", url_config(""), 2, ["providers.remote.base_url", "is empty"]),
    ("url with a credential and a bad port", url_config("http://user:pw-secret-77@h.example:70000/v1"), 2, ["providers.remote.base_url", "Port out of range", "http://h.example:70000/v1"]),
    # tokens that cannot go into an HTTP header
    ("token with a newline in the file", provider_config('base_url = "https://llm.example.org/v1"\ntoken = "sk-abc\\ndef"'), 2, ["config.toml:3", "providers.remote.token", "line break"]),
    ("token outside latin-1 in the file", provider_config('base_url = "https://llm.example.org/v1"\ntoken = "sk-\u201cabc\u201d"'), 2, ["config.toml:3", "providers.remote.token", "latin-1"]),
    ("token with a newline in .env", provider_config('base_url = "https://llm.example.org/v1"', dotenv=b'TOKEN_REMOTE="sk-abc\\ndef"\n'), 2, ["TOKEN_REMOTE", ".env", "line break"]),
    ("token outside latin-1 in .env", provider_config('base_url = "https://llm.example.org/v1"', dotenv="TOKEN_REMOTE=sk-\u2014abc\n".encode()), 2, ["TOKEN_REMOTE", "latin-1"]),
    # integers and durations out of their range
    ("max_concurrency 0", bounded("providers.sim", "max_concurrency", "0"), 2, ["config.toml", "providers.sim.max_concurrency", "greater than or equal to 1"]),
    ("max_concurrency huge", bounded("providers.sim", "max_concurrency", "1000000"), 2, ["providers.sim.max_concurrency", "less than or equal to 1024"]),
    ("requests_per_minute negative", bounded("providers.sim", "requests_per_minute", "-5"), 2, ["providers.sim.requests_per_minute", "greater than or equal to 0"]),
    ("timeout 0", bounded("http", "timeout_seconds", "0"), 2, ["config.toml", "http.timeout_seconds", "greater than 0"]),
    ("timeout huge", bounded("http", "timeout_seconds", "1e12"), 2, ["http.timeout_seconds", "less than or equal to 3600"]),
    ("timeout nan", bounded("http", "timeout_seconds", "nan"), 2, ["http.timeout_seconds", "finite"]),
    ("retries negative", bounded("http", "max_retries", "-1"), 2, ["http.max_retries", "greater than or equal to 0"]),
    ("retries huge", bounded("http", "max_retries", "100000"), 2, ["http.max_retries", "less than or equal to 50"]),
    ("delay negative", bounded("http", "base_delay_seconds", "-1.0"), 2, ["http.base_delay_seconds", "greater than or equal to 0"]),
    ("n_per_label huge", bounded("data", "n_per_label", "1000000000000"), 2, ["data.n_per_label", "less than or equal to"]),
    ("subsample_seed negative", bounded("data", "subsample_seed", "-7"), 2, ["data.subsample_seed", "greater than or equal to 0"]),
    ("api_seed negative", bounded("run", "api_seed", "-1"), 2, ["run.api_seed", "greater than or equal to 0"]),
    ("max tokens 0", bounded("pipelines", "mcq_max_tokens", "0"), 2, ["pipelines.mcq_max_tokens", "greater than or equal to 1"]),
    ("sweep k 0", bounded("stability.sweeps", "k", "0"), 2, ["stability.sweeps.0.k", "greater than or equal to 1"]),
    ("sweep temperature nan", bounded("stability.sweeps", "temperatures", "[nan]"), 2, ["stability.sweeps.0.temperatures", "[0, 2]"]),
    ("sweep k huge", bounded("stability.sweeps", "k", "100000"), 2, ["stability.sweeps.0.k", "less than or equal to 1000"]),
    # files that are not text
    ("binary .env", binary_file(".env", config_with("")), 2, [".env", "not UTF-8 text", "byte 0x89"]),
    ("binary config.toml", binary_file("config.toml", lambda tmp, sim: ["run"]), 2, ["config.toml", "not UTF-8 text"]),
    ("binary dataset", with_data(lambda tmp: (tmp / "data.jsonl").write_bytes(b"\x00\xff\xfe\x89PNG") and tmp / "data.jsonl"), 2, ["data.jsonl:1", "not UTF-8"]),
    ("available_models not a list", config_with("\n[available_models]\nx = 5\n"), 2, ["config.toml", "available_models.x"]),
    # a base_url the server has no models under: stop before the run, suggest the fix
    ("404 on /models: /v1 missing", no_models(""), 2, ["lists no models", "HTTP 404", "is /v1 missing?", '/v1"']),
    ("404 on /models: endpoint pasted", no_models("/v2/chat/completions"), 2, ["lists no models", "should stop before /chat/completions"]),
    ("show a missing folder", lambda tmp, sim: ["show", str(tmp / "nowhere")], 2, ["nowhere", "no such session folder"]),
    ("show a folder that is no session", lambda tmp, sim: ["show", str(tmp)], 2, ["not a session folder"]),
    ("unknown subcommand", lambda tmp, sim: ["frobnicate"], 2, ["invalid choice"]),
]

def test_the_table_has_at_least_25_cases():
    assert len(CASES) >= 55


@pytest.mark.parametrize("name, make, code, fragments", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gives_one_clear_message(name, make, code, fragments, sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = make(tmp_path, sim)
    try:
        exit_code = main(args)
    finally:
        for server in getattr(make, "servers", []):
            server.stop()
    captured = capsys.readouterr()
    assert exit_code == code, (exit_code, captured.err)
    assert "Traceback" not in captured.err + captured.out
    for fragment in fragments:
        assert fragment in captured.err, (fragment, captured.err)
    if code == 2:  # the user must fix something: a resume cannot help, never suggest one
        assert "resume" not in captured.err, captured.err


def test_workdir_that_is_a_file(sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "workdir").write_text("not a folder")
    write_config(tmp_path, sim.base_url, SMALL)
    assert main(["run", "--run-key", "bad"]) == 2
    err = capsys.readouterr().err
    assert "workdir is a file" in err and "Traceback" not in err


def run_small(tmp_path, sim, capsys, key="keep") -> Path:
    write_config(tmp_path, sim.base_url, SMALL)
    assert main(["run", "--run-key", key]) == 0
    return Path(capsys.readouterr().out.strip().splitlines()[-1])


def test_torn_checkpoint_line_run_goes_on_and_keeps_every_row(sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    session = run_small(tmp_path, sim, capsys)
    checkpoint = session / "checkpoints" / "mcq" / "mcq_predictions.jsonl"
    rows = checkpoint.read_text().splitlines()
    kept = rows[:-1]
    checkpoint.write_text("\n".join(kept) + "\n" + rows[-1][: len(rows[-1]) // 2])  # a kill mid-write
    (session / "checkpoints" / "mcq" / "_DONE.json").unlink()
    assert main(["run", "--run-key", "keep"]) == 0
    capsys.readouterr()
    uuids = {r["uuid"] for r in iter_rows(checkpoint)}
    assert {json.loads(line)["uuid"] for line in kept} <= uuids and len(uuids) == len(rows)
    events = [e["fallback_type"] for e in iter_rows(session / "checkpoints" / "mcq" / "audit_fallbacks.jsonl")]
    assert "checkpoint_line_torn" in events
    # Read at the start and again for the metrics, the line is still reported once.
    assert events.count("checkpoint_line_torn") + events.count("checkpoint_line_corrupt") == 1


def test_corrupt_manifest_is_reported_and_left_alone(sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    session = run_small(tmp_path, sim, capsys)
    checkpoint = session / "checkpoints" / "mcq" / "mcq_predictions.jsonl"
    before = checkpoint.read_text()
    (session / "manifest.json").write_text('{"schema_version": 1, "finger')
    assert main(["run", "--run-key", "keep"]) == 2
    err = capsys.readouterr().err
    assert "corrupt manifest" in err and "manifest.json" in err and "Traceback" not in err
    assert (session / "manifest.json").read_text() == '{"schema_version": 1, "finger'
    assert checkpoint.read_text() == before


def test_run_key_with_path_separators_stays_inside_the_workdir(sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, sim.base_url, SMALL)
    assert main(["run", "--run-key", "../../etc/passwd"]) == 0
    session = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert session.resolve().is_relative_to((tmp_path / "workdir" / "runs").resolve())


@pytest.mark.parametrize("mode, audit_type", [("no_choices", "api_call_failed_example_skipped"), ("404_model", None)])
def test_server_errors_during_the_run_end_it_cleanly(mode, audit_type, tmp_path, monkeypatch, capsys):
    """A 200 without choices is retried then recorded per example; a 404 model stops the pipeline."""
    monkeypatch.chdir(tmp_path)
    server = StubServer(mode)
    try:
        write_config(tmp_path, server.base_url, SMALL + "\n[http]\nmax_retries = 1\nbase_delay_seconds = 0.01\n")
        code = main(["run", "--run-key", "srv"])
    finally:
        server.stop()
    captured = capsys.readouterr()
    # Failed examples are retried by a resume (1); a model the server does not have is not (2).
    assert code == (1 if audit_type else 2) and "Traceback" not in captured.err
    session = Path(captured.out.strip().splitlines()[-1])
    events = list(iter_rows(session / "checkpoints" / "mcq" / "audit_fallbacks.jsonl"))
    if audit_type:
        assert events and all(e["fallback_type"] in (audit_type, "missing_prediction_uuid") for e in events)
        assert "could not be obtained" in captured.err
    else:
        assert "not found" in captured.err and "mcq failed" in captured.err
        assert "to resume" not in captured.err and "fix what its line above names" in captured.err
        [stop] = [e for e in events if e["fallback_type"] == "pipeline_stopped_fatal_error"]
        assert stop["severity"] == "error" and "not found" in stop["details"]["error"]


URL_SECRET = "qk-SENTINEL-0b7e41d2aa"


@pytest.mark.parametrize("form", ["query", "userinfo"])
def test_a_credential_in_the_base_url_is_sent_as_a_header_and_never_written(form, sim, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    if form == "query":
        url = f"{sim.base_url}?api_key={URL_SECRET}"
    else:
        url = sim.base_url.replace("http://", f"http://user:{URL_SECRET}@")
    write_config(tmp_path, url, SMALL)
    assert main(["run", "--run-key", "url"]) == 0
    captured = capsys.readouterr()
    assert "base_url carries a credential" in captured.err and "TOKEN_SIM" in captured.err
    assert URL_SECRET not in captured.out + captured.err
    session = Path(captured.out.strip().splitlines()[-1])
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "config.toml"]
    assert any(p.name == "manifest.json" for p in written) and any("llm_calls" in p.parts for p in written)
    for path in written:
        assert URL_SECRET.encode() not in path.read_bytes(), path
    manifest = json.loads((session / "manifest.json").read_text())
    assert manifest["config"]["providers"]["sim"]["base_url"] == sim.base_url


@pytest.mark.parametrize(
    "url, shown",
    [
        ("https://h.example/v1?api_key=K1&x=1", "https://h.example/v1?api_key=***&x=1"),
        ("https://h.example/v1?key=K2", "https://h.example/v1?key=***"),
        ("https://h.example/v1?api-version=2&access_token=K3", "https://h.example/v1?api-version=2&access_token=***"),
        ("https://u:K4@h.example/v1?token=K5", "https://h.example/v1?token=***"),
        ("http://[broken@h.example/v1?key=K6", "http://h.example/v1?key=***"),
    ],
)
def test_urls_in_call_records_lose_their_credentials(url, shown):
    from w2c_tui.api.trace import build_record

    record = build_record(
        provider="p", base_url=url, model="m", endpoint="/chat/completions", settings={}, ctx=None, attempt=1,
        request={}, response={}, error=None, status=200, latency_ms=1.0, retry_cause=None, secrets=(),
    )
    assert record["base_url"] == shown
