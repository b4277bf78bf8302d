"""When2Call loader: bundled data facts, line-numbered errors, order-independent subsample."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from w2c_tui.data import BUNDLED_PATH, DataError, load_examples, select_examples
from w2c_tui.data.when2call import file_sha256

SHARED = Path(__file__).resolve().parents[2] / "shared" / "when2call" / "data" / "test" / "when2call_test_llm_judge.jsonl"


def test_bundled_file_is_the_upstream_copy_with_its_notice():
    assert file_sha256(BUNDLED_PATH) == "0b710578e3b02479e5acf5688140ec5edf71383fa5c093481c7536b57fd13b25"
    assert "Apache License" in (BUNDLED_PATH.parent / "LICENSE.txt").read_text()
    assert "NVIDIA" in (BUNDLED_PATH.parent / "NOTICE.md").read_text()
    if SHARED.exists():
        assert SHARED.read_bytes() == BUNDLED_PATH.read_bytes()


def test_bundled_facts():
    examples = load_examples()
    assert len(examples) == 300
    assert Counter(e.correct_answer for e in examples) == {"tool_call": 100, "request_for_info": 100, "cannot_answer": 100}
    zero_tool = [e for e in examples if not e.tools]
    assert len(zero_tool) == 17 and {e.correct_answer for e in zero_tool} == {"cannot_answer"}
    first = examples[0]
    assert first.answer_names == ["direct", "tool_call", "request_for_info", "cannot_answer"]
    assert first.gold_index == first.answer_names.index(first.correct_answer)
    assert all(isinstance(t, dict) for t in first.tool_schemas())


def lines_of(example_count: int = 3) -> list[str]:
    return BUNDLED_PATH.read_text().splitlines()[:example_count]


def write_lines(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def mutate(line: str, **changes) -> str:
    record = json.loads(line)
    record.update(changes)
    return json.dumps(record)


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda ls: [ls[0], "{not json", ls[2]], ["data.jsonl:2", "malformed JSON"]),
        (lambda ls: [ls[0], mutate(ls[1], correct_answer="maybe")], ["data.jsonl:2", "unknown label 'maybe'"]),
        (lambda ls: [ls[0], ls[1], ls[0]], ["data.jsonl:3", "duplicate uuid", "line 1"]),
        (lambda ls: [mutate(ls[0], tools="not a list")], ["data.jsonl:1", "'tools' must be a list"]),
        (lambda ls: [mutate(ls[0], tools=[{"name": "x"}])], ["data.jsonl:1", "'tools[0]' must be a JSON string"]),
        (lambda ls: ['["a list"]'], ["data.jsonl:1", "expected a JSON object"]),
        (lambda ls: [json.dumps({"uuid": "u"})], ["data.jsonl:1", "missing field(s)"]),
        (lambda ls: [], ["empty"]),
    ],
)
def test_bad_records_name_file_and_line(tmp_path, make, expected):
    path = write_lines(tmp_path, make(lines_of()))
    with pytest.raises(DataError) as info:
        load_examples(path)
    for part in expected:
        assert part in str(info.value)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_examples(tmp_path / "absent.jsonl")
    with pytest.raises(DataError, match="folder"):
        load_examples(tmp_path)


def test_subsample_is_stratified_and_independent_of_line_order(tmp_path):
    lines = BUNDLED_PATH.read_text().splitlines()
    shuffled = lines[:]
    random.Random(3).shuffle(shuffled)
    a = select_examples(load_examples(write_lines(tmp_path, lines)), use_full_dataset=False, n_per_label=7, seed=5)
    (tmp_path / "data.jsonl").unlink()
    b = select_examples(load_examples(write_lines(tmp_path, shuffled)), use_full_dataset=False, n_per_label=7, seed=5)
    assert [e.uuid for e in a] == [e.uuid for e in b]
    assert Counter(e.correct_answer for e in a) == {"tool_call": 7, "request_for_info": 7, "cannot_answer": 7}
    c = select_examples(load_examples(), use_full_dataset=False, n_per_label=7, seed=6)
    assert {e.uuid for e in c} != {e.uuid for e in a}
    assert len(select_examples(load_examples(), use_full_dataset=True, n_per_label=1, seed=0)) == 300
