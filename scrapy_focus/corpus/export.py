"""Write a corpus out: JSON Lines, Markdown (a file per page) or WARC.

``accepted_only=True`` (the command's default) exports what the content
contract accepted, with its page item; ``False`` exports every stored page.
The latest version of each page by default, every version with
``all_versions=True``.  WARC files are written with warcio and read back by
any WARC tool (warcio, pywb, ...).

An export is made to be handed on, so it holds no secret of the crawl: the
values of the headers in :data:`SECRET_HEADERS` (the site's session cookies,
credentials) are replaced by :data:`REDACTED` unless ``secret_headers=True``,
and no URL keeps a ``user:password@``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from http import HTTPStatus
from io import BytesIO
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from scrapy.http import TextResponse
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from scrapy_focus import __version__
from scrapy_focus.corpus.reader import Corpus, Page, Version
from scrapy_focus.urls import strip_userinfo

#: Headers whose values an export redacts unless asked for them (lower case).
SECRET_HEADERS = frozenset({"set-cookie", "cookie", "authorization", "proxy-authorization"})
REDACTED = "[redacted]"

Selection = Iterator[tuple[Page, Version, dict[str, Any] | None]]


def iter_versions(
    corpus: Corpus, all_versions: bool = False, accepted_only: bool = False
) -> Selection:
    """(page, version, accepted item or None) for every version to export."""
    for page in corpus:
        if accepted_only:
            accepted = page.accepted()
            for version, item in accepted if all_versions else accepted[-1:]:
                yield page, version, item
        elif all_versions:
            for version in page.versions():
                yield page, version, None
        else:
            yield page, page.latest(), None


def export_headers(version: Version, secret_headers: bool = False) -> list[tuple[str, str]]:
    """The version's headers as an export writes them: secrets redacted unless asked for."""
    if secret_headers:
        return list(version.headers)
    return [
        (name, REDACTED if name.lower() in SECRET_HEADERS else value)
        for name, value in version.headers
    ]


def version_record(
    page: Page,
    version: Version,
    item: dict[str, Any] | None = None,
    secret_headers: bool = False,
) -> dict[str, Any]:
    """A JSON-ready dict of one version.  With an accepted *item*: the item's fields
    plus provenance; otherwise text bodies as ``text``, others as ``body_base64``."""
    provenance = {
        "version": version.index,
        "body_hash": version.body_hash,
        "fetched_at": _iso(version.fetched_at),
        "first_fetched_at": _iso(version.first_fetched_at),
        "fetch_count": version.fetch_count,
    }
    if item is not None:
        urls = {key: strip_userinfo(item[key]) for key in _ITEM_URLS if item.get(key)}
        return {**item, **urls, **provenance}
    response = page.response(version)
    record: dict[str, Any] = {
        "url": page.url,
        # A corpus written before URLs were stored without credentials may hold them.
        "request_url": strip_userinfo(version.url),
        "final_url": strip_userinfo(version.final_url),
        "status": version.status,
        "engine": version.engine,
        **provenance,
        "content_type": response.headers.get(b"Content-Type", b"").decode("latin-1"),
        "headers": export_headers(version, secret_headers),
        "meta": version.meta,
    }
    if isinstance(response, TextResponse):
        record["encoding"] = response.encoding
        record["text"] = response.text
    else:
        record["body_base64"] = base64.b64encode(response.body).decode("ascii")
    return record


_ITEM_URLS = ("url", "final_url", "parent_url")


def export_jsonl(
    corpus: Corpus,
    out: IO[str],
    all_versions: bool = False,
    accepted_only: bool = False,
    secret_headers: bool = False,
) -> int:
    """Write one JSON object per line; return how many were written."""
    count = 0
    for page, version, item in iter_versions(corpus, all_versions, accepted_only):
        record = version_record(page, version, item, secret_headers)
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count


def export_markdown(corpus: Corpus, directory: Path, all_versions: bool = False) -> int:
    """One Markdown file per accepted page (version), with its fields as front matter.

    Front-matter values are JSON scalars, which YAML reads as they are.
    """
    directory.mkdir(parents=True, exist_ok=True)
    count = 0
    for page, version, item in iter_versions(corpus, all_versions, accepted_only=True):
        assert item is not None
        fields = {k: v for k, v in version_record(page, version, item).items() if k != "markdown"}
        front = "\n".join(
            f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items()
        )
        suffix = f"-v{version.index}" if all_versions else ""
        name = f"{_slug(page.url)}-{page.fingerprint[:8]}{suffix}.md"
        (directory / name).write_text(
            f"---\n{front}\n---\n\n{item.get('markdown', '')}\n", encoding="utf-8"
        )
        count += 1
    return count


def export_warc(
    corpus: Corpus,
    out: IO[bytes],
    all_versions: bool = False,
    accepted_only: bool = False,
    secret_headers: bool = False,
) -> int:
    """Write one WARC ``response`` record per version (gzipped); return the count."""
    writer = WARCWriter(out, gzip=True)
    writer.write_record(
        writer.create_warcinfo_record(
            "corpus.warc.gz", {"software": f"scrapy-focus/{__version__}", "format": "WARC/1.0"}
        )
    )
    count = 0
    for page, version, _item in iter_versions(corpus, all_versions, accepted_only):
        body = page.body(version)
        # The stored body is content-decoded: the HTTP headers must describe it.
        headers = [
            (name, value)
            for name, value in export_headers(version, secret_headers)
            if name.lower() not in {"content-length", "transfer-encoding", "content-encoding"}
        ]
        headers.append(("Content-Length", str(len(body))))
        http_headers = StatusAndHeaders(
            f"{version.status} {_reason(version.status)}", headers, protocol="HTTP/1.1"
        )
        warc_headers = {
            "WARC-Date": _iso(version.fetched_at, warc=True),
            "WARC-Payload-Digest": f"sha256:{version.body_hash}",
            "WARC-Scrapy-Focus-Engine": version.engine,
        }
        if version.ip_address:
            warc_headers["WARC-IP-Address"] = version.ip_address
        record = writer.create_warc_record(
            strip_userinfo(version.final_url),
            "response",
            payload=BytesIO(body),
            length=len(body),
            http_headers=http_headers,
            warc_headers_dict=warc_headers,
        )
        writer.write_record(record)
        count += 1
    return count


def _slug(url: str) -> str:
    parts = urlsplit(url)
    text = f"{parts.hostname or ''}{parts.path}".strip("/")
    return (_SLUG.sub("-", text).strip("-") or "page")[:80]


_SLUG = re.compile(r"[^A-Za-z0-9]+")


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _iso(epoch: float, warc: bool = False) -> str:
    moment = datetime.fromtimestamp(epoch, tz=timezone.utc)
    if warc:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return moment.isoformat()
