"""The members of a packed trace, read one by one: zstd frames, gzip members of older traces,
and where a damaged file stops being readable."""

from __future__ import annotations

import gzip

import pytest

from w2c_tui.store.members import Compressor, Damage, decompress, iter_members, unpack

A = b'{"uuid":"a","n":1}\n' * 200
B = b'{"uuid":"b","n":2}\n' * 300
C = b'{"uuid":"c","n":3}\n'


def _file() -> tuple[bytes, list[int]]:
    """Two zstd frames and an older trace's gzip member after them, and where each starts."""
    parts = [Compressor().member(A), gzip.compress(B, mtime=0), Compressor().member(C)]
    starts = [0, len(parts[0]), len(parts[0]) + len(parts[1])]
    return b"".join(parts), starts


def _read(data: bytes) -> tuple[list[tuple[int, int, bytes]], list[Damage]]:
    damage: list[Damage] = []
    return list(iter_members(data, damage)), damage


def test_each_member_comes_back_whole_whatever_its_codec():
    data, starts = _file()
    members, damage = _read(data)
    assert damage == []
    assert [(offset, blob) for offset, _, blob in members] == [(starts[0], A), (starts[1], B), (starts[2], C)]
    assert [offset + length for offset, length, _ in members] == starts[1:] + [len(data)]
    assert [decompress(data[o : o + n]) for o, n, _ in members] == [A, B, C]
    assert unpack(data) == A + B + C


@pytest.mark.parametrize("keep", [-1, -5, 2, 1])
def test_a_member_cut_short_stops_the_reading_there(keep):
    """Cut anywhere in the last frame, its first bytes (the magic number) included."""
    data, starts = _file()
    cut = data[:keep] if keep < 0 else data[: starts[2] + keep]
    members, damage = _read(cut)
    assert [blob for _, _, blob in members] == [A, B]
    assert damage == [Damage("cut", starts[2], len(cut))]


def test_a_frame_whose_checksum_fails_is_corrupted():
    data, starts = _file()
    broken = bytearray(data)
    broken[starts[1] - 2] ^= 0xFF  # inside the first frame's content checksum
    members, damage = _read(bytes(broken))
    assert members == [] and damage == [Damage("corrupted", 0, len(data))]


def test_bytes_that_are_no_member_are_corrupted_and_end_the_reading():
    data, _ = _file()
    members, damage = _read(data + b"not a member at all")
    assert [blob for _, _, blob in members] == [A, B, C]
    assert damage == [Damage("corrupted", len(data), len(data) + 19)]
    assert "corrupted at byte" in damage[0].text("mcq.jsonl.zst")


def test_an_empty_file_has_no_member_and_no_damage():
    assert _read(b"") == ([], [])
