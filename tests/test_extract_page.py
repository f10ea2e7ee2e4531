"""extract_page: main text, metadata, structured data; bounded; never raises on bad input."""

from __future__ import annotations

import gzip
import json
import pickle
import re
import time
from pathlib import Path

import pytest

from scrapy_focus.extract.page import Extraction, ExtractOptions, extract_page

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
URL = "https://example.org/2024/05/a-story"

PROSE = (
    "The river had been rising for three days before anyone in the valley took it seriously. "
    "Farmers moved their animals to higher ground, and the school closed early on Thursday. "
    "By the weekend the old bridge was under water and the town council met in the church hall."
)


def page(*, head: str = "", body: str = "", lang: str = "en") -> bytes:
    paragraphs = "".join(f"<p>{PROSE} ({n})</p>" for n in range(6))
    return (
        f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8">{head}</head><body>'
        '<nav><a href="/">Home</a> <a href="/news">News</a> <a href="/about">About us</a></nav>'
        f"<article><h1>Flood in the valley</h1>{paragraphs}{body}</article>"
        "<footer>Copyright 2024 Valley Times. All rights reserved.</footer></body></html>"
    ).encode()


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def ld(raw: str) -> str:
    return f'<script type="application/ld+json">{raw}</script>'


def test_main_text_and_markdown_exclude_navigation_and_footer() -> None:
    result = extract_page(page(), URL)
    assert result.skipped is None
    assert PROSE in result.text
    assert "About us" not in result.text
    assert "All rights reserved" not in result.text
    assert PROSE in result.markdown
    assert result.text_chars == len(result.text)


def test_metadata_fields() -> None:
    head = (
        "<title>Flood in the valley | Valley Times</title>"
        '<meta name="author" content="Ann Reporter">'
        '<meta name="description" content="Three days of rain and a bridge under water.">'
        '<meta property="og:site_name" content="Valley Times">'
        '<meta property="og:type" content="article">'
        '<meta property="article:published_time" content="2024-05-17T08:00:00Z">'
    )
    result = extract_page(page(head=head, lang="en-GB"), URL)
    assert result.title == "Flood in the valley"
    assert result.author == "Ann Reporter"
    assert result.date == "2024-05-17"
    assert result.description == "Three days of rain and a bridge under water."
    assert result.sitename == "Valley Times"
    assert result.language == "en"
    assert result.opengraph["og:type"] == "article"
    assert "Flood in the valley" in result.headings


def test_page_measures() -> None:
    result = extract_page(page(), URL)
    assert result.page_text_chars > result.text_chars * 0.9
    assert 0 < result.link_text_chars < 30  # "Home", "News", "About us"
    assert 0 < result.link_density < 0.05
    assert result.paragraphs == 6
    assert result.paragraph_text_chars >= 6 * len(PROSE)
    assert result.boilerplate_text_chars >= len("HomeNewsAbout us") + len("Copyright 2024")
    assert result.elements > 15
    assert not result.truncated


def test_json_ld_well_formed_and_graph() -> None:
    head = ld('{"@context": "https://schema.org", "@type": "NewsArticle", "headline": "Flood"}')
    head += ld('[{"@type": "Organization", "name": "Valley Times"}, {"@type": "WebPage"}]')
    result = extract_page(page(head=head), URL)
    assert [item["@type"] for item in result.json_ld] == ["NewsArticle", "Organization", "WebPage"]
    assert result.json_ld_errors == 0


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"@type": "Article", "name": "x",}', "Article"),  # trailing comma
        ('{"@type": "Article", "keywords": ["a", "b",],}', "Article"),
        ('<!-- {"@type": "Article"} -->', "Article"),  # HTML comment wrapper
        ('/* generated */ {"@type": "Article"}', "Article"),  # block comment
        ('{\n  // the page\n  "@type": "Article"\n}', "Article"),  # line comment
        ('{"@type": "Article", "description": "line one\nline two\ttab"}', "Article"),
        ('{"@type": "Article"};', "Article"),  # trailing semicolon
        ('{"@type": "Article"} {"@type": "Person"}', "Article"),  # two values back to back
        ('<![CDATA[{"@type": "Article"}]]>', "Article"),
    ],
)
def test_broken_json_ld_is_repaired(raw: str, expected: str) -> None:
    result = extract_page(page(head=ld(raw)), URL)
    assert result.json_ld and result.json_ld[0]["@type"] == expected
    assert result.json_ld_errors == 0


def test_unrepairable_json_ld_is_counted_and_the_rest_kept() -> None:
    head = ld('{"@type": "Article", "name": ') + ld("var x = 1;") + ld("")
    head += ld('{"@type": "Person", "name": "Ann"}')
    result = extract_page(page(head=head), URL)
    assert result.json_ld == [{"@type": "Person", "name": "Ann"}]
    assert result.json_ld_errors == 2  # the empty block is not an error
    assert PROSE in result.text


