"""How much to trust an extraction: a score in [0, 1].

:func:`confidence` is a small logistic model over :func:`features`, which read
nothing but the :class:`~scrapy_focus.extract.page.Extraction` (all a crawl
has).  It estimates the probability that the extracted main text is *good*:
a word-level F1 of at least 0.8 against a human-reviewed main content.

The weights are constants, fitted on the WCXB development set (1,497 pages of
7 page types) by ``benchmarks/bench_extract.py --fit``, which prints them ready
to paste here; its report (docs/benchmarks.md) gives the ROC AUC measured on
held-out folds and the precision of the accept decision at the thresholds
below.  No numpy at run time: a dot product and a sigmoid.

The thresholds are the defaults of the ``FOCUS_HIGH_CONFIDENCE``,
``FOCUS_MEDIUM_CONFIDENCE`` and ``FOCUS_MIN_CONTENT_CHARS`` settings.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from scrapy_focus.extract.container import words
from scrapy_focus.extract.page import Extraction

#: At or above: the extraction is trusted as is.
HIGH_CONFIDENCE = 0.75
#: At or above: accepted; below: rejected or quarantined by the content contract.
MEDIUM_CONFIDENCE = 0.45
#: Less main text than this is no content at all: confidence 0.
MIN_CONTENT_CHARS = 100

#: Feature names, in the order the model reads them.
FEATURES: tuple[str, ...] = (
    "log_text_chars",
    "text_html_ratio",
    "main_share",
    "whole_page_share",
    "page_link_density",
    "boilerplate_share",
    "paragraph_share",
    "sentence_line_share",
    "duplicate_line_share",
    "list_line_share",
    "boilerplate_markers",
    "commerce_markers",
    "metadata_completeness",
    "has_json_ld",
    "json_ld_article",
    "has_json_ld_body",
    "json_ld_body_recall",
    "og_article",
    "log_headings",
    "url_depth",
)

# fitted by benchmarks/bench_extract.py --fit on WCXB-dev (held-out AUC in docs/benchmarks.md)
WEIGHTS: dict[str, float] = {
    "log_text_chars": -0.106958,
    "text_html_ratio": 2.66448,
    "main_share": 5.41173,
    "whole_page_share": -5.93694,
    "page_link_density": -0.420437,
    "boilerplate_share": 3.22883,
    "paragraph_share": 1.56354,
    "sentence_line_share": 0.7565,
    "duplicate_line_share": -2.50537,
    "list_line_share": 2.30912,
    "boilerplate_markers": -0.526256,
    "commerce_markers": -0.15286,
    "metadata_completeness": 1.84438,
    "has_json_ld": -0.581834,
    "json_ld_article": 0.816626,
    "has_json_ld_body": -5.1044,
    "json_ld_body_recall": 5.2361,
    "og_article": 0.524877,
    "log_headings": -0.27274,
    "url_depth": 1.73471,
}
BIAS = -4.01817


def confidence(
    extraction: Extraction,
    *,
    min_content_chars: int = MIN_CONTENT_CHARS,
    weights: Mapping[str, float] | None = None,
    bias: float | None = None,
) -> float:
    """Probability, in [0, 1], that *extraction* holds the page's main content well.

    0 for a skipped page or one with less than *min_content_chars* of text.
    *weights* and *bias* default to the fitted constants (the benchmark passes
    its own while cross-validating)."""
    if extraction.skipped or extraction.text_chars < min_content_chars:
        return 0.0
    weights = WEIGHTS if weights is None else weights
    z = BIAS if bias is None else bias
    for name, value in features(extraction).items():
        z += weights.get(name, 0.0) * value
    return round(_sigmoid(z), 4)


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


_LINE_END = re.compile("[.!?:;\"')\\]\u201d\u2019]$")
_LIST_LINE = re.compile(r"^(?:[-*+•]|\d+[.)])\s")
# Matched on the lower-cased text, several times faster than with re.IGNORECASE, which
# folds the case of each alternative at every position of the text.
_BOILERPLATE = re.compile(
    r"cookie|privacy policy|terms of (?:use|service)|all rights reserved|©|\(c\) \d{4}"
    r"|subscribe|newsletter|sign (?:in|up)|log ?in|create an account|follow us|share (?:this|on)"
    r"|skip to (?:main )?content|back to top|related (?:posts|articles)|you may also like"
    r"|read more|load more|advertisement"
)
_COMMERCE = re.compile(
    r"add to (?:cart|bag|basket|wishlist)|in stock|out of stock|free shipping|\bsku\b"
    r"|\bqty\b|quantity|checkout|reviews?\b|rating|\$\s?\d|€\s?\d|£\s?\d|\d\s?(?:€|eur\b|usd\b)"
    r"|sort by|filter|results"
)
_ARTICLE_TYPES = frozenset(
    (
        "article",
        "newsarticle",
        "blogposting",
        "reportagenewsarticle",
        "analysisnewsarticle",
        "opinionnewsarticle",
        "techarticle",
        "scholarlyarticle",
        "report",
        "posting",
        "socialmediaposting",
        "liveblogposting",
    )
)
_METADATA = ("title", "author", "date", "description", "sitename", "language")


def features(extraction: Extraction) -> dict[str, float]:
    """The model's inputs, each a float of modest range, in the order of :data:`FEATURES`."""
    e = extraction
    text = e.text
    chars = len(text)
    page = max(e.page_text_chars, 1)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    n_lines = max(len(lines), 1)
    md_lines = [line.strip() for line in e.markdown.splitlines() if line.strip()]
    n_md = max(len(md_lines), 1)
    counts = Counter(lines)
    types = set(_types(e.json_ld)) | {
        str(item.get("@type", "")).rsplit("/", 1)[-1].lower() for item in e.microdata
    }
    path = urlsplit(e.url or "").path
    body_recall = _body_recall(e.json_ld, text)
    lowered = text.lower()
    return {
        "log_text_chars": math.log1p(chars),
        "text_html_ratio": min(chars / max(e.html_chars, 1), 1.0),
        "main_share": min(chars / page, 1.5),
        # (nearly) all the page's text came out: a dump of the page more often than an article
        "whole_page_share": max(min(chars / page, 1.5) - 0.8, 0.0),
        "page_link_density": e.link_density,
        "boilerplate_share": min(e.boilerplate_text_chars / page, 1.0),
        "paragraph_share": min(e.paragraph_text_chars / page, 1.0),
        "sentence_line_share": sum(bool(_LINE_END.search(line)) for line in lines) / n_lines,
        "duplicate_line_share": (len(lines) - len(counts)) / n_lines,
        "list_line_share": sum(bool(_LIST_LINE.match(line)) for line in md_lines) / n_md,
        "boilerplate_markers": min(len(_BOILERPLATE.findall(lowered)) * 1000 / max(chars, 1), 20.0),
        "commerce_markers": min(len(_COMMERCE.findall(lowered)) * 1000 / max(chars, 1), 20.0),
        "metadata_completeness": sum(bool(getattr(e, name)) for name in _METADATA) / 6,
        "has_json_ld": float(bool(e.json_ld)),
        "json_ld_article": float(bool(types & _ARTICLE_TYPES)),
        "has_json_ld_body": float(body_recall is not None),
        "json_ld_body_recall": body_recall or 0.0,
        "og_article": float(e.opengraph.get("og:type", "").lower() == "article"),
        "log_headings": math.log1p(len(e.headings)),
        "url_depth": min(path.strip("/").count("/") + bool(path.strip("/")), 8) / 8,
    }


