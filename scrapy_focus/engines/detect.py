"""Is this response real content?  Block, challenge, denial, SPA-shell, thin and hub detectors.

Pure functions of a :class:`Page` (status, headers, decoded text, extraction
measures), testable without a crawl.  Vendor markers are matched where they
live: named headers (``cf-mitigated``, ``x-datadome``, ``x-iinfo``...), the
``<title>``, and ``src``/``action`` attributes of scripts, iframes and forms.
Never a free-text search over all headers: a CSP header that names a vendor
is not a block.

Rate limiting and overload are not blocks: a 429, or a 503 that says when to
come back (``Retry-After``), is *transient*: the host is backed off and the
request retried on the same engine, since a browser would be throttled just
the same (a vendor's 429 challenge, e.g. DataDome's, is still a block).

A *denial* is a short page that says, in its title, its top headings or its one
sentence, that the client may not see the page ("Access denied", "Unsupported
browser"...): a block whatever its status, since servers that single out one
browser often answer it 200.  A long page never is one: an article may discuss
access denials.

A *hub* is a navigation page: little prose of its own, but dozens of links in
its own area (outside nav/header/footer/aside and landmark roles, unless they sit
inside the main content, as a table of contents in a ``<nav>`` does) whose text is
most of that area's text, as a table of contents or an index has (judged on the
page's own measures, so an extractor keeping the list as main text or dropping
it changes nothing).  Its content is its links: it is final on the engine that
fetched it.  Links in the chrome do not count, so an application shell with a
server-rendered menu is not a hub.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property

from scrapy.http import Response, TextResponse

from scrapy_focus.text import decode

GENUINE_STATUSES = frozenset({404, 410, 400, 401, 405, 406, 409, 411, 413, 414, 415, 416, 422})

_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
_SRC = re.compile(
    r"<(?:script|iframe|form|img|link)\b[^>]*?\b(?:src|action|href)\s*=\s*"
    r"[\"']([^\"']+)[\"']",
    re.I,
)
_SCRIPT = re.compile(r"<script\b", re.I)
_MOUNT = re.compile(
    r"""<(?:div|main|section|body)\b[^>]*\bid\s*=\s*["'](root|app|__next|__nuxt|"""
    r"""svelte|ember-app|main-app)["']""",
    re.I,
)
_NEXT_DATA = re.compile(r"""id\s*=\s*["']__NEXT_DATA__["']""", re.I)
_TAGS = re.compile(r"<script\b.*?</script>|<style\b.*?</style>|<!--.*?-->|<[^>]+>", re.I | re.S)
_SPACES = re.compile(r"\s+")
_HEADING = re.compile(r"<h([12])\b[^>]*>(.*?)</h\1\s*>", re.I | re.S)
#: How a page says the client may not see it, in the common phrasings.
_DENIAL = re.compile(
    r"\b(?:access(?: to this (?:page|site|resource))?(?: (?:is|has been|was))? denied"
    r"|permission denied|403 forbidden|forbidden \(403\)|error 403"
    r"|(?:you(?: have|'ve|\u2019ve| are| were)(?: been)?|sorry, you have been) blocked"
    r"|request(?: (?:was|has been))? (?:blocked|rejected)"
    r"|unsupported browser|browser(?: is)? (?:not|no longer) supported|browser is unsupported"
    r"|verify (?:that )?you are (?:a )?human|are you a (?:robot|human)|unusual traffic)\b",
    re.I,
)
#: Words that deny access only when they are all a title or a heading says
#: ("Forbidden"; "The Forbidden City" is a title like any other).
_DENIAL_WORDS = frozenset({"forbidden", "blocked", "denied"})
#: A denial page is short: its visible text is at most this many characters (a
#: vendor's block page, with its footer, fits; an article does not).
DENIAL_MAX_CHARS = 1500
#: A page this short is judged on its whole text; a longer one on its title and
#: its h1/h2 headings only.
DENIAL_TEXT_CHARS = 300
#: A hub links to at least this many pages from its own area: "dozens", as a table
#: of contents, a section index or a category page does; an article's own links,
#: even a short one's, are fewer.
HUB_MIN_LINKS = 20
#: ... and the text of those links is at least this share of the visible text of
#: its own area (the rest: a title, an introduction of a sentence or two).
HUB_LINK_SHARE = 0.5
#: ... and its own area's text outside those links (a title and a sentence or two)
#: is at most this long, or its extracted main text is thin: whether an extractor
#: keeps a list of links as the main text or drops it, a hub stays a hub.
HUB_MAX_PROSE_CHARS = 200


@dataclass(frozen=True)
class Page:
    """What the detectors look at."""

    status: int
    headers: Mapping[str, str]  # lower-case names, first value
    html: str  # decoded by scrapy_focus.text
    text_chars: int | None = None  # extracted main text (None: not extracted)
    is_html: bool = True
    # The links of the page's own area (outside the chrome), when it was extracted.
    content_links: int = 0  # links with text
    content_link_chars: int = 0  # their text
    content_chars: int | None = None  # all visible text outside the chrome

    @cached_property
    def visible_head(self) -> str:
        """The first :data:`DENIAL_MAX_CHARS` + 1 characters of visible text: read
        once per page for the denial and the shell detectors alike."""
        return visible_text(self.html, DENIAL_MAX_CHARS)


