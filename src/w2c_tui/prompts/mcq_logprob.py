"""Log-probability MCQ requests: one context and the four continuations to score.

The context is the target prompt in the model's own chat format; each continuation is
`delimiter + answer`, in LABELS order. The official When2Call tasks use delimiter "",
not " ". Trailing whitespace of the context (e.g. llama3's "\\n\\n") is moved onto the
continuation at tokenization time (`scoring.loglik.move_trailing_whitespace`), as
lm-evaluation-harness does; it is not done here so the request stays the plain prompt.

With an official When2Call family (prompts/official/) the context and the choices are the
official task's, as it writes them (no BOS: the official prompts have none).
"""

from __future__ import annotations

from w2c_tui.data.when2call import Example
from w2c_tui.labels import LABELS
from w2c_tui.prompts.families import render_context
from w2c_tui.prompts.official import is_official, official_pair
from w2c_tui.prompts.system import build_target_messages


def build_loglik_requests(
    example: Example, family: str, delimiter: str = "", *, bos: bool = True
) -> tuple[str, list[str]]:
    if is_official(family):
        context, choices = official_pair(example, family)
        return context, [delimiter + choice for choice in choices]
    context = render_context(family, build_target_messages(example), bos=bos)
    return context, [delimiter + example.answers[label] for label in LABELS]


def loglik_choices(example: Example, family: str) -> list[str]:
    """The choices as scored, without the delimiter: what acc_norm divides by (characters)."""
    if is_official(family):
        return official_pair(example, family)[1]
    return [example.answers[label] for label in LABELS]
