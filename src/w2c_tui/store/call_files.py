"""Call-trace files: plain JSONL while the run goes on, compact and gzip-packed once it is over.

`llm_calls/<exp>.jsonl` is the open trace: the plain record per line, appended and flushed
per attempt like every JSONL file here (the writer copies a received body verbatim, so a
400 KB echo costs the evaluation nothing more). When the run ends, `pack_calls` rewrites those
lines compact (`compact_calls`), each example's lines one gzip member, after the members
already in `llm_calls/<exp>.jsonl.gz`, and removes the `.jsonl`; `zcat` reads the packed file
whole and a reader can inflate one example alone. Readers take the `.gz` (if any) and then the
`.jsonl` (if any), and decode each example's records in order.

A compact record's `cid` is a hash of the plain line it came from: if a crash leaves the
`.jsonl` beside a `.gz` that already holds its lines, readers and the next packing skip them.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import zlib
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from w2c_tui import jsoncodec
from w2c_tui.store.compact_calls import CID, POOL_UUIDS, CompactDecoder, CompactEncoder, decode_rows
from w2c_tui.store.jsonl import dumps
from w2c_tui.store.line_index import add_call_stats, line_uuid

PACKED_SUFFIX = ".gz"
_CHUNK = 1 << 16
_MEMBER_CACHE = 8
_CID = re.compile(rb'"' + CID.encode() + rb'":"([0-9a-f]{16})"(?:,"ckept":true)?\}\s*$')  # at a record's end


def packed_path(path: Path) -> Path:
    """`<exp>.jsonl` -> `<exp>.jsonl.gz`."""
    path = Path(path)
    return path.with_name(path.name + PACKED_SUFFIX)


def line_id(line: bytes) -> str:
    """The id a plain line gets as a compact record: 16 hex digits of its hash."""
    return hashlib.blake2b(line.rstrip(b"\r\n"), digest_size=8).hexdigest()


# -- gzip members ----------------------------------------------------------------------------

def _members(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(offset, length, inflated bytes) of each gzip member of a file; stops at a damaged tail."""
    with path.open("rb") as fh:
        data = fh.read()
    view = memoryview(data)
    offset = 0
    while offset < len(data):
        inflater = zlib.decompressobj(wbits=31)
        parts = []
        pos = offset
        try:
            while not inflater.eof and pos < len(data):
                chunk = view[pos : pos + _CHUNK]
                parts.append(inflater.decompress(chunk))
                pos += len(chunk) - len(inflater.unused_data)
        except zlib.error:
            return
        if not inflater.eof:
            return  # a member cut short
        yield offset, pos - offset, b"".join(parts)
        offset = pos


def _lines(blob: bytes) -> Iterator[tuple[int, bytes]]:
    start = 0
    while start < len(blob):
        end = blob.find(b"\n", start)
        end = len(blob) if end < 0 else end + 1
        yield start, blob[start:end]
        start = end