@dataclass(frozen=True)
class Verdict:
    kind: str  # "ok" | "genuine" | "transient" | "blocked" | "shell" | "thin" | "hub"
    reason: str = ""

    @property
    def escalate(self) -> bool:
        return self.kind in {"blocked", "shell", "thin"}


OK = Verdict("ok")


def page_of(response: Response, text_chars: int | None = None) -> Page:
    """What the detectors look at in a Scrapy response (decoded by scrapy_focus.text)."""
    content_type = response.headers.get(b"Content-Type") or b""
    is_html = isinstance(response, TextResponse) and (
        not content_type or b"html" in content_type.lower()
    )
    headers = {
        name.decode("latin-1").lower(): (values[0] if values else b"").decode("latin-1")
        for name, values in response.headers.items()
    }
    return Page(
        status=response.status,
        headers=headers,
        html=decode(response.body, content_type).text if is_html else "",
        text_chars=text_chars,
        is_html=is_html,
    )


def title_of(html: str) -> str:
    match = _TITLE.search(html[:50_000])
    return _SPACES.sub(" ", match.group(1)).strip() if match else ""


def visible_text_chars(html: str, limit: int | None = None) -> int:
    """Characters of visible text (whitespace collapsed) in the first 500,000 of *html*.

    With *limit*, the count stops as soon as it exceeds it (and returns a number
    above it): a real page shows its first words within a few kilobytes, and
    counting the rest was most of the detectors' cost on the reactor thread."""
    count = 0
    # The pieces' own lengths, plus one space between two non-empty pieces.
    for piece in _text_pieces(html):
        count += len(piece) + (1 if count else 0)
        if limit is not None and count > limit:
            return count
    return count


def visible_text(html: str, limit: int) -> str:
    """The visible text of *html*, whitespace collapsed, cut after *limit* characters."""
    pieces: list[str] = []
    count = 0
    for piece in _text_pieces(html):
        pieces.append(piece)
        count += len(piece) + 1
        if count > limit:
            break
    return " ".join(pieces)[: limit + 1]


def _text_pieces(html: str) -> Iterator[str]:
    """The non-empty runs of text between tags, each run of spaces one space."""
    body = html[:500_000]
    position = 0
    for match in itertools.chain(_TAGS.finditer(body), (None,)):
        end = match.start() if match is not None else len(body)
        piece = _SPACES.sub(" ", body[position:end]).strip()
        if piece:
            yield piece
        if match is not None:
            position = match.end()


def vendor_challenge(page: Page) -> str | None:
    """The anti-bot vendor whose challenge or block page this is, if any."""
    headers = page.headers
    if headers.get("cf-mitigated", "").lower() == "challenge":
        return "cloudflare"
    title = title_of(page.html).lower()
    sources = [src.lower() for src in _SRC.findall(page.html[:200_000])]

    def any_source(*needles: str) -> bool:
        return any(needle in src for src in sources for needle in needles)

    if title.startswith("just a moment") or any_source("/cdn-cgi/challenge-platform/", "__cf_chl_"):
        return "cloudflare"
    if "window._cf_chl_opt" in page.html[:200_000]:
        return "cloudflare"
    if any_source("captcha-delivery.com") or (
        "x-datadome" in headers and page.status in (403, 429)
    ):
        return "datadome"
    if any_source("captcha.px-cdn.net", "/px/client/", "px-cloud.net") or (
        title == "access to this page has been denied" and "_pxappid" in page.html[:50_000].lower()
    ):
        return "perimeterx"
    if any_source("_incapsula_resource") or ("x-iinfo" in headers and page.status in (403, 503)):
        return "imperva"
    server = headers.get("server", "").lower()
    if page.status == 403 and (
        server.startswith("akamaighost")
        or (title == "access denied" and "errors.edgesuite.net" in page.html[:50_000].lower())
    ):
        return "akamai"
    return None


def blocked(page: Page) -> str | None:
    """Why this response is a block or a challenge, or None."""
    vendor = vendor_challenge(page)
    if vendor is not None:
        return f"challenge-{vendor}"
    if transient(page) is not None:
        return None
    if page.status in (403, 503) and page.is_html and page.html.strip():
        return f"http-{page.status}-html"
    phrase = denial(page)
    if phrase is not None:
        return "denied-" + "-".join(phrase.lower().split())
    return None


def denial(page: Page) -> str | None:
    """The phrase by which a short page denies the client access, or None.

    Matched in the title and the h1/h2 headings of a page of at most
    :data:`DENIAL_MAX_CHARS` visible characters, and in the whole text of one of
    at most :data:`DENIAL_TEXT_CHARS`.  A redirect's body is not what anyone sees."""
    if not page.is_html or 300 <= page.status < 400:
        return None
    text = page.visible_head
    if len(text) > DENIAL_MAX_CHARS:
        return None
    places = [title_of(page.html)]
    places += [match.group(2) for match in _HEADING.finditer(page.html[:50_000])]
    if len(text) <= DENIAL_TEXT_CHARS:
        places.append(text)
    for place in places:
        place = _SPACES.sub(" ", _TAGS.sub(" ", place)).strip()
        match = _DENIAL.search(place)
        if match is not None:
            return match.group(0)
        if place.strip(" .!:").lower() in _DENIAL_WORDS:
            return place.strip(" .!:")
    return None


