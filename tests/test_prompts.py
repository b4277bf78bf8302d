"""Prompt rendering: target, judge and MCQ prompts; model families; log-probability requests."""

from __future__ import annotations

import json

import pytest

from w2c_tui.data.when2call import parse_example
from w2c_tui.labels import LABELS
from w2c_tui.prompts.families import (
    ASSISTANT_OPENER,
    BOS,
    FAMILIES,
    detect_family,
    fallback_note,
    falls_back_to_plain,
    known_family,
    render_context,
    resolve_family,
)
from w2c_tui.prompts.judge import build_judge_messages, build_judge_repair_messages
from w2c_tui.prompts.markers import JUDGE_MARKER, MCQ_MARKER
from w2c_tui.prompts.mcq import build_mcq_messages
from w2c_tui.prompts.mcq_logprob import build_loglik_requests
from w2c_tui.prompts.system import build_target_messages, openai_tools

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "dict",
        "required": ["city"],
        "properties": {
            "city": {"type": "string", "description": "City name."},
            "type": {"type": "string", "enum": ["dict", "brief"], "description": "A property named 'type'."},
            "window": {
                "type": "dict",
                "properties": {"hours": {"type": "float"}, "days": {"type": "array", "items": {"type": "dict", "properties": {}}}},
            },
            "extra": {"type": "any"},
        },
    },
}

ANSWERS = {
    "direct": "It is sunny in Paris.",
    "tool_call": '{"name": "get_weather", "arguments": {"city": "Paris"}}',
    "request_for_info": "Which city do you mean?",
    "cannot_answer": "Sorry, I can't help with that.",
}


def make_example(tools=(WEATHER_TOOL,), gold="tool_call", question="What's the weather in Paris?"):
    record = {
        "uuid": "u-1",
        "question": question,
        "correct_answer": gold,
        "answers": dict(ANSWERS),
        "tools": [json.dumps(t) for t in tools],
    }
    return parse_example(record, "test:1")


def test_target_messages_list_tools_and_the_call_format():
    system, user = build_target_messages(make_example())
    assert system["role"] == "system" and user == {"role": "user", "content": "What's the weather in Paris?"}
    text = system["content"]
    assert "<tool_call>" in text and '"arguments"' in text
    tool_lines = [line for line in text.splitlines() if line.startswith("<tool>")]
    assert len(tool_lines) == 1 and tool_lines[0].endswith("</tool>")
    assert json.loads(tool_lines[0][len("<tool>") : -len("</tool>")]) == WEATHER_TOOL  # compact, one line, unchanged
    assert "ask" in text and "cannot help" in text


def test_zero_tool_example_says_there_are_no_tools():
    text = build_target_messages(make_example(tools=(), gold="cannot_answer"))[0]["content"]
    assert "no tools" in text.lower()
    assert "<tool>" not in text


def test_openai_tools_translate_bfcl_types_recursively():
    (tool,) = openai_tools(make_example())
    assert tool["type"] == "function"
    fn = tool["function"]
    assert fn["name"] == "get_weather" and fn["description"] == "Current weather for a city."
    params = fn["parameters"]
    assert params["type"] == "object" and params["required"] == ["city"]
    props = params["properties"]
    assert props["window"]["type"] == "object"
    assert props["window"]["properties"]["hours"]["type"] == "number"
    assert props["window"]["properties"]["days"]["items"]["type"] == "object"
    # A property called "type" keeps its schema; enum values are data, not type names.
    assert props["type"] == {"type": "string", "enum": ["dict", "brief"], "description": "A property named 'type'."}
    assert "type" not in props["extra"]
    assert "dict" not in json.dumps({k: v for k, v in props.items() if k != "type"})


def test_openai_tools_do_not_touch_the_example():
    example = make_example()
    openai_tools(example)
    assert json.loads(example.tools[0]) == WEATHER_TOOL


def test_judge_prompt_has_marker_context_and_labels():
    (msg,) = build_judge_messages(make_example(), "<tool_call>{...}</tool_call>")
    assert msg["role"] == "user"
    text = msg["content"]
    assert JUDGE_MARKER in text
    assert "What's the weather in Paris?" in text and "<tool_call>{...}</tool_call>" in text
    assert '"name": "get_weather"' in text
    for label in ("direct_answer", "tool_call", "request_for_info", "cannot_answer"):
        assert label in text


