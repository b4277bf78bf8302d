"""Judge verdict and MCQ digit parsing."""

from __future__ import annotations

import pytest

from w2c_tui.prompts.parsing import JudgeParse, parse_judge_output, parse_mcq_digit, strip_reasoning


def test_plain_json():
    parsed = parse_judge_output('{"classification": "tool_call"}')
    assert parsed == JudgeParse("tool_call", "json", None, None)


def test_surrounding_whitespace_and_case_in_label():
    assert parse_judge_output('\n {"classification": "  Request_For_Info "}\n').label == "request_for_info"


@pytest.mark.parametrize(("given", "label"), [("direct_answer", "direct"), ("direct", "direct"), ("cannot_answer", "cannot_answer")])
def test_label_names_map_to_ours(given, label):
    assert parse_judge_output(f'{{"classification": "{given}"}}').label == label


def test_fenced_json():
    parsed = parse_judge_output('```json\n{"classification": "cannot_answer"}\n```')
    assert (parsed.label, parsed.path, parsed.rationale) == ("cannot_answer", "fenced_json", None)


def test_fenced_json_without_language_and_with_text_around():
    parsed = parse_judge_output('Here you go:\n```\n{"classification": "direct_answer"}\n```\nDone.')
    assert parsed.label == "direct" and parsed.path == "fenced_json"
    assert "Here you go:" in parsed.rationale and "Done." in parsed.rationale


def test_json_after_reasoning_text():
    text = 'The assistant asks which city is meant, so it requests info.\n{"classification": "request_for_info"}'
    parsed = parse_judge_output(text)
    assert parsed.label == "request_for_info" and parsed.path == "embedded_json"
    assert parsed.rationale == "The assistant asks which city is meant, so it requests info."


def test_rationale_field_wins_over_outside_text():
    parsed = parse_judge_output('{"classification": "tool_call", "reason": "it emits <tool_call>"}')
    assert parsed.label == "tool_call" and parsed.rationale == "it emits <tool_call>"


def test_think_block_is_ignored():
    text = '<think>Maybe {"classification": "direct_answer"}? No.</think>\n{"classification": "cannot_answer"}'
    parsed = parse_judge_output(text)
    assert parsed.label == "cannot_answer" and parsed.path == "json"


def test_lone_closing_think_tag_ends_reasoning():
    text = 'reasoning with {"classification": "tool_call"}</think>{"classification": "request_for_info"}'
    assert parse_judge_output(text).label == "request_for_info"


def test_unfinished_think_block_gives_nothing():
    parsed = parse_judge_output('<think>still thinking {"classification": "tool_call"}')
    assert parsed.label is None and parsed.path is None and "empty" in parsed.error


def test_objects_that_disagree_are_ambiguous_and_give_nothing():
    """Issue 35: two objects naming different labels (or one no label) are not read as the last."""
    text = 'First guess {"classification": "direct_answer"}, but on reflection {"classification": "tool_call"} {"note": 1}'
    parsed = parse_judge_output(text)
    assert parsed.label is None and parsed.path is None and "disagree" in parsed.error
    stray = parse_judge_output('{"classification": "tool_call"} and a stray {"classification": "unsure"}')
    assert stray.label is None and "unsure" in stray.error
    same = parse_judge_output('I think {"classification": "tool_call"}.\n```json\n{"classification": "tool_call"}\n```')
    assert same.label == "tool_call" and same.path == "fenced_json"


def test_nested_objects_are_not_read_on_their_own():
    parsed = parse_judge_output('verdict: {"result": {"classification": "tool_call"}}')
    assert parsed.label is None and "classification" in parsed.error


def test_invalid_label():
    parsed = parse_judge_output('{"classification": "tool_use"}')
    assert parsed.label is None and parsed.path is None and "tool_use" in parsed.error


def test_non_string_label():
    assert parse_judge_output('{"classification": 2}').label is None


@pytest.mark.parametrize("text", ["", None, "tool_call", "classification: tool_call", "{not json}", '["tool_call"]', "<think>x</think>"])
def test_garbage(text):
    parsed = parse_judge_output(text)
    assert parsed.label is None and parsed.path is None and parsed.error


def test_braces_in_reasoning_before_the_verdict():
    text = 'The call used {city} placeholders {oops. Final: {"classification": "tool_call"}'
    assert parse_judge_output(text).label == "tool_call"


def test_strip_reasoning_is_case_insensitive():
    assert strip_reasoning("<THINK>a</Think>b<think>c</think>d") == "bd"


@pytest.mark.parametrize(
    ("text", "digit"),
    [
        ("2", 2),
        ("0", 0),
        ("Answer: 3", 3),
        ("I think 7... no, 1", 1),  # first character that is a digit 0-3; 7 cannot name an option
        ("12", 1),
        ("<think>option 0 looks wrong</think>3", 3),
        ("Option two", -1),
        ("", -1),
        (None, -1),
        ("9 8 7 6 5 4", -1),
    ],
)
def test_mcq_digit(text, digit):
    assert parse_mcq_digit(text) == digit
