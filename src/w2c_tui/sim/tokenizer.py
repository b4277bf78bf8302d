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

PIECE = re.compile(r" [^\W\d_]{1,7}|[^\W\d_]{1,8}|\d{1,8}|.", re.DOTALL)


class UnknownTokenId(ValueError):
    """A token id this process never handed out."""


def tokenize(text: str) -> list[str]:
    """Split text into pieces; their concatenation is `text`."""
    return PIECE.findall(text)


def count_tokens(text: str) -> int:
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

    def piece_of(self, token_id: int) -> str:
        if isinstance(token_id, bool) or not isinstance(token_id, int) or not 0 <= token_id < len(self._pieces):
            raise UnknownTokenId(f"unknown token id {token_id!r}")
        return self._pieces[token_id]

    def __len__(self) -> int:
        return len(self._pieces)


VOCAB = Vocabulary()


def encode(text: str) -> list[int]:
    """Token ids of `text` (assigning ids to pieces seen for the first time)."""
    return [VOCAB.id_of(p) for p in tokenize(text)]


def pieces_of(ids: list[int]) -> list[str]:
    """The pieces of token ids; raises UnknownTokenId for an id never handed out."""
    return [VOCAB.piece_of(i) for i in ids]


def decode(ids: list[int]) -> str:
    return "".join(pieces_of(ids))
