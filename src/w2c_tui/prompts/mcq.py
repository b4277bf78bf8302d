"""The MCQ string prompt: show the target's context and the four candidate replies, ask for a digit.

Option i is the answer for LABELS[i], so the digit maps straight back to a label.
One user message, like the judge prompt, with `MCQ_MARKER` in it for the simulated endpoint.
"""

from __future__ import annotations

from w2c_tui.data.when2call import Example
from w2c_tui.labels import LABELS
from w2c_tui.prompts.markers import MCQ_MARKER
from w2c_tui.prompts.system import system_prompt

_TASK = """Below is the setup an AI assistant was given (its instructions, which list the tools it may use) and a question from a user, followed by four candidate replies. Pick the reply the assistant should give.

<assistant_instructions>
{system}
</assistant_instructions>

<user_question>
{question}
</user_question>

Candidate replies:

{options}

{marker} (0, 1, 2 or 3), the number of the best reply, and nothing else."""


def mcq_prompt(example: Example) -> str:
    options = "\n\n".join(f"Reply {i}:\n{example.answers[label]}" for i, label in enumerate(LABELS))
    return _TASK.format(
        marker=MCQ_MARKER, system=system_prompt(example), question=example.question, options=options
    )


def build_mcq_messages(example: Example) -> list[dict[str, str]]:
    return [{"role": "user", "content": mcq_prompt(example)}]
