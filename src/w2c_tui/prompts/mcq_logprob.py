"""Log-probability MCQ requests: one context and the four continuations to score.

The context is the target prompt in the model's own chat format; each continuation is
`delimiter + answer`, in LABELS order. The official When2Call tasks use delimiter "",
not " ". Trailing whitespace of the context (e.g. llama3's "\\n\\n") is moved onto the
continuation at tokenization time (`scoring.loglik.move_trailing_whitespace`), as
lm-evaluation-harness does; it is not done here so the request stays the plain prompt.
"""

from __future__ import annotations

from w2c_tui.data.when2call import Example
from w2c_tui.labels import LABELS
from w2c_tui.prompts.families import render_context
from w2c_tui.prompts.system import build_target_messages


def build_loglik_requests(
    example: Example, family: str, delimiter: str = "", *, bos: bool = True
) -> tuple[str, list[str]]:
    context = render_context(family, build_target_messages(example), bos=bos)
    return context, [delimiter + example.answers[label] for label in LABELS]
