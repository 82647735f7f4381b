"""The header checksum of an ``.ordann`` file, for tests that craft headers
(``rust/ordcore-core/src/ann/format.rs``: CRC-32 of bytes 0..84, from format version 4 on
also of bytes 88..128, stored at bytes 84..88)."""

from __future__ import annotations

import struct
import zlib


def header_crc(raw: bytes | bytearray) -> int:
    """The header checksum the file's version calls for."""
    version = int.from_bytes(raw[8:12], "little")
    return zlib.crc32(bytes(raw[:84]) + (bytes(raw[88:128]) if version >= 4 else b""))


def set_header_crc(raw: bytearray) -> None:
    """Rewrites bytes 84..88 of ``raw`` with its header checksum."""
    struct.pack_into("<I", raw, 84, header_crc(raw))