class _Packed:
    """What a packed file already holds, to tell which open-file lines a crash left behind."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.plain: set[bytes] = set()

    def add(self, line: bytes) -> None:
        match = _CID.search(line, max(0, len(line) - 80))
        if match:
            self.ids.add(match.group(1).decode())
        else:
            self.plain.add(line)

    def holds(self, line: bytes) -> bool:
        if not self.ids and not self.plain:
            return False
        return line in self.plain or line_id(line) in self.ids


# -- reading ---------------------------------------------------------------------------------

def iter_call_lines(path: Path) -> Iterator[bytes]:
    """Every stored line of a trace: the packed file's, then the open file's (without lines a
    crashed packing already copied)."""
    path = Path(path)
    packed = packed_path(path)
    seen = _Packed()
    has_open = path.is_file()
    if packed.is_file():
        for _, _, blob in _members(packed):
            for _, line in _lines(blob):
                if has_open:
                    seen.add(line)
                yield line
    if has_open:
        with path.open("rb") as fh:
            for line in fh:
                if not seen.holds(line):
                    yield line


def iter_calls(path: Path, *, decode: bool = True) -> Iterator[dict[str, Any]]:
    """The call records of a trace (`<exp>.jsonl`, its `.gz` or both) as exchanged, in file
    order; `decode=False` gives them as stored, enough for the top-level fields. Lines that do
    not parse are skipped."""
    decoders: OrderedDict[str, CompactDecoder] = OrderedDict()
    for line in iter_call_lines(path):
        if not line.strip():
            continue
        try:
            row = jsoncodec.loads(line)
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(row, dict):
            continue
        if decode and CID in row:
            key = str(row.get("uuid"))
            decoder = decoders.get(key)
            if decoder is None:
                decoder = decoders[key] = CompactDecoder()
                while len(decoders) > POOL_UUIDS:  # a packed example's lines are together: few are needed
                    decoders.popitem(last=False)
            else:
                decoders.move_to_end(key)
            try:
                row = decoder.decode(row)
            except (KeyError, ValueError, TypeError, IndexError):
                row = decode_rows([row])[0]  # says the row cannot be read
        yield row


# -- packing ---------------------------------------------------------------------------------

def pack_calls(path: Path, *, level: int = 6) -> Path | None:
    """Pack the open trace, compact, after the members already in `<exp>.jsonl.gz`; the open file is removed.

    Each example's lines of this launch become one gzip member, in the order the examples were
    first met, so the file stays in launch order (a resumed run's calls come last). Written to
    a temporary file, synced, then renamed over the packed file, so a crash leaves either the
    old pair or the new packed file (plus, at worst, the open file whose lines the readers then
    skip as already packed). Blocking (seconds for a large `mcq_logprob` trace): run it in a
    thread. Returns the packed path, None when there is no trace.
    """
    path = Path(path)
    packed = packed_path(path)
    if not path.is_file():
        return packed if packed.is_file() else None
    seen = _Packed()
    whole = 0  # bytes of whole members: a damaged tail is dropped
    if packed.is_file():
        for offset, length, blob in _members(packed):
            whole = offset + length
            for _, line in _lines(blob):
                seen.add(line)
    spans: dict[str, list[tuple[int, int]]] = defaultdict(list)  # dicts keep first-appearance order
    with path.open("rb") as fh:
        offset = 0
        for line in fh:
            spans[line_uuid(line) or ""].append((offset, len(line)))
            offset += len(line)
    tmp = packed.with_name(packed.name + ".tmp")
    try:
        _write_packed(path, packed, tmp, whole, spans, seen, level)
    except BaseException:
        tmp.unlink(missing_ok=True)  # the open file is untouched: readers and the next packing use it
        raise
    os.replace(tmp, packed)
    path.unlink()
    return packed


def _write_packed(
    path: Path, packed: Path, tmp: Path, whole: int, spans: dict[str, list[tuple[int, int]]], seen: _Packed, level: int
) -> None:
    """The earlier whole members, then one member per example of the open file, synced."""
    encoder = CompactEncoder()
    with tmp.open("wb") as out, path.open("rb") as src:
        if whole:
            with packed.open("rb") as earlier:
                _copy(earlier, out, whole)
        for example in spans.values():
            lines = []
            for offset, length in example:
                src.seek(offset)
                line = src.read(length)
                if line.strip() and not seen.holds(line):
                    lines.append(_compact_line(encoder, line))
            if lines:
                out.write(gzip.compress(b"".join(lines), compresslevel=level, mtime=0))
        out.flush()
        os.fsync(out.fileno())


def _copy(src: Any, dst: Any, n: int) -> None:
    while n > 0:
        chunk = src.read(min(n, 1 << 20))
        if not chunk:
            break
        dst.write(chunk)
        n -= len(chunk)


def _compact_line(encoder: CompactEncoder, line: bytes) -> bytes:
    """The line as a compact record; as it was when it is not a record (a torn line) or
    cannot be made compact safely."""
    if not line.endswith(b"\n"):
        line += b"\n"
    try:
        row = jsoncodec.loads(line)
    except (ValueError, UnicodeDecodeError):
        return line
    if not isinstance(row, dict) or CID in row:
        return line
    try:
        compact = encoder.encode(row, line_id(line))
    except Exception:  # noqa: BLE001 - a flaw in compacting must not lose the call: keep it plain
        return line
    return line if compact is row else (dumps(compact) + "\n").encode("utf-8")


# -- the index the Trace screen reads ---------------------------------------------------------

@dataclass
class _Member:
    offset: int
    length: int


class CallIndex:
    """uuid -> where its call records are, in the packed and the open trace; rows come back decoded.

    The packed file is inflated once to index it (member by member); opening an example then
    inflates only its member (a few tens of KB), the last few kept in memory.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.packed = packed_path(self.path)
        self.latencies_ms: list[float] = []
        self.statuses: Counter = Counter()
        self.n_lines = 0
        self._members: list[_Member] = []
        self._packed_spans: dict[str, list[tuple[int, int, int]]] = defaultdict(list)  # member, start, length
        self._open_spans: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self._cache: OrderedDict[int, bytes] = OrderedDict()

    @classmethod
    def build(cls, path: Path) -> "CallIndex":
        index = cls(path)
        has_open = index.path.is_file()
        seen = _Packed()
        if index.packed.is_file():
            for number, (offset, length, blob) in enumerate(_members(index.packed)):
                index._members.append(_Member(offset, length))
                for start, line in _lines(blob):
                    if has_open:
                        seen.add(line)
                    index._packed_spans[line_uuid(line) or ""].append((number, start, len(line)))
                    index._count(line)
        if has_open:
            with index.path.open("rb") as fh:
                offset = 0
                for line in fh:
                    if not seen.holds(line):
                        index._open_spans[line_uuid(line) or ""].append((offset, len(line)))
                        index._count(line)
                    offset += len(line)
        return index

    def _count(self, line: bytes) -> None:
        self.n_lines += 1
        add_call_stats(line, self.latencies_ms, self.statuses)

    @property
    def uuids(self) -> set[str]:
        return (set(self._packed_spans) | set(self._open_spans)) - {""}

    def _member(self, number: int) -> bytes:
        blob = self._cache.get(number)
        if blob is None:
            member = self._members[number]
            with self.packed.open("rb") as fh:
                fh.seek(member.offset)
                blob = zlib.decompress(fh.read(member.length), wbits=31)
            self._cache[number] = blob
            while len(self._cache) > _MEMBER_CACHE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(number)
        return blob

    def raw_lines(self, uuid: str) -> list[bytes]:
        lines = [self._member(number)[start : start + length] for number, start, length in self._packed_spans.get(uuid, [])]
        spans = self._open_spans.get(uuid, [])
        if spans:
            with self.path.open("rb") as fh:
                for offset, length in spans:
                    fh.seek(offset)
                    lines.append(fh.read(length))
        return lines

    def rows(self, uuid: str) -> list[dict[str, Any]]:
        """The example's call records in the order they were made, as exchanged."""
        try:
            lines = self.raw_lines(uuid)
        except (OSError, zlib.error):  # packed since it was indexed (the run ended): the open file is gone
            self.__dict__.update(CallIndex.build(self.path).__dict__)
            lines = self.raw_lines(uuid)
        found = []
        for line in lines:
            try:
                row = jsoncodec.loads(line)
            except (ValueError, UnicodeDecodeError):
                continue  # a torn line
            if isinstance(row, dict):
                found.append(row)
        return decode_rows(found)
