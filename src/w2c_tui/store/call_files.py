"""Call-trace files: plain JSONL while the run goes on, packed with zstd as it closes.

`llm_calls/<exp>.jsonl` is the open trace: the plain record per line, appended and flushed
per attempt like every JSONL file here (the writer copies a received body verbatim, so a
400 KB echo costs the evaluation nothing more). During a run the open file is rolled over
(`trace_rollover`): past a size it is renamed to a closed segment `<exp>.jsonl.seg<n>` and
packed in the background. `TracePacker` appends a closed file's lines as they are, whole
examples gathered into zstd frames of about 64 KB (`members`), after the frames already in
`llm_calls/<exp>.jsonl.zst`, syncs, and only then removes the plain file; `zstdcat` reads
the packed file whole and a reader can decompress one example's frame alone.

Traces packed before hold compact records (`compact_calls`) in gzip members,
`<exp>.jsonl.gz`: read first, decoded, and never written again (a resumed session's new
calls go to the `.zst`). Readers take the `.gz`, the `.zst`, the segments in order and the
`.jsonl` (each if present).

A line a crash left in a plain file after it was packed is known by its hash (`line_id`; a
compact record carries it as `cid`): readers and the next packing skip it.

Every read is bounded: a member inflates to at most `members.MAX_MEMBER_BYTES`, a plain
line is read up to `MAX_LINE_BYTES`, and a part that is not a regular file (opened without
blocking, checked once open) is not read; what is left unread is said in one line (`trace_damage`,
`CallIndex.damaged`), with the file and the bound.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from w2c_tui import jsoncodec
from w2c_tui.store.compact_calls import CID, POOL_UUIDS, CompactDecoder, decode_rows
from w2c_tui.store.line_index import add_call_stats, line_uuid
from w2c_tui.readable_file import NotRegularFile, open_regular
from w2c_tui.store.members import DECOMPRESS_ERRORS, MAX_MEMBER_BYTES, Compressor, Damage, decompress, iter_members, megabytes

PACKED_SUFFIX = ".zst"
GZIP_SUFFIX = ".gz"  # traces packed before: compact records in gzip members, read only
SEGMENT_MARK = ".seg"  # + six digits after `<exp>.jsonl`
# A frame gathers whole examples until it holds this many bytes (an example larger than that, a
# log-prob echo, is a frame of its own): opening one example in the Trace screen decompresses at
# most this much besides the example itself, and zstd sees ten-odd chat records at once
# instead of one (one example per frame would pack them ~2x larger).
MEMBER_BYTES = 64 << 10
# One call record (a line of a plain file): twice the largest answer the transport takes
# (`api.transport.MAX_ANSWER_BYTES`, 64 MB), kept verbatim in its record beside the request. A
# longer line is not read (said), and a file holding one is not packed. At most
# `members.MAX_MEMBER_BYTES`: the packer gives a line that large a frame of its own.
MAX_LINE_BYTES = MAX_MEMBER_BYTES
_MEMBER_CACHE = 8
_CACHE_BYTES = 64 << 20  # and at most this much of them (but the last), whatever their sizes
_CID = re.compile(rb'"' + CID.encode() + rb'":"([0-9a-f]{16})"(?:,"ckept":true)?\}\s*$')  # at a compact record's end


def packed_path(path: Path) -> Path:
    """`<exp>.jsonl` -> `<exp>.jsonl.zst`."""
    path = Path(path)
    return path.with_name(path.name + PACKED_SUFFIX)


def gzip_path(path: Path) -> Path:
    """`<exp>.jsonl` -> `<exp>.jsonl.gz`, where traces packed before zstd are."""
    path = Path(path)
    return path.with_name(path.name + GZIP_SUFFIX)


def trace_path(file: Path) -> Path:
    """The trace (`<exp>.jsonl`) one of its files belongs to: a packed file, a segment or the open file."""
    file = Path(file)
    name = file.name
    return file.with_name(name[: name.index(".jsonl") + len(".jsonl")]) if ".jsonl" in name else file


def line_id(line: bytes) -> str:
    """16 hex digits of a plain line's hash (a compact record's `cid` is that of its line)."""
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
    """Any part of the trace is on disk: a packed file, a segment or the open file."""
    path = Path(path)
    return any(p.is_file() for p in (path, packed_path(path), gzip_path(path))) or bool(segment_paths(path))


# -- a consistent set of open files ----------------------------------------------------------

@dataclass
class _Plain:
    """A plain file of the trace (a segment or the open file), opened."""

    path: Path
    fh: BinaryIO
    inode: int


@dataclass
class _PackedFile:
    """A packed file of the trace, opened: the `.zst`, or the `.gz` of compact records."""

    path: Path
    fh: BinaryIO
    damage: list[Damage] = field(default_factory=list)  # filled while its members are read

    @property
    def compact(self) -> bool:
        return self.path.name.endswith(GZIP_SUFFIX)

    def members(self) -> Iterator[tuple[int, int, bytes]]:
        """(offset, length, lines) of each member, up to a damaged tail (then said in `damage`)."""
        return iter_members(self.fh, self.damage)


def _open(path: Path, refused: list[str] | None = None) -> BinaryIO | None:
    """`path` opened when it is a regular file (through links); None when absent. One that is
    not (a FIFO, a device) is never waited on: said in `refused` (then None), or NotRegularFile
    raised without it."""
    try:
        return open_regular(path)
    except FileNotFoundError:
        return None
    except NotRegularFile as exc:
        if refused is None:
            raise
        refused.append(f"{exc}: not read")
        return None


def _read_lines(fh: BinaryIO, name: str, problems: list[str]) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of a plain file's lines; a line longer than `MAX_LINE_BYTES` is skipped
    (read in steps, never held) and said in `problems`."""
    offset = number = 0
    while line := fh.readline(MAX_LINE_BYTES + 1):
        number += 1
        start = offset
        offset += len(line)
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while not line.endswith(b"\n") and (line := fh.readline(1 << 20)):
                offset += len(line)
            problems.append(f"{name}: line {number:,} is longer than {megabytes(MAX_LINE_BYTES)} (the bound on one call record): not read")
            continue
        yield start, line


