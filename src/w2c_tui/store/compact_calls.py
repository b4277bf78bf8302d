"""Compact call records: long strings and lists that repeat an earlier one are stored as a reference.

An `mcq_logprob` example sends the same context many times: five `/tokenize` prompts that all
start with it, token-id prompts that repeat the tokenizer's answers, and echoed prompts whose
`tokens`, `token_logprobs`, `top_logprobs` and `text_offset` arrays share their first ~900
entries. When a trace is packed (`call_files.pack_calls`) each record's `request` and
`response` are written with every long string or list that starts like one seen earlier for
the same example (same uuid, earlier in this record or in an earlier record) replaced by
`{"$ct": [cid, slot, n, rest]}`: the first `n` items of value number `slot` of record `cid`,
followed by the literal `rest`; an echo's `top_logprobs` entries that only repeat the token's
own logprob become 0. Only records marked `ckept` (small bodies: prompts, token lists, chat
answers) can be referred to by later ones. Decoding gives back exactly the values that were
exchanged. A record whose JSON contains the marker key or a registered secret is written as
it is (without a `cid`), as are all records of the old format.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

import orjson

from w2c_tui.redaction import scrub

MARK = "$ct"
CID = "cid"  # a compact record's id, unique within its file; absent = a plain record
MIN_STR = 200  # characters: shorter strings are not worth a reference
MIN_LIST = 48  # items
MIN_SHARED = 32  # a reference must save at least this many items or characters
GOOD_ENOUGH = 64  # a reference leaving at most this many items or characters literal ends the search
RECURSE_LIMIT = 64  # lists longer than this are leaves (their items are not searched)
POOL_UUIDS = 128  # examples whose values the encoder remembers (older ones are forgotten)
KEEP_BYTES = 64_000  # a record's values are kept for later records only when its bodies are this small
KEPT = "ckept"  # true on a record whose values later records may refer to
# A record line longer than this is packed as it is, never decoded: an echo of a 50 MB prompt
# becomes tens of millions of Python objects (packing one took 19 GB), and nothing repeats it.
MAX_COMPACT_LINE = 8 << 20

TOP = "top_logprobs"
OWN = "own"  # {"$ct": {"own": [...]}}: top_logprobs whose 0 entries are {token: its logprob}
_MARK_BYTES = b'"' + MARK.encode() + b'"'


def _eligible(value: Any) -> bool:
    return (isinstance(value, str) and len(value) >= MIN_STR) or (isinstance(value, list) and len(value) >= MIN_LIST)


def _shared_prefix(a: Any, b: Any) -> int:
    """Length of the common prefix of two strings or two lists (binary search on C-speed slice compares)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _same_json(a: list[Any], b: list[Any]) -> bool:
    """Equal as JSON, not only as Python values: 1 == 1.0, 0.0 == -0.0 and {a, b} == {b, a} are not."""
    try:
        return orjson.dumps(a) == orjson.dumps(b)  # in C: faster than looking at the items' types
    except TypeError:
        return False


