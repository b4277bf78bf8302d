"""Log-likelihood scoring with lm-evaluation-harness semantics, on hand-made token sequences."""

from __future__ import annotations

import math

import pytest

from w2c_tui.scoring.loglik import (
    all_non_finite,
    argmax_label,
    choice_scores,
    continuation_logprob,
    move_trailing_whitespace,
    split_by_text_offset,
    split_by_token_count,
)

INF = math.inf


def toy_pieces(text: str) -> list[str]:
    """A word-level tokenizer that, like BPE, attaches a leading space to the next word."""
    pieces, word = [], ""
    for ch in text:
        if ch == " " and word.strip():
            pieces.append(word)
            word = ""
        word += ch
    if word:
        pieces.append(word)
    return pieces


VOCAB: dict[str, int] = {}


def toy_tokenize(text: str) -> list[int]:
    return [VOCAB.setdefault(p, len(VOCAB)) for p in toy_pieces(text)]


def test_shared_prefix_split():
    assert split_by_token_count([1, 2, 3], [1, 2, 3, 4, 5]) == (3, False, 3)


def test_trailing_space_moves_onto_the_continuation():
    assert move_trailing_whitespace("Answer: ", "yes") == ("Answer:", " yes")
    assert move_trailing_whitespace("<|im_start|>assistant\n", "Sure") == ("<|im_start|>assistant", "\nSure")
    assert move_trailing_whitespace("ctx \n\t", "") == ("ctx", " \n\t")
    assert move_trailing_whitespace("ctx", "yes") == ("ctx", "yes")


def test_moving_the_space_keeps_the_split_clean():
    # Without the move the space token sits alone at the end of the context and the
    # whole encoding merges it into " yes": the context is no longer a prefix.
    ctx, cont = "Answer: ", "yes"
    assert split_by_token_count(toy_tokenize(ctx), toy_tokenize(ctx + cont))[1] is True
    ctx, cont = move_trailing_whitespace(ctx, cont)
    n_context, used_lcp, _ = split_by_token_count(toy_tokenize(ctx), toy_tokenize(ctx + cont))
    assert (n_context, used_lcp) == (1, False) and toy_tokenize(ctx + cont)[n_context:] == toy_tokenize(" yes")


def test_merge_across_the_boundary_falls_back_to_the_common_prefix():
    # context "ab|c" -> [10, 11, 12]; full "ab|cd..." -> [10, 11, 99 (= "cd"), 13]
    n_context, used_lcp, lcp = split_by_token_count([10, 11, 12], [10, 11, 99, 13])
    assert (n_context, used_lcp, lcp) == (2, True, 2)


def test_no_common_prefix_at_all():
    assert split_by_token_count([5], [6, 7]) == (0, True, 0)


def test_sum_excludes_the_generated_token():
    logprobs = [None, -1.0, -2.0, -0.5, -0.25, -9.0]  # 5 echoed prompt tokens + 1 generated
    assert continuation_logprob(logprobs, n_context=3, n_generated=1) == (-0.75, 2)


def test_sum_with_nothing_generated():
    assert continuation_logprob([None, -1.0, -2.0], n_context=1, n_generated=0) == (-3.0, 2)


def test_none_inside_the_continuation_is_minus_infinity():
    total, n = continuation_logprob([None, -1.0, -9.0], n_context=0, n_generated=1)
    assert total == -INF and n == 2


def test_empty_continuation_raises():
    with pytest.raises(ValueError, match="empty continuation"):
        continuation_logprob([None, -1.0, -9.0], n_context=2, n_generated=1)
    with pytest.raises(ValueError):
        continuation_logprob([-1.0], n_context=0, n_generated=2)
    with pytest.raises(ValueError):
        continuation_logprob([-1.0, -2.0], n_context=-1, n_generated=1)


def test_text_offset_split():
    # "Hi there" + " yes" + generated "!": offsets of "Hi", " there", " yes", "!"
    offsets = [0, 2, 8, 12]
    assert split_by_text_offset(offsets[:-1], len("Hi there")) == 2
    assert split_by_text_offset(offsets, len("Hi there")) == 2
    # A token straddling the boundary (starts at 6 < 7) counts as context.
    assert split_by_text_offset([0, 2, 6], 7) == 3
    assert split_by_text_offset([], 3) == 0


def test_norm_chars_is_per_character_not_per_byte():
    choices = ["café", "cafe"]
    assert len("café") == 4 and len("café".encode("utf-8")) == 5
    scores = choice_scores([-4.0, -4.4], choices, [2, 1])
    assert scores["raw"] == [-4.0, -4.4]
    assert scores["norm_chars"] == [-1.0, pytest.approx(-1.1)]
    assert scores["norm_bytes"] == [pytest.approx(-0.8), pytest.approx(-1.1)]
    assert scores["norm_tokens"] == [-2.0, pytest.approx(-4.4)]


def test_norm_chars_uses_the_choice_text_as_given():
    # With delimiter "" (official) the choice is the answer alone.
    assert choice_scores([-6.0], ["abc"], [1])["norm_chars"] == [-2.0]
    assert choice_scores([-6.0], [" abc"], [1])["norm_chars"] == [-1.5]


def test_choice_scores_keep_minus_infinity_and_validate():
    assert choice_scores([-INF], ["x"], [1])["norm_chars"] == [-INF]
    with pytest.raises(ValueError):
        choice_scores([-1.0, -2.0], ["a"], [1])
    with pytest.raises(ValueError):
        choice_scores([-1.0], [""], [1])
    with pytest.raises(ValueError):
        choice_scores([-1.0], ["a"], [0])


def test_argmax_first_max_wins():
    assert argmax_label([-2.0, -1.0, -1.0, -3.0]) == 1
    assert argmax_label([-1.0, -1.0]) == 0
    assert argmax_label([-INF, -5.0, float("nan"), -7.0]) == 1


def test_argmax_all_non_finite():
    raw = [-INF, -INF, float("nan"), -INF]
    assert argmax_label(raw) == -1
    assert all_non_finite(raw) is True
    assert all_non_finite([-INF, -3.0]) is False


def test_end_to_end_lm_eval_flow():
    """Context with a trailing space, two choices: acc and acc_norm pick different ones."""
    context = "Q: pick one. A: "
    choices = ["no", "yes please"]
    word_logprob = {" no": -3.0, " yes": -2.0, " please": -2.0}
    raws, counts = [], []
    for choice in choices:
        ctx, cont = move_trailing_whitespace(context, choice)
        n_context, used_lcp, _ = split_by_token_count(toy_tokenize(ctx), toy_tokenize(ctx + cont))
        assert not used_lcp
        pieces = toy_pieces(ctx + cont)
        # What an echo=true, max_tokens=1 reply carries: no logprob for the first token,
        # every prompt token's logprob, then the one generated token's.
        echoed = [None] + [word_logprob.get(p, -0.1) for p in pieces[1:]] + [-0.5]
        total, n = continuation_logprob(echoed, n_context, 1)
        raws.append(total)
        counts.append(n)
    assert raws == [-3.0, -4.0] and counts == [1, 2]
    scores = choice_scores(raws, choices, counts)
    assert argmax_label(scores["raw"]) == 0  # -3 > -4
    assert argmax_label(scores["norm_chars"]) == 1  # -4/10 > -3/2


def test_split_works_on_echoed_token_strings():
    assert split_by_token_count(["<s>", "Hi", ":"], ["<s>", "Hi", ":", " yes"]) == (3, False, 3)
    assert split_by_token_count(["<s>", "Hi", ":"], ["<s>", "Hi", ": yes"]) == (2, True, 2)