def test_judge_prompt_without_tools_says_so():
    text = build_judge_messages(make_example(tools=(), gold="cannot_answer"), "No.")[0]["content"]
    assert "none" in text and "<tool>" not in text


def test_judge_prompt_keeps_braces_in_user_text():
    text = build_judge_messages(make_example(question="Use {city} here"), "Reply {0}")[0]["content"]
    assert "Use {city} here" in text and "Reply {0}" in text


def test_judge_repair_shows_the_bad_output_and_asks_for_json_only():
    messages = build_judge_repair_messages(make_example(), "response", "I think it is a tool call")
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == "I think it is a tool call"
    assert JUDGE_MARKER in messages[-1]["content"] and "JSON" in messages[-1]["content"]


def test_mcq_prompt_lists_answers_in_label_order():
    (msg,) = build_mcq_messages(make_example())
    text = msg["content"]
    assert MCQ_MARKER in text
    positions = [text.index(f"Reply {i}:\n{ANSWERS[label]}") for i, label in enumerate(LABELS)]
    assert positions == sorted(positions)
    assert "<tool>" in text and "What's the weather in Paris?" in text


@pytest.mark.parametrize(
    ("model_id", "family"),
    [
        ("gpt-oss-120b", "harmony"),
        ("openai/GPT-OSS-20B", "harmony"),
        ("Qwen/Qwen2.5-7B-Instruct", "chatml"),
        # DeepSeek's distilled models use DeepSeek's own format, not their base model's
        ("deepseek-r1-distill-qwen-32b", "plain"),
        ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "plain"),
        ("smollm2-135m-instruct", "chatml"),
        ("HuggingFaceTB/SmolLM-360M-Instruct", "chatml"),
        ("smollm2:135m", "chatml"),
        ("HuggingFaceTB/SmolLM3-3B", "plain"),
        ("NousResearch/Hermes-3-Llama-3.1-8B", "chatml"),
        ("Nous-Hermes-2-Mixtral-8x7B-DPO", "chatml"),
        ("teknium/OpenHermes-2.5-Mistral-7B", "chatml"),
        ("hermes3:8b", "chatml"),
        ("NousResearch/Hermes-4-70B", "plain"),
        ("dolphin-2.9-llama3-8b", "chatml"),
        ("01-ai/Yi-1.5-34B-Chat", "plain"),
        ("microsoft/phi-4", "plain"),
        ("ibm-granite/granite-3.3-8b-instruct", "plain"),
        ("allenai/OLMo-2-1124-7B-Instruct", "plain"),
        ("meta-llama/Llama-3.3-70B-Instruct", "llama3"),
        ("llama3.1:8b", "llama3"),
        ("llama-4-scout", "llama4"),
        ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "llama4"),
        ("mistral-large-latest", "mistral"),
        ("Mixtral-8x7B", "mistral"),
        ("ministral-8b", "mistral"),
        ("google/gemma-2-9b-it", "gemma"),
        ("llama-2-7b", "plain"),
        ("gemini-2.0-flash", "plain"),
        ("", "plain"),
    ],
)
def test_detect_family(model_id, family):
    assert detect_family(model_id) == family


def test_fallback_to_plain_is_told_apart_from_a_known_family():
    assert falls_back_to_plain("gemini-2.0-flash", None)
    assert falls_back_to_plain("gemini-2.0-flash", " Auto ")
    assert falls_back_to_plain("deepseek-r1-distill-qwen-32b", "")
    assert not falls_back_to_plain("gemini-2.0-flash", "plain")  # chosen, not a fallback
    assert not falls_back_to_plain("smollm2-135m-instruct", "auto")
    assert not falls_back_to_plain("sim-small", None)  # the demo's model is plain on purpose
    assert known_family("llama-2-7b") is None and known_family("qwen2.5") == "chatml"
    assert fallback_note("m-x") == "template family: plain (no known family for model m-x — set [models] template_family)"


def test_resolve_family_override_and_auto():
    assert resolve_family("qwen2.5", None) == "chatml"
    assert resolve_family("qwen2.5", "") == "chatml"
    assert resolve_family("qwen2.5", " AUTO ") == "chatml"
    assert resolve_family("qwen2.5", "plain") == "plain"
    assert resolve_family("anything", "Qwen") == "chatml"
    assert resolve_family("anything", "harmony") == "harmony"
    with pytest.raises(ValueError, match="llama3"):
        resolve_family("x", "llama2")


