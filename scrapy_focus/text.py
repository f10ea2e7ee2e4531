"""Bytes become text here, and nowhere else.

Every component that needs a page's text (the ladder's detectors, extraction,
relevance, pipelines) calls :func:`decode`.  The order follows what browsers
do: byte-order mark, the ``Content-Type`` charset, a ``<meta>`` declaration,
then detection.  Two departures, for declarations that are plainly wrong:

* a single-byte charset (ISO-8859-1, windows-1252, ...) declared on bytes that
  are valid UTF-8 and not ASCII: UTF-8 wins (servers that default to
  ISO-8859-1 in the header are common; real windows-1252 prose is almost never
  valid UTF-8);
* a charset under which the bytes do not decode (more than 0.2% U+FFFD) loses
  to detection, if detection does better.

Detection breaks ties between code pages it cannot tell apart in favour of
windows-1252, the web's legacy default.  ``<meta charset=utf-16>`` means UTF-8,
as in the HTML standard (a meta tag readable as ASCII is not UTF-16).  It
never raises: undecodable bytes become U+FFFD.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
)

#: Share of replacement characters above which a declared charset is judged wrong.
_WRONG_DECLARATION = 0.002
#: Python codec names of multi-byte charsets; every other known charset is single-byte.
_MULTIBYTE = (
    "utf",
    "gb",
    "big5",
    "euc",
    "shift_jis",
    "cp932",
    "cp949",
    "cp950",
    "iso2022",
    "hz",
    "johab",
)
#: Detection ties (same chaos, same coherence) are broken in favour of this code page.
_WEB_DEFAULT = "cp1252"


@dataclass(frozen=True)
class DecodedText:
    text: str
    encoding: str  # a Python codec name
    source: str  # "bom" | "header" | "meta" | "detected" | "default"
    replacements: int  # U+FFFD inserted for bytes that did not decode


def decode(body: bytes, content_type: str | bytes | None = None) -> DecodedText:
    """Decode an HTTP body to text, choosing the encoding like a browser would."""
    if isinstance(content_type, bytes):
        content_type = content_type.decode("latin-1")
    bom_encoding, bom = read_bom(body)
    if bom_encoding is not None and bom is not None:
        return _decoded(body[len(bom) :], bom_encoding, "bom")

    declared, source = http_content_type_encoding(content_type), "header"
    if declared is None:
        declared, source = html_body_declared_encoding(body), "meta"
    if declared is not None and (declared := _known(declared)):
        if source == "meta" and declared.startswith(("utf-16", "utf-32")):
            declared = "utf-8"
        if not declared.startswith(_MULTIBYTE) and not body.isascii():
            try:
                return DecodedText(body.decode("utf-8"), "utf-8", "detected", 0)
            except UnicodeDecodeError:
                pass
        result = _decoded(body, declared, source)
        if result.replacements <= _WRONG_DECLARATION * max(len(result.text), 1):
            return result
        detected = _detect(body)
        if detected is not None and detected.replacements < result.replacements:
            return detected
        return result

    try:
        return DecodedText(body.decode("utf-8"), "utf-8", "default", 0)
    except UnicodeDecodeError:
        pass
    detected = _detect(body)
    if detected is not None:
        return detected
    return _decoded(body, "cp1252", "default")


def _known(encoding: str) -> str | None:
    resolved = resolve_encoding(encoding)
    if resolved is None:
        return None
    try:
        return codecs.lookup(resolved).name
    except LookupError:
        return None


def _decoded(body: bytes, encoding: str, source: str) -> DecodedText:
    text = body.decode(encoding, errors="replace")
    return DecodedText(text, encoding, source, text.count("\ufffd"))


def _detect(body: bytes) -> DecodedText | None:
    from charset_normalizer import from_bytes  # trafilatura's dependency; slow to import

    matches = from_bytes(body[:200_000])
    best = matches.best()
    if best is None or best.encoding is None:
        return None
    encoding = _known(best.encoding)
    for match in matches:
        if (
            _WEB_DEFAULT in match.could_be_from_charset
            and match.chaos <= best.chaos
            and match.coherence >= best.coherence
        ):
            encoding = _WEB_DEFAULT
            break
    return _decoded(body, encoding, "detected") if encoding else None
