#!/usr/bin/env python3
"""Draws the Headspace app icons: static/icon-192.png, icon-512.png,
icon-maskable-512.png and icon.svg (the installable app's, the tab's and a push
notification's), and badge-96.png (a push notification's status-bar mark). Python's standard library only: each pixel's coverage is worked out from
signed distances (antialiased edges without supersampling), and the PNG is written with
zlib and struct. Run it again after changing the design; the files it writes are committed.

The design: a dark rounded square (the dark theme's page colour), a ring in the dark theme's
accent (a head, seen from above: the agent icon of the page, icons.js) and a light dot in it
(what is on its mind). The maskable icon fills the whole square (the launcher cuts its own
shape) and keeps the glyph inside the middle 80% circle every mask leaves.

    python3 scripts/make-icons.py
"""

import math
import os
import struct
import zlib

# The dark theme's colours (static/app.css): --bg, --accent, --text.
BACKGROUND = (0x14, 0x17, 0x1C)
ACCENT = (0x8F, 0xB0, 0xFF)
LIGHT = (0xE3, 0xE7, 0xEE)
WHITE = (0xFF, 0xFF, 0xFF)

# Proportions of the icon's side.
CORNER = 0.22         # the rounded square's corner radius ("any" icons)
RING_RADIUS = 0.27    # the ring's middle line
RING_WIDTH = 0.075    # its stroke
DOT_RADIUS = 0.095    # the dot in it
MASKABLE_SCALE = 0.82  # the glyph, smaller in the maskable icon: its ring ends at 0.28 < 0.4

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "static")  # one plain name each: the page's files are served without a login only at the top (core/src/access.rs)


def coverage(distance):
    """How much of a pixel a shape covers, from the signed distance (in pixels) of the
    pixel's centre to its edge: inside is negative; one pixel of soft edge."""
    return max(0.0, min(1.0, 0.5 - distance))


def rounded_square(x, y, size, radius):
    """Signed distance from (x, y) to a square of side `size` at the origin with rounded
    corners of `radius`."""
    half = size / 2
    qx = abs(x - half) - (half - radius)
    qy = abs(y - half) - (half - radius)
    outside = math.hypot(max(qx, 0.0), max(qy, 0.0))
    inside = min(max(qx, qy), 0.0)
    return outside + inside - radius


def over(dst, color, alpha):
    """`color` at `alpha` painted over `dst`, straight (not premultiplied) RGBA floats 0..1."""
    r, g, b, a = dst
    if alpha <= 0:
        return dst
    out_a = alpha + a * (1 - alpha)
    if out_a <= 0:
        return (0.0, 0.0, 0.0, 0.0)
    mix = lambda c, d: (c / 255 * alpha + d * a * (1 - alpha)) / out_a  # noqa: E731
    return (mix(color[0], r), mix(color[1], g), mix(color[2], b), out_a)


def draw(size, maskable, badge=False):
    """The icon's pixels: `size` rows of RGBA bytes. A badge (the small monochrome mark
    Android shows in its status bar, from the alpha alone) is the glyph alone, white on
    transparent, and larger: it is shown at some 24 px."""
    scale = MASKABLE_SCALE if maskable else 1.0
    if badge:
        scale = 1.3
    c = size / 2
    ring_r = RING_RADIUS * size * scale
    ring_w = RING_WIDTH * size * scale
    dot_r = DOT_RADIUS * size * scale
    rows = []
    for j in range(size):
        row = bytearray()
        y = j + 0.5
        for i in range(size):
            x = i + 0.5
            px = (0.0, 0.0, 0.0, 0.0)
            if badge:
                pass
            elif maskable:
                px = over(px, BACKGROUND, 1.0)  # full bleed: the launcher's mask shapes it
            else:
                px = over(px, BACKGROUND, coverage(rounded_square(x, y, size, CORNER * size)))
            d = math.hypot(x - c, y - c)
            px = over(px, WHITE if badge else ACCENT, coverage(abs(d - ring_r) - ring_w / 2))
            px = over(px, WHITE if badge else LIGHT, coverage(d - dot_r))
            row += bytes(round(v * 255) for v in px)
        rows.append(bytes(row))
    return rows


def png(rows, size):
    """A PNG file's bytes: 8-bit RGBA, no interlace, every row unfiltered."""
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + r for r in rows)
    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def svg():
    """The same icon as SVG (a 100-unit square): the tab's icon where SVG icons are taken."""
    hex_ = lambda c: "#%02x%02x%02x" % c  # noqa: E731
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 100">'
        f'<rect width="100" height="100" rx="{CORNER * 100:g}" fill="{hex_(BACKGROUND)}"/>'
        f'<circle cx="50" cy="50" r="{RING_RADIUS * 100:g}" fill="none" stroke="{hex_(ACCENT)}" '
        f'stroke-width="{RING_WIDTH * 100:g}"/>'
        f'<circle cx="50" cy="50" r="{DOT_RADIUS * 100:g}" fill="{hex_(LIGHT)}"/>'
        "</svg>\n"
    )


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, size, maskable, badge in [
        ("icon-192.png", 192, False, False),
        ("icon-512.png", 512, False, False),
        ("icon-maskable-512.png", 512, True, False),
        ("badge-96.png", 96, False, True),
    ]:
        path = os.path.join(OUT, name)
        with open(path, "wb") as f:
            f.write(png(draw(size, maskable, badge), size))
        print(f"wrote {os.path.relpath(path)}")
    path = os.path.join(OUT, "icon.svg")
    with open(path, "w", encoding="utf-8") as f:
        f.write(svg())
    print(f"wrote {os.path.relpath(path)}")


if __name__ == "__main__":
    main()