def test_microdata_items() -> None:
    body = (
        '<div itemscope itemtype="https://schema.org/Product">'
        '<span itemprop="name">Rain boots</span>'
        '<a itemprop="url" href="https://example.org/boots">boots</a>'
        '<div itemprop="offers" itemscope itemtype="https://schema.org/Offer">'
        '<meta itemprop="price" content="39.90"><span itemprop="priceCurrency">EUR</span></div>'
        '<span itemprop="color">red</span><span itemprop="color">yellow</span></div>'
    )
    result = extract_page(page(body=body), URL)
    assert result.microdata == [
        {
            "@type": "https://schema.org/Product",
            "name": "Rain boots",
            "url": "https://example.org/boots",
            "offers": {
                "@type": "https://schema.org/Offer",
                "price": "39.90",
                "priceCurrency": "EUR",
            },
            "color": ["red", "yellow"],
        }
    ]


@pytest.mark.parametrize("body", [b"", b"   \n\t ", b"<!-- nothing -->"])
def test_empty_input_yields_an_empty_extraction(body: bytes) -> None:
    result = extract_page(body, URL)
    assert result.text == "" and result.markdown == ""
    assert result.skipped is not None or result.text_chars == 0


@pytest.mark.parametrize(
    "body",
    [
        bytes(range(256)) * 64,
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nstream\n\x00\x01\x02\x03" * 50,
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00" * 100,
    ],
)
def test_binary_garbage_is_not_html(body: bytes) -> None:
    result = extract_page(body, URL)
    assert result.skipped == "not-html"
    assert result.text == ""


@pytest.mark.parametrize("content_type", ["application/pdf", "image/png", "application/json"])
def test_non_html_content_type_is_skipped(content_type: str) -> None:
    result = extract_page(page(), URL, content_type)
    assert result.skipped == "not-html"


@pytest.mark.parametrize(
    "content_type", [None, "", "text/html", "text/html; charset=utf-8", "application/xhtml+xml"]
)
def test_html_content_types_are_extracted(content_type: str | None) -> None:
    assert PROSE in extract_page(page(), URL, content_type).text


def test_text_garbage_and_broken_markup_do_not_raise() -> None:
    for body in (
        b"<<<>>><html><body><p>unclosed <b><i><div></p></span>" + PROSE.encode() * 3,
        b"just some words without any markup at all, " * 20,
        b"<html><body>" + b"<td>" * 500 + b"</body>",
        b"\xff\xfe<\x00h\x00t\x00m\x00l\x00>",
    ):
        result = extract_page(body, URL)
        assert isinstance(result, Extraction)


def test_oversized_body_is_not_extracted() -> None:
    body = page(body="<p>" + "word " * 50_000 + "</p>")
    result = extract_page(body, URL, options=ExtractOptions(max_html_bytes=100_000))
    assert result.skipped == "oversized"
    assert result.text == ""


def test_huge_tree_is_bounded() -> None:
    cells = "".join(f"<div><span>item {n}</span></div>" for n in range(40_000))
    body = page(body=cells)
    started = time.perf_counter()
    result = extract_page(body, URL, options=ExtractOptions(max_tree_size=2_000))
    assert time.perf_counter() - started < 10
    assert result.elements > 80_000
    assert result.truncated
    assert PROSE in result.text  # the start of the page survives the bound
    assert "item 39999" not in result.text


def test_deep_tree_is_bounded_and_does_not_raise() -> None:
    body = page(body="<div>" * 20_000 + "deep" + "</div>" * 20_000)
    result = extract_page(body, URL)
    assert result.skipped is None
    assert PROSE in result.text


def test_extraction_round_trips_through_dict_and_pickle() -> None:
    result = extract_page(page(head=ld('{"@type": "Article"}')), URL)
    assert Extraction.from_dict(result.to_dict()) == result
    assert Extraction.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    assert pickle.loads(pickle.dumps(result)) == result
    assert Extraction.from_dict({"url": URL, "no_such_field": 1}).url == URL


@pytest.mark.skipif(not DATA.exists(), reason="shared/data not laid out")
def test_real_pages_text_and_metadata_match_the_ground_truth() -> None:
    with gzip.open(DATA / "wcxb-dev" / "ground-truth.jsonl.gz", "rt") as lines:
        rows = [json.loads(line) for line, _ in zip(lines, range(12), strict=False)]
    articles = [row for row in rows if row["page_type"] == "article" and row["title"]][:6]
    assert len(articles) == 6
    dates = authors = 0
    for row in articles:
        html = DATA / "wcxb-dev" / "html" / f"{row['file_id']}.html.gz"
        result = extract_page(gzip.decompress(html.read_bytes()), row["url"])
        assert result.skipped is None
        opening = " ".join(_words(row["main_content"])[:10])  # quotes differ, words do not
        assert opening in " ".join(_words(result.text)), row["file_id"]
        assert len(set(_words(row["title"])) & set(_words(result.title or ""))) >= 3
        assert " | " not in (result.title or "")  # the site's name is not part of the title
        dates += result.date == row["publish_date"]
        authors += set(_words(row["author"] or "")) == set(_words(result.author or ""))
    assert dates >= 5
    assert authors >= 5


