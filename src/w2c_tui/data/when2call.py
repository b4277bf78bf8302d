"""When2Call records: typed model, loader with file:line errors, stratified subsample."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from w2c_tui import jsoncodec
from w2c_tui.labels import LABELS
from w2c_tui.readable_file import unreadable_reason

BUNDLED_PATH = Path(__file__).parent / "bundled" / "when2call_test_llm_judge.jsonl"


class DataError(ValueError):
    """A dataset problem, with the file and line it was found at."""


@dataclass(frozen=True, slots=True)
class Example:
    uuid: str
    question: str
    correct_answer: str
    answers: dict[str, str]
    tools: tuple[str, ...]  # each a JSON string, as in the dataset
    source: str = ""
    source_id: str = ""
    target_tool: str | None = None
    orig_question: str | None = None
    held_out_param: str | None = None
    orig_tools: tuple[str, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def gold_index(self) -> int:
        return LABELS.index(self.correct_answer)

    @property
    def answer_names(self) -> list[str]:
        return list(self.answers)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools decoded from their JSON strings."""
        return [json.loads(t) for t in self.tools]


_REQUIRED = ("uuid", "question", "correct_answer", "answers", "tools")
# Bytes one dataset line may hold. The longest When2Call record is ~21 KB; 1 MB is fifty times
# that. A line of 50 MB would be sent five times per example and multiplied in every trace
# record (packing its trace once took 19 GB of memory), so it is refused at load.
MAX_LINE_BYTES = 1 << 20


def parse_example(record: Any, where: str) -> Example:
    """Validate one decoded JSON record; `where` is 'file:line' for messages."""
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(record).__name__}")
    missing = [k for k in _REQUIRED if k not in record]
    if missing:
        raise DataError(f"{where}: missing field(s) {', '.join(missing)}")
    uuid = record["uuid"]
    if not isinstance(uuid, str) or not uuid:
        raise DataError(f"{where}: 'uuid' must be a non-empty string")
    if not isinstance(record["question"], str):
        raise DataError(f"{where}: 'question' must be a string (uuid {uuid})")
    answers = record["answers"]
    if not isinstance(answers, dict) or not all(isinstance(v, str) for v in answers.values()):
        raise DataError(f"{where}: 'answers' must be an object of strings (uuid {uuid})")
    if list(answers) != list(LABELS):
        raise DataError(
            f"{where}: 'answers' keys must be {', '.join(LABELS)} in that order, "
            f"got {', '.join(answers)} (uuid {uuid})"
        )
    gold = record["correct_answer"]
    if gold not in LABELS:
        raise DataError(
            f"{where}: unknown label {gold!r} in 'correct_answer' (uuid {uuid}); "
            f"expected one of {', '.join(LABELS)}"
        )
    tools = _string_list(record["tools"], "tools", where, uuid)
    orig_tools = record.get("orig_tools")
    if orig_tools is not None:
        orig_tools = _string_list(orig_tools, "orig_tools", where, uuid)
    target_tool = record.get("target_tool")
    if target_tool is not None and not isinstance(target_tool, str):
        raise DataError(f"{where}: 'target_tool' must be a JSON string or null (uuid {uuid})")
    known = set(_REQUIRED) | {"source", "source_id", "target_tool", "orig_question", "held_out_param", "orig_tools"}
    return Example(
        uuid=uuid,
        question=record["question"],
        correct_answer=gold,
        answers=dict(answers),
        tools=tools,
        source=str(record.get("source", "")),
        source_id=str(record.get("source_id", "")),
        target_tool=target_tool,
        orig_question=record.get("orig_question"),
        held_out_param=record.get("held_out_param"),
        orig_tools=orig_tools,
        extra={k: v for k, v in record.items() if k not in known},
    )


def _string_list(value: Any, name: str, where: str, uuid: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise DataError(f"{where}: '{name}' must be a list of JSON strings (uuid {uuid})")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise DataError(f"{where}: '{name}[{i}]' must be a JSON string (uuid {uuid})")
        try:
            jsoncodec.loads(item)  # orjson; invalid JSON falls back to json.loads, so the same message
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: '{name}[{i}]' is not valid JSON: {exc.msg} (uuid {uuid})") from None
    return tuple(value)


def load_examples(path: str | Path | None = None) -> list[Example]:
    """Read a When2Call JSONL file (the bundled one when `path` is empty)."""
    path = Path(path) if path else BUNDLED_PATH
    if not path.exists():
        raise DataError(f"{path}: dataset file not found; set [data] eval_data_path or run `w2c-tui data download`")
    if path.is_dir():
        raise DataError(f"{path}: is a folder; [data] eval_data_path must name a .jsonl file")
    reason = unreadable_reason(path)
    if reason:  # a FIFO or a device would block or never end: refuse before opening
        raise DataError(f"{path}: the dataset {reason}; [data] eval_data_path must name a readable .jsonl file")
    try:
        return _read_examples(path)
    except OSError as exc:
        raise DataError(f"{path}: cannot read the dataset ({exc.strerror or type(exc).__name__})") from None


def _read_examples(path: Path) -> list[Example]:
    examples: list[Example] = []
    seen: dict[str, int] = {}
    with path.open("rb") as fh:  # bytes, decoded per line, so a bad byte is reported with its line
        # Read at most one bound past the limit: a huge line is refused without being held whole.
        for lineno, raw in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""), start=1):
            where = f"{path}:{lineno}"
            if len(raw.rstrip(b"\r\n")) > MAX_LINE_BYTES:
                raise DataError(
                    f"{where}: the line is longer than {MAX_LINE_BYTES >> 20} MB (a When2Call record is a few KB); "
                    "is this the right file?"
                )
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{where}: not UTF-8 text ({exc.reason}); save the dataset as UTF-8") from None
            if not line.strip():
                continue
            try:
                record = jsoncodec.loads(line)  # half the parse time of json.loads, same errors (see _string_list)
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}: malformed JSON ({exc.msg} at column {exc.colno})") from None
            example = parse_example(record, where)
            if example.uuid in seen:
                raise DataError(f"{where}: duplicate uuid {example.uuid} (first seen on line {seen[example.uuid]})")
            seen[example.uuid] = lineno
            examples.append(example)
    if not examples:
        raise DataError(f"{path}: the dataset is empty")
    return examples


def select_examples(
    examples: list[Example], *, use_full_dataset: bool, n_per_label: int, seed: int
) -> list[Example]:
    """Stratified subsample: up to `n_per_label` examples of each gold label.

    Each example gets a rank from SHA-256 of (seed, uuid), so the choice depends on the
    seed and the set of UUIDs only, never on the order of lines in the file. The result is
    sorted by UUID for the same reason.
    """
    if use_full_dataset:
        return sorted(examples, key=lambda e: e.uuid)
    if n_per_label < 1:
        raise DataError("[data] n_per_label must be at least 1 (or set use_full_dataset = true)")
    by_label: dict[str, list[Example]] = defaultdict(list)
    for example in examples:
        by_label[example.correct_answer].append(example)
    chosen: list[Example] = []
    for label in LABELS:
        ranked = sorted(by_label.get(label, []), key=lambda e: _rank(seed, e.uuid))
        chosen.extend(ranked[:n_per_label])
    return sorted(chosen, key=lambda e: e.uuid)


def _rank(seed: int, uuid: str) -> str:
    return hashlib.sha256(f"{seed}:{uuid}".encode()).hexdigest()


def file_sha256(path: str | Path | None) -> str:
    """SHA-256 of a dataset file (the bundled one when `path` is empty)."""
    digest = hashlib.sha256()
    with Path(path or BUNDLED_PATH).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
