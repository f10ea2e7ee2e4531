"""Rebuild a stored response: :class:`ResponseClasses` and :func:`response_from_version`.

The contract: a corpus is data and may come from elsewhere, so the class name
in a version never chooses what is imported (see :class:`ResponseClasses`).  A
rebuilt response has the version's URL, status, headers (as the exact bytes
received), body, flags, IP address and protocol, and the class's own
constructor arguments that were stored (:func:`response_attributes`).
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from scrapy.http import Headers, HtmlResponse, JsonResponse, Response, TextResponse, XmlResponse
from scrapy.responsetypes import responsetypes
from scrapy.utils.misc import load_object

from scrapy_focus.corpus.records import Version

logger = logging.getLogger(__name__)


def is_json(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None), list, dict))


#: Response's own constructor arguments, stored in fields of their own.
_BASE_ATTRIBUTES = frozenset(Response.attributes)


def response_attributes(response: Response, cls: type[Response]) -> dict[str, Any]:
    """The to_dict()-style arguments of *cls* beyond Response's, as *response* has them."""
    kept: dict[str, Any] = {}
    for name in cls.attributes:
        if name in _BASE_ATTRIBUTES or not hasattr(response, name):
            continue
        # The encoding given to the constructor, not the one inferred from the body:
        # what is inferred once is inferred again on the way back.
        if name == "encoding":
            value = getattr(response, "_encoding", None)
        else:
            value = getattr(response, name)
        if value is not None and is_json(value):
            kept[name] = value
    return kept


class ResponseClasses:
    """Which response classes a stored version may name, and so be rebuilt as.

    A corpus is data and may come from elsewhere: the class name in a version
    never chooses what is imported.  Scrapy's response classes are trusted, and
    those the user lists in ``FOCUS_CORPUS_RESPONSE_CLASSES`` (imported from the
    settings, never from the corpus).  A version naming any other class is read
    as data: its class is guessed from its headers and body, as Scrapy guesses a
    downloaded response's, and :attr:`untrusted` counts it by name.
    """

    SCRAPY: tuple[type[Response], ...] = (
        Response,
        TextResponse,
        HtmlResponse,
        XmlResponse,
        JsonResponse,
    )

    def __init__(self, extra: tuple[type[Response], ...] = ()) -> None:
        self._by_name: dict[str, type[Response]] = {}
        for cls in (*self.SCRAPY, *extra):
            self._by_name[f"{cls.__module__}.{cls.__name__}"] = cls
        for cls in self.SCRAPY:  # the public spelling, scrapy.http.HtmlResponse
            self._by_name[f"scrapy.http.{cls.__name__}"] = cls
        self._classes = frozenset(self._by_name.values())
        self.untrusted: dict[str, int] = {}

    @classmethod
    def from_paths(cls, paths: tuple[str, ...] | list[str]) -> ResponseClasses:
        extra = []
        for path in paths:
            loaded = load_object(path)
            if not (isinstance(loaded, type) and issubclass(loaded, Response)):
                raise TypeError(
                    f"FOCUS_CORPUS_RESPONSE_CLASSES: {path!r} is not a scrapy Response class"
                )
            extra.append(loaded)
        return cls(tuple(extra))

    def trusted(self, name: str) -> bool:
        return name in self._by_name

    def stored_class(
        self, response: Response, headers: list[tuple[str, str]], body: bytes
    ) -> type[Response]:
        """The class to record for *response*: its own when trusted, else its nearest
        trusted base; a plain Response (an encoded body decoded here, a handler
        that did not guess) is guessed from the stored headers and body."""
        cls = type(response)
        if cls is Response:
            cls = responsetypes.from_args(
                headers=stored_headers(headers), url=response.url, body=body
            )
        return next(base for base in cls.__mro__ if base in self._classes)

    def resolve(self, version: Version, headers: Headers, body: bytes) -> type[Response]:
        cls = self._by_name.get(version.response_class)
        if cls is not None:
            return cls
        if version.response_class not in self.untrusted:
            logger.warning(
                "Corpus version of %s names response class %r, which is not one of "
                "Scrapy's nor in FOCUS_CORPUS_RESPONSE_CLASSES: read as data, its class "
                "guessed from its headers",
                version.final_url,
                version.response_class,
            )
        self.untrusted[version.response_class] = self.untrusted.get(version.response_class, 0) + 1
        return responsetypes.from_args(headers=headers, url=version.final_url, body=body)


def response_from_version(
    version: Version, body: bytes, classes: ResponseClasses | None = None
) -> Response:
    """Rebuild the response a version describes, with its body.

    The class is the version's when *classes* (default: Scrapy's classes only)
    trusts it, else guessed (see :class:`ResponseClasses`); its stored attributes
    are passed only where that class takes them.
    """
    headers = stored_headers(version.headers)
    cls = (classes or ResponseClasses()).resolve(version, headers, body)
    extra = {
        name: value
        for name, value in version.attributes.items()
        if name in cls.attributes and name not in _BASE_ATTRIBUTES
    }
    response = cls(
        url=version.final_url,
        status=version.status,
        body=body,
        flags=list(version.flags),
        ip_address=ipaddress.ip_address(version.ip_address) if version.ip_address else None,
        protocol=version.protocol,
        **extra,
    )
    response.headers = headers
    return response


def stored_headers(pairs: list[tuple[str, str]]) -> Headers:
    """Stored latin-1 text back to the exact bytes (Scrapy would encode str as UTF-8).

    Built as ``Headers`` normalises (names title-cased as bytes, values lists of
    bytes) without passing every name and value through ``Headers.update``
    again: that costs more than the rest of rebuilding the response.
    """
    values: dict[bytes, list[bytes]] = {}
    for name, value in pairs:
        values.setdefault(name.encode("latin-1").title(), []).append(value.encode("latin-1"))
    headers = Headers()
    dict.update(headers, values)
    return headers
