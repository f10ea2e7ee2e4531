"""The host's main-text element, learnt from the crawl (scrapy_focus.extract.container,
scrapy_focus.extract.templates): read in place of trafilatura where the host's pages
agree with it, never on hubs, and given up when an audit disagrees."""

from __future__ import annotations

import random
from pathlib import Path

import lxml.html

from harness.farm import Farm, FarmRequest
from harness.farm_pages import Page
from scrapy_focus.extract import container
from scrapy_focus.extract.options import ExtractOptions
from scrapy_focus.extract.page import Extraction, extract_page
from scrapy_focus.extract.templates import AGREEMENT, Templates
from tests.crawl import run_focus_crawl

ARTICLE = """<html><body>
<nav><a href="/">Home</a> <a href="/a">About</a></nav>
<div class="document"><div role="main" class="body">
<h1>Comets</h1><p>Comets   have
tails of <b>gas</b> and <a href="/dust">dust</a>.</p>
<pre>orbit = ellipse(a, e)
period = 2 * pi</pre>
<ul><li>Halley</li><li>Encke</li></ul>
<table><tr><th>name</th><th>period</th></tr><tr><td>Halley</td><td>76 <i>years</i></td></tr></table>
<p hidden>draft note</p><div style="display: none">hidden too</div>
<script>var tracking = 1;</script>
<ul class="toc"><li><a href="/1">One</a></li><li><a href="/2">Two</a></li>
<li><a href="/3">Three</a></li></ul>
</div></div>
<div class="sidebar"><a href="/x">Next topic</a></div>
</body></html>"""


def _tree(html: str) -> lxml.html.HtmlElement:
    return lxml.html.document_fromstring(html)


def test_an_element_reads_as_markdown_and_text_without_what_is_never_main_text():
    element = container.select(_tree(ARTICLE), "//div[@role='main']")
    assert element is not None
    rendered = container.render(element)
    assert rendered.markdown.splitlines()[:2] == ["# Comets", ""]
    assert "Comets have tails of **gas** and dust." in rendered.markdown
    assert "```\norbit = ellipse(a, e)\nperiod = 2 * pi\n```" in rendered.markdown
    assert "- Halley\n" in rendered.markdown
    assert "| name | period |" in rendered.markdown
    assert "| Halley | 76 *years* |" in rendered.markdown
    assert "Comets have tails of gas and dust." in rendered.text
    assert "| Halley | 76 years |" in rendered.text
    for absent in ("draft note", "hidden too", "tracking", "One", "Home", "Next topic"):
        assert absent not in rendered.markdown
    # the table of contents was left out, and counted: here less than the text
    assert rendered.listed_chars == len("OneTwoThree")
    assert not rendered.index_like


def test_a_gallery_of_links_is_left_out_and_an_item_starting_with_a_block_reads_as_one():
    gallery = "".join(
        f'<div class="thumb"><a href="/e/{n}.html"><img src="t.png">Example {n}</a></div>'
        for n in range(6)
    )
    html = (
        '<html><body><div id="main"><dl><dt>load()</dt><dd><p>Load the data.</p>'
        "<dl><dt>Parameters:</dt><dd><p>size, an integer.</p></dd></dl></dd></dl>"
        f'<h2>Examples using load</h2><div class="gallery">{gallery}</div></div></body></html>'
    )
    rendered = container.render(container.select(_tree(html), "//div[@id='main']"))
    assert "Example 1" not in rendered.text
    assert rendered.listed_chars == len("".join(f"Example{n}" for n in range(6)))
    assert "- load()\n- Load the data." in rendered.text
    assert "- Parameters:\n- size, an integer." in rendered.text


def test_an_element_that_is_mostly_links_reads_as_an_index():
    links = "".join(f'<li><a href="/{n}">Function number {n}</a></li>' for n in range(30))
    hub = f'<html><body><div id="main"><h1>Index</h1><ul>{links}</ul></div></body></html>'
    rendered = container.render(container.select(_tree(hub), "//div[@id='main']"))
    assert rendered.index_like
    table = "".join(f'<tr><td><a href="/{n}">entry {n}</a></td></tr>' for n in range(30))
    index = f'<html><body><div id="main"><p>All.</p><table>{table}</table></div></body></html>'
    assert container.render(container.select(_tree(index), "//div[@id='main']")).index_like