def test_render_rejects_unknown_family():
    with pytest.raises(ValueError):
        render_context("vicuna", [{"role": "user", "content": "hi"}])


MESSAGES = [{"role": "system", "content": "SYS"}, {"role": "user", "content": "USER"}]

EXPECTED = {
    "llama3": "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nSYS<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nUSER<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
    "chatml": "<|im_start|>system\nSYS<|im_end|>\n<|im_start|>user\nUSER<|im_end|>\n<|im_start|>assistant\n",
    "llama4": "<|begin_of_text|><|header_start|>system<|header_end|>\n\nSYS<|eot|>"
    "<|header_start|>user<|header_end|>\n\nUSER<|eot|><|header_start|>assistant<|header_end|>\n\n",
    "harmony": "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
    "Knowledge cutoff: 2024-06\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, final. "
    "Channel must be included for every message.<|end|>"
    "<|start|>developer<|message|># Instructions\n\nSYS<|end|><|start|>user<|message|>USER<|end|>"
    "<|start|>assistant<|channel|>final<|message|>",
    "mistral": "<s>[INST] SYS\n\nUSER [/INST]",
    "gemma": "<bos><start_of_turn>user\nSYS\n\nUSER<end_of_turn>\n<start_of_turn>model\n",
    "plain": "System: SYS\n\nUser: USER\n\nAssistant:",
}


@pytest.mark.parametrize("family", FAMILIES)
def test_render_context_exact(family):
    assert render_context(family, MESSAGES) == EXPECTED[family]


@pytest.mark.parametrize("family", FAMILIES)
def test_render_context_without_bos(family):
    text = render_context(family, MESSAGES, bos=False)
    assert text == EXPECTED[family].removeprefix(BOS.get(family, ""))
    assert not text.startswith(("<|begin_of_text|>", "<s>", "<bos>"))


def test_render_alias_and_multi_turn():
    messages = [*MESSAGES, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}]
    assert render_context("qwen", MESSAGES) == EXPECTED["chatml"]
    assert render_context("mistral", messages) == "<s>[INST] SYS\n\nUSER [/INST] A1</s>[INST] U2 [/INST]"
    assert render_context("gemma", messages).endswith(
        "<start_of_turn>model\nA1<end_of_turn>\n<start_of_turn>user\nU2<end_of_turn>\n<start_of_turn>model\n"
    )
    assert "<|start|>assistant<|channel|>final<|message|>A1<|end|>" in render_context("harmony", messages)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("tools", [(WEATHER_TOOL,), ()])
def test_loglik_requests_every_family(family, tools):
    example = make_example(tools=tools, gold="tool_call" if tools else "cannot_answer")
    context, continuations = build_loglik_requests(example, family)
    assert context.endswith(ASSISTANT_OPENER[family])
    assert context.startswith(BOS.get(family, ""))
    assert example.question in context
    assert ("<tool>" in context) == bool(tools)
    if not tools:
        assert "no tools" in context.lower()
    assert continuations == [ANSWERS[label] for label in LABELS]  # default delimiter is ""


def test_loglik_requests_custom_delimiter():
    _, continuations = build_loglik_requests(make_example(), "chatml", delimiter=" ")
    assert continuations == [" " + ANSWERS[label] for label in LABELS]


def test_bundled_examples_render_for_every_family():
    from w2c_tui.data import load_examples

    examples = load_examples()
    for example in examples:
        for family in FAMILIES:
            context, continuations = build_loglik_requests(example, family)
            assert len(continuations) == 4 and all(continuations)
            assert context.endswith(ASSISTANT_OPENER[family])
        assert MCQ_MARKER in build_mcq_messages(example)[-1]["content"]
        for tool in openai_tools(example):
            assert not _bfcl_type_names(tool["function"]["parameters"])


def _bfcl_type_names(node) -> set[str]:
    """BFCL-only type names left anywhere in a schema."""
    found: set[str] = set()
    if isinstance(node, dict):
        if node.get("type") in ("dict", "float", "tuple", "any"):
            found.add(node["type"])
        for value in node.values():
            found |= _bfcl_type_names(value)
    elif isinstance(node, list):
        for value in node:
            found |= _bfcl_type_names(value)
    return found
