"""Write a corpus out: JSON Lines (one line per page version) or WARC.

Both take the latest version of each page by default, or every version with
``all_versions=True``.  WARC files are written with warcio and read back by
any WARC tool (warcio, pywb, ...).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import datetime, timezone
from http import HTTPStatus
from io import BytesIO
from typing import IO, Any

from scrapy.http import TextResponse
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from scrapy_focus import __version__
from scrapy_focus.corpus.reader import Corpus, Page, Version


def iter_versions(corpus: Corpus, all_versions: bool = False) -> Iterator[tuple[Page, Version]]:
    for page in corpus:
        if all_versions:
            for version in page.versions():
                yield page, version
        else:
            yield page, page.latest()


def version_record(page: Page, version: Version) -> dict[str, Any]:
    """A JSON-ready dict of one version; text bodies as ``text``, others as ``body_base64``."""
    response = page.response(version)
    record: dict[str, Any] = {
        "url": page.url,
        "request_url": version.url,
        "final_url": version.final_url,
        "status": version.status,
        "engine": version.engine,
        "fetched_at": _iso(version.fetched_at),
        "first_fetched_at": _iso(version.first_fetched_at),
        "fetch_count": version.fetch_count,
        "version": version.index,
        "content_hash": version.body_hash,
        "content_type": response.headers.get(b"Content-Type", b"").decode("latin-1"),
        "headers": version.headers,
        "meta": version.meta,
    }
    if isinstance(response, TextResponse):
        record["encoding"] = response.encoding
        record["text"] = response.text
    else:
        record["body_base64"] = base64.b64encode(response.body).decode("ascii")
    return record


def export_jsonl(corpus: Corpus, out: IO[str], all_versions: bool = False) -> int:
    """Write one JSON object per line; return how many were written."""
    count = 0
    for page, version in iter_versions(corpus, all_versions):
        out.write(json.dumps(version_record(page, version), ensure_ascii=False) + "\n")
        count += 1
    return count


def export_warc(corpus: Corpus, out: IO[bytes], all_versions: bool = False) -> int:
    """Write one WARC ``response`` record per version (gzipped); return the count."""
    writer = WARCWriter(out, gzip=True)
    writer.write_record(
        writer.create_warcinfo_record(
            "corpus.warc.gz", {"software": f"scrapy-focus/{__version__}", "format": "WARC/1.0"}
        )
    )
    count = 0
    for page, version in iter_versions(corpus, all_versions):
        body = page.body(version)
        # The stored body is content-decoded: the HTTP headers must describe it.
        headers = [
            (name, value)
            for name, value in version.headers
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
            version.final_url,
            "response",
            payload=BytesIO(body),
            length=len(body),
            http_headers=http_headers,
            warc_headers_dict=warc_headers,
        )
        writer.write_record(record)
        count += 1
    return count


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