def test_select_names_one_element_or_nothing():
    tree = _tree(ARTICLE)
    assert container.select(tree, "//div[@role='main']") is not None
    assert container.select(tree, "//div") is None  # several
    assert container.select(tree, "//article") is None  # none
    assert container.select(tree, "//div[@role=") is None  # not an XPath
    assert container.select(tree, "count(//div)") is None  # not an element


def test_the_elements_holding_the_main_text_are_named_deepest_first():
    html = ARTICLE.replace("<h1>Comets</h1>", '<section id="comets-1234"><h1>Comets</h1>', 1)
    html = html.replace("<script>", "</section><script>", 1)
    tree = _tree(html)
    text = "Comets. Comets have tails of gas and dust. orbit = ellipse(a, e) period = 2 * pi"
    found = container.candidates(tree, text)
    names = [name for name, _ in found]
    # a generated id names no element on another page; the element's other names, and
    # its ancestors', do
    assert names == ["//div[@role='main']", "//div[@class='body']", "//div[@class='document']"]
    scores = dict(found)
    assert scores["//div[@role='main']"] > 0.8 > scores["//div[@class='document']"] - 0.2
    assert container.candidates(tree, "") == []
    assert container.agreement("a b c", "a b c") == 1.0
    assert container.agreement("A, b!", "a b") == 1.0  # words, case aside
    assert container.agreement("x", "a b") == 0.0


def _each_rendered(tree: lxml.html.HtmlElement, text: str) -> list[tuple[str, float]]:
    """What candidates() says, each element of the chain rendered and scored on its own."""
    found = []
    for element, names in container.find(tree, text):
        rendered = container.render(element)
        if not rendered.index_like:
            score = round(container.agreement(rendered.text, text), 4)
            found.extend((name, score) for name in names)
    return found


def test_a_wrapper_that_adds_nothing_reads_as_the_element_it_wraps():
    article = "<h1>Comets</h1><p>" + " ".join(_prose(1)) + "</p><p>" + " ".join(_prose(2)) + "</p>"
    text = "Comets " + " ".join(_prose(1)) + " " + " ".join(_prose(2))
    wrapped = (
        '<html><body><div class="document">\n <div class="body">\n'
        '  <div role="main"><section id="comets">{article}</section></div>\n'
        "  <!-- a comment --> <nav><a href='/'>Home</a></nav> <script>x = 1</script>\n"
        " {extra}</div>\n</div></body></html>"
    )
    extras = {  # what follows the main text in div.body → the distinct scores of the chain
        "": 1,  # the three elements read alike: one walk
        "<p>Copyright: the comet society, all rights reserved.</p>": 2,  # the body's own text
    }
    for extra, distinct in extras.items():
        tree = _tree(wrapped.format(article=article, extra=extra))
        chain = container.find(tree, text)
        assert [names[0] for _, names in chain][:3] == [
            "//section[@id='comets']",
            "//div[@role='main']",
            "//div[@class='body']",
        ]
        found = container.candidates(tree, text)
        assert found == _each_rendered(tree, text)
        scores = [score for _, score in found]
        assert len(set(scores)) == distinct, (extra, found)
        # a wrapper's own text, a sibling that renders, or a heading is no wrapper
        section, main = chain[0][0], chain[1][0]
        assert container._wraps(main, section)
        main.text = "Read first: "
        assert not container._wraps(main, section)
        assert container.candidates(tree, text) == _each_rendered(tree, text)


def _learnt(*scores: float, name: str = "//main") -> Extraction:
    return Extraction(url="", containers=[(name, score) for score in scores])


