"""The sim's C-speed paths give exactly what the one-at-a-time definitions give (issue 25)."""

from __future__ import annotations

import random

import pytest

from w2c_tui.sim import logprobs
from w2c_tui.sim.hashing import unit
from w2c_tui.sim.tokenizer import PIECE, VOCAB, UnknownTokenId, Vocabulary, pieces_of


def test_ids_of_is_id_of_piece_by_piece_new_pieces_in_order() -> None:
    one, bulk = Vocabulary(), Vocabulary()
    for pieces in (["a", "b", "a"], ["b", "c", " new", "c", "a"], [], ["z"] * 3):
        assert bulk.ids_of(pieces) == [one.id_of(p) for p in pieces]
    assert bulk._pieces == one._pieces


def test_pieces_of_fast_path_and_every_refusal() -> None:
    ids = VOCAB.ids_of(["fast", " path", "fast"])
    assert pieces_of(ids) == ["fast", " path", "fast"]
    assert pieces_of([]) == []
    for bad in ([*ids, len(VOCAB)], [-1], [True], [float(ids[0])], ["1"], [None]):
        with pytest.raises(UnknownTokenId):
            pieces_of(bad)


def _score_one_by_one(seed: int, pieces: list[str], start: str) -> list[float]:
    """The module docstring's formula, token after token."""
    out, text = [], start
    for piece in pieces:
        prefix = text[-logprobs.PREFIX_CHARS:]
        u = unit(seed, prefix, piece)
        span = logprobs.FAVOURED_SPAN if logprobs.favoured(seed, prefix, piece) else logprobs.NOISE_SPAN
        out.append(logprobs.HIGHEST - span * u)
        text += piece
    return out


def test_score_pieces_is_the_formula_token_by_token() -> None:
    rng = random.Random(7)
    words = ["x", " hello", "12345678", "\n", "é", " a", "{", '"', "tool"]
    for start in ("", "short", "s" * 63, "long context " * 20):
        pieces = [rng.choice(words) for _ in range(rng.randint(0, 120))]
        assert logprobs.score_pieces(3, pieces, start=start) == _score_one_by_one(3, pieces, start)
    text = "When a question is long enough, favoured windows occur"
    pieces = PIECE.findall(text)
    assert logprobs.score_pieces(0, pieces) == _score_one_by_one(0, pieces, "")


def test_common_prefix_length_against_an_item_loop() -> None:
    from w2c_tui.sim.tokenizer import common_prefix_length

    def loop(a, b) -> int:
        n = 0
        for x, y in zip(a, b):
            if x != y:
                break
            n += 1
        return n

    rng = random.Random(1)
    for _ in range(500):
        a = [rng.choice("ab") for _ in range(rng.randint(0, 40))]
        b = a[: rng.randint(0, len(a))] + [rng.choice("abc") for _ in range(rng.randint(0, 5))]
        assert common_prefix_length(a, b) == loop(a, b)
        assert common_prefix_length("".join(a), "".join(b)) == loop("".join(a), "".join(b))


@pytest.mark.parametrize("extra", [{"return_token_ids": True, "add_special_tokens": False}, {}, {"return_tokens_as_token_ids": True}])
def test_a_prompt_list_answers_byte_for_byte_as_each_prompt_alone(extra: dict) -> None:
    """The shared head of a request's echoes is written once; the bytes are those of the plain answer."""
    from w2c_tui.jsoncodec import dumps_bytes, loads
    from w2c_tui.sim.completions import completion
    from w2c_tui.sim.settings import Conventions

    context = 'System: tools <tool>{"name": "get_weather"}</tool>\nUser: What is the weather in Paris?\nAssistant:'
    texts = [context, context + " Sunny.", context + " I cannot tell.", "Another prompt"]
    conventions = Conventions(echo_token_ids=True)

    def answer(prompt):
        body = {"model": "m", "prompt": prompt, "max_tokens": 1, "echo": True, "logprobs": 1, "temperature": 0.0, "seed": 0, **extra}
        return loads(dumps_bytes(completion(body, seed=0, default_model="m", next_sample=lambda: 0, conventions=conventions)))

    together = answer(texts[:3])["choices"]
    for index, text in enumerate(texts[:3]):
        alone = answer(text)["choices"][0]
        assert together[index] == {**alone, "index": index}
        assert dumps_bytes(together[index]["logprobs"]) == dumps_bytes(alone["logprobs"])
    assert answer(texts)["choices"][3] == {**answer(texts[3])["choices"][0], "index": 3}  # no shared head at all


def test_joined_array_is_the_array_written_whole() -> None:
    from w2c_tui.jsoncodec import array_items, dumps_bytes, joined_array

    for head, tail in (([], []), ([1], []), ([], [None]), ([None, -0.5, {"a": 1.0}], ["x", [2]])):
        assert dumps_bytes({"k": joined_array(array_items(head), tail)}) == dumps_bytes({"k": head + tail})


@pytest.mark.parametrize("parts", [(7, "x" * 64, " tok"), (0, "", ""), (-3, "é\x1f\ud800", "\n")])
def test_unit3_is_unit_of_three_parts(parts) -> None:
    from w2c_tui.sim.hashing import unit3

    assert unit3(*parts) == unit(*parts)