@dataclass
class _TraceFiles:
    """The files of one trace, opened together (`_open_files`), read in the order readers take
    them: the packed members (`members`), then the plain lines not packed yet (`plain_lines`)."""

    packed: list[_PackedFile]
    plain: list[_Plain]
    problems: list[str]  # files refused, lines not read, calls stored twice: one line each
    seen: "_Packed" = field(default_factory=lambda: _Packed())  # what the packed members hold

    def close(self) -> None:
        for fh in [p.fh for p in self.packed] + [p.fh for p in self.plain]:
            fh.close()

    def members(self) -> Iterator[tuple[_PackedFile, int, int, list[tuple[int, bytes]]]]:
        """(file, offset, length, [(start, line)]) of each packed member. A call stored in both
        the `.gz` and the `.zst` is given once, from the `.gz`: it was packed first (the `.zst`
        only ever takes the calls after it), and the copy is said in `problems`."""
        both = len(self.packed) == 2
        older = _Packed() if both else None  # the `.gz`'s calls
        for part in self.packed:
            again = 0
            for offset, length, blob in part.members():
                lines = []
                for start, line in _lines(blob):
                    if older is not None and part.compact:
                        older.add(line, compact=True)
                    elif older is not None and older.holds_call(line):
                        again += 1
                        continue
                    if self.plain:
                        self.seen.add(line, compact=part.compact)
                    lines.append((start, line))
                yield part, offset, length, lines
            if again:
                self.problems.append(
                    f"{part.path.name}: {again:,} calls are also in {gzip_path(trace_path(part.path)).name}: "
                    "each shown once, from the .gz (packed first)"
                )

    def plain_lines(self) -> Iterator[tuple[int, int, bytes]]:
        """(file number, offset, line) of the plain files' lines a packing has not copied (after `members`)."""
        for number, part in enumerate(self.plain):
            for offset, line in _read_lines(part.fh, part.path.name, self.problems):
                if not self.seen.holds(line):
                    yield number, offset, line

    def damage_text(self) -> str | None:
        """What readers must report, once everything was read: files refused and lines not read;
        a corrupted or too large member always; a cut tail or an empty file only when no plain
        file is left beside it (with one, a packing was interrupted: the plain file still holds
        those calls and the next packing cuts the tail off)."""
        found = []
        for part in self.packed:
            lasting = next((d for d in part.damage if d.lasting), None)
            damage = lasting if lasting is not None or self.plain else (part.damage[0] if part.damage else None)
            if damage is None and not self.plain and os.fstat(part.fh.fileno()).st_size == 0:
                damage = Damage("empty", 0, 0)
            if damage is not None:
                found.append(damage.text(part.path.name))
                break
        found += self.problems
        return "; ".join(found) if found else None


