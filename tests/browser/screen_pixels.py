"""Reading a Chromium screenshot's pixels without an imaging library: the PNGs Chromium writes are
8-bit, non-interlaced RGB(A), which zlib and the five PNG filters decode."""

from __future__ import annotations

import struct
import zlib


def _unfilter(kind: int, line: bytearray, prev: bytearray, bpp: int) -> None:
    for x in range(len(line)):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x - bpp] if x >= bpp else 0
        if kind == 1:
            line[x] = (line[x] + a) & 255
        elif kind == 2:
            line[x] = (line[x] + b) & 255
        elif kind == 3:
            line[x] = (line[x] + (a + b) // 2) & 255
        elif kind == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255


def brightness_rows(png: bytes) -> list[list[int]]:
    """Each pixel's brightest colour channel, row by row."""
    pos, idat, width, height, colour = 8, [], 0, 0, 6
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos : pos + 8])
        data = png[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", data)
            assert depth == 8 and interlace == 0 and colour in (0, 2, 6), "not a Chromium screenshot"
        elif kind == b"IDAT":
            idat.append(data)
    raw = zlib.decompress(b"".join(idat))
    bpp = {0: 1, 2: 3, 6: 4}[colour]
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        line = bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(raw[start], line, prev, bpp)
        rows.append([max(line[x * bpp : x * bpp + min(bpp, 3)]) for x in range(width)])
        prev = line
    return rows


def lit_pixels(png: bytes, threshold: int = 100) -> int:
    return sum(1 for row in brightness_rows(png) for value in row if value > threshold)