def transient(page: Page) -> str | None:
    """Why this is a server's "not now" (rate limit, overload), or None.

    429; 503 with ``Retry-After``; other 5xx.  A vendor's challenge is never
    transient (see :func:`blocked`); a 503 page without ``Retry-After`` is
    treated as a block, as anti-bot walls serve them."""
    if page.status == 429:
        return "http-429"
    if page.status == 503:
        return "http-503-retry-after" if page.headers.get("retry-after") else None
    if page.status >= 500:
        return f"http-{page.status}"
    return None


def spa_shell(page: Page, max_visible_chars: int = 200) -> bool:
    """A small document whose visible text is near zero while a mount point or
    scripts are present: the content comes with JavaScript.  A page with
    ``__NEXT_DATA__`` *and* real text (server-rendered) is not a shell."""
    if not page.is_html or page.status != 200:
        return False
    if max_visible_chars < DENIAL_MAX_CHARS:
        # Exact up to DENIAL_MAX_CHARS, and above it when the text goes on.
        visible = len(page.visible_head)
    else:
        visible = visible_text_chars(page.html, limit=max_visible_chars)
    if visible > max_visible_chars:
        return False
    if _NEXT_DATA.search(page.html) and visible > 40:
        return False
    return bool(_MOUNT.search(page.html)) or bool(_SCRIPT.search(page.html))


def thin(page: Page, min_content_chars: int, other_browser_next: bool = False) -> bool:
    """Extracted main text below the minimum, or visible text outside the chrome
    below it (a shell's server-rendered menu is not its content, whatever an
    extractor makes of it), on a page where another engine could help: one that
    runs scripts, or, when *other_browser_next*, another browser (a server may
    answer each browser differently).  A static page without scripts is as thin
    in a browser as it was over HTTP."""
    if not page.is_html or page.status != 200 or page.text_chars is None:
        return False
    chars = _thin_chars(page)
    if chars is None or chars >= min_content_chars:
        return False
    return other_browser_next or bool(_SCRIPT.search(page.html))


def _thin_chars(page: Page) -> int | None:
    if page.content_chars is None or page.text_chars is None:
        return page.text_chars
    return min(page.text_chars, page.content_chars)


def navigation(
    text_chars: int, links: int, link_chars: int, content_chars: int, min_content_chars: int
) -> bool:
    """Whether a page is made of its links: at least :data:`HUB_MIN_LINKS` of them
    in its own area, their text at least :data:`HUB_LINK_SHARE` of that area's, and
    little else: the rest under :data:`HUB_MAX_PROSE_CHARS` or the extracted main
    text (*text_chars*) under *min_content_chars*."""
    if links < HUB_MIN_LINKS or link_chars < HUB_LINK_SHARE * content_chars:
        return False
    return content_chars - link_chars <= HUB_MAX_PROSE_CHARS or text_chars < min_content_chars


def hub(page: Page, min_content_chars: int = 100) -> bool:
    """A navigation page (:func:`navigation`): its content is its links, and no
    engine adds to it."""
    if not page.is_html or page.status != 200 or page.text_chars is None:
        return False
    return navigation(
        page.text_chars,
        page.content_links,
        page.content_link_chars,
        page.content_chars or 0,
        min_content_chars,
    )


def judge(
    page: Page,
    min_content_chars: int = 100,
    prejudged: Verdict | None = None,
    other_browser_next: bool = False,
) -> Verdict:
    """The ladder's one question: is this real content, or should a stronger engine try?

    *prejudged* is :func:`prejudge`'s verdict on the same response, when it was
    already asked (by the extraction middleware): only the hub and thin checks
    are left.  *other_browser_next*: the next engine is a browser other than the
    one that rendered *page* (see :func:`thin`)."""
    verdict = prejudge(page) if prejudged is None else prejudged
    if verdict.kind != "ok":
        return verdict
    if hub(page, min_content_chars):
        return Verdict("hub", f"hub-{page.content_links}-links")
    if thin(page, min_content_chars, other_browser_next):
        return Verdict("thin", f"thin-{_thin_chars(page)}-chars")
    return OK


def prejudge(page: Page) -> Verdict:
    """Everything :func:`judge` decides without the main text: block (a denial
    included), transient, genuine, shell, or ``ok`` so far.  Cheap, so a block
    page or a shell is known before any extraction is spent on it."""
    reason = blocked(page)
    if reason is not None:
        return Verdict("blocked", reason)
    reason = transient(page)
    if reason is not None:
        return Verdict("transient", reason)  # backoff and RetryMiddleware, same engine
    if page.status in GENUINE_STATUSES or 300 <= page.status < 400:
        return Verdict("genuine", f"http-{page.status}")
    if spa_shell(page):
        return Verdict("shell", "spa-shell")
    return OK
