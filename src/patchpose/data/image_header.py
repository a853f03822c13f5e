"""An image file's size read from its header, so that a file claiming more pixels than we accept is refused
before anything is decoded (a 2 MB PNG can claim 50,000 × 50,000 pixels: 7.5 GB once decoded).

The limit is :data:`DEFAULT_MAX_IMAGE_PIXELS`; the environment variable ``PATCHPOSE_MAX_IMAGE_PIXELS`` (or
the command line's ``--max-image-pixels``, which sets it) changes it. Headers are read for PNG, JPEG, BMP,
GIF, WebP, TIFF and binary PNM (PPM/PGM); a file of another format is decoded and its size checked then.
"""

from __future__ import annotations

import contextlib
import io
import os
import struct
from pathlib import Path
from typing import BinaryIO

from ..errors import InputError

#: the most pixels (width × height) an image file may have, unless PATCHPOSE_MAX_IMAGE_PIXELS says otherwise:
#: 100 megapixels (e.g. 12,000 × 8,000), about 1.2 GB of float32 RGB once read
DEFAULT_MAX_IMAGE_PIXELS = 100_000_000
#: the environment variable that sets the limit (a whole number of pixels)
MAX_PIXELS_ENV = "PATCHPOSE_MAX_IMAGE_PIXELS"


def max_image_pixels() -> int:
    """The pixel limit now in force: ``PATCHPOSE_MAX_IMAGE_PIXELS`` if set (a whole number >= 1), else
    :data:`DEFAULT_MAX_IMAGE_PIXELS`."""
    raw = os.environ.get(MAX_PIXELS_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_IMAGE_PIXELS
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise InputError(f"{MAX_PIXELS_ENV} must be a whole number of pixels >= 1, got {raw!r}")
    return value


def _png(h: bytes) -> tuple[int, int] | None:
    if h[:8] == b"\x89PNG\r\n\x1a\n" and h[12:16] == b"IHDR" and len(h) >= 24:
        return struct.unpack(">II", h[16:24])
    return None


def _gif(h: bytes) -> tuple[int, int] | None:
    if h[:6] in (b"GIF87a", b"GIF89a") and len(h) >= 10:
        return struct.unpack("<HH", h[6:10])
    return None


def _bmp(h: bytes) -> tuple[int, int] | None:
    if h[:2] == b"BM" and len(h) >= 26:
        size = struct.unpack("<I", h[14:18])[0]
        if size == 12:  # OS/2 BITMAPCOREHEADER
            return struct.unpack("<HH", h[18:22])
        w, hh = struct.unpack("<ii", h[18:26])
        return abs(w), abs(hh)
    return None


def _webp(h: bytes) -> tuple[int, int] | None:
    if h[:4] != b"RIFF" or h[8:12] != b"WEBP" or len(h) < 30:
        return None
    kind = h[12:16]
    if kind == b"VP8X":
        w = int.from_bytes(h[24:27], "little") + 1
        return w, int.from_bytes(h[27:30], "little") + 1
    if kind == b"VP8L":
        b = int.from_bytes(h[21:25], "little")
        return (b & 0x3FFF) + 1, ((b >> 14) & 0x3FFF) + 1
    if kind == b"VP8 ":
        w, hh = struct.unpack("<HH", h[26:30])
        return w & 0x3FFF, hh & 0x3FFF
    return None


def _pnm(h: bytes) -> tuple[int, int] | None:
    if h[:1] != b"P" or h[1:2] not in (b"5", b"6"):
        return None
    fields, text = [], h[2:].split(b"\n")
    for line in text:
        fields += line.split(b"#")[0].split()
        if len(fields) >= 2:
            try:
                return int(fields[0]), int(fields[1])
            except ValueError:
                return None
    return None


def _tiff(f, h: bytes) -> tuple[int, int] | None:
    """Width and height tags (256, 257) of a classic TIFF's first image file directory."""
    order = {b"II*\x00": "<", b"MM\x00*": ">"}.get(h[:4])
    if order is None:
        return None
    f.seek(struct.unpack(order + "I", h[4:8])[0])
    raw = f.read(2)
    if len(raw) < 2:
        return None
    found = {}
    for _ in range(min(struct.unpack(order + "H", raw)[0], 4096)):
        e = f.read(12)
        if len(e) < 12:
            return None
        tag, kind = struct.unpack(order + "HH", e[:4])
        if tag in (256, 257):
            found[tag] = struct.unpack(
                order + ("H" if kind == 3 else "I"), e[8:10] if kind == 3 else e[8:12]
            )[0]
        if len(found) == 2:
            return found[256], found[257]
    return None


def _jpeg(f) -> tuple[int, int] | None:
    """Walk the JPEG markers up to the first start-of-frame (SOF0–SOF15 but DHT, JPG and DAC)."""
    f.seek(0)
    if f.read(2) != b"\xff\xd8":
        return None
    while True:
        b = f.read(1)
        while b and b != b"\xff":  # skip to a marker
            b = f.read(1)
        while b == b"\xff":  # fill bytes
            b = f.read(1)
        if not b:
            return None
        marker = b[0]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            continue
        raw = f.read(2)
        if len(raw) < 2:
            return None
        length = struct.unpack(">H", raw)[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            seg = f.read(5)
            if len(seg) < 5:
                return None
            hh, w = struct.unpack(">HH", seg[1:5])
            return w, hh
        if marker == 0xDA or length < 2:  # image data before any frame header: not a JPEG we can read
            return None
        f.seek(length - 2, 1)


def header_size(path: str | Path, data: bytes | BinaryIO | None = None) -> tuple[int, int] | None:
    """``(width, height)`` as the file's header states it, or None for a format not read here (or a header
    that cannot be read: the decoder then says what is wrong). ``data``: the file's bytes, read already (the
    header is read from them, not from the file again), or the file opened already (binary, at its start: only
    its header is read from it, and it is left open, where the header ends)."""
    if data is not None and not isinstance(data, (bytes, bytearray, memoryview)):
        opened = contextlib.nullcontext(data)  # the caller's file: read from, not closed
    else:
        opened = open(path, "rb") if data is None else io.BytesIO(data)  # BytesIO shares the bytes: no copy
    with opened as f:
        head = f.read(64)
        for parse in (_png, _gif, _bmp, _webp, _pnm):
            size = parse(head)
            if size is not None:
                return int(size[0]), int(size[1])
        if head[:2] == b"\xff\xd8":
            return _jpeg(f)
        return _tiff(f, head)


def check_pixels(width: int, height: int, path: str | Path) -> None:
    """An :class:`InputError` if ``width × height`` is over :func:`max_image_pixels`, naming the limit and
    how to raise it."""
    limit = max_image_pixels()
    if width * height > limit:
        raise InputError(
            f"{path}: {width} × {height} pixels is more than the limit of {limit:,} pixels; raise it with "
            f"{MAX_PIXELS_ENV}=N or --max-image-pixels N if the image is real"
        )


def check_image_file(path: str | Path, data: bytes | BinaryIO | None = None) -> tuple[int, int] | None:
    """Check an image file's size from its header before it is decoded (:func:`header_size`,
    :func:`check_pixels`; ``data``: its bytes, read already, or the file, opened already); returns
    ``(width, height)``, or None where the format's header is not read here."""
    size = header_size(path, data)
    if size is not None:
        check_pixels(*size, path)
    return size


__all__ = [
    "DEFAULT_MAX_IMAGE_PIXELS",
    "MAX_PIXELS_ENV",
    "max_image_pixels",
    "header_size",
    "check_pixels",
    "check_image_file",
]
