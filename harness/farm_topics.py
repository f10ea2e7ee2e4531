"""The farm's topical site and its crawler traps (served by harness.farm).

``/topics/``: sections (:data:`SECTIONS`), each with its own vocabulary, of
:data:`TOPIC_PAGES` pages linking to their section's next pages and to a few
others (:func:`topic_links`): a focused crawl should stay in its section.
``/trap/``: an endless calendar, relative links that nest forever and a
query-parameter explosion, which a crawl must not follow for ever.
"""

from __future__ import annotations

import random

from harness.farm_pages import Page, not_found

# -- a topical site: sections with their own vocabulary, cross-linked -----------------

SECTIONS = {
    "astronomy": "star planet telescope galaxy orbit comet nebula moon solar eclipse "
    "astronomer observatory constellation supernova asteroid cosmic light year",
    "cooking": "recipe oven flour butter sauce garlic onion simmer bake roast pan kitchen "
    "chef spice salt pepper dough",
    "gardening": "soil seed plant tomato compost water garden flower prune root leaf "
    "greenhouse mulch bloom harvest shovel",
    "finance": "market stock bond interest loan bank budget invest fund tax income "
    "dividend inflation credit savings portfolio",
    "sailing": "boat sail wind harbor anchor mast deck crew knot tide hull rudder "
    "navigation coast mooring keel",
    "music": "guitar piano chord melody rhythm song band concert note scale tempo drum "
    "orchestra harmony violin lyric",
}
TOPIC_PAGES = 40  # per section: /topics/<section>/<n>.html, plus /topics/<section>/index.html
FILLER = "the of and to in is that for on with as by at from this be are it an or was".split()


def topic_links(section: str, n: int) -> list[str]:
    """Deterministic links of a topical page: its section's next pages, and a few others."""
    rng = random.Random(f"{section}/{n}")
    names = list(SECTIONS)
    links = [f"/topics/{section}/{(n + k) % TOPIC_PAGES}.html" for k in (1, 2, 5)]
    for _ in range(4):
        other = rng.choice(names)
        links.append(f"/topics/{other}/{rng.randrange(TOPIC_PAGES)}.html")
    return links


def topic_page(rest: str) -> Page:
    if rest in {"", "index.html"}:
        hubs = "".join(
            f'<li><a href="/topics/{name}/index.html">{name.title()}</a></li>' for name in SECTIONS
        )
        return Page(
            f"<html><head><title>Topics</title></head><body><h1>All topics</h1>"
            f"<ul>{hubs}</ul></body></html>".encode()
        )
    section, _, name = rest.partition("/")
    if section not in SECTIONS:
        return not_found()
    vocabulary = SECTIONS[section].split()
    if name == "index.html":
        items = "".join(
            f'<li><a href="/topics/{section}/{n}.html">{vocabulary[n % len(vocabulary)].title()}'
            f" notes {n}</a></li>"
            for n in range(0, TOPIC_PAGES, 4)
        )
        return Page(
            f"<html><head><title>{section.title()}</title></head><body>"
            f"<h1>{section.title()}</h1><ul>{items}</ul></body></html>".encode()
        )
    try:
        n = int(name.removesuffix(".html"))
    except ValueError:
        return not_found()
    if not 0 <= n < TOPIC_PAGES:
        return not_found()
    rng = random.Random(f"{section}:{n}")
    title = f"{vocabulary[n % len(vocabulary)].title()} and {rng.choice(vocabulary)}"
    paragraphs = "".join(
        "<p>"
        + " ".join(
            rng.choice(vocabulary) if rng.random() < 0.4 else rng.choice(FILLER) for _ in range(80)
        )
        + ".</p>"
        for _ in range(5)
    )
    links = "".join(
        f'<li><a href="{href}">{href.split("/")[2]} page {href.split("/")[3][:-5]}</a></li>'
        for href in topic_links(section, n)
    )
    return Page(
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body><article>"
        f"<h1>{title}</h1>{paragraphs}</article><aside><h2>See also</h2><ul>{links}"
        f"</ul></aside></body></html>".encode()
    )


# -- crawler traps -------------------------------------------------------------------------


def trap_page(path: str, query: dict[str, list[str]]) -> Page:
    if path == "/trap/calendar":  # an endless calendar: every month links to the next
        year, month = (int(x) for x in query.get("month", ["2024-01"])[0].split("-"))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        nxt = f"/trap/calendar?month={year:04d}-{month:02d}"
        return Page(
            f'<html><body><h1>Calendar</h1><a href="{nxt}">next month</a></body></html>'.encode()
        )
    if path.startswith("/trap/loop/"):  # relative links that nest forever: a/a/a/...
        return Page(b'<html><body><a href="a/">deeper</a><a href="b/">other</a></body></html>')
    if path == "/trap/sort":  # query-parameter explosion: every page links to 5 variants
        n = int(query.get("p", ["0"])[0])
        links = "".join(
            f'<a href="/trap/sort?p={n * 5 + k}&amp;order=asc">v{k}</a>' for k in range(1, 6)
        )
        return Page(f"<html><body>{links}</body></html>".encode())
    if path == "/trap/index.html":
        return Page(
            b'<html><body><a href="/trap/calendar?month=2024-01">calendar</a>'
            b'<a href="/trap/loop/">loop</a><a href="/trap/sort?p=0">sort</a>'
            b"</body></html>"
        )
    return not_found()