def _open_files(path: Path) -> _TraceFiles:
    """The packed files, the segments and the open file, opened so that together they hold every call.

    A rollover renames the open file to a segment and a packing appends a segment to the
    `.zst` (synced) before removing it, so opening the `.zst` first, then the open file, then
    the segments misses nothing: a segment gone before it was listed is in the `.zst` (read
    to its end later), and the open file renamed meanwhile is listed as a segment too (same
    inode: read once). Only a `.zst` that appears meanwhile forces a second look. (The `.gz`
    is never written any more.) A part that is not a regular file is not read, and said.
    """
    packed = packed_path(path)
    while True:
        refused: list[str] = []
        zst = _open(packed, refused)
        zst_refused = bool(refused)
        current = _open(path, refused)
        plain = []
        for segment in segment_paths(path):
            fh = _open(segment, refused)
            if fh is not None:
                plain.append(_Plain(segment, fh, os.fstat(fh.fileno()).st_ino))
        if current is not None:
            inode = os.fstat(current.fileno()).st_ino
            if any(p.inode == inode for p in plain):
                current.close()  # renamed to a segment after it was opened: read there
            else:
                plain.append(_Plain(path, current, inode))
        if zst is None and not zst_refused and packed.exists():
            for p in plain:
                p.fh.close()
            continue  # the first packing created it meanwhile: what it holds may be gone from the segments
        return _TraceFiles(_open_packed(path, zst, refused), plain, refused)


def _open_packed(path: Path, zst: BinaryIO | None, refused: list[str] | None = None) -> list[_PackedFile]:
    """The packed files in the order readers take them: an older version's `.gz`, then the
    `.zst` (`zst`, opened by the caller, or None)."""
    old = _open(gzip_path(path), refused)
    return [_PackedFile(p, fh) for p, fh in ((gzip_path(path), old), (packed_path(path), zst)) if fh is not None]


def _lines(blob: bytes) -> Iterator[tuple[int, bytes]]:
    start = 0
    while start < len(blob):
        end = blob.find(b"\n", start)
        end = len(blob) if end < 0 else end + 1
        yield start, blob[start:end]
        start = end


