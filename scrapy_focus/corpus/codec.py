"""How a body is kept: :class:`BodyCodec` and the key of a body, :func:`body_hash`.

The contract: a stored body is one codec tag byte followed by the compressed
bytes.  :meth:`BodyCodec.encode` writes the codec it was made with
(``FOCUS_CORPUS_COMPRESSION``); :meth:`BodyCodec.decode` reads every codec, so
a corpus written with one setting stays readable under another.  A body is
keyed by the SHA-256 of its content-decoded bytes, so a body shared by many
URLs, or fetched again unchanged, is stored once.
"""

from __future__ import annotations

import hashlib
import threading
import zlib

import zstandard

from scrapy_focus.corpus.errors import CorpusError

_CODEC_NONE, _CODEC_ZLIB, _CODEC_ZSTD = b"n", b"d", b"z"


class BodyCodec:
    """Compresses bodies on the way in; reads every codec on the way out."""

    def __init__(self, name: str = "zstd", level: int = 3) -> None:
        self.name = name
        if name == "zstd":
            compressor = zstandard.ZstdCompressor(level=level)
            self._tag, self._compress = _CODEC_ZSTD, compressor.compress
        elif name == "zlib":
            self._tag, self._compress = _CODEC_ZLIB, lambda data: zlib.compress(data, level)
        elif name == "none":
            self._tag, self._compress = _CODEC_NONE, bytes
        else:
            raise CorpusError(
                f"FOCUS_CORPUS_COMPRESSION={name!r} is not a known codec; "
                "use 'zstd', 'zlib' or 'none'"
            )

    def encode(self, body: bytes) -> bytes:
        return self._tag + self._compress(body)

    @staticmethod
    def decode(stored: bytes | memoryview) -> bytes:
        tag, payload = bytes(stored[:1]), stored[1:]
        if tag == _CODEC_ZSTD:
            # max_output_size is needed for frames written without a content size
            return _zstd_decompressor().decompress(payload, max_output_size=1 << 31)
        if tag == _CODEC_ZLIB:
            return zlib.decompress(payload)
        if tag == _CODEC_NONE:
            return bytes(payload)
        raise CorpusError(f"unknown body codec tag {tag!r}: corpus written by a newer version?")


_THREAD = threading.local()


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompressor: creating one per body costs more than a small body's
    decompression, and one object must not be shared between threads."""
    try:
        return _THREAD.zstd
    except AttributeError:
        _THREAD.zstd = zstandard.ZstdDecompressor()
        return _THREAD.zstd


def body_hash(body: bytes) -> bytes:
    """The key of a body: SHA-256 of its (content-decoded) bytes."""
    return hashlib.sha256(body).digest()
