"""A page's metadata (title, author, date, description, site name, language).

:func:`page_metadata` takes trafilatura's own metadata steps in their order, on
the tree the page was parsed into once, looking only for the fields asked for;
:func:`clean_title` drops a site name from a ``<title>``.  Pure functions.
"""

from __future__ import annotations

import configparser
import contextlib
from typing import Any
from urllib.parse import urlsplit

import lxml.html
from htmldate import find_date
from lxml import etree
from trafilatura.metadata import (
    META_URL,
    examine_meta,
    extract_author,
    extract_meta_json,
    extract_sitename,
    extract_title,
    extract_url,
)
from trafilatura.settings import Document, set_date_params, use_config

from scrapy_focus.extract.options import METADATA_FIELDS


def page_metadata(tree: lxml.html.HtmlElement, url: str, fields: tuple[str, ...]) -> dict[str, Any]:
    """The metadata *fields* of the page, as ``trafilatura.extract_metadata`` finds them.

    The same steps in the same order, with two savings: a field not asked for is not
    looked for (author and date each copy the whole tree), and neither are the
    categories, tags and license, which an Extraction does not hold.  The author
    search is skipped, with the same result, on pages where none of its
    expressions can match (:func:`_may_name_author`).
    """
    document: Document = examine_meta(tree)
    if document.author and " " not in document.author:
        document.author = None
    with contextlib.suppress(Exception):  # trafilatura's JSON-LD reader has bugs (it goes on)
        document = extract_meta_json(tree, document)
    if "title" in fields and not document.title:
        document.title = extract_title(tree)
    if "author" in fields and not document.author and _may_name_author(tree):
        document.author = extract_author(tree)
    if not document.url:
        document.url = extract_url(tree, url)
    if "date" in fields:
        document.date = find_date(tree, **{**_DATE_PARAMS, "url": document.url})
    if "sitename" in fields:
        if not document.sitename:
            document.sitename = extract_sitename(tree)
        if document.sitename:
            document.sitename = document.sitename.lstrip("@")
            if (
                document.sitename
                and "." not in document.sitename
                and not document.sitename[0].isupper()
            ):
                document.sitename = document.sitename.title()
        elif document.url and (match := META_URL.match(document.url)):
            document.sitename = match[1]
    document.clean_and_trim()
    return {name: getattr(document, name) if name in fields else None for name in METADATA_FIELDS}


#: The attribute values trafilatura's author expressions (AUTHOR_XPATHS) test; @rel only
#: where it counts, on elements that can hold text: not <link rel=author>, on Sphinx pages ...
_AUTHOR_ATTRIBUTES = etree.XPath(
    "//@class|//@id|//@itemprop|//@data-testid|//@data-component"
    "|//a/@rel|//address/@rel|//div/@rel|//p/@rel|//span/@rel|//strong/@rel",
    smart_strings=False,
)
#: ... and what any of their matches needs in them, case aside (substrings of the
#: lowered values: a case-blind regular expression over them costs far more).
_AUTHOR_HINTS = (
    "author", "byl", "bbl", "username", "screenname", "writer", "zuozhe", "bianji",
    "xiaobian", "channel-name", "submitted-by", "posted-by", "journalist-name",
)  # fmt: skip


def _may_name_author(tree: lxml.html.HtmlElement) -> bool:
    """False when trafilatura's author search cannot find anything on *tree*: its
    expressions match elements by those attributes only (or ``<author>``, ``<rel>``),
    and keep the first match with text."""
    if tree.find(".//author") is not None or tree.find(".//rel") is not None:
        return True
    values = "\n".join(_AUTHOR_ATTRIBUTES(tree)).lower()
    return any(hint in values for hint in _AUTHOR_HINTS)


def _trafilatura_config() -> configparser.ConfigParser:
    config = use_config()
    # trafilatura's MAX_TREE_SIZE discards a document whose *output* is long; the input tree
    # is bounded by _bound() instead, so a long page still yields its text
    config.set("DEFAULT", "MAX_TREE_SIZE", "")
    config.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")  # the pool enforces the time limit
    # htmldate's extensive search falls back to dateparser, whose per-locale regexes take
    # seconds to compile in a fresh worker (a hard time limit away from a timeout), and on
    # WCXB-dev it halves the precision of dates: twice the dates on pages that have none
    config.set("DEFAULT", "EXTENSIVE_DATE_SEARCH", "off")
    return config


TRAFILATURA_CONFIG = _trafilatura_config()
# as trafilatura's Extractor derives them from _CONFIG (EXTENSIVE_DATE_SEARCH off); max_date,
# today, is set per call by htmldate when missing
_DATE_PARAMS = set_date_params(TRAFILATURA_CONFIG.getboolean("DEFAULT", "EXTENSIVE_DATE_SEARCH"))


_TITLE_SEPARATORS = (" | ", " \u2013 ", " \u2014 ", " - ", " :: ", " \u00b7 ", " \u00bb ")


def clean_title(title: str, sitename: str | None, headings: list[str], url: str) -> str:
    """Drop a site-name part from a ``<title>`` ("Story | Site"), as the page's own <h1>
    or its site name shows it to be one: the title of the page, not of the site."""
    for separator in _TITLE_SEPARATORS:
        if separator not in title:
            continue
        parts = [part.strip() for part in title.split(separator)]
        lowered = {heading.lower() for heading in headings[:3]}
        for part in parts:
            if part.lower() in lowered:
                return part
        host = (urlsplit(url).hostname or "").removeprefix("www.").split(".")[0]
        site = {(sitename or "").lower(), host}
        if parts[-1].lower() in site or parts[-1].lower().replace(" ", "") in site:
            return separator.join(parts[:-1])
        if parts[0].lower() in site or parts[0].lower().replace(" ", "") in site:
            return separator.join(parts[1:])
    return title
