"""Model families: which chat format a model expects, and rendering messages into raw text.

`render_context` is for `/completions` (MCQ log-probability), where we must write the chat
template ourselves. The special tokens are each family's real ones, written as text; the
server's tokenizer turns them into the special token ids.

BOS: by default the text starts with the family's BOS token (`<|begin_of_text|>`, `<s>`,
`<bos>`), as its chat template renders it. Many servers (vLLM's /completions, llama.cpp)
also prepend BOS themselves when they tokenize a prompt, which then appears twice; pass
`bos=False` for such a server. Either way the context/continuation split is unaffected,
because context and context+continuation start with the same text.

The official When2Call formats (`when2call`, `when2call-<format>`, prompts/official/) are
template families too, for `mcq_logprob` only: they write the whole prompt themselves, with
no BOS, and are chosen by name, never by `auto`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from w2c_tui.prompts.official import FORMATS as OFFICIAL_FORMATS
from w2c_tui.prompts.official import OFFICIAL_FAMILIES, XLAM, XLAM_REFUSED

FAMILIES: tuple[str, ...] = ("plain", "llama3", "llama4", "chatml", "harmony", "mistral", "gemma")
ALIASES: dict[str, str] = {"qwen": "chatml"}
_AUTO = ("", "auto")

# Checked in order; the first needle found in the lower-cased model name wins. A family of
# None means "known, and its format is none of ours": it stops the search before a later
# needle (often the base model's name, e.g. DeepSeek-R1-Distill-Qwen) picks a wrong family.
# Only formats that equal one of ours are mapped; Yi (bare system text), phi-3/phi-4
# (<|im_sep|>, <|user|>), granite, olmo and deepseek have their own and fall back to plain.
_DETECT: tuple[tuple[tuple[str, ...], str | None], ...] = (
    (("sim-small",), "plain"),  # the simulator's default model; the demo renders plain on purpose
    (("deepseek", "smollm3", "hermes-4"), None),
    (("gpt-oss",), "harmony"),
    # ChatML exactly (model cards): SmolLM/SmolLM2, Nous Hermes 2/3 and OpenHermes, Dolphin.
    (("smollm", "openhermes", "hermes-2", "hermes-3", "hermes2", "hermes3", "dolphin"), "chatml"),
    (("qwen",), "chatml"),
    (("llama-4", "llama4"), "llama4"),
    (("llama-3", "llama3"), "llama3"),
    (("mistral", "mixtral", "ministral"), "mistral"),
    (("gemma",), "gemma"),
)

BOS: dict[str, str] = {"llama3": "<|begin_of_text|>", "llama4": "<|begin_of_text|>", "mistral": "<s>", "gemma": "<bos>"}

# What each rendered context ends with: the opening of the assistant's turn.
ASSISTANT_OPENER: dict[str, str] = {
    "plain": "Assistant:",
    "llama3": "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "llama4": "<|header_start|>assistant<|header_end|>\n\n",
    "chatml": "<|im_start|>assistant\n",
    "harmony": "<|start|>assistant<|channel|>final<|message|>",
    "mistral": "[/INST]",
    "gemma": "<start_of_turn>model\n",
}

Message = dict[str, str]


def known_family(model_id: str) -> str | None:
    """The family recognised from the model's name, or None when no family of ours is known."""
    name = (model_id or "").lower()
    for needles, family in _DETECT:
        if any(n in name for n in needles):
            return family
    return None


def detect_family(model_id: str) -> str:
    return known_family(model_id) or "plain"


def falls_back_to_plain(model_id: str, override: str | None) -> bool:
    """True when `auto` chose plain only because no family is known for this model."""
    if override is not None and override.strip().lower() not in _AUTO:
        return False
    return known_family(model_id) is None


def fallback_note(model_id: str) -> str:
    return f"template family: plain (no known family for model {model_id} — set [models] template_family)"


