"""Row keys of a preference session: one row per judge call, `<pair>#<call>`.

A pair of `prefer` is one example (`<uuid>`); a pair of `prefer_check` is one example's right
reference answer against one wrong one (`<uuid>#<wrong label>`). Call i sees A first when i is
even ("AB") and B first when odd ("BA"), so k = 2 judges each pair both ways.
"""

from __future__ import annotations

SEPARATOR = "#"


def call_key(pair: str, call: int) -> str:
    return f"{pair}{SEPARATOR}{call}"


def split_call_key(key: str) -> tuple[str, int]:
    """(pair, call index) of a row key; ValueError when it is not one."""
    pair, _, call = key.rpartition(SEPARATOR)
    if not pair or not call.isdigit():
        raise ValueError(f"not a preference row key: {key!r}")
    return pair, int(call)


def check_pair(uuid: str, wrong_label: str) -> str:
    return f"{uuid}{SEPARATOR}{wrong_label}"


def split_pair(pair: str) -> tuple[str, str]:
    """(example uuid, wrong label) of a pair key; the label is "" for a `prefer` pair."""
    uuid, _, label = pair.rpartition(SEPARATOR)
    return (uuid, label) if uuid else (pair, "")


def order_of(call: int) -> str:
    """"AB" (A in position 1) on even calls, "BA" on odd ones."""
    return "AB" if call % 2 == 0 else "BA"
