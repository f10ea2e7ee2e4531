"""Undo a body's ``Content-Encoding``, bounded: :func:`decode_content`.

The contract: encodings are undone in reverse order of application; a decoded
body larger than *max_size* (``DOWNLOAD_MAXSIZE``; 0: no bound) stops the
decoding as soon as the bytes coming out pass it, so a decompression bomb never
lands in memory whole; an unknown encoding or a corrupt stream raises
:class:`ContentDecodingError` too.
"""

from __future__ import annotations

import zlib
from typing import Any

import zstandard
from scrapy.utils.gz import gunzip


class ContentDecodingError(ValueError):
    pass


def decode_content(body: bytes, encodings: list[str], max_size: int = 0) -> bytes:
    """Undo ``Content-Encoding`` (applied in order, so decoded in reverse)."""
    for encoding in reversed(encodings):
        try:
            if encoding in {"gzip", "x-gzip"}:
                body = gunzip(body, max_size=max_size)
            elif encoding == "deflate":
                body = _inflate(body, max_size)
            elif encoding == "zstd":
                reader = zstandard.ZstdDecompressor().stream_reader(body)
                body = _read_bounded(reader.read, max_size)
            elif encoding == "br":
                body = _unbrotli(body, max_size)
            elif encoding != "identity":
                raise ContentDecodingError(f"unknown Content-Encoding {encoding!r}")
        except ContentDecodingError:
            raise
        except Exception as exc:  # corrupt stream: zlib.error, OSError, ValueError...
            raise ContentDecodingError(f"cannot decode {encoding}: {exc}") from exc
    return body


def _check_size(size: int, max_size: int) -> None:
    if max_size and size > max_size:
        raise ContentDecodingError(f"decoded body exceeds DOWNLOAD_MAXSIZE ({max_size} B)")


def _inflate(body: bytes, max_size: int) -> bytes:
    # Servers send both zlib-wrapped and raw deflate under "deflate".
    for wbits in (zlib.MAX_WBITS, -zlib.MAX_WBITS):
        decompressor = zlib.decompressobj(wbits)
        try:
            out = decompressor.decompress(body, max_size + 1 if max_size else 0)
        except zlib.error:
            continue
        _check_size(len(out), max_size)
        return out
    raise ContentDecodingError("not a deflate stream")


def _unbrotli(body: bytes, max_size: int) -> bytes:
    try:
        import brotli
    except ImportError as exc:
        raise ContentDecodingError("br body and no brotli module installed") from exc
    decompressor = brotli.Decompressor()
    try:
        chunk = decompressor.process(body, output_buffer_limit=1 << 16)
    except TypeError as exc:
        # A brotli before 1.2 can only inflate a body whole: never, for a bomb's sake.
        raise ContentDecodingError("this brotli cannot decode in bounded chunks") from exc
    chunks, total = [chunk], len(chunk)
    while not decompressor.is_finished():
        chunk = decompressor.process(b"", output_buffer_limit=1 << 16)
        if not chunk:
            break
        total += len(chunk)
        _check_size(total, max_size)
        chunks.append(chunk)
    _check_size(total, max_size)
    return b"".join(chunks)


def _read_bounded(read: Any, max_size: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while chunk := read(1 << 16):
        total += len(chunk)
        _check_size(total, max_size)
        chunks.append(chunk)
    return b"".join(chunks)