def test_a_name_is_a_template_after_three_agreeing_pages_in_a_row():
    templates, options = Templates(), ExtractOptions()
    url = "http://docs.example/page.html"
    assert templates.options_for(url, options) == options  # the host's first page
    for score in (0.99, 0.98, 0.5, 0.99, 0.98):
        assert templates.options_for(url, options).learn_template
        assert templates.learn(url, _learnt(score)).event is None
    assert templates.options_for(url, options).template is None
    assert templates.learn(url, _learnt(0.97)).event == "confirmed"
    assert templates.options_for(url, options).template == "//main"
    assert templates.template("http://DOCS.example/other") == "//main"  # per host
    assert templates.template("https://docs.example/") is None  # another origin
    # the innermost of the names confirmed together
    other = "http://b.example/"
    both = Extraction(url="", containers=[("//div[@id='b']", 0.99), ("//main", 0.99)])
    for _ in range(4):
        templates.options_for(other, options)
        templates.learn(other, both)
    assert templates.template(other) == "//div[@id='b']"


def test_pages_that_say_nothing_do_not_break_a_streak():
    templates, options, url = Templates(), ExtractOptions(), "http://docs.example/"
    templates.options_for(url, options)
    for extraction in (_learnt(0.99), Extraction(url=""), _learnt(0.99), _learnt(0.99)):
        templates.options_for(url, options)
        templates.learn(url, extraction)
    assert templates.template(url) == "//main"


def _confirmed(url: str = "http://docs.example/") -> Templates:
    """A learner whose host of *url* has just confirmed ``//main`` (audits every 8)."""
    templates = Templates(audit_every=8)
    templates.options_for(url, ExtractOptions())
    for _ in range(3):
        templates.options_for(url, ExtractOptions())
        templates.learn(url, _learnt(0.99))
    assert templates.template(url) == "//main"
    return templates


def test_audits_come_less_often_while_they_agree_and_a_disagreeing_one_ends_the_template():
    templates, options, url = _confirmed(), ExtractOptions(), "http://docs.example/"
    audits = []
    for page in range(1, 200):
        sent = templates.options_for(url, options)
        assert sent.learn_template
        if sent.template is None:
            audits.append(page)
            assert templates.learn(url, _learnt(0.99)).event is None
        else:
            assert templates.learn(url, Extraction(url="", container=sent.template)).event is None
    assert audits == [8, 16, 32, 64, 128, 192]
    # an audit where the element disagrees ends the template; the host learns again
    assert templates.learn(url, _learnt(0.6)).event == "revoked"
    assert templates.template(url) is None
    assert templates.options_for(url, options).learn_template


def test_a_host_that_never_agrees_is_learnt_from_less_and_hosts_are_bounded():
    templates, options, url = Templates(confirm=3, audit_every=8), ExtractOptions(), "http://x/"
    learnt = 0
    for _ in range(100):
        if templates.options_for(url, options).learn_template:
            learnt += 1
            templates.learn(url, _learnt(0.5))
    assert learnt == 12 + len(range(16, 101, 8))  # pages 2-13, then one in 8
    bounded = Templates(max_hosts=2)
    for host in ("a", "b", "c"):
        bounded.options_for(f"http://{host}/", options)
        bounded.options_for(f"http://{host}/", options)
        bounded.learn(f"http://{host}/", _learnt(0.99))
    assert len(bounded._hosts) == 2


# -- a real crawl -----------------------------------------------------------------

TOPIC = "comets and their orbits"
PAGES = 40
CHANGE = 14  # from this page on, the main text moves out of the learnt element
ORDERED = 8  # the crawl's first dispatches, in order: their template chosen at dispatch
_WORDS = (
    "comet orbit tail nucleus coma perihelion aphelion dust ice gas sun planet ellipse "
    "period halley encke jupiter observer telescope night bright faint return century"
).split()


def _prose(n: int, paragraphs: int = 4) -> list[str]:
    rng = random.Random(n)
    return [
        " ".join(rng.choice(_WORDS) for _ in range(40)).capitalize() + "."
        for _ in range(paragraphs)
    ]


def _page(n: int) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in _prose(n))
    nxt = (
        f'<p><a href="/c/{n + 1}.html">Comet orbits, part {n + 1}</a></p>' if n + 1 < PAGES else ""
    )
    sidebar = "".join(f'<li><a href="#side-{k}">Side topic {k}</a></li>' for k in range(12))
    main = f"<h1>Comet orbits, part {n}</h1>{body}{nxt}"
    if n >= CHANGE:  # the layout changes: the learnt element now holds a teaser alone
        main = f"<h1>Part {n}</h1><p>Read the article below.</p></div><article>{main}</article>"
        main += '<div class="spacer">'
    return (
        f"<!DOCTYPE html><html><head><title>Comets {n}</title></head><body>"
        f'<header><a href="#top">Comets home</a></header><div class="page">'
        f'<div role="main">{main}</div><ul class="side">{sidebar}</ul></div>'
        f"<footer>Copyright the comet society</footer></body></html>"
    ).encode()