class _Pool:
    """The long values seen for one example: (cid, slot, value), in the order they were met."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[tuple[str, int, Any]] = []

    def best(self, value: Any) -> tuple[str, int, int] | None:
        found = None
        best_n = MIN_SHARED - 1
        for cid, slot, seen in reversed(self.entries):  # the newest first: most often the closest
            if type(seen) is not type(value) or seen[:MIN_SHARED] != value[:MIN_SHARED]:
                continue
            n = _shared_prefix(seen, value)
            # Lists equal only as Python values (1 and 1.0, 0.0 and -0.0) are not the same JSON.
            if n > best_n and (isinstance(value, str) or _same_json(seen[:n], value[:n])):
                found, best_n = (cid, slot, n), n
                if len(value) - n <= GOOD_ENOUGH:
                    break
        return found


class _Encoder:
    def __init__(self, pool: _Pool, cid: str) -> None:
        self.pool = pool
        self.cid = cid
        self.slot = 0
        self.added: list[tuple[str, int, Any]] = []
        self.changed = False  # a reference or an own `top_logprobs` was written

    def _register(self, value: Any) -> None:
        self.added.append((self.cid, self.slot, value))
        self.slot += 1

    def encode(self, value: Any) -> Any:
        # Scalars and short strings are copied without a call: a chat record is mostly those.
        if isinstance(value, dict):
            own = _own_top_logprobs(value) if TOP in value else None
            out = {}
            for k, v in value.items():
                if k == TOP and own is not None:
                    self.changed = True
                    out[k] = {MARK: {OWN: self.encode(own)}}
                elif isinstance(v, (dict, list)) or (isinstance(v, str) and len(v) >= MIN_STR):
                    out[k] = self.encode(v)
                else:
                    out[k] = v
            return out
        eligible = _eligible(value)
        if eligible:
            # The longest prefix among earlier records of the example and earlier values of this record.
            match = max((m for m in (self.pool.best(value), _view(self.added).best(value)) if m), key=lambda m: m[2], default=None)
            if match is not None:
                cid, slot, n = match
                self._register(value)
                self.changed = True
                return {MARK: [cid, slot, n, value[n:]]}
        if isinstance(value, list) and len(value) <= RECURSE_LIMIT:
            encoded = [
                self.encode(v) if isinstance(v, (dict, list)) or (isinstance(v, str) and len(v) >= MIN_STR) else v
                for v in value
            ]
        else:
            encoded = value
        if eligible:
            self._register(value)
        return encoded


def _own_top_logprobs(logprobs: dict[str, Any]) -> list[Any] | None:
    """An echo's `top_logprobs` with each entry that only repeats the token's own logprob
    ({tokens[i]: token_logprobs[i]}) as 0; None when the dict is not a completions `logprobs`."""
    top = logprobs.get(TOP)
    tokens = logprobs.get("tokens")
    lps = logprobs.get("token_logprobs")
    if not (isinstance(top, list) and isinstance(tokens, list) and isinstance(lps, list)):
        return None
    if not (len(top) == len(tokens) == len(lps)) or list(logprobs).index(TOP) < max(
        list(logprobs).index("tokens"), list(logprobs).index("token_logprobs")
    ):
        return None  # the decoder rebuilds the entries from keys it has already read
    try:
        expected = [{token: lp} for token, lp in zip(tokens, lps)]
        own = [0 if entry == mine else entry for entry, mine in zip(top, expected)]
        # Python's == takes 1 for 1.0 and 0.0 for -0.0: keep the form only if it rebuilds the same JSON.
        rebuilt = [mine if type(entry) is int else entry for entry, mine in zip(own, expected)]
        if orjson.dumps(rebuilt) != orjson.dumps(top):
            return None
    except TypeError:  # a token that cannot be a key
        return None
    return own


def _with_own_entries(own: list[Any], tokens: list[Any], lps: list[Any]) -> list[Any]:
    """0 (an int: real entries are objects or null) -> {token: its logprob}."""
    return [{token: lp} if type(entry) is int else entry for entry, token, lp in zip(own, tokens, lps)]


def _view(entries: list[tuple[str, int, Any]]) -> _Pool:
    pool = _Pool()
    pool.entries = entries
    return pool


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


class CompactEncoder:
    """The packer's side: remembers recent examples' long values and turns a record compact."""

    def __init__(self) -> None:
        self._pools: OrderedDict[str, _Pool] = OrderedDict()
        #: the last record made compact holds its values as they were (nothing referred to) and
        #: its `line` was looked at whole (no escape in it): that line with `cid` (and `ckept`)
        #: added is the compact record, which need not be written again
        self.literal = False

    def encode(self, record: dict[str, Any], cid: str, line: bytes | None = None) -> dict[str, Any]:
        """The record with its request and response compact, under the id `cid` (unique in its
        file); the record itself when that cannot be done safely. `line`: the JSON the record
        was read from, looked at instead of writing a 400 KB echo again only to look at it."""
        self.literal = False
        uuid = record.get("uuid")
        if not isinstance(uuid, str):
            return record
        try:
            request = record.get("request")
            body = record.get("response")
            if line is not None and not isinstance(body, orjson.Fragment):
                response, dumped = body, line  # the whole record: a marker or secret anywhere keeps it plain
            else:
                raw_response = orjson.dumps(body)  # a Fragment (a body kept verbatim): its bytes as received
                response = orjson.loads(raw_response) if isinstance(body, orjson.Fragment) else body
                dumped = orjson.dumps(request) + raw_response
            whole_line = dumped is line
            if b"\\u" in dumped:  # an escape could spell the marker or a secret: look at the values as we would write them
                dumped = orjson.dumps([request, response])
                whole_line = False
            if _MARK_BYTES in dumped:
                return record  # a value already uses the marker key: keep it literal
            keep = len(dumped) <= KEEP_BYTES  # an echo of 400 KB is not kept: memory, and no later record repeats it
            text = dumped.decode("utf-8")
            if scrub(text) != text:
                return record  # a secret slipped through: the plain line gets it masked whole
        except (TypeError, ValueError):
            return record
        pool = self._pools.get(uuid)
        if pool is None:
            pool = self._pools[uuid] = _Pool()
            while len(self._pools) > POOL_UUIDS:
                self._pools.popitem(last=False)
        else:
            self._pools.move_to_end(uuid)
        encoder = _Encoder(pool, cid)
        compact = dict(record)
        compact["request"] = encoder.encode(request)
        compact["response"] = encoder.encode(response)
        compact[CID] = cid
        self.literal = whole_line and not encoder.changed
        if keep:
            compact[KEPT] = True
            pool.entries.extend(encoder.added)
        return compact


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
