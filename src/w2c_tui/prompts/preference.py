"""The preference prompt: which of two answers to the same When2Call question is better.

The criteria are When2Call's definitions of the right behaviour (docs/metrics.md §16 quotes
them). Everything goes in one user message, as the judge prompt; the two answers are in
`<response_1>` and `<response_2>` tags, and the reply is one JSON object whose
`PREFERENCE_MARKER` the simulated endpoint looks for. The parser reads "1", "2" or "tie"
from that object, or from a bare first line when a judge ignores the JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from w2c_tui.data.when2call import Example
from w2c_tui.prompts.markers import PREFERENCE_MARKER
from w2c_tui.prompts.parsing import _embedded_objects, strip_reasoning
from w2c_tui.prompts.system import tool_lines

VERDICTS = ("1", "2", "tie")

CRITERIA = """A good response does exactly one of these, whichever the question and the tools call for:
- calls a listed tool only when that tool fits the request and every required argument is known from the question, with correct argument values, and without inventing a tool or a parameter;
- asks the user for exactly the information that is missing (a required argument the question does not give), and nothing more;
- says it cannot help when no listed tool can serve the request and the assistant cannot answer it itself;
- answers directly, in plain text, when no tool is needed.
A response that calls an unsuitable or invented tool, guesses a missing argument, asks for what was already given, refuses what it could do, or makes up an answer it cannot know is worse than one that does the right thing."""

_TASK = """You are comparing two responses of an AI assistant to the same user question. The assistant was given the tools below. Decide which response is better by the criteria that follow; judge what each response does, not its length or style.

Tools the assistant could use:
{tools}

The user's question:
<question>
{question}
</question>

Response 1:
<response_1>
{first}
</response_1>

Response 2:
<response_2>
{second}
</response_2>

Criteria:
{criteria}

Reply with exactly one JSON object and nothing else:
{marker} "<1, 2 or tie>", "reason": "<one sentence>"}}
Answer "tie" only when both responses are equally good or equally bad."""

_REPAIR = """I could not read your previous reply as the required JSON object. Do not explain; reply again with exactly one JSON object and nothing else:
{marker} "<1, 2 or tie>", "reason": "<one sentence>"}}"""

_NO_TOOLS = "(none: the assistant had no tools in this conversation)"


def preference_prompt(example: Example, first: str, second: str) -> str:
    tools = tool_lines(example.tools) if example.tools else _NO_TOOLS
    return _TASK.format(
        marker=PREFERENCE_MARKER, tools=tools, question=example.question, first=first, second=second, criteria=CRITERIA
    )


def build_preference_messages(example: Example, first: str, second: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": preference_prompt(example, first, second)}]


def build_preference_repair_messages(example: Example, first: str, second: str, bad_output: str) -> list[dict[str, str]]:
    """The one retry: the first exchange, the unreadable reply, and the request restated."""
    return [
        *build_preference_messages(example, first, second),
        {"role": "assistant", "content": bad_output},
        {"role": "user", "content": f"{_REPAIR.format(marker=PREFERENCE_MARKER)}\n\n{preference_prompt(example, first, second)}"},
    ]


@dataclass(frozen=True, slots=True)
class PreferenceParse:
    verdict: str | None  # "1", "2", "tie"; None when unreadable
    reason: str | None = None
    error: str | None = None


_BARE = re.compile(r"^\W*(?:response\s*)?(1|2|tie)\b", re.IGNORECASE)


def _verdict(value: object) -> str | None:
    text = str(value).strip().lower().removeprefix("response").strip() if value is not None else ""
    return text if text in VERDICTS else None


def parse_preference_output(text: str | None) -> PreferenceParse:
    """The verdict of a reply: the last JSON object with a readable "preferred", else a first
    line that starts with 1, 2 or tie; never a guess."""
    body = strip_reasoning(text or "").strip()
    if not body:
        return PreferenceParse(None, error="empty reply (nothing outside reasoning blocks)")
    for obj, _ in reversed(_embedded_objects(body)):
        verdict = _verdict(obj.get("preferred"))
        if verdict is not None:
            reason = obj.get("reason")
            return PreferenceParse(verdict, reason if isinstance(reason, str) else None)
    bare = _BARE.match(body.splitlines()[0])
    if bare:
        return PreferenceParse(bare.group(1).lower(), body)
    return PreferenceParse(None, error=f"no verdict (1, 2 or tie) in the reply: {body[:80]!r}")
