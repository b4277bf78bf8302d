"""The compressed members of a packed call trace: zstd frames, and the gzip members of traces
packed before.

A packed trace is a file of independent members, each holding whole lines: a reader can
decompress one member alone, and a file cut or corrupted at some member still gives every
member before it. New members are zstd frames with a content checksum; the gzip members of
`.jsonl.gz` traces (packed before w2c-tui used zstd) are still read. Which codec a member uses
is told by its first bytes, so one reader takes either.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator

import zstandard

# zstd level, on the same sim sessions (256 examples each, 64 KB members), ms of CPU per record
# to compress / MB of the packed file:
#   mcq chat records (5.8 KB):    level 1 0.013 / 0.273   level 3 0.016 / 0.259   level 5 0.032 / 0.247
#   mcq_logprob echoes (445 KB):  level 1 0.40 / 10.27    level 3 0.51 / 8.46     level 5 0.96 / 8.36
# The compact records in gzip level 4 they replace took 0.104 / 0.273 and 8.9 / 6.10.
LEVEL = 3
_CHUNK = 1 << 16
_ZSTD = b"\x28\xb5\x2f\xfd"
_GZIP = b"\x1f\x8b"
# What one member may inflate to. Ours hold ~64 KB of whole examples, or one example alone (a
# log-prob example is a few MB); a member past this is not read, whatever its header claims,
# so a small file that inflates to gigabytes costs at most this much memory.
MAX_MEMBER_BYTES = 128 << 20
# zstd inflates at most 128 KB from 4 input bytes (an RLE block), gzip far less: feeding the
# inflater remaining // _MAX_RATIO bytes at a time (at least _MIN_FEED) keeps a member within
# its bound plus 2 MB, without ever asking the decoder to stop.
_MAX_RATIO = 1 << 15
_MIN_FEED = 64


class MemberError(ValueError):
    """A member that cannot be read (`decompress`): its damage in one line."""


DECOMPRESS_ERRORS = (zlib.error, zstandard.ZstdError, MemberError)


def megabytes(size: int) -> str:
    """A bound as said in messages: "128 MB" (or its bytes, when not whole megabytes)."""
    return f"{size >> 20} MB" if size and not size % (1 << 20) else f"{size:,} bytes"


@dataclass
class Damage:
    """Where a packed trace stops being readable: `kind` "corrupted" (not a member, or one whose
    data or checksum is wrong), "too large" (a member inflating past `MAX_MEMBER_BYTES`, said in
    `bound`), "cut" (a member cut short: a packing killed mid-write, or a truncated file) or
    "empty"."""

    kind: str
    offset: int
    size: int
    bound: int = 0

    @property
    def lasting(self) -> bool:
        """Not a torn tail a packing would cut off: what follows it must never be cut off."""
        return self.kind in ("corrupted", "too large")

    def text(self, name: str) -> str:
        if self.kind == "empty":
            return f"{name}: packed trace damaged (empty, 0 bytes): its calls cannot be read"
        if self.kind == "too large":
            return (
                f"{name}: packed trace not read past byte {self.offset:,} of {self.size:,}: a member there "
                f"inflates past {megabytes(self.bound)} (the bound on one member); the calls stored from it on are not shown"
            )
        return (
            f"{name}: packed trace damaged ({self.kind} at byte {self.offset:,} of {self.size:,}): "
            "the calls stored after it cannot be read"
        )


class Compressor:
    """Makes members; one per packer (not shared between threads)."""

    def __init__(self, level: int = LEVEL) -> None:
        self._zstd = zstandard.ZstdCompressor(level=level, write_checksum=True)

    def member(self, blob: bytes) -> bytes:
        return self._zstd.compress(blob)


def _decompressor(head: bytes) -> Any:
    if head.startswith(_ZSTD):
        return zstandard.ZstdDecompressor().decompressobj()
    if head.startswith(_GZIP):
        return zlib.decompressobj(wbits=31)
    return None


def decompress(member: bytes, *, limit: int | None = None) -> bytes:
    """One whole member's lines, inflated in steps (a zstd frame without a content size too),
    at most `limit` bytes (`MAX_MEMBER_BYTES`); MemberError when it is not one whole member within the bound."""
    damage: list[Damage] = []
    for _, _, blob in iter_members(member, damage, limit=limit):
        return blob
    raise MemberError(damage[0].text("member") if damage else "no member")


def iter_members(
    source: bytes | BinaryIO, damage: list[Damage] | None = None, *, limit: int | None = None
) -> Iterator[tuple[int, int, bytes]]:
    """(offset, length, decompressed bytes) of each member of a packed file (its bytes, or the
    file open at its start, read in chunks up to the size it had then); stops at a damaged
    tail or at a member inflating past `limit` (`MAX_MEMBER_BYTES`; said in `damage` when given)."""
    limit = MAX_MEMBER_BYTES if limit is None else limit
    fh = io.BytesIO(source) if isinstance(source, (bytes, bytearray, memoryview)) else source
    size = fh.seek(0, io.SEEK_END)
    fh.seek(0)
    left = size  # bytes of the file not read yet
    buf, pos = b"", 0  # read, and not fed to an inflater before buf[pos]
    offset = 0

    def note(kind: str) -> None:
        if damage is not None:
            damage.append(Damage(kind, offset, size, limit if kind == "too large" else 0))

    def fill(want: int) -> bool:
        """At least `want` unfed bytes in `buf` if the file holds them."""
        nonlocal buf, pos, left
        while len(buf) - pos < want and left:
            chunk = fh.read(min(_CHUNK, left))
            if not chunk:
                left = 0
                break
            buf, pos, left = buf[pos:] + chunk, 0, left - len(chunk)
        return len(buf) - pos >= want

    while fill(1):
        fill(4)
        head = buf[pos : pos + 4]
        inflater = _decompressor(head)
        if inflater is None:
            # Even a member cut in its first bytes starts like one; anything else is no member.
            note("cut" if len(head) < 4 and (_ZSTD.startswith(head) or _GZIP.startswith(head)) else "corrupted")
            return
        parts: list[bytes] = []
        inflated = used = 0
        try:
            while not inflater.eof and fill(1):
                chunk = buf[pos : pos + max(_MIN_FEED, (limit - inflated) // _MAX_RATIO)]
                out = inflater.decompress(chunk)
                inflated += len(out)
                if inflated > limit:
                    note("too large")
                    return
                parts.append(out)
                taken = len(chunk) - (len(inflater.unused_data) if inflater.eof else 0)
                pos += taken
                used += taken
        except DECOMPRESS_ERRORS:
            note("corrupted")
            return
        if not inflater.eof:  # a member cut short
            note("cut")
            return
        yield offset, used, b"".join(parts)
        offset += used


def unpack(data: bytes) -> bytes:
    """Every whole member's lines, in order: what `zstdcat` (or `zcat`, for a `.gz`) prints."""
    return b"".join(blob for _, _, blob in iter_members(data))
