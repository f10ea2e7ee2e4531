"""Canonical URLs and the fingerprint every scrapy-focus component keys pages by.

One URL, one page: ``HTTP://Example.com:80/a?utm_source=x&b=2&a=1#top`` and
``http://example.com/a?a=1&b=2`` are the same page, so they get the same
fingerprint, the same corpus entry and one fetch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from w3lib.url import canonicalize_url as w3lib_canonicalize_url

from scrapy_focus import settings as defaults

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from typing_extensions import Self

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}


class TrackingParams:
    """Which query parameters canonicalisation drops (exact names and ``prefix*``)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        names: set[str] = set()
        prefixes: list[str] = []
        for pattern in patterns:
            pattern = pattern.strip().lower()
            if not pattern:
                continue
            if pattern.endswith("*"):
                prefixes.append(pattern[:-1])
            else:
                names.add(pattern)
        self.names = frozenset(names)
        self.prefixes = tuple(prefixes)

    def __contains__(self, param: str) -> bool:
        param = param.lower()
        return param in self.names or param.startswith(self.prefixes)


DEFAULT_TRACKING_PARAMS = TrackingParams(defaults.FOCUS_TRACKING_PARAMS)


def canonicalize_url(url: str, tracking: TrackingParams = DEFAULT_TRACKING_PARAMS) -> str:
    """Return the canonical form of *url*.

    w3lib's canonicalisation (sorted query, normalised percent-encoding, IDNA
    host, no fragment), plus: lower-case scheme and host, no default port, no
    tracking parameters, and ``/`` for an empty path.  Never raises on a malformed URL.
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    netloc = parts.netloc
    if parts.hostname is not None:
        host = parts.hostname  # already lower-cased by urlsplit
        if ":" in host:  # IPv6 literal
            host = f"[{host}]"
        try:
            port = parts.port
        except ValueError:  # a port that is not a number: keep the URL as given
            port = None
            host = parts.netloc.rsplit("@", 1)[-1].lower()
        userinfo = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        netloc = userinfo + host
        if port is not None and port != DEFAULT_PORTS.get(scheme):
            netloc += f":{port}"
    query = parts.query
    if query and (tracking.names or tracking.prefixes):
        pairs = parse_qsl(query, keep_blank_values=True)
        kept = [(k, v) for k, v in pairs if k not in tracking]
        if len(kept) != len(pairs):
            query = urlencode(kept)
    rebuilt = urlunsplit((scheme, netloc, parts.path or "/", query, ""))
    try:
        return w3lib_canonicalize_url(rebuilt, keep_fragments=False)
    except ValueError:
        # w3lib refuses some malformed URLs (a non-numeric port); such a URL
        # still needs a stable key, and the fetch itself will report the error.
        return rebuilt


def url_fingerprint(canonical_url: str, method: str = "GET", body: bytes = b"") -> bytes:
    """SHA-1 over method, canonical URL and body: the key of a page everywhere.

    The same shape as Scrapy's default fingerprint (20 bytes), computed on the
    URL *after* scrapy-focus canonicalisation.
    """
    digest = hashlib.sha1()  # a key, not a security boundary
    digest.update(method.upper().encode())
    digest.update(b"\0")
    digest.update(canonical_url.encode())
    digest.update(b"\0")
    digest.update(body)
    return digest.digest()


class CanonicalRequestFingerprinter:
    """A ``REQUEST_FINGERPRINTER_CLASS`` keyed by the canonical URL.

    Implements Scrapy's request fingerprinter contract
    (``from_crawler`` and ``fingerprint(request) -> bytes``), so the
    dupefilter, the HTTP cache and the corpus all agree on what one page is.
    Honours ``request.meta["verbatim_url"]`` like Scrapy's own fingerprinter.
    """

    def __init__(self, tracking: TrackingParams = DEFAULT_TRACKING_PARAMS) -> None:
        self.tracking = tracking
        self._cache: dict[int, bytes] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(TrackingParams(crawler.settings.getlist("FOCUS_TRACKING_PARAMS")))

    def canonical_url(self, request: Request) -> str:
        if request.meta.get("verbatim_url"):
            return request.url
        return canonicalize_url(request.url, self.tracking)

    def fingerprint(self, request: Request) -> bytes:
        return url_fingerprint(self.canonical_url(request), request.method, request.body)
