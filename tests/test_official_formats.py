"""The official When2Call MCQ formats: our (context, choices) equal NVIDIA's task's, record for record.

NVIDIA's `utils.py` is imported as it is, with a stand-in for the `datasets` package (its
`Dataset.map` applies the function to each record), and every `process_docs_*` runs over the
300 bundled examples and the small MCQ fixture.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest

from w2c_tui.data.when2call import DataError, load_examples, parse_example
from w2c_tui.prompts.families import canonical_family, resolve_family
from w2c_tui.prompts.mcq_logprob import build_loglik_requests, loglik_choices
from w2c_tui.prompts.official import OFFICIAL_FAMILIES, XLAM, official_pair

OFFICIAL = Path("/work/shared/when2call/official-task")
BUNDLED = Path(__file__).resolve().parents[1] / "src/w2c_tui/data/bundled/when2call_test_llm_judge.jsonl"
MCQ_FIXTURE = Path(__file__).parent / "fixtures" / "when2call_mcq_sample.jsonl"

# our family -> the official task's process_docs
PROCESS_DOCS = {
    "when2call": "process_docs_default",
    "when2call-llama3_2": "process_docs_llama3_2",
    "when2call-qwen2_5": "process_docs_qwen2_5",
    "when2call-hermes": "process_docs_hermes",
    "when2call-functionary": "process_docs_functionary",
    "when2call-nemotron": "process_docs_nemotron",
}


class _Dataset:
    """What utils.py uses of `datasets.Dataset`: `map` over the records."""

    def __init__(self, records: list[dict]) -> None:
        self.records = records

    def map(self, function) -> "_Dataset":
        return _Dataset([function(copy.deepcopy(r)) for r in self.records])


@pytest.fixture(scope="module")
def official_utils():
    if not (OFFICIAL / "utils.py").exists():
        pytest.skip("the official task files are not on this machine")
    stand_in = types.ModuleType("datasets")
    stand_in.Dataset = _Dataset
    saved = sys.modules.get("datasets")
    sys.modules["datasets"] = stand_in
    try:
        spec = importlib.util.spec_from_file_location("when2call_official_utils", OFFICIAL / "utils.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            sys.modules.pop("datasets", None)
        else:
            sys.modules["datasets"] = saved
    return module


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("path", [BUNDLED, MCQ_FIXTURE], ids=["bundled-300", "mcq-fixture"])
@pytest.mark.parametrize("family", list(PROCESS_DOCS))
def test_contexts_and_choices_equal_the_official_task(official_utils, family, path):
    records = _records(path)
    theirs = getattr(official_utils, PROCESS_DOCS[family])(_Dataset(records)).records
    examples = load_examples(path)
    assert len(theirs) == len(examples) == len(records)
    same = 0
    for example, doc in zip(examples, theirs):
        context, choices = official_pair(example, family)
        assert context == doc["prompt"], example.uuid
        assert choices == doc["choices"], example.uuid
        assert example.gold_index == doc["target_index"]
        same += 1
    assert same == len(records)


@pytest.mark.parametrize("family", list(PROCESS_DOCS))
def test_loglik_requests_are_the_official_pairs_with_no_delimiter_and_no_bos(family):
    example = load_examples(BUNDLED)[0]
    context, choices = official_pair(example, family)
    for bos in (True, False):
        assert build_loglik_requests(example, family, "", bos=bos) == (context, choices)
    assert loglik_choices(example, family) == choices


# A few expected renderings written out, so a change of format shows here in words.
TOOL = json.dumps({"name": "get_weather", "description": "Weather now.", "parameters": {"type": "dict", "properties": {}}})
RECORD = {
    "uuid": "u1",
    "question": "Weather in Zürich for 3 days?",
    "correct_answer": "tool_call",
    "answers": {
        "direct": "Sunny.",
        "tool_call": json.dumps({"name": "get_weather", "arguments": {"city": "Zürich", "days": 3, "hourly": True}}),
        "request_for_info": "Which city?",
        "cannot_answer": "I cannot.",
    },
    "tools": [TOOL],
}


@pytest.mark.parametrize(
    ("family", "call"),
    [
        ("when2call", RECORD["answers"]["tool_call"]),
        ("when2call-llama3_2", '[get_weather(city="Zürich", days=3, hourly=True)]'),
        ("when2call-qwen2_5", RECORD["answers"]["tool_call"]),
        ("when2call-hermes", "<tool_call>" + RECORD["answers"]["tool_call"] + "\n</tool_call>"),
        ("when2call-functionary", '<function=get_weather>{"city": ""Z\\u00fcrich"", "days": "3", "hourly": "true"}</function>'),
        ("when2call-nemotron", "<toolcall> " + RECORD["answers"]["tool_call"] + " </toolcall>"),
    ],
)
def test_the_tool_call_choice_as_each_format_writes_it(family, call):
    _, choices = official_pair(parse_example(RECORD, "t:1"), family)
    assert choices == ["Sunny.", call, "Which city?", "I cannot."]


def test_the_quirks_of_the_prompts():
    example = parse_example(RECORD, "t:1")
    default, _ = official_pair(example, "when2call")
    assert default.startswith("You are a helpful AI assistant. \nYou have access")
    assert default.endswith(f"<tool>{TOOL}</tool>\n\nWeather in Zürich for 3 days?")  # the answer follows directly
    hermes, _ = official_pair(example, "when2call-hermes")
    assert hermes.endswith("</tool_call><|im_end|><|im_start|>user\nWeather in Zürich for 3 days?<|im_end|>")
    llama, _ = official_pair(example, "when2call-llama3_2")
    assert not llama.startswith("<|begin_of_text|>")
    assert '"description": "Weather now."' in llama and "Z\\u00fcrich" not in llama  # tools by json.dumps, question as is
    qwen, _ = official_pair(example, "when2call-qwen2_5")
    assert qwen.endswith("<|im_start|>assistant\n")
    functionary, _ = official_pair(example, "when2call-functionary")
    assert f"Use the function 'get_weather' to 'Weather now.'\n{TOOL}\n\n\nThink very carefully" in functionary


def test_every_official_family_is_a_template_family_and_xlam_is_refused_in_one_sentence():
    for family in PROCESS_DOCS:
        assert canonical_family(family) == family
        assert resolve_family("Qwen2.5-7B-Instruct", family) == family
    assert XLAM in OFFICIAL_FAMILIES
    with pytest.raises(ValueError, match="chat template") as refused:
        canonical_family(XLAM)
    assert str(refused.value).count(". ") == 0 and "/completions" in str(refused.value)


def test_a_record_the_format_cannot_write_is_named():
    broken = copy.deepcopy(RECORD)
    broken["answers"]["tool_call"] = json.dumps({"name": "get_weather", "args": {}})
    example = parse_example(broken, "t:1")
    with pytest.raises(DataError, match=r"uuid u1: the official when2call-llama3_2 format cannot write") as error:
        official_pair(example, "when2call-llama3_2")
    assert "\n" not in str(error.value)
    assert official_pair(example, "when2call-hermes")[1][1].startswith("<tool_call>")  # hermes copies it as it is


# -- the whole way: config, run against the sim, metrics.json, show

def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from w2c_tui.cli import main

    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_hermes_session_against_the_sim_shows_the_official_block(sim, tmp_path, monkeypatch, capsys):
    from configs import write_config

    from w2c_tui.store.jsonl import iter_rows

    monkeypatch.chdir(tmp_path)
    config = write_config(
        tmp_path, sim.base_url, data={"n_per_label": 8}, models={"template_family": "when2call-hermes"},
        mlflow={"enabled": False},
    )
    code, _, err = _cli(capsys, "run", "--config", str(config), "--run-key", "official", "--only", "mcq_logprob")
    assert code == 0, err
    [session] = (tmp_path / "workdir" / "runs" / "official" / "sessions").iterdir()
    manifest = json.loads((session / "manifest.json").read_text())
    assert manifest["template_family"] == "when2call-hermes"

    code, out, _ = _cli(capsys, "show", str(session), "--json")
    assert code == 0
    metrics = json.loads(out)["metrics"]["mcq_logprob"]
    official = metrics["official"]
    assert official["family"] == "when2call-hermes" and official["n"] == metrics["n_obtained"] == 24
    assert {"acc", "acc_norm", "macro_f1", "tool_hallucination_rate", "n"} <= set(official)
    assert official["acc"] == metrics["variants"]["raw"]["accuracy"]  # no string fallback with the sim
    assert official["acc_norm"] == metrics["variants"]["norm_chars"]["accuracy"]
    rate = official["tool_hallucination_rate"]
    assert set(rate) == {"rate", "numerator", "denominator", "ci95"}
    assert official["acc_ci95"]["n_boot"] == 1000

    # What was sent: the official pairs; what acc_norm divided by: the choice as hermes writes it.
    examples = {e.uuid: e for e in load_examples(BUNDLED)}
    debug = list(iter_rows(session / "checkpoints" / "mcq_logprob" / "debug_per_choice.jsonl"))
    for row in debug:
        _, choices = official_pair(examples[row["uuid"]], "when2call-hermes")
        choice = choices[["direct", "tool_call", "request_for_info", "cannot_answer"].index(row["answer_name"])]
        assert row["continuation"] == choice  # hermes's prompt ends at <|im_end|>: no whitespace to move
        assert row["len_chars"] == len(choice)

    code, out, _ = _cli(capsys, "show", str(session))
    assert code == 0
    assert "official  when2call-hermes as NVIDIA's lm-eval task scores it (n 24)" in out
    assert f"tool halluc. " in out and "Wilson [" in out


def test_an_official_family_with_a_delimiter_is_refused_at_load(tmp_path):
    from configs import write_config

    from w2c_tui.config import ConfigError, load_config

    config = write_config(tmp_path, models={"template_family": "when2call", "force_target_delimiter": " "})
    with pytest.raises(ConfigError, match=r"force_target_delimiter must be empty with template_family 'when2call'"):
        load_config(config, environ={})


def test_xlam_is_refused_before_the_run_in_one_sentence(tmp_path, monkeypatch, capsys):
    from configs import write_config

    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path, models={"template_family": "when2call-xlam"}, mlflow={"enabled": False})
    code, _, err = _cli(capsys, "run", "--config", str(config), "--only", "mcq_logprob")
    assert code == 2
    assert "when2call-xlam needs the model's own chat template" in err and "Traceback" not in err
    assert not (tmp_path / "workdir" / "runs").exists() or not list((tmp_path / "workdir" / "runs").rglob("*.jsonl"))


def test_a_record_the_format_cannot_write_stops_the_launch_before_the_run(tmp_path, monkeypatch, capsys):
    from configs import write_config

    monkeypatch.chdir(tmp_path)
    broken = copy.deepcopy(RECORD)
    broken["answers"]["tool_call"] = json.dumps(["get_weather", {"city": "Paris"}])  # valid JSON, no name
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(broken) + "\n")
    config = write_config(
        tmp_path, models={"template_family": "when2call-functionary"}, data={"eval_data_path": str(data)},
        mlflow={"enabled": False},
    )
    code, _, err = _cli(capsys, "run", "--config", str(config), "--only", "mcq_logprob")
    assert code == 2 and "Traceback" not in err
    [line] = [line for line in err.splitlines() if "cannot write" in line]
    assert f"{data}: uuid u1: the official when2call-functionary format cannot write this example" in line
    assert not list((tmp_path / "workdir").rglob("*.jsonl"))
    # the other pipelines do not use the format: they run on the same file
    code, _, err = _cli(capsys, "run", "--config", str(config), "--only", "mcq")
    assert code == 0, err


def test_the_official_family_is_in_the_fingerprint():
    from w2c_tui.config import fingerprint_payload, session_fingerprint
    from w2c_tui.config.schema import Settings

    settings = Settings()
    prints = {
        family: session_fingerprint(fingerprint_payload(settings, "m", "sha", family, {"simulated": True}))
        for family in ("chatml", "when2call", "when2call-hermes")
    }
    assert len(set(prints.values())) == 3
