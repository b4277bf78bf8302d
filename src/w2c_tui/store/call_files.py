"""Call-trace files: plain JSONL while the run goes on, compact and gzip-packed as it closes.

`llm_calls/<exp>.jsonl` is the open trace: the plain record per line, appended and flushed
per attempt like every JSONL file here (the writer copies a received body verbatim, so a
400 KB echo costs the evaluation nothing more). During a run the open file is rolled over
(`trace_rollover`): past a size it is renamed to a closed segment `<exp>.jsonl.seg<n>` and
packed in the background. `TracePacker` appends a closed file's lines compact
(`compact_calls`), whole examples gathered into gzip members of about 64 KB, after the
members already in `llm_calls/<exp>.jsonl.gz`, syncs, and only then removes the plain file;
`zcat` reads the packed file whole and a reader can inflate one example's member alone.
Readers take the `.gz`, the segments in order and the `.jsonl` (each if present), and
decode each example's records in order.

A compact record's `cid` is a hash of the plain line it came from: if a crash leaves a
plain file beside a `.gz` that already holds its lines, readers and the next packing skip them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import zlib
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from w2c_tui import jsoncodec
from w2c_tui.store.compact_calls import CID, KEPT, MAX_COMPACT_LINE, POOL_UUIDS, CompactDecoder, CompactEncoder, decode_rows
from w2c_tui.store.jsonl import dumps
from w2c_tui.store.line_index import add_call_stats, line_uuid

PACKED_SUFFIX = ".gz"
SEGMENT_MARK = ".seg"  # + six digits after `<exp>.jsonl`
_CHUNK = 1 << 16
# A gzip member gathers whole examples until it holds this many compact bytes (an example larger
# than that, a log-prob echo, is a member of its own): opening one example in the Trace screen
# inflates at most this much besides the example itself, and gzip sees ten-odd chat records
# at once instead of one. Measured on 512 mcq chat records (5.8 KB each), level 4: one
# example per member 1.12 MB; 32 KB members 0.63 MB; 64 KB 0.55 MB; 128 KB 0.51 MB.
MEMBER_BYTES = 64 << 10
# gzip level: researchers keep these files, and the run pays the CPU. Same run, 64 KB members,
# ms per record to compress / MB of the packed file:
#   512 mcq chat records:         level 1 0.029 / 0.643   level 4 0.047 / 0.545   level 6 0.088 / 0.515
#   128 mcq_logprob 380 KB echoes: level 1 0.54 / 2.899    level 4 0.88 / 2.797    level 6 1.98 / 2.749
# Level 4 (the first with lazy matching) stays within 6% / 2% of level 6's size for about
# half its time; level 1 would save another 0.02 ms (chat) / 0.3 ms (echo) per record for
# files 18% / 4% larger. (One example per member at level 6, before: chat 0.091 / 1.107.)
PACK_LEVEL = 4
_MEMBER_CACHE = 8
_CID = re.compile(rb'"' + CID.encode() + rb'":"([0-9a-f]{16})"(?:,"ckept":true)?\}\s*$')  # at a record's end


def packed_path(path: Path) -> Path:
    """`<exp>.jsonl` -> `<exp>.jsonl.gz`."""
    path = Path(path)
    return path.with_name(path.name + PACKED_SUFFIX)


def line_id(line: bytes) -> str:
    """The id a plain line gets as a compact record: 16 hex digits of its hash."""
    return hashlib.blake2b(line.rstrip(b"\r\n"), digest_size=8).hexdigest()


def segment_path(path: Path, number: int) -> Path:
    """`<exp>.jsonl` -> `<exp>.jsonl.seg000007`: a closed part of the open trace, waiting to be packed."""
    path = Path(path)
    return path.with_name(f"{path.name}{SEGMENT_MARK}{number:06d}")


def segment_paths(path: Path) -> list[Path]:
    """The closed segments of a trace, oldest first."""
    path = Path(path)
    prefix = path.name + SEGMENT_MARK
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    numbers = {name: name[len(prefix) :] for name in names if name.startswith(prefix)}
    numbered = sorted((int(number), name) for name, number in numbers.items() if number.isascii() and number.isdigit())
    return [path.with_name(name) for _, name in numbered]


def has_trace(path: Path) -> bool:
    """Any part of the trace is on disk: the `.gz`, a segment or the open file."""
    path = Path(path)
    return path.is_file() or packed_path(path).is_file() or bool(segment_paths(path))


# -- a consistent set of open files ----------------------------------------------------------

@dataclass
class _Plain:
    """A plain file of the trace (a segment or the open file), opened."""

    path: Path
    fh: BinaryIO
    inode: int


def _open(path: Path) -> BinaryIO | None:
    try:
        return path.open("rb")
    except FileNotFoundError:
        return None


def _open_files(path: Path) -> tuple[BinaryIO | None, list[_Plain]]:
    """The `.gz`, the segments and the open file, opened so that together they hold every call.

    A rollover renames the open file to a segment and a packing appends a segment to the
    `.gz` (synced) before removing it, so opening the `.gz` first, then the open file, then
    the segments misses nothing: a segment gone before it was listed is in the `.gz` (read
    to its end later), and the open file renamed meanwhile is listed as a segment too (same
    inode: read once). Only a `.gz` that appears meanwhile forces a second look.
    """
    packed = packed_path(path)
    while True:
        gz = _open(packed)
        current = _open(path)
        plain = []
        for segment in segment_paths(path):
            fh = _open(segment)
            if fh is not None:
                plain.append(_Plain(segment, fh, os.fstat(fh.fileno()).st_ino))
        if current is not None:
            inode = os.fstat(current.fileno()).st_ino
            if any(p.inode == inode for p in plain):
                current.close()  # renamed to a segment after it was opened: read there
            else:
                plain.append(_Plain(path, current, inode))
        if gz is None and packed.exists():
            for p in plain:
                p.fh.close()
            continue  # the first packing created it meanwhile: what it holds may be gone from the segments
        return gz, plain


# -- gzip members ----------------------------------------------------------------------------

@dataclass
class Damage:
    """Where a packed trace stops being readable: `kind` "corrupted" (not gzip data), "cut"
    (a member cut short: a packing killed mid-write, or a truncated file) or "empty"."""

    kind: str
    offset: int
    size: int

    def text(self, name: str) -> str:
        if self.kind == "empty":
            return f"{name}: packed trace damaged (empty, 0 bytes): its calls cannot be read"
        return (
            f"{name}: packed trace damaged ({self.kind} at byte {self.offset:,} of {self.size:,}): "
            "the calls stored after it cannot be read"
        )


def _members(source: Path | BinaryIO, damage: list[Damage] | None = None) -> Iterator[tuple[int, int, bytes]]:
    """(offset, length, inflated bytes) of each gzip member of a file; stops at a damaged tail
    (said in `damage` when given)."""
    if isinstance(source, Path):
        with source.open("rb") as fh:
            data = fh.read()
    else:
        data = source.read()
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
            if damage is not None:
                damage.append(Damage("corrupted", offset, len(data)))
            return
        if not inflater.eof:
            if damage is not None:
                damage.append(Damage("cut", offset, len(data)))
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


def _damage(gz: BinaryIO | None, found: list[Damage], plain: list) -> Damage | None:
    """The damage readers must report: a corrupted member always; a cut tail or an empty `.gz`
    only when no plain file is left beside it (with one, a packing was interrupted: the plain
    file still holds those calls and the next packing cuts the tail off)."""
    if gz is None:
        return None
    corrupted = next((d for d in found if d.kind == "corrupted"), None)
    if corrupted is not None or plain:
        return corrupted
    if found:
        return found[0]
    size = os.fstat(gz.fileno()).st_size
    return Damage("empty", 0, 0) if size == 0 else None


def trace_damage(path: Path) -> str | None:
    """One line when the packed trace of `path` cannot be read whole (None when it can, or has none).

    Inflates the whole `.gz` (seconds for a large trace): for `show`, `mlflow sync`, a thread.
    """
    gz, plain = _open_files(Path(path))
    try:
        found: list[Damage] = []
        if gz is not None:
            for _ in _members(gz, found):
                pass
        damage = _damage(gz, found, plain)
        return damage.text(packed_path(Path(path)).name) if damage else None
    finally:
        for fh in [gz] + [p.fh for p in plain]:
            if fh is not None:
                fh.close()


def iter_call_lines(path: Path) -> Iterator[bytes]:
    """Every stored line of a trace: the packed file's, then the segments' and the open file's
    (without lines a packing already copied)."""
    gz, plain = _open_files(Path(path))
    try:
        seen = _Packed()
        if gz is not None:
            for _, _, blob in _members(gz):
                for _, line in _lines(blob):
                    if plain:
                        seen.add(line)
                    yield line
        for part in plain:
            for line in part.fh:
                if not seen.holds(line):
                    yield line
    finally:
        for fh in [gz] + [p.fh for p in plain]:
            if fh is not None:
                fh.close()


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

def pack_calls(path: Path, *, level: int = PACK_LEVEL, packer: "TracePacker | None" = None) -> Path | None:
    """Pack what is left plain of a trace (its closed segments, then the open file) after the
    members already in `<exp>.jsonl.gz`; each plain file is removed once its lines are packed.

    Blocking (seconds for a large `mcq_logprob` trace): run it in a thread. `packer` is the one
    that packed this trace's earlier segments in this process (it goes on from what it knows).
    Returns the packed path, None when there is no trace.
    """
    path = Path(path)
    packer = packer or TracePacker(path, level=level)
    for segment in segment_paths(path):
        packer.pack_file(segment)
    packer.pack_file(path)
    packed = packed_path(path)
    return packed if packed.is_file() else None


class TracePacker:
    """Appends closed plain files of one trace to its `.gz`, compact, in the order they are given.

    One per trace and process, and one call at a time: the `.gz` has a single writer. A file's
    lines are written example by example, in the order the examples were first met, so the
    file stays in call order (a resumed run's calls come last); whole examples are gathered
    into gzip members of about `MEMBER_BYTES` (files packed before hold one example per
    member: readers take both, in one file too). The members are
    appended in place and synced before the plain file is removed, so a kill leaves at worst
    a damaged tail (cut off before the next append; readers stop there) and the plain file,
    whose lines already packed readers and the next packing skip. The encoder carries over
    from file to file, so an example whose calls straddle two segments may refer to its
    calls in the earlier member (readers decode an example's rows in file order, across members).
    """

    def __init__(self, path: Path, *, level: int = PACK_LEVEL, member_bytes: int = MEMBER_BYTES) -> None:
        self.path = Path(path)
        self.packed = packed_path(self.path)
        self.level = level
        self.member_bytes = member_bytes
        self._encoder = CompactEncoder()
        self._seen: _Packed | None = None  # lines packed before this process: read once
        self._whole = 0  # bytes of whole members
        self._corrupted: Damage | None = None  # not gzip data after `_whole`: never cut off

    def _scan(self) -> _Packed:
        seen = _Packed()
        self._whole = 0
        found: list[Damage] = []
        if self.packed.is_file():
            for offset, length, blob in _members(self.packed, found):
                self._whole = offset + length
                for _, line in _lines(blob):
                    seen.add(line)
        self._corrupted = next((d for d in found if d.kind == "corrupted"), None)
        self._seen = seen
        return seen

    def pack_file(self, source: Path) -> None:
        """Append `source`'s lines (those not packed yet) to the `.gz`, sync, then remove `source`."""
        source = Path(source)
        if not source.is_file():
            return
        seen = self._seen if self._seen is not None else self._scan()
        spans: dict[str, list[tuple[int, int]]] = defaultdict(list)  # dicts keep first-appearance order
        content = False
        with source.open("rb") as fh:
            offset = 0
            for line in fh:
                spans[line_uuid(line) or ""].append((offset, len(line)))
                offset += len(line)
                content = content or bool(line.strip())
        created = not self.packed.exists()
        if created and not content:
            source.unlink(missing_ok=True)  # no call: no `.gz` (an empty one reads as a damaged trace)
            return
        self._refuse_corrupted()
        fd = os.open(self.packed, os.O_RDWR | os.O_CREAT, 0o666)
        with os.fdopen(fd, "r+b") as out, source.open("rb") as src:
            _lock(out)  # one writer, even if a killed run's packing process is still finishing
            if os.fstat(out.fileno()).st_size != self._whole or not source.is_file():
                # Someone else packed meanwhile (or left a torn tail): learn what the file holds now.
                seen = self._scan()
                self._refuse_corrupted()
                if not source.is_file():
                    return
            try:
                out.truncate(self._whole)  # a tail a killed packing left half written
                out.seek(self._whole)
                self._write_members(out, src, spans, seen)
                out.flush()
                os.fsync(out.fileno())
            except BaseException:
                with contextlib.suppress(OSError):
                    out.truncate(self._whole)
                # The encoder may remember records that were not written: start afresh, re-read the .gz.
                self._encoder, self._seen = CompactEncoder(), None
                raise
            self._whole = out.tell()
            if created:
                _sync_folder(self.packed.parent)
            source.unlink(missing_ok=True)  # still under the lock: no other packer sees it half done

    def _refuse_corrupted(self) -> None:
        """Appending would first cut the file at its last whole member, losing what follows a
        corrupted one: the plain file is kept (readable) and the damage said instead."""
        if self._corrupted is not None:
            raise OSError(f"{self._corrupted.text(self.packed.name)}; not appended to, so nothing after it is cut off")

    def _write_members(self, out: BinaryIO, src: BinaryIO, spans: dict[str, list[tuple[int, int]]], seen: _Packed) -> None:
        """Whole examples, in order, gathered into members of about `member_bytes` compact bytes."""
        gathered: list[bytes] = []
        size = 0
        for example in spans.values():
            lines = []
            for offset, length in example:
                src.seek(offset)
                line = src.read(length)
                if line.strip() and not seen.holds(line):
                    lines.append(_compact_line(self._encoder, line))
            if not lines:
                continue
            more = sum(map(len, lines))
            if gathered and size + more > self.member_bytes:  # a large example gets a member of its own
                out.write(self._member(gathered))
                gathered, size = [], 0
            gathered += lines
            size += more
            if size >= self.member_bytes:
                out.write(self._member(gathered))
                gathered, size = [], 0
        if gathered:
            out.write(self._member(gathered))

    def _member(self, lines: list[bytes]) -> bytes:
        return zlib.compress(b"".join(lines), self.level, wbits=31)  # a gzip member (as gzip.compress, mtime 0)


def _lock(fh: BinaryIO) -> None:
    """An exclusive lock on the open `.gz`, released when it is closed (POSIX; skipped elsewhere)."""
    try:
        import fcntl
    except ImportError:
        return
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX)


def _sync_folder(folder: Path) -> None:
    """Make a new file's name durable (POSIX; skipped where a folder cannot be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

def _compact_line(encoder: CompactEncoder, line: bytes) -> bytes:
    """The line as a compact record; as it was when it is not a record (a torn line) or
    cannot be made compact safely."""
    if not line.endswith(b"\n"):
        line += b"\n"
    if len(line) > MAX_COMPACT_LINE:  # bounded memory: a huge record stays as it was
        return line
    try:
        row = jsoncodec.loads(line)
    except (ValueError, UnicodeDecodeError):
        return line
    if not isinstance(row, dict) or CID in row:
        return line
    try:
        compact = encoder.encode(row, line_id(line), line)
    except Exception:  # noqa: BLE001 - a flaw in compacting must not lose the call: keep it plain
        return line
    if compact is row:
        return line
    body = line.rstrip() if encoder.literal else b""
    if body.endswith(b"}") and KEPT not in row:
        # Nothing referred to (a chat record, most often): the line as it was, its id added,
        # instead of writing it again. `encode` looked at it whole: no marker, no secret.
        tail = b',"ckept":true}\n' if compact.get(KEPT) is True else b"}\n"
        return body[:-1] + b',"' + CID.encode() + b'":"' + compact[CID].encode() + b'"' + tail
    return (dumps(compact) + "\n").encode("utf-8")


# -- the index the Trace screen reads ---------------------------------------------------------

class _Stale(OSError):
    """A plain file is not the one indexed any more."""


@dataclass
class _Member:
    offset: int
    length: int


class CallIndex:
    """uuid -> where its call records are, in the packed trace, its segments and open file; rows come back decoded.

    The packed file is inflated once to index it (member by member); opening an example then
    inflates only its member (at most ~64 KB besides the example itself), the last few kept in memory.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.packed = packed_path(self.path)
        self.latencies_ms: list[float] = []
        self.statuses: Counter = Counter()
        self.n_lines = 0
        self._members: list[_Member] = []
        self._packed_spans: dict[str, list[tuple[int, int, int]]] = defaultdict(list)  # member, start, length
        self._plain: list[tuple[Path, int]] = []  # segments and open file indexed: path, inode
        self._open_spans: dict[str, list[tuple[int, int, int]]] = defaultdict(list)  # plain file, offset, length
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        #: one line when the packed trace cannot be read whole (its calls past the damage are missing)
        self.damaged: str | None = None

    @classmethod
    def build(cls, path: Path) -> "CallIndex":
        index = cls(path)
        gz, plain = _open_files(index.path)
        try:
            seen = _Packed()
            found: list[Damage] = []
            if gz is not None:
                for number, (offset, length, blob) in enumerate(_members(gz, found)):
                    index._members.append(_Member(offset, length))
                    for start, line in _lines(blob):
                        if plain:
                            seen.add(line)
                        index._packed_spans[line_uuid(line) or ""].append((number, start, len(line)))
                        index._count(line)
            for number, part in enumerate(plain):
                index._plain.append((part.path, part.inode))
                offset = 0
                for line in part.fh:
                    if not seen.holds(line):
                        index._open_spans[line_uuid(line) or ""].append((number, offset, len(line)))
                        index._count(line)
                    offset += len(line)
            damage = _damage(gz, found, plain)
            index.damaged = damage.text(index.packed.name) if damage else None
        finally:
            for fh in [gz] + [p.fh for p in plain]:
                if fh is not None:
                    fh.close()
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
        handles: dict[int, BinaryIO] = {}
        try:
            for number, offset, length in self._open_spans.get(uuid, []):
                fh = handles.get(number)
                if fh is None:
                    path, inode = self._plain[number]
                    fh = handles[number] = path.open("rb")
                    if os.fstat(fh.fileno()).st_ino != inode:
                        raise _Stale(path)  # rolled over to a segment since it was indexed
                fh.seek(offset)
                line = fh.read(length)
                if uuid and line_uuid(line) != uuid:
                    raise _Stale(self._plain[number][0])
                lines.append(line)
        finally:
            for fh in handles.values():
                fh.close()
        return lines

    def rows(self, uuid: str) -> list[dict[str, Any]]:
        """The example's call records in the order they were made, as exchanged."""
        try:
            lines = self.raw_lines(uuid)
        except (OSError, zlib.error):  # rolled over or packed since it was indexed: index again
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