# -- speed or completeness: what the faster paths leave as it was ------------------------


def test_metadata_not_asked_for_is_not_looked_for() -> None:
    head = (
        '<title>Flood in the valley | Valley Times</title><meta name="author" content="Ada Byron">'
        '<meta name="description" content="The river rose.">'
        '<meta property="article:published_time" content="2024-05-02">'
    )
    full = extract_page(page(head=head), URL)
    assert (full.author, full.date, full.description) == (
        "Ada Byron",
        "2024-05-02",
        "The river rose.",
    )
    title_only = extract_page(
        page(head=head), URL, options=ExtractOptions(metadata_fields=("title",))
    )
    assert title_only.title == full.title == "Flood in the valley"
    assert (title_only.author, title_only.date, title_only.description) == (None, None, None)
    assert title_only.text == full.text and title_only.markdown == full.markdown


@pytest.mark.parametrize(
    ("body", "author"),
    [
        # Sphinx pages carry <link rel="author">: it has no text, so no author (and no search)
        ("", None),
        ('<p class="byline">By Grace Hopper</p>', "Grace Hopper"),
        ('<span rel="author">Grace Hopper</span>', "Grace Hopper"),
        ('<div data-component="Byline">Grace Hopper</div>', "Grace Hopper"),
    ],
)
def test_author_is_what_trafilatura_finds(body: str, author: str | None) -> None:
    """_metadata skips trafilatura's author search where it cannot match, with the same
    result as trafilatura's own extract_metadata, which always runs it."""
    import lxml.html
    from trafilatura.metadata import extract_metadata

    from scrapy_focus.extract.metadata import _DATE_PARAMS, METADATA_FIELDS
    from scrapy_focus.extract.metadata import page_metadata as _metadata

    html = page(head='<link rel="author" title="About" href="/about.html">', body=body)
    ours = _metadata(lxml.html.document_fromstring(html), URL, METADATA_FIELDS)
    theirs = extract_metadata(lxml.html.document_fromstring(html), URL, dict(_DATE_PARAMS))
    assert ours == {name: getattr(theirs, name) for name in METADATA_FIELDS}
    assert ours["author"] == author


def test_highlighted_code_keeps_its_lines() -> None:
    # A real Sphinx page (Debian's python3.11-doc, installed by .ci/setup): each token of
    # its code samples is a Pygments <span>, and trafilatura ran the sample into one line.
    body = Path("/usr/share/doc/python3.11/html/library/abc.html").read_bytes()
    result = extract_page(body, "https://docs.python.org/3.11/library/abc.html")
    assert "```\nfrom abc import ABC\nclass MyABC(ABC):\n    pass\n```" in result.markdown


def test_one_element_class_changes_no_extraction(monkeypatch: pytest.MonkeyPatch) -> None:
    # The parser makes every element a plain HtmlElement (lxml looks that class up
    # in C, not in a Python method per element object): pages of every type extract
    # field for field as they do with lxml.html's own per-tag classes.
    import lxml.html

    from scrapy_focus.extract import page as page_module

    tree = page_module._parse('<form><label>a</label><input name="q"><select></select></form>')
    assert tree is not None
    assert {type(element) for element in tree.iter()} == {lxml.html.HtmlElement}
    with gzip.open(DATA / "wcxb-dev" / "ground-truth.jsonl.gz", "rt") as lines:
        rows = [json.loads(line) for line, _ in zip(lines, range(400), strict=False)]
    types: dict[str, list[dict]] = {}
    for row in rows:
        types.setdefault(row["page_type"], []).append(row)
    chosen = [row for group in types.values() for row in group[:3]]
    assert len(types) >= 6
    per_tag = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, huge_tree=False)
    for row in chosen:
        body = gzip.decompress(
            (DATA / "wcxb-dev" / "html" / f"{row['file_id']}.html.gz").read_bytes()
        )
        ours = extract_page(body, row["url"]).to_dict()
        with monkeypatch.context() as patched:
            patched.setattr(page_module, "_PARSER", per_tag)
            theirs = extract_page(body, row["url"]).to_dict()
        ours.pop("seconds"), theirs.pop("seconds")
        assert ours == theirs, row["file_id"]
