"""The sim's tokenizer: a tiny GPT-like splitter with a process-wide vocabulary.

Pieces, left to right (regular expression ``PIECE``):

* a space followed by 1-7 letters (" hello"), or 1-8 letters without the space;
* 1-8 digits;
* any other single character (spaces, punctuation, newlines, symbols).

So a letter run keeps its leading space, like GPT's "Ġhello", and long words or numbers
come out as 8-character chunks (" internationalization" -> " interna", "tionaliz",
"ation"). Every character lands in exactly one piece, hence
``"".join(tokenize(s)) == s`` for every string.

Ids come from a vocabulary that grows as new pieces are seen; an id never changes within
a process (shared by every server in it), but differs between processes. There are no
special tokens: ``add_special_tokens`` is accepted and ignored.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_right
from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate

PIECE = re.compile(r" [^\W\d_]{1,7}|[^\W\d_]{1,8}|\d{1,8}|.", re.DOTALL)
MAX_PIECE = 8  # the longest piece PIECE can match


class UnknownTokenId(ValueError):
    """A token id this process never handed out."""


def tokenize(text: str) -> list[str]:
    """Split text into pieces; their concatenation is `text`."""
    return PIECE.findall(text)


def tokenize_many(texts: list[str]) -> list[list[str]]:
    """`[tokenize(t) for t in texts]`, reusing the pieces of the text before where they agree.

    The prompts of a log-probability request share a long context. A match at position i
    depends only on text[i : i + MAX_PIECE], so every earlier piece that starts at least
    MAX_PIECE characters before the texts differ is the same in both.
    """
    out: list[list[str]] = []
    before, pieces, starts = "", [], []
    for text in texts:
        same = common_prefix_length(before, text)
        keep = bisect_right(starts, same - MAX_PIECE)
        at = starts[keep] if keep < len(starts) else len(before)
        pieces = pieces[:keep] + PIECE.findall(text, at)
        starts = list(accumulate(map(len, pieces[:-1]), initial=0)) if pieces else []
        before = text
        out.append(pieces)
    return out


def common_prefix_length(a: Sequence, b: Sequence) -> int:
    """How many leading items (characters, pieces) `a` and `b` share."""
    low, high = 0, min(len(a), len(b))
    # Binary search with slice comparisons: C speed, no item loop. Only the part past what is
    # known to agree is compared (a[:low] == b[:low] throughout), so slices total ~2n, not n log n.
    while low < high:
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low


@lru_cache(maxsize=1024)
def count_tokens(text: str) -> int:
    # Cached: a chat request's system prompt (the example's tools) comes back with every
    # pipeline and retry, and splitting it is most of the sim's work for a chat answer.
    return len(PIECE.findall(text))


class Vocabulary:
    """piece <-> id, grown on demand; safe to share between threads."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._pieces: list[str] = []
        self._lock = threading.Lock()

    def id_of(self, piece: str) -> int:
        found = self._ids.get(piece)
        if found is not None:
            return found
        with self._lock:
            found = self._ids.get(piece)
            if found is None:
                found = len(self._pieces)
                self._pieces.append(piece)
                self._ids[piece] = found
            return found

    def ids_of(self, pieces: list[str]) -> list[int]:
        """`[id_of(p) for p in pieces]` at C speed (an echo lists thousands of known pieces)."""
        ids = list(map(self._ids.get, pieces))
        if None in ids:
            ids = [self.id_of(p) if i is None else i for p, i in zip(pieces, ids)]
        return ids

    def piece_of(self, token_id: int) -> str:
        if isinstance(token_id, bool) or not isinstance(token_id, int) or not 0 <= token_id < len(self._pieces):
            raise UnknownTokenId(f"unknown token id {token_id!r}")
        return self._pieces[token_id]

    def pieces_of(self, ids: list[int]) -> list[str]:
        """`[piece_of(i) for i in ids]`, checked and looked up at C speed when every id is known."""
        pieces = self._pieces
        if ids and set(map(type, ids)) == {int} and min(ids) >= 0 and max(ids) < len(pieces):
            return list(map(pieces.__getitem__, ids))
        return [self.piece_of(i) for i in ids]  # raises for the first unknown one

    def __len__(self) -> int:
        return len(self._pieces)


VOCAB = Vocabulary()


def encode(text: str) -> list[int]:
    """Token ids of `text` (assigning ids to pieces seen for the first time)."""
    return VOCAB.ids_of(tokenize(text))


def pieces_of(ids: list[int]) -> list[str]:
    """The pieces of token ids; raises UnknownTokenId for an id never handed out."""
    return VOCAB.pieces_of(ids)


def decode(ids: list[int]) -> str:
    return "".join(pieces_of(ids))
