"""The compressed members of a packed call trace: zstd frames, and the gzip members of traces
packed before.

A packed trace is a file of independent members, each holding whole lines: a reader can
decompress one member alone, and a file cut or corrupted at some member still gives every
member before it. New members are zstd frames with a content checksum; the gzip members of
`.jsonl.gz` traces (packed before w2c-tui used zstd) are still read. Which codec a member uses
is told by its first bytes, so one reader takes either.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Iterator

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
DECOMPRESS_ERRORS = (zlib.error, zstandard.ZstdError)


@dataclass
class Damage:
    """Where a packed trace stops being readable: `kind` "corrupted" (not a member, or one whose
    data or checksum is wrong), "cut" (a member cut short: a packing killed mid-write, or a
    truncated file) or "empty"."""

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


def decompress(member: bytes) -> bytes:
    """One whole member's lines (raises one of DECOMPRESS_ERRORS when it is not one)."""
    if member.startswith(_GZIP):
        return zlib.decompress(member, wbits=31)
    return zstandard.ZstdDecompressor().decompress(member)


def iter_members(data: bytes, damage: list[Damage] | None = None) -> Iterator[tuple[int, int, bytes]]:
    """(offset, length, decompressed bytes) of each member of a packed file's bytes; stops at a
    damaged tail (said in `damage` when given)."""
    view = memoryview(data)
    offset = 0
    while offset < len(data):
        head = data[offset : offset + 4]
        inflater = _decompressor(head)
        parts = []
        pos = offset
        try:
            if inflater is not None:
                while not inflater.eof and pos < len(data):
                    chunk = view[pos : pos + _CHUNK]
                    parts.append(inflater.decompress(chunk))
                    pos += len(chunk) - len(inflater.unused_data)
            elif not (_ZSTD.startswith(head) or _GZIP.startswith(head)):  # not even a member cut in its first bytes
                raise zlib.error("not a member")
        except DECOMPRESS_ERRORS:
            if damage is not None:
                damage.append(Damage("corrupted", offset, len(data)))
            return
        if inflater is None or not inflater.eof:  # a member cut short
            if damage is not None:
                damage.append(Damage("cut", offset, len(data)))
            return
        yield offset, pos - offset, b"".join(parts)
        offset = pos


def unpack(data: bytes) -> bytes:
    """Every whole member's lines, in order: what `zstdcat` (or `zcat`, for a `.gz`) prints."""
    return b"".join(blob for _, _, blob in iter_members(data))
