"""POST /v1/chat/completions: pick a role from the last user message and answer in it.

Roles: the preference marker -> preference judge (see preference.py); the judge marker ->
judge (see judge.py); the MCQ marker -> MCQ classifier (a digit); anything else -> the
model under evaluation (see replies.py). With native `tools`, a tool call comes back as
`message.tool_calls` (content null), as real servers do; otherwise as ``<tool_call>`` text.

Token counts use the sim tokenizer: prompt = all message texts plus the JSON of `tools`;
completion = the reply (or tool-call JSON) plus any reasoning text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from w2c_tui.prompts.markers import JUDGE_MARKER, MCQ_MARKER, PREFERENCE_MARKER
from w2c_tui.sim import protocol
from w2c_tui.sim.behaviour import intended_label
from w2c_tui.sim.judge import judge_reply
from w2c_tui.sim.preference import preference_reply
from w2c_tui.sim.knowledge import find_example, native_tool_schemas, tool_names_in_text
from w2c_tui.sim.replies import mcq_reply, reasoning_text, target_reply
from w2c_tui.sim.tokenizer import count_tokens, tokenize

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
_JUDGE_LABEL_TO_OURS = {"direct_answer": "direct"}


def _messages(body: dict[str, Any]) -> list[tuple[str, str]]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise protocol.BadRequest("'messages' must be a non-empty list")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise protocol.BadRequest(f"messages[{i}] needs a role among {', '.join(sorted(ROLES))}")
        out.append((message["role"], protocol.text_of(message.get("content"))))
    return out


def chat_completion(
    body: dict[str, Any],
    *,
    seed: int,
    default_model: str,
    judge_malformed_rate: float,
    judge_error_rate: float = 0.0,
    judge_position_bias: float = 0.0,
    next_sample: Callable[[], int],
) -> dict[str, Any]:
    """The response JSON for a chat request (raises BadRequest on invalid input)."""
    protocol.refuse_streaming(body)
    model = protocol.model_of(body, default_model)
    messages = _messages(body)
    temperature = protocol.number(body, "temperature", 1.0)
    max_tokens = protocol.optional_int(body, "max_completion_tokens", "max_tokens")
    schemas = native_tool_schemas(body.get("tools"))
    tools_json = json.dumps(body["tools"], sort_keys=True) if body.get("tools") else ""
    transcript = "\n".join(f"{role}: {text}" for role, text in messages)
    prompt = f"{transcript}\n{tools_json}"
    last_user = next((text for role, text in reversed(messages) if role == "user"), messages[-1][1])
    prompt_tokens = sum(count_tokens(text) for _, text in messages) + count_tokens(tools_json)

    tool_names = [s["name"] for s in schemas] or tool_names_in_text(transcript)
    tool_calls = None
    if PREFERENCE_MARKER in last_user:  # the preference judge (sim/preference.py)
        role = "judge"
        sample = body.get("seed") if temperature > 0 else None
        content, gold = preference_reply(
            seed, last_user, error_rate=judge_error_rate, position_bias=judge_position_bias, sample=sample
        )
        label = gold or "direct"
    elif JUDGE_MARKER in last_user:
        role = "judge"
        # A sampled judge (temperature > 0) draws its deliberate errors per request seed.
        sample = body.get("seed") if temperature > 0 else None
        content, judged = judge_reply(
            seed, prompt, last_user, judge_malformed_rate, error_rate=judge_error_rate, sample=sample
        )
        label = _JUDGE_LABEL_TO_OURS.get(judged, judged)
    else:
        example = find_example(last_user, tool_names) or find_example(transcript, tool_names)
        request_seed = body.get("seed")
        if temperature > 0 and request_seed is None:
            request_seed = f"n{next_sample()}"
        label = intended_label(
            seed=seed,
            model=model,
            prompt=prompt,
            example=example,
            has_tools=bool(tool_names),
            temperature=temperature,
            request_seed=request_seed,
        )
        key = (seed, model, prompt, request_seed if temperature > 0 else None)
        if MCQ_MARKER in last_user:
            role = "mcq"
            content = mcq_reply(label, key=key, max_tokens=max_tokens)
        else:
            role = "target"
            reply = target_reply(label, example=example, tool_names=tool_names, schemas=schemas, key=key)
            content = reply.text
            if reply.tool_call is not None and schemas:
                call = reply.tool_call
                tool_calls = [
                    {
                        "id": protocol.new_id("call"),
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
                    }
                ]
                content = None

    finish = "tool_calls" if tool_calls else "stop"
    if content is not None and max_tokens is not None:
        pieces = tokenize(content)
        if len(pieces) > max_tokens:
            content, finish = "".join(pieces[:max_tokens]), "length"
    message: dict[str, Any] = {"role": "assistant", "content": content}
    completion_tokens = count_tokens(content) if content is not None else 0
    if tool_calls:
        message["tool_calls"] = tool_calls
        completion_tokens += sum(count_tokens(c["function"]["name"] + c["function"]["arguments"]) for c in tool_calls)
    if "gpt-oss" in model.lower():
        effort = body.get("reasoning_effort")
        message["reasoning_content"] = reasoning_text(
            role, label, effort if isinstance(effort, str) else None, tool_names=tool_names
        )
        completion_tokens += count_tokens(message["reasoning_content"])
    return {
        "id": protocol.new_id("chatcmpl"),
        "object": "chat.completion",
        "created": protocol.now(),
        "model": model,
        "system_fingerprint": protocol.FINGERPRINT,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": protocol.usage(prompt_tokens, completion_tokens),
    }