def _route(request: FarmRequest) -> Page | None:
    if request.path.startswith("/c/") and request.path.endswith(".html"):
        n = int(request.path[3:-5])
        return Page(_page(n)) if 0 <= n < PAGES else None
    return None


def test_a_crawl_reads_its_pages_from_the_learnt_element_until_an_audit_disagrees(
    tmp_path: Path,
):
    settings = {
        "CONCURRENT_REQUESTS": 1,
        "DOWNLOAD_DELAY": 0,
        "FOCUS_MAX_PAGES": PAGES + 5,
        "FOCUS_EXTRACT_WORKERS": 1,
        "FOCUS_MIN_CONFIDENCE": 0.0,
        "FOCUS_EXTRACT_TEMPLATES": True,
        "FOCUS_ORDERED_START": ORDERED,
    }
    with Farm(route=_route) as farm:
        result = run_focus_crawl(tmp_path, [farm.url("/c/0.html")], TOPIC, settings)
        prefix = farm.url("/c/")
    assert result.returncode == 0, result.log[-3000:]
    pages = {int(item["url"].removeprefix(prefix)[:-5]): item for item in result.items}
    assert sorted(pages) == list(range(PAGES)), sorted(pages)
    stats = result.stats
    # confirmed on the first pages, ended by the audit after the layout changed, and
    # learnt again (the article now)
    assert stats["focus/extract/templates/confirmed"] == 2
    assert stats["focus/extract/templates/revoked"] == 1
    # One page at a time, so the count is exact. Page 0's template is chosen when it is
    # handed out, as the host's first page (nothing to agree with); robots.txt's 404 page,
    # no dispatch, is trafilatura's and neither counted nor learnt from while the order
    # is kept; confirmed on pages 1-3, at page 3's turn, so that page 4, the ordered
    # start's too, is read from the element: the ordered start's pages are chosen for at
    # their dispatch, from the pages learnt so far, so they may be read. Templated: 4-10,
    # 11 the 8th page (an audit: it agrees), 12-13; on 14-18 the element holds a teaser
    # too short to read (trafilatura's text, which says nothing for or against the
    # template); 19 the 16th page, an audit (it disagrees, and the article agrees: the
    # first of three), 20-21 learnt, 22-39 templated but the audits at 29 and 37.
    assert stats["focus/extract/templated"] == 9 + 16
    for n, item in pages.items():
        text = item["markdown"]
        reference = extract_page(_page(n), item["url"], "text/html").markdown
        assert container.agreement(text, reference) >= AGREEMENT, (n, text[:200])
        assert all(paragraph in text for paragraph in _prose(n)), n
        assert "Side topic" not in text and "Copyright" not in text
    # the last pages were read from the element learnt after the change
    assert pages[PAGES - 1]["markdown"].startswith(f"# Comet orbits, part {PAGES - 1}")


BRANCHES = 30  # pages of a tree: page n links to 2n+1 and 2n+2


