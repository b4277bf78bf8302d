"""The preference prompt: which of two answers to the same When2Call question is better.

The criteria are When2Call's definitions of the right behaviour (docs/metrics.md §16 quotes
them). Everything goes in one user message, as the judge prompt; the two answers are in
`<response_1>` and `<response_2>` tags, and the reply is one JSON object whose
`PREFERENCE_MARKER` the simulated endpoint looks for. The parser reads "1", "2" or "tie"
from that object, or from a sentence that states the verdict when a judge ignores the JSON,
and nothing when the reply is ambiguous (`parse_preference_output`).
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


def _verdict(value: object) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip().lower().removeprefix("response").strip()
    return text if text in VERDICTS else None


# -- verdict sentences ---------------------------------------------------------------------
# A judge that ignores the JSON may still state its verdict in a sentence. Only sentences that
# *state* one are read ("Therefore Response 2 is better.", "Verdict: tie", a line "1"); one
# that merely names a response ("Response 1 calls a tool ...") states nothing. A statement
# after a hedge in its sentence ("if", "not", "might", ...) or in a question makes the reply
# ambiguous, as do two statements of different verdicts: then nothing is read.

_WHO = r"(?:(?:response|answer|reply|output)\s*(?:#|no\.?|number)?\s*(?P<n>[12])\b|(?:the\s+)?(?P<ord>first|second)\s+(?:response|answer|reply|one))"
_ADV = r"(?:clearly|definitely|slightly|much|far|significantly|overall|marginally|somewhat)"
_CLAIMS: tuple[tuple[re.Pattern[str], bool], ...] = tuple(
    (re.compile(pattern), swap)
    for pattern, swap in (
        (rf"\b{_WHO}\s+is\s+(?:{_ADV}\s+)?(?:the\s+)?(?:better|preferred|preferable|superior|stronger|best|winner)\b", False),
        (rf"\b{_WHO}\s+is\s+(?:{_ADV}\s+)?(?:the\s+)?(?:worse|weaker|inferior)\b", True),
        (rf"\b(?:i|we)\s+(?:would\s+)?(?:prefer|choose|pick|select|favou?r)\s+{_WHO}", False),
        (rf"\b(?:better|preferred|superior|winning|best)\s+(?:response|answer|reply|one|choice|option)\s+is\s+{_WHO}", False),
        (rf"\b(?:verdict|preferred|preference|final\s+answer|winner|choice|decision)\s*[:=]\s*(?:{_WHO}|(?P<digit>[12])\b|(?P<tie>tie)\b)", False),
        (r"\b(?P<tie>it\s*(?:'s|is)\s+a\s+tie|(?:this|that|the\s+result)\s+is\s+a\s+tie|both\s+(?:responses\s+|answers\s+)?are\s+(?:\w+\s+)?equally"
         r"|neither\s+(?:response\s+|answer\s+|one\s+)?is\s+better)\b", False),
    )
)
_BARE = re.compile(rf"(?:{_WHO}|(?P<digit>[12])|(?P<tie>tie))")
_HEDGE = re.compile(r"\b(?:not|no|never|if|whether|unless|might|may|could|should|seems?|perhaps|maybe|possibly|arguably|unclear|unsure)\b|n't\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_MARKUP = re.compile(r"[*_`#>]")


@dataclass(frozen=True, slots=True)
class _Claims:
    verdicts: set[str]
    hedged: str | None  # the first sentence whose statement is hedged or asked


def _claimed(match: re.Match[str], swap: bool) -> str:
    groups = match.groupdict()
    if groups.get("tie"):
        return "tie"
    which = groups.get("n") or groups.get("digit") or ("1" if groups.get("ord") == "first" else "2")
    return {"1": "2", "2": "1"}[which] if swap else which


def _claims(text: str) -> _Claims:
    """The verdicts the sentences of `text` state."""
    verdicts: set[str] = set()
    for raw in _SENTENCE_END.split(text):
        sentence = " ".join(_MARKUP.sub(" ", raw).lower().split())
        bare = _BARE.fullmatch(sentence.rstrip(" .!"))
        if bare and not raw.lstrip().startswith("#"):  # a line "Response 1" is a verdict, a heading is not
            verdicts.add(_claimed(bare, False))
            continue
        for pattern, swap in _CLAIMS:
            for match in pattern.finditer(sentence):
                if _HEDGE.search(sentence[: match.start()]) or sentence.endswith("?"):
                    return _Claims(verdicts, raw.strip()[:80])
                verdicts.add(_claimed(match, swap))
    return _Claims(verdicts, None)


def parse_preference_output(text: str | None) -> PreferenceParse:
    """The verdict of a reply, read only where the reply states it unambiguously: the
    "preferred" field of its JSON object(s), all naming the same verdict and none contradicted
    by the text around them; else the one verdict its sentences state. Never a guess."""
    body = strip_reasoning(text or "").strip()
    if not body:
        return PreferenceParse(None, error="empty reply (nothing outside reasoning blocks)")
    found = _embedded_objects(body)
    prose = body
    for _, raw in found:
        prose = prose.replace(raw, " ")
    claims = _claims(prose)
    if claims.hedged is not None:
        return PreferenceParse(None, error=f"a verdict is stated conditionally or asked, not stated: {claims.hedged!r}")
    objects = [obj for obj, _ in found if "preferred" in obj]
    if objects:
        named = [obj["preferred"] for obj in objects]
        verdicts = {_verdict(value) for value in named}
        if None in verdicts:
            bad = next(value for value in named if _verdict(value) is None)
            return PreferenceParse(None, error=f'"preferred" is {repr(bad)[:40]}, not 1, 2 or tie')
        if len(verdicts | claims.verdicts) > 1:
            said = ", ".join(sorted(verdicts | claims.verdicts))
            return PreferenceParse(None, error=f"the reply states different verdicts ({said}): ambiguous")
        reason = next((r for obj in reversed(objects) if isinstance(r := obj.get("reason"), str)), None)
        return PreferenceParse(verdicts.pop(), reason)
    if len(claims.verdicts) == 1:
        return PreferenceParse(next(iter(claims.verdicts)), body)
    if claims.verdicts:
        return PreferenceParse(None, error=f"the reply states different verdicts ({', '.join(sorted(claims.verdicts))}): ambiguous")
    return PreferenceParse(None, error=f"no verdict (1, 2 or tie) stated in the reply: {body[:80]!r}")