def _walk(json_ld: Iterable[Any], depth: int = 0) -> Iterable[dict[str, Any]]:
    """Every JSON-LD node (``@graph`` members and nested objects), a few levels deep."""
    for node in json_ld:
        if isinstance(node, dict):
            yield node
            if depth < 3:
                for value in node.values():
                    if isinstance(value, (dict, list)):
                        yield from _walk(value if isinstance(value, list) else [value], depth + 1)
        elif isinstance(node, list) and depth < 3:
            yield from _walk(node, depth + 1)


def _types(json_ld: list[Any]) -> Iterable[str]:
    for node in _walk(json_ld):
        kind = node.get("@type")
        for name in kind if isinstance(kind, list) else [kind]:
            if isinstance(name, str):
                yield name.rsplit("/", 1)[-1].lower()


def _body_recall(json_ld: list[Any], text: str) -> float | None:
    """Share of the words of the page's own JSON-LD ``articleBody`` (or long ``text``) found in
    the extraction: the publisher's word on what the main content is.  None when there is none."""
    for node in _walk(json_ld):
        body = node.get("articleBody") or node.get("text")
        if isinstance(body, str) and len(body) >= 200:
            wanted, found = words(body), words(text)
            return sum((wanted & found).values()) / max(sum(wanted.values()), 1)
    return None
