"""The judgement's hub, denial and browser rules, as pure functions: each both ways."""

from __future__ import annotations

from dataclasses import replace

from harness.hostile import article_page
from harness.hostile_judge import DENIED_PAGE, UNWORDED_PAGE, app_shell, toc_hub, toc_index
from scrapy_focus.contract import ContractRules, rejection
from scrapy_focus.engines.detect import (
    DENIAL_MAX_CHARS,
    HUB_MIN_LINKS,
    Page,
    blocked,
    denial,
    hub,
    judge,
    prejudge,
)
from scrapy_focus.engines.judge import measured
from scrapy_focus.extract.page import extract_page
from scrapy_focus.items import PageItem


def extracted(html: str, status: int = 200) -> Page:
    """The page as the ladder judges it: decoded, and measured by a real extraction."""
    extraction = extract_page(html.encode(), "http://farm.test/page.html", "text/html")
    return measured(Page(status, {}, html), extraction)


def toc_page(links: int, prose: str = "One sentence of prose before the contents below.") -> str:
    items = "".join(
        f"<li><a href='/guide/{n}.html'>Chapter {n}: setting up the crawl</a></li>"
        for n in range(links)
    )
    return (
        "<html><head><title>Contents</title><script src='/s.js'></script></head><body>"
        "<nav><a href='/'>Home</a> <a href='/about'>About</a></nav>"
        f"<main><h1>Contents</h1><p>{prose}</p><ul>{items}</ul></main></body></html>"
    )


# -- hubs


def test_a_table_of_contents_of_dozens_of_links_is_a_hub_and_final():
    verdict = judge(extracted(toc_hub(1)))
    assert verdict.kind == "hub"
    assert not verdict.escalate


def test_a_hub_whose_list_the_extractor_dropped_is_a_hub_not_thin():
    page = replace(extracted(toc_hub(1)), text_chars=80)  # the title and the sentence
    assert judge(page).kind == "hub"
    assert judge(page, other_browser_next=True).kind == "hub"


def test_the_farm_manuals_hubs_are_hubs_and_its_index_with_prose_is_an_article():
    assert all(judge(extracted(toc_hub(k))).kind == "hub" for k in range(1, 7))
    assert judge(extracted(toc_index())).kind == "ok"


def test_a_few_links_are_no_hub_but_dozens_are():
    assert not hub(extracted(toc_page(HUB_MIN_LINKS - 5)))
    assert hub(extracted(toc_page(HUB_MIN_LINKS + 5)))


def test_a_table_of_contents_in_a_nav_of_the_main_text_is_a_hub():
    # Documentation themes often wrap the contents of a section page in <nav class="toc">
    # inside <main>: the page's own links, not the site's chrome.
    page = toc_page(HUB_MIN_LINKS + 5).replace("<ul>", "<nav class='toc'><ul>", 1)
    page = page.replace("</ul></main>", "</ul></nav></main>")
    assert judge(extracted(page)).kind == "hub"
    # The same list in a <nav> outside the main text is the site's menu: no hub.
    outside = page.replace("<main>", "<div>").replace("</main>", "</div>")
    assert not hub(extracted(outside))


def test_a_shell_whose_only_links_are_its_server_rendered_nav_is_no_hub_and_escalates():
    page = extracted(app_shell(1))
    assert page.content_links == 0  # every link sits in the <nav>
    assert not hub(page)
    assert judge(page).kind == "thin"
    assert judge(page).escalate


def test_an_article_with_many_links_in_its_text_is_no_hub():
    links = "".join(f" <a href='/ref/{n}'>reference {n}</a>" for n in range(30))
    html = article_page(3, extra_body=f"<p>See also:{links}</p>")
    assert judge(extracted(html)).kind == "ok"


def test_a_long_introduction_above_the_links_makes_an_ordinary_page():
    prose = " ".join(["The guides below were written for readers new to the crawler."] * 8)
    assert not hub(extracted(toc_page(30, prose)))


def test_a_hub_not_extracted_or_not_200_is_no_hub():
    page = extracted(toc_hub(2))
    assert hub(page)
    assert not hub(Page(200, {}, page.html))  # no extraction: nothing measured
    assert not hub(Page(404, {}, page.html, page.text_chars, True, 30, 900, 1000))


def test_the_contract_rejects_a_hub_as_hub_and_a_short_page_as_too_short():
    rules = ContractRules()
    for html, reason in (
        (toc_hub(3), "hub"),
        ("<html><body><p>Short.</p></body></html>", "too-short"),
    ):
        extraction = extract_page(html.encode(), "http://farm.test/p.html", "text/html")
        item = PageItem(
            url="http://farm.test/p.html", final_url="http://farm.test/p.html", status=200
        )
        item.extraction = extraction  # type: ignore[misc]
        assert rejection(item, rules) == reason


# -- denials


def test_a_short_access_denied_page_is_blocked_whatever_its_status():
    for status in (200, 401, 404):
        assert blocked(Page(status, {}, DENIED_PAGE)) == "denied-access-denied"
        assert prejudge(Page(status, {}, DENIED_PAGE)).escalate


def test_denials_in_their_common_phrasings():
    phrasings = {
        "<title>Forbidden</title><p>Go away.</p>": "Forbidden",
        "<title>Attention Required</title><h1>Sorry, you have been blocked</h1>": "blocked",
        "<h1>Unsupported browser</h1><p>Please use another browser.</p>": "Unsupported browser",
        "<title>Check</title><p>Verify you are human to go on.</p>": "verify you are human",
        "<h2>Request blocked</h2><p>Reference #18.2f</p>": "Request blocked",
        "<title>Error</title><p>Your browser is not supported.</p>": "browser is not supported",
    }
    for body, phrase in phrasings.items():
        found = denial(Page(200, {}, f"<html><head></head><body>{body}</body></html>"))
        assert found is not None and phrase.lower() in found.lower(), body


def test_a_long_article_that_speaks_of_access_denied_is_not_blocked():
    marker = (
        "<p>When the server says Access denied, you have been blocked: verify you are human.</p>"
    )
    html = article_page(7, marker=marker).replace("<h1>", "<h1>Access denied: ", 1)
    assert len(html) > DENIAL_MAX_CHARS
    assert denial(Page(200, {}, html)) is None
    assert prejudge(Page(200, {}, html)).kind == "ok"


def test_a_title_that_merely_contains_a_denial_word_is_no_denial():
    html = "<html><head><title>The Forbidden City</title></head><body><h1>The Forbidden City</h1>"
    html += "<p>A palace complex in Beijing.</p></body></html>"
    assert denial(Page(200, {}, html)) is None


def test_a_redirect_body_is_no_denial():
    assert denial(Page(302, {}, DENIED_PAGE)) is None


# -- a thin page and the next browser


def test_a_thin_page_without_scripts_goes_on_only_to_another_browser():
    page = extracted(UNWORDED_PAGE)
    assert judge(page).kind == "ok"  # from HTTP to Chromium: as thin in a browser
    assert judge(page, other_browser_next=True).kind == "thin"


def test_an_article_is_no_thinner_for_another_browser():
    assert judge(extracted(article_page(4)), other_browser_next=True).kind == "ok"
