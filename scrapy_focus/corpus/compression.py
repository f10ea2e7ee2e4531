"""``HttpDecompressionMiddleware``: a response body is inflated once, in bounded chunks.

Scrapy's ``HttpCompressionMiddleware`` (590) decodes bodies after the HTTP cache
(900) has seen them, so a cache that stores decoded bodies must inflate each one
itself first: twice the work, and the storage's copy is where a decompression bomb
would land.  The add-on puts this subclass of it above the cache instead (910,
:data:`ORDER`), in Scrapy's place: every content-encoding is decoded there, once,
64 KiB at a time, with ``DOWNLOAD_MAXSIZE`` (or the request's ``download_maxsize``)
enforced as bytes come out; the cache, the engine ladder, the extraction and the
spider all get the decoded response.

A body over the limit is dropped as Scrapy drops it (``IgnoreRequest``, a warning
naming the URL and the sizes), and counted as ``focus/decompression/too_large``; a
body that does not decode at all (a corrupt stream) is dropped the same way and
counted as ``focus/decompression/corrupt``.  Either way nothing of it is stored.
The encodings decoded go to the request's state (``state.content_encoding``), which
the corpus records as the version's ``content_encoding``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import IgnoreRequest

from scrapy_focus.state import peek, state_of

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: Above HttpCacheMiddleware (900): its process_response runs first.
ORDER = 910


class HttpDecompressionMiddleware(HttpCompressionMiddleware):
    """Scrapy's compression middleware, placed where the cache sees its output."""

    def process_response(
        self, request: Request, response: Response, spider: Spider | None = None
    ) -> Request | Response:
        encodings = response.headers.getlist(b"Content-Encoding")
        # A request re-issued with its state (the ladder's next engine) must not
        # carry an earlier answer's encoding into this one's record.
        state = peek(request)
        if state is not None:
            state.content_encoding = None
        if not encodings or request.method == "HEAD":
            return super().process_response(request, response)
        try:
            decoded = super().process_response(request, response)
        except IgnoreRequest:  # over DOWNLOAD_MAXSIZE once inflated; Scrapy logged it
            self._inc("focus/decompression/too_large")
            raise
        except Exception as exc:  # zlib.error, OSError, brotli.error, ZstdError...
            self._inc("focus/decompression/corrupt")
            message = (
                f"Ignored response {response}: its body "
                f"({b','.join(encodings).decode('latin-1')}, {len(response.body)} B) "
                f"does not decode: {exc!r}"
            )
            logger.warning(message)
            raise IgnoreRequest(message) from exc
        if decoded.headers.getlist(b"Content-Encoding") != encodings:
            state_of(request).content_encoding = [value.decode("latin-1") for value in encodings]
            self._inc("focus/decompression/decoded")
        return decoded

    def _inc(self, key: str, count: int = 1) -> None:
        stats: Any = self.stats
        if stats is not None:
            stats.inc_value(key, count)
