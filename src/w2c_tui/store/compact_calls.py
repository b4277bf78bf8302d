"""Reading the compact call records of traces packed before zstd (`<exp>.jsonl.gz`).

Those traces stored each record's `request` and `response` with every long string or list
that started like one seen earlier for the same example (same uuid, earlier in this record
or in an earlier record marked `ckept`) as `{"$ct": [cid, slot, n, rest]}`: the first `n`
items of value number `slot` of record `cid` (values counted in the order they are met,
depth first, a container after its items; a list of more than `RECURSE_LIMIT` items is not
searched inside), followed by the literal `rest`; an echo's `top_logprobs` entries that only
repeated the token's own logprob were written as 0 inside `{"$ct": {"own": [...]}}`. A record
with a `cid` is compact; without one, plain. Decoding gives back exactly the values that
were exchanged. New traces are packed as they were written (`members`): nothing here writes.
"""
from __future__ import annotations

from typing import Any

MARK = "$ct"
CID = "cid"  # a compact record's id: the hash of the plain line it was made from (`call_files.line_id`)
MIN_STR = 200  # characters: shorter strings were never referred to
MIN_LIST = 48  # items
RECURSE_LIMIT = 64  # lists longer than this are leaves (their items were not searched)
POOL_UUIDS = 128  # examples the packer remembered: a reader needs no more decoders at once
KEPT = "ckept"  # true on a record whose values later records may refer to
OWN = "own"  # {"$ct": {"own": [...]}}: top_logprobs whose 0 entries are {token: its logprob}


def _eligible(value: Any) -> bool:
    return (isinstance(value, str) and len(value) >= MIN_STR) or (isinstance(value, list) and len(value) >= MIN_LIST)


def _with_own_entries(own: list[Any], tokens: list[Any], lps: list[Any]) -> list[Any]:
    """0 (an int: real entries are objects or null) -> {token: its logprob}."""
    return [{token: lp} if type(entry) is int else entry for entry, token, lp in zip(own, tokens, lps)]


class _Decoder:
    def __init__(self, values: dict[tuple[str, int], Any], cid: str) -> None:
        self.values = values  # kept values of earlier records
        self.own: dict[tuple[str, int], Any] = {}  # this record's
        self.cid = cid
        self.slot = 0

    def _register(self, value: Any) -> None:
        self.own[(self.cid, self.slot)] = value
        self.slot += 1

    def decode(self, node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get(MARK)
            if ref is not None and len(node) == 1:
                cid, slot, n, rest = ref
                value = (self.own if cid == self.cid else self.values)[(cid, slot)][:n] + rest
                self._register(value)
                return value
            value = {}
            for key, item in node.items():
                inner = item.get(MARK) if isinstance(item, dict) and len(item) == 1 else None
                value[key] = self.decode(inner[OWN]) if isinstance(inner, dict) else self.decode(item)
                if isinstance(inner, dict):
                    value[key] = _with_own_entries(value[key], value["tokens"], value["token_logprobs"])
            return value
        if isinstance(node, list) and len(node) <= RECURSE_LIMIT:
            value = [self.decode(v) for v in node]
        else:
            value = node
        if _eligible(value):
            self._register(value)
        return value


class CompactDecoder:
    """The reader's side: decodes one example's records in file order."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, int], Any] = {}

    def decode(self, row: dict[str, Any]) -> dict[str, Any]:
        """The record as it was exchanged; a plain record is returned as it is.

        Raises KeyError/ValueError/TypeError when a reference points to a record that is missing.
        """
        cid = row.get(CID)
        if not isinstance(cid, str):
            return row
        decoder = _Decoder(self._values, cid)
        full = {k: v for k, v in row.items() if k not in (CID, KEPT)}
        full["request"] = decoder.decode(row.get("request"))
        full["response"] = decoder.decode(row.get("response"))
        if row.get(KEPT) is True:
            self._values.update(decoder.own)
        return full


def decode_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One example's rows in file order, decoded; a row whose reference cannot be resolved is
    returned with `request`/`response` replaced by a note (a torn or lost earlier line)."""
    decoder = CompactDecoder()
    out = []
    for row in rows:
        try:
            out.append(decoder.decode(row))
        except (KeyError, ValueError, TypeError, IndexError):
            broken = {k: v for k, v in row.items() if k not in (CID, KEPT)}
            broken["request"] = broken["response"] = "(not readable: an earlier line of this example is missing)"
            out.append(broken)
    return out
