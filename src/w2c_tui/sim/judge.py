"""The sim playing the LLM judge: find the response in the prompt, label it, reply.

Where the response under evaluation is taken from (first that applies):

1. the last ``<...response...>`` ... ``</...response...>`` tag pair (e.g. ``<response>``);
2. the lines after the last line that starts with "Response" (optionally after markdown
   marks and one of "Model", "Assistant", "AI", "Candidate", "Target", "Agent"), text after its colon included,
   up to a line holding the judge marker, a ``---``/``===``/``#`` rule, or an
   "Instructions"/"Output"/"Labels" heading;
3. otherwise the whole message.

How it is labelled (first that applies): a ``<tool_call>`` or a JSON object with "name"
and "arguments" -> tool_call; an explicit request for details ("could you tell/provide",
"please provide", "I need ...") -> request_for_info; an apology or refusal ("sorry",
"can't", "cannot", "unable", "not able") -> cannot_answer; ends with "?" ->
request_for_info; anything else -> direct_answer. With `judge_error_rate` > 0 a known share
of responses is then labelled wrongly on purpose (`judged_label`), for `w2c-tui judge-check`.

The reply is ``{"classification": "<label>"}``, sometimes in a ```json fence and/or after
a sentence of reasoning; a fraction `malformed_rate` of prompts (decided by a hash of
the prompt, so a reworded repair request can succeed) get truncated JSON or prose.
"""

from __future__ import annotations

import re

from w2c_tui.prompts.markers import JUDGE_MARKER
from w2c_tui.sim.hashing import pick, unit

_TAGGED = re.compile(r"<([\w-]*response[\w-]*)>(.*?)</\1>", re.IGNORECASE | re.DOTALL)
_RESPONSE_LINE = re.compile(
    r"^[\s#*_>\[\-]*(?:(?:model|assistant|ai|candidate|target|agent)(?:'s)? )?response\b[^:\n]*:?(.*)$",
    re.IGNORECASE,
)
_SECTION_END = re.compile(
    r"^\s*(?:-{3,}|={3,}|#|(?:instructions?|output|labels?|categories|classify|classification)\b)",
    re.IGNORECASE,
)
_TOOL = re.compile(r"<tool_call>|\{\s*\"name\"\s*:", re.IGNORECASE)
_ASKS = re.compile(
    r"\b(?:could|can|would) you (?:please )?(?:tell|provide|share|specify|give|confirm|let me know)"
    r"|\bplease (?:provide|specify|share|tell|confirm|let me know)"
    r"|\bi need (?:a|an|the|one|more|some|to know)\b",
    re.IGNORECASE,
)
_REFUSES = re.compile(r"\b(?:sorry|can['’]?t|cannot|can not|unable|not able|apologi[sz]e)\b", re.IGNORECASE)


def extract_response(text: str) -> str:
    """The response under evaluation inside a judge prompt (see the module docstring)."""
    tagged = _TAGGED.findall(text)
    if tagged:
        return tagged[-1][1].strip()
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if _RESPONSE_LINE.match(line):
            start = i
    if start is None:
        return text.strip()
    taken = [_RESPONSE_LINE.match(lines[start]).group(1)]
    for line in lines[start + 1 :]:
        if JUDGE_MARKER in line or _SECTION_END.match(line):
            break
        taken.append(line)
    return "\n".join(taken).strip()


def classify(response: str) -> str:
    """A judge label for a response: direct_answer, tool_call, request_for_info or cannot_answer."""
    if _TOOL.search(response) and ("<tool_call>" in response.lower() or '"arguments"' in response):
        return "tool_call"
    if _ASKS.search(response):
        return "request_for_info"
    if _REFUSES.search(response):
        return "cannot_answer"
    if response.strip().strip("`'\"* \n").endswith("?"):
        return "request_for_info"
    return "direct_answer"


_REASONS = {
    "tool_call": "The response invokes a function with structured arguments.",
    "request_for_info": "The response asks the user for a missing detail before acting.",
    "cannot_answer": "The response declines, saying the request cannot be served.",
    "direct_answer": "The response answers in plain text without invoking anything.",
}


JUDGE_LABELS = ("direct_answer", "tool_call", "request_for_info", "cannot_answer")


def judged_label(seed: int, response: str, error_rate: float, sample: object = None) -> str:
    """The label the sim's judge gives `response`: `classify`, except that a share `error_rate`
    of responses (those with unit(seed, "judge-error", response, sample) < error_rate) get one
    of the three other labels, picked by unit(seed, "judge-error-to", response, sample).

    `sample` is the request seed of a sampled judge (temperature > 0) and None otherwise, so
    at temperature 0 the same response is always labelled the same way. Tests recompute the
    expected labels with this function.
    """
    label = classify(response)
    if error_rate > 0 and unit(seed, "judge-error", response, sample) < error_rate:
        others = tuple(name for name in JUDGE_LABELS if name != label)
        label = pick(others, seed, "judge-error-to", response, sample)
    return label


def judge_reply(
    seed: int, prompt: str, message: str, malformed_rate: float, *, error_rate: float = 0.0, sample: object = None
) -> tuple[str, str]:
    """(reply text, label) for a judge request; `prompt` keys the hashes, `message` is read."""
    label = judged_label(seed, extract_response(message), error_rate, sample)
    if unit(seed, "judge-malformed", prompt) < malformed_rate:
        broken = pick(
            (
                '{"classification": "' + label[: max(1, len(label) // 2)],
                "I am not sure how to put this response in a single category.",
            ),
            seed,
            "judge-broken",
            prompt,
        )
        return broken, label
    body = '{"classification": "' + label + '"}'
    style = int(unit(seed, "judge-style", prompt) * 4)
    if style == 1:
        return f"```json\n{body}\n```", label
    if style == 2:
        return f"{_REASONS[label]}\n\n{body}", label
    if style == 3:
        return f"{_REASONS[label]}\n```json\n{body}\n```", label
    return body, label
