"""Image thumbnails for tables and selections: a tiny PNG encoder (numpy + zlib, no imaging library).

Used by the Inspect page, the embedding map's selection list and the training-dynamics examples.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib

import numpy as np
from numpy.typing import NDArray

__all__ = ["image_thumbnails", "png_bytes", "png_data_uri"]


def png_bytes(pixels: NDArray) -> bytes:
    """Encode an 8-bit image as PNG with numpy and zlib only.

    Parameters
    ----------
    pixels : ndarray of uint8, shape (h, w), (h, w, 1), (h, w, 3) or (h, w, 4)
        Grey, RGB or RGBA values.

    Returns
    -------
    bytes
        A complete PNG file (no interlacing, filter 0 on every scanline).

    Examples
    --------
    >>> png_bytes(np.zeros((2, 3), np.uint8))[1:4]
    b'PNG'
    """
    a = np.asarray(pixels)
    if a.dtype != np.uint8:
        raise TypeError(f"png_bytes needs uint8 pixels. Got dtype {a.dtype} instead.")
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim == 2:
        colour_type = 0
    elif a.ndim == 3 and a.shape[2] in (3, 4):
        colour_type = 2 if a.shape[2] == 3 else 6
    else:
        raise ValueError(f"png_bytes needs an image of shape (h, w), (h, w, 3) or (h, w, 4). Got {a.shape}.")
    h, w = a.shape[:2]
    if h == 0 or w == 0:
        raise ValueError(f"png_bytes needs a non-empty image. Got shape {a.shape}.")
    scanlines = np.concatenate([np.zeros((h, 1), np.uint8), np.ascontiguousarray(a).reshape(h, -1)], axis=1)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, colour_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(scanlines.tobytes(), 9))
        + chunk(b"IEND", b"")
    )


def png_data_uri(pixels: NDArray) -> str:
    """A ``data:image/png;base64,...`` URI of an 8-bit image (see :func:`png_bytes`)."""
    return "data:image/png;base64," + base64.b64encode(png_bytes(pixels)).decode("ascii")


def image_thumbnails(images: NDArray, *, size: int = 32, max_side: int = 64, invert_grey: bool = True) -> list[str]:
    """Small PNG data URIs of every image, for ``st.column_config.ImageColumn``.

    Values are scaled to 0-255 with the minimum and maximum over all images (so thumbnails are comparable).
    Small images are enlarged by pixel repetition to about ``size`` pixels (crisp, no blur); large ones are
    subsampled to at most ``max_side`` pixels a side. Grey images are inverted by default (ink dark on white,
    as handwritten digits store ink as high values).

    Parameters
    ----------
    images : ndarray, shape (n, h, w) or (n, h, w, channels)
    size : int, default=32
        Target side of small images, in pixels.
    max_side : int, default=64
        Largest side of a thumbnail, in pixels.
    invert_grey : bool, default=True
        Draw high grey values dark.

    Returns
    -------
    list of str
        One data URI per image.
    """
    a = np.asarray(images)
    if a.ndim not in (3, 4) or len(a) == 0:
        raise ValueError(f"image_thumbnails needs images of shape (n, h, w[, channels]). Got {a.shape}.")
    h, w = a.shape[1:3]
    step = max(1, math.ceil(max(h, w) / max_side))
    if step > 1:
        a = a[:, ::step, ::step]
        h, w = a.shape[1:3]
    f = a.astype(np.float64)
    lo, hi = np.nanmin(f), np.nanmax(f)
    scaled = np.zeros_like(f) if hi <= lo else (f - lo) / (hi - lo) * 255.0
    grey = a.ndim == 3 or a.shape[3] == 1
    if grey and invert_grey:
        scaled = 255.0 - scaled
    pix = np.clip(np.nan_to_num(scaled, nan=255.0), 0, 255).round().astype(np.uint8)
    factor = max(1, size // max(h, w))
    if factor > 1:
        pix = pix.repeat(factor, axis=1).repeat(factor, axis=2)
    return [png_data_uri(img) for img in pix]