def _tree_page(n: int) -> bytes:
    # a paragraph of a link, which the element reads and trafilatura leaves out
    links = "".join(
        f'<p><a href="/t/{k}.html">Comet orbits, part {k}</a></p>'
        for k in ((n - 1) // 2, 2 * n + 1, 2 * n + 2)
        if 0 <= k < BRANCHES and k != n
    )
    body = "".join(f"<p>{p}</p>" for p in _prose(n))
    return (
        f"<!DOCTYPE html><html><head><title>Comets {n}</title></head><body>"
        f'<header><a href="#top">Comets home</a></header><div class="page">'
        f'<div role="main"><h1>Comet orbits, part {n}</h1>{body}{links}</div>'
        f"</div><footer>Copyright the comet society</footer></body></html>"
    ).encode()


def _tree_route(pattern: int):
    """The comet pages as a tree, each answered after 0-80 ms that *pattern* shuffles:
    two runs see their responses, and so their extractions, finish in other orders."""

    def route(request: FarmRequest) -> Page | None:
        if not (request.path.startswith("/t/") and request.path.endswith(".html")):
            return None
        n = int(request.path[3:-5])
        if not 0 <= n < BRANCHES:
            return None
        return Page(_tree_page(n), delay=0.02 * ((n * 7 + pattern * 3) % 5))

    return route


def _tree_crawl(tmp_path: Path, pattern: int) -> tuple[list[str], set[str]]:
    """The pages in the order they were read, and those read from the element (whose
    Markdown is not trafilatura's)."""
    settings = {
        "CONCURRENT_REQUESTS": 4,
        "DOWNLOAD_DELAY": 0,
        "FOCUS_EXTRACT_WORKERS": 2,
        "FOCUS_MIN_CONFIDENCE": 0.0,
        "FOCUS_EXTRACT_TEMPLATES": True,
        "FOCUS_ORDERED_START": 64,  # every page of the crawl
    }
    workdir = tmp_path / f"run-{pattern}"
    workdir.mkdir()
    with Farm(route=_tree_route(pattern)) as farm:
        result = run_focus_crawl(workdir, [farm.url("/t/0.html")], TOPIC, settings)
        prefix = farm.base
    assert result.returncode == 0, result.log[-3000:]
    assert "focus/order/forced" not in result.stats
    order = [item["url"].removeprefix(prefix) for item in result.items]
    read = set()
    for item in result.items:
        path = item["url"].removeprefix(prefix)
        body = _tree_page(int(path[3:-5]))
        if item["markdown"] != extract_page(body, item["url"], "text/html").markdown:
            read.add(path)
    return order, read


def test_in_the_ordered_start_the_element_reads_the_same_pages_whatever_finishes_first(
    tmp_path: Path,
):
    # The template is chosen for a page when it is handed out, and learnt from at each
    # page's turn: which pages the element reads is the evidence's, not the timing's.
    first_order, first_read = _tree_crawl(tmp_path, 1)
    second_order, second_read = _tree_crawl(tmp_path, 2)
    assert len(first_order) == BRANCHES
    assert first_order == second_order
    assert first_read == second_read
    assert len(first_read) >= BRANCHES // 2, sorted(first_read)


def test_the_worker_reads_the_template_and_falls_back_to_trafilatura_without_it():
    body, main = _page(3), "//div[@role='main']"
    learning = extract_page(body, "http://x/", "text/html", ExtractOptions(learn_template=True))
    assert learning.container is None
    assert dict(learning.containers)[main] >= AGREEMENT
    read = extract_page(body, "http://x/", "text/html", ExtractOptions(template=main))
    assert read.container == main
    assert read.markdown.startswith("# Comet orbits, part 3\n\n" + _prose(3)[0])
    assert read.title == learning.title and read.page_text_chars == learning.page_text_chars
    missing = extract_page(body, "http://x/", "text/html", ExtractOptions(template="//article"))
    assert missing.container is None and missing.text == learning.text
    # as the crawl sends it (learning on): a page the element could not read says nothing
    # for or against the template, so there is nothing to learn from it
    sent = ExtractOptions(template="//article", learn_template=True)
    assert extract_page(body, "http://x/", "text/html", sent).containers == []
    # a short text is trafilatura's to judge
    short = body.replace(" ".join(_prose(3)[1:]).encode(), b"")
    for paragraph in _prose(3)[1:]:
        short = short.replace(f"<p>{paragraph}</p>".encode(), b"")
    assert extract_page(short, "http://x/", None, ExtractOptions(template=main)).container is None


def test_templates_are_on_by_default_with_a_reproducible_order_too():
    from scrapy.settings import Settings

    from scrapy_focus.config import FocusConfig

    assert FocusConfig.from_settings(Settings()).extract.templates
    off = Settings({"FOCUS_EXTRACT_TEMPLATES": False})
    assert not FocusConfig.from_settings(off).extract.templates
    ordered = Settings({"FOCUS_REPRODUCIBLE_ORDER": True})
    assert FocusConfig.from_settings(ordered).extract.templates