def canonical_family(name: str) -> str:
    """A family name or alias, normalised; ValueError for anything else."""
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key == XLAM:
        raise ValueError(XLAM_REFUSED)
    if key not in FAMILIES and key not in OFFICIAL_FORMATS:
        valid = ", ".join([*FAMILIES, *ALIASES, *OFFICIAL_FAMILIES, "auto"])
        raise ValueError(f"unknown template family {name!r}; valid names: {valid}")
    return key


def resolve_family(model_id: str, override: str | None) -> str:
    if override is None or override.strip().lower() in _AUTO:
        return detect_family(model_id)
    return canonical_family(override)


def render_context(family: str, messages: Sequence[Message], *, bos: bool = True) -> str:
    """The raw prompt for `messages`, ending with the assistant-turn opener."""
    family = canonical_family(family)
    body = _RENDERERS[family](messages)
    return (BOS.get(family, "") if bos else "") + body


def _llama3(messages: Sequence[Message]) -> str:
    turns = "".join(f"<|start_header_id|>{m['role']}<|end_header_id|>\n\n{m['content']}<|eot_id|>" for m in messages)
    return turns + ASSISTANT_OPENER["llama3"]


def _llama4(messages: Sequence[Message]) -> str:
    turns = "".join(f"<|header_start|>{m['role']}<|header_end|>\n\n{m['content']}<|eot|>" for m in messages)
    return turns + ASSISTANT_OPENER["llama4"]


def _chatml(messages: Sequence[Message]) -> str:
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return turns + ASSISTANT_OPENER["chatml"]


# gpt-oss's own system message, as its chat template writes it, minus the "Current date"
# line (it would make the prompt, and so the scores, depend on the day of the run).
HARMONY_SYSTEM = (
    "You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\n\n"
    "Reasoning: medium\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message."
)


def _harmony(messages: Sequence[Message]) -> str:
    # The template gives `system` to the model's own header; the caller's instructions go
    # into a `developer` message under "# Instructions".
    parts = [f"<|start|>system<|message|>{HARMONY_SYSTEM}<|end|>"]
    for m in messages:
        if m["role"] == "system":
            parts.append(f"<|start|>developer<|message|># Instructions\n\n{m['content']}<|end|>")
            continue
        # Past assistant turns are final-channel answers; other roles have no channel.
        head = "assistant<|channel|>final" if m["role"] == "assistant" else m["role"]
        parts.append(f"<|start|>{head}<|message|>{m['content']}<|end|>")
    return "".join(parts) + ASSISTANT_OPENER["harmony"]


def _mistral(messages: Sequence[Message]) -> str:
    parts = []
    for m in _fold_system(messages):
        if m["role"] == "assistant":
            parts.append(f" {m['content']}</s>")
        else:
            parts.append(f"[INST] {m['content']} [/INST]")
    return "".join(parts)


def _gemma(messages: Sequence[Message]) -> str:
    parts = []
    for m in _fold_system(messages):
        role = "model" if m["role"] == "assistant" else "user"
        parts.append(f"<start_of_turn>{role}\n{m['content']}<end_of_turn>\n")
    return "".join(parts) + ASSISTANT_OPENER["gemma"]


def _plain(messages: Sequence[Message]) -> str:
    parts = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    return "\n\n".join([*parts, ASSISTANT_OPENER["plain"]])


def _fold_system(messages: Sequence[Message]) -> list[Message]:
    """For formats without a system role: put the system text at the top of the first user turn."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [dict(m) for m in messages if m["role"] != "system"]
    if not system:
        return rest
    first_user = next((m for m in rest if m["role"] == "user"), None)
    if first_user is None:
        return [{"role": "user", "content": system}, *rest]
    first_user["content"] = f"{system}\n\n{first_user['content']}"
    return rest


_RENDERERS: dict[str, Callable[[Sequence[Message]], str]] = {
    "plain": _plain,
    "llama3": _llama3,
    "llama4": _llama4,
    "chatml": _chatml,
    "harmony": _harmony,
    "mistral": _mistral,
    "gemma": _gemma,
}
