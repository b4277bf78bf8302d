"""The judge prompt: classify a target response into one of the four When2Call behaviours.

The judge uses the official label names (`direct_answer`, not our `direct`); the parser
maps them back. Everything goes in one user message because some chat servers reject a
system role, and the simulated endpoint looks for `JUDGE_MARKER` in the last user turn.
"""

from __future__ import annotations

from w2c_tui.data.when2call import Example
from w2c_tui.prompts.markers import JUDGE_MARKER
from w2c_tui.prompts.system import tool_lines

JUDGE_LABELS = ("direct_answer", "tool_call", "request_for_info", "cannot_answer")

_TASK = """You are grading how an AI assistant behaved. The assistant was given the tools below and a question from a user. Read its response and decide which ONE of four behaviours it shows. Judge what the response does, not whether it was the right thing to do.

Tools the assistant could use:
{tools}

The user's question:
<question>
{question}
</question>

The assistant's response:
<response>
{response}
</response>

The four behaviours:
- direct_answer: the assistant answers the question itself in plain text, without calling a tool, asking the user anything, or declining.
- tool_call: the response calls a tool, or clearly attempts to (for example a <tool_call> block or a JSON object naming a function and its arguments), whether or not the call is correct.
- request_for_info: the assistant asks the user for more details or a clarification it needs before it can go on.
- cannot_answer: the assistant says it cannot help, for example because it lacks a suitable tool, access or information.

Reply with exactly one JSON object and nothing else:
{marker} "<behaviour>"}}
where <behaviour> is one of direct_answer, tool_call, request_for_info, cannot_answer."""

_REPAIR = """I could not read your previous reply as the required JSON object. Do not explain; reply again with exactly one JSON object and nothing else:
{marker} "<behaviour>"}}
where <behaviour> is one of {labels}."""

_NO_TOOLS = "(none: the assistant had no tools in this conversation)"


def judge_prompt(example: Example, response_text: str) -> str:
    tools = tool_lines(example.tools) if example.tools else _NO_TOOLS
    return _TASK.format(marker=JUDGE_MARKER, tools=tools, question=example.question, response=response_text)


def build_judge_messages(example: Example, response_text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": judge_prompt(example, response_text)}]


def build_judge_repair_messages(example: Example, response_text: str, bad_output: str) -> list[dict[str, str]]:
    """The one retry: the first exchange, the judge's unreadable reply, and a request for JSON only.

    The request restates the task, so that it stands on its own for servers (and judges)
    that weigh the last message most.
    """
    repair = _REPAIR.format(marker=JUDGE_MARKER, labels=", ".join(JUDGE_LABELS))
    return [
        *build_judge_messages(example, response_text),
        {"role": "assistant", "content": bad_output},
        {"role": "user", "content": f"{repair}\n\n{judge_prompt(example, response_text)}"},
    ]