class _Packed:
    """The hashes of the lines packed files hold, to tell which plain-file lines a crash left behind."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.sizes: set[int] = set()  # of the lines packed as they are: most lines need no hash to be told apart
        self.any_size = False  # a compact record was met: its plain line may have any size

    def add(self, line: bytes, *, compact: bool = False) -> None:
        match = _CID.search(line, max(0, len(line) - 80)) if compact else None
        if match:
            self.ids.add(match.group(1).decode())
            self.any_size = True
        else:
            self.ids.add(line_id(line))
            self.sizes.add(len(line.rstrip(b"\r\n")))

    def holds(self, line: bytes) -> bool:
        if not self.ids or (not self.any_size and len(line.rstrip(b"\r\n")) not in self.sizes):
            return False
        return line_id(line) in self.ids

    def holds_call(self, line: bytes) -> bool:
        """The call of `line` (a plain line, or a compact record: its `cid`) is held."""
        match = _CID.search(line, max(0, len(line) - 80))
        return (match.group(1).decode() if match else line_id(line)) in self.ids


# -- reading ---------------------------------------------------------------------------------


def trace_damage(path: Path) -> str | None:
    """One line when a trace of `path` cannot be read whole (None when it can, or has none): a
    packed file damaged, a part that is not a regular file, a line past the bound.

    Decompresses the packed files whole (seconds for a large trace): for `show`, `mlflow sync`, a thread.
    """
    files = _open_files(Path(path))
    try:
        for _ in files.members():
            pass
        for part in files.plain:
            for _ in _read_lines(part.fh, part.path.name, files.problems):
                pass
        return files.damage_text()
    finally:
        files.close()


def iter_call_lines(path: Path) -> Iterator[bytes]:
    """Every stored line of a trace: the packed files', then the segments' and the open file's
    (without lines a packing already copied)."""
    files = _open_files(Path(path))
    try:
        for _, _, _, lines in files.members():
            for _, line in lines:
                yield line
        for _, _, line in files.plain_lines():
            yield line
    finally:
        files.close()


def iter_calls(path: Path, *, decode: bool = True) -> Iterator[dict[str, Any]]:
    """The call records of a trace (`<exp>.jsonl`, its packed files or all) as exchanged, in file
    order; `decode=False` gives compact records as stored, enough for the top-level fields.
    Lines that do not parse are skipped."""
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

def pack_calls(path: Path, *, packer: "TracePacker | None" = None) -> Path | None:
    """Pack what is left plain of a trace (its closed segments, then the open file) after the
    frames already in `<exp>.jsonl.zst`; each plain file is removed once its lines are packed.

    Blocking (a second for a large `mcq_logprob` trace): run it in a thread. `packer` is the
    one that packed this trace's earlier segments in this process (it goes on from what it
    knows). Returns the packed path, None when there is no packed file.
    """
    path = Path(path)
    packer = packer or TracePacker(path)
    for segment in segment_paths(path):
        packer.pack_file(segment)
    packer.pack_file(path)
    packed = packed_path(path)
    return packed if packed.is_file() else None


class TracePacker:
    """Appends closed plain files of one trace to its `.zst`, in the order they are given.

    One per trace and process, and one call at a time: the `.zst` has a single writer. A
    file's lines are written as they are, example by example, in the order the examples were
    first met, so the file stays in call order (a resumed run's calls come last); whole
    examples are gathered into frames of about `MEMBER_BYTES`. The frames are appended in
    place and synced before the plain file is removed, so a kill leaves at worst a damaged
    tail (cut off before the next append; readers stop there) and the plain file, whose lines
    already packed readers and the next packing skip.
    """

    def __init__(self, path: Path, *, member_bytes: int = MEMBER_BYTES) -> None:
        self.path = Path(path)
        self.packed = packed_path(self.path)
        self.member_bytes = member_bytes
        self._compressor = Compressor()
        self._seen: _Packed | None = None  # lines packed before this process: read once
        self._whole = 0  # bytes of whole frames
        self._corrupted: Damage | None = None  # not a frame after `_whole`: never cut off
        self._gzip_whole: int | None = None  # where the `.gz`'s whole members end, if a packing before left a torn tail

    def _scan(self) -> _Packed:
        """What the packed files hold (the `.gz` of an older version too), and where the `.zst`'s whole frames end."""
        seen = _Packed()
        self._whole, self._gzip_whole, self._corrupted = 0, None, None
        files = _open_packed(self.path, _open(self.packed))  # a packed file that is not a regular file: raised
        try:
            for part in files:
                whole = 0
                for offset, length, blob in part.members():
                    whole = offset + length
                    for _, line in _lines(blob):
                        seen.add(line, compact=part.compact)
                if part.compact:
                    self._gzip_whole = whole if any(d.kind == "cut" for d in part.damage) else None
                else:
                    self._whole = whole
                    self._corrupted = next((d for d in part.damage if d.lasting), None)
        finally:
            for part in files:
                part.fh.close()
        self._seen = seen
        return seen

    def pack_file(self, source: Path) -> None:
        """Append `source`'s lines (those not packed yet) to the `.zst`, sync, then remove `source`.

        A file that is not a regular file, or that holds a line past `MAX_LINE_BYTES` (it could
        not be read back), is not packed: OSError, the file kept as it is."""
        source = Path(source)
        try:
            src = open_regular(source)
        except FileNotFoundError:
            return
        with src:
            self._pack(source, src)

    def _pack(self, source: Path, src: BinaryIO) -> None:
        seen = self._seen if self._seen is not None else self._scan()
        spans: dict[str, list[tuple[int, int]]] = defaultdict(list)  # dicts keep first-appearance order
        content = False
        too_long: list[str] = []
        for offset, line in _read_lines(src, source.name, too_long):
            spans[line_uuid(line) or ""].append((offset, len(line)))
            content = content or bool(line.strip())
        if too_long:
            raise OSError(f"{too_long[0]}; not packed, so the file is kept as it is")
        created = not self.packed.exists()
        if created and not content:
            source.unlink(missing_ok=True)  # no call: no `.zst` (an empty one reads as a damaged trace)
            return
        self._refuse_corrupted()
        with open_regular(self.packed, update=True) as out:  # frames written into a FIFO would block, and be lost
            _lock(out)  # one writer, whatever process packs this trace
            if os.fstat(out.fileno()).st_size != self._whole or not source.is_file():
                # Someone else packed meanwhile (or left a torn tail): learn what the file holds now.
                seen = self._scan()
                self._refuse_corrupted()
                if not source.is_file():
                    return
            if self._gzip_whole is not None:  # as the packing of that version would have: its lines are still plain
                os.truncate(gzip_path(self.path), self._gzip_whole)
                self._gzip_whole = None
            try:
                out.truncate(self._whole)  # a tail a killed packing left half written
                out.seek(self._whole)
                self._write_members(out, src, spans, seen)
                out.flush()
                os.fsync(out.fileno())
            except BaseException:
                with contextlib.suppress(OSError):
                    out.truncate(self._whole)
                self._seen = None  # may hold lines that were not written: read the file again
                raise
            self._whole = out.tell()
            if created:
                _sync_folder(self.packed.parent)
            source.unlink(missing_ok=True)  # still under the lock: no other packer sees it half done

    def _refuse_corrupted(self) -> None:
        """Appending would first cut the file at its last whole frame, losing what follows a
        corrupted one: the plain file is kept (readable) and the damage said instead."""
        if self._corrupted is not None:
            raise OSError(f"{self._corrupted.text(self.packed.name)}; not appended to, so nothing after it is cut off")

    def _write_members(self, out: BinaryIO, src: BinaryIO, spans: dict[str, list[tuple[int, int]]], seen: _Packed) -> None:
        """Whole examples, in order, gathered into frames of about `member_bytes`."""
        gathered: list[bytes] = []
        size = 0

        def flush() -> None:
            nonlocal size
            out.write(self._compressor.member(b"".join(gathered)))
            gathered.clear()
            size = 0

        for example in spans.values():
            lines = []
            for offset, length in example:
                src.seek(offset)
                line = src.read(length)
                if line.strip() and not seen.holds(line):
                    lines.append(line if line.endswith(b"\n") else line + b"\n")
            if not lines:
                continue
            more = sum(map(len, lines))
            if gathered and size + more > self.member_bytes:  # a large example gets a frame of its own
                flush()
            for line in lines:  # ... or several, past what readers inflate of one frame
                if gathered and size + len(line) > MAX_MEMBER_BYTES:
                    flush()
                gathered.append(line)
                size += len(line)
            if size >= self.member_bytes:
                flush()
        if gathered:
            flush()


def _lock(fh: BinaryIO) -> None:
    """An exclusive lock on the open `.zst`, released when it is closed (POSIX; skipped elsewhere)."""
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


# -- the index the Trace screen reads ---------------------------------------------------------

class _Stale(OSError):
    """A plain file is not the one indexed any more."""


@dataclass
class _Member:
    path: Path
    offset: int
    length: int


class CallIndex:
    """uuid -> where its call records are, in the packed trace, its segments and open file; rows come back decoded.

    The packed files are decompressed once to index them (member by member); opening an example
    then decompresses only its member (at most ~64 KB besides the example itself), the last few
    kept in memory.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
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
        files = _open_files(index.path)
        try:
            for part, offset, length, lines in files.members():
                number = len(index._members)
                index._members.append(_Member(part.path, offset, length))
                for start, line in lines:
                    index._packed_spans[line_uuid(line) or ""].append((number, start, len(line)))
                    index._count(line)
            index._plain = [(part.path, part.inode) for part in files.plain]
            for number, offset, line in files.plain_lines():
                index._open_spans[line_uuid(line) or ""].append((number, offset, len(line)))
                index._count(line)
            index.damaged = files.damage_text()
        finally:
            files.close()
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
            with open_regular(member.path) as fh:
                fh.seek(member.offset)
                blob = decompress(fh.read(member.length))
            self._cache[number] = blob
            while len(self._cache) > _MEMBER_CACHE or (len(self._cache) > 1 and sum(map(len, self._cache.values())) > _CACHE_BYTES):
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
                    fh = handles[number] = open_regular(path)
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
        except (OSError, *DECOMPRESS_ERRORS):  # rolled over or packed since it was indexed: index again
            self.__dict__.update(CallIndex.build(self.path).__dict__)
            try:
                lines = self.raw_lines(uuid)
            except (OSError, *DECOMPRESS_ERRORS) as exc:  # changed again, or unreadable now: said, not raised
                said = f"{self.path.name}: the calls of {uuid} cannot be read ({exc})"
                self.damaged = f"{self.damaged}; {said}" if self.damaged else said
                return []
        found = []
        for line in lines:
            try:
                row = jsoncodec.loads(line)
            except (ValueError, UnicodeDecodeError):
                continue  # a torn line
            if isinstance(row, dict):
                found.append(row)
        return decode_rows(found)
