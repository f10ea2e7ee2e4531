"""The ladder's detectors, one behaviour per test: each has a positive and a negative case."""

from __future__ import annotations

import pytest

from harness.hostile import CSP, article_page
from scrapy_focus.engines.detect import (
    Page,
    blocked,
    judge,
    prejudge,
    spa_shell,
    thin,
    title_of,
    transient,
    vendor_challenge,
    visible_text_chars,
)

ARTICLE = article_page(1)  # a few thousand characters of server-rendered text
BLOCK_PAGE = (
    "<html><head><title>Forbidden</title></head><body><h1>Forbidden</h1>"
    "<p>You do not have access.</p></body></html>"
)


def page(
    html: str = ARTICLE,
    status: int = 200,
    headers: dict[str, str] | None = None,
    text_chars: int | None = None,
    is_html: bool = True,
) -> Page:
    return Page(status, headers or {}, html, text_chars, is_html)


# -- 429 and other transient answers


def test_429_is_transient_not_a_block():
    answer = page(BLOCK_PAGE, 429, {"retry-after": "2"})
    assert transient(answer) == "http-429"
    assert blocked(answer) is None
    verdict = judge(answer)
    assert verdict.kind == "transient"
    assert not verdict.escalate


def test_429_from_datadome_is_a_block():
    answer = page(BLOCK_PAGE, 429, {"x-datadome": "protected"})
    assert blocked(answer) == "challenge-datadome"
    assert judge(answer).escalate


def test_503_with_retry_after_is_transient():
    answer = page(BLOCK_PAGE, 503, {"retry-after": "1"})
    assert transient(answer) == "http-503-retry-after"
    assert judge(answer).kind == "transient"


@pytest.mark.parametrize("status", [500, 502, 504])
def test_server_errors_are_transient(status):
    assert judge(page(BLOCK_PAGE, status)).kind == "transient"


@pytest.mark.parametrize("status", [200, 403, 404])
def test_other_statuses_are_not_transient(status):
    assert transient(page(BLOCK_PAGE, status)) is None


# -- 403 / 503 with HTML


@pytest.mark.parametrize("status", [403, 503])
def test_403_and_503_with_html_are_blocks(status):
    answer = page(BLOCK_PAGE, status)
    assert blocked(answer) == f"http-{status}-html"
    assert judge(answer).kind == "blocked"
    assert judge(answer).escalate


def test_403_without_a_body_is_not_a_block_page():
    assert blocked(page("", 403)) is None
    assert blocked(page("   \n", 403)) is None


def test_403_that_is_not_html_is_not_a_block_page():
    assert blocked(page('{"error": "forbidden"}', 403, is_html=False)) is None


def test_200_html_is_not_a_block():
    assert blocked(page()) is None
    assert judge(page(text_chars=3000)).kind == "ok"


# -- vendor markers


def test_cf_mitigated_challenge_header_is_cloudflare():
    answer = page(ARTICLE, 403, {"cf-mitigated": "challenge"})
    assert vendor_challenge(answer) == "cloudflare"
    assert judge(answer).reason == "challenge-cloudflare"


def test_cf_mitigated_other_value_is_not_a_challenge():
    assert vendor_challenge(page(ARTICLE, 200, {"cf-mitigated": "none"})) is None


@pytest.mark.parametrize(
    "html",
    [
        "<html><head><title>Just a moment...</title></head><body></body></html>",
        "<html><head><title>Just a moment\u2026</title></head><body></body></html>",
        '<html><body><script src="/cdn-cgi/challenge-platform/h/g/orchestrate/jsch/v1">'
        "</script></body></html>",
        "<html><body><form action='/?__cf_chl_f_tk=abc' method='POST'></form></body></html>",
        "<html><body><script>window._cf_chl_opt={cvId: '3'};</script></body></html>",
    ],
)
def test_cloudflare_challenge_markers(html):
    assert vendor_challenge(page(html, 403)) == "cloudflare"


def test_cloudflare_challenge_is_a_block_even_with_status_200():
    html = "<html><head><title>Just a moment...</title></head><body></body></html>"
    assert judge(page(html, 200)).kind == "blocked"


def test_healthy_page_served_by_cloudflare_is_not_a_challenge():
    # Cloudflare's own scripts on healthy pages: email decoding, and the bot
    # detection snippet that names the challenge platform only in inline code.
    html = article_page(
        2,
        extra_body=(
            "<script src='/cdn-cgi/scripts/5c5dd728/cloudflare-static/email-decode.min.js'>"
            "</script><script>(function(){var s=document.createElement('script');"
            "s.src='/cdn-cgi/challenge-platform/scripts/jsd/main.js';})();</script>"
        ),
    )
    answer = page(html, 200, {"server": "cloudflare", "cf-ray": "8a1b2c3d4e5f-AMS"})
    assert vendor_challenge(answer) is None
    assert judge(answer).kind == "ok"


@pytest.mark.parametrize(
    ("html", "headers", "status"),
    [
        (
            '<html><body><iframe src="https://geo.captcha-delivery.com/captcha/?initialCid=x">'
            "</iframe></body></html>",
            {},
            403,
        ),
        (BLOCK_PAGE, {"x-datadome": "protected"}, 403),
    ],
)
def test_datadome_markers(html, headers, status):
    assert vendor_challenge(page(html, status, headers)) == "datadome"


def test_datadome_header_on_a_200_page_is_not_a_block():
    assert vendor_challenge(page(ARTICLE, 200, {"x-datadome": "protected"})) is None


@pytest.mark.parametrize(
    "html",
    [
        '<html><body><script src="https://captcha.px-cdn.net/PXabc/captcha.js"></script>'
        "</body></html>",
        '<html><body><script src="/PXabc/px/client/main.min.js"></script></body></html>',
        "<html><head><title>Access to this page has been denied</title></head>"
        "<body><script>window._pxAppId = 'PXabc';</script></body></html>",
    ],
)
def test_perimeterx_markers(html):
    assert vendor_challenge(page(html, 403)) == "perimeterx"


def test_access_denied_title_alone_is_not_perimeterx():
    html = "<html><head><title>Access to this page has been denied</title></head></html>"
    assert vendor_challenge(page(html, 403)) is None


@pytest.mark.parametrize(
    ("html", "headers"),
    [
        ('<html><body><iframe src="/_Incapsula_Resource?SWUDNSAI=31"></iframe></body></html>', {}),
        (BLOCK_PAGE, {"x-iinfo": "9-12345678-0 0NNN RT(1 0)"}),
    ],
)
def test_imperva_markers(html, headers):
    assert vendor_challenge(page(html, 403, headers)) == "imperva"


def test_imperva_header_on_a_200_page_is_not_a_block():
    assert vendor_challenge(page(ARTICLE, 200, {"x-iinfo": "9-12345678-0 0NNN"})) is None


@pytest.mark.parametrize(
    ("html", "headers"),
    [
        (BLOCK_PAGE, {"server": "AkamaiGHost"}),
        (
            "<html><head><title>Access Denied</title></head><body>Reference #18.1 "
            "https://errors.edgesuite.net/18.1</body></html>",
            {},
        ),
    ],
)
def test_akamai_markers(html, headers):
    assert vendor_challenge(page(html, 403, headers)) == "akamai"


def test_akamai_server_on_a_200_page_is_not_a_block():
    assert vendor_challenge(page(ARTICLE, 200, {"server": "AkamaiGHost"})) is None


def test_vendor_names_in_text_are_not_markers():
    html = article_page(
        3,
        marker="We compared Cloudflare, Akamai, DataDome, PerimeterX and Imperva; "
        "captcha-delivery.com and px-cdn.net serve their challenges.",
    )
    assert vendor_challenge(page(html, 200)) is None


# -- a CSP header naming vendors is not a block


def test_csp_header_naming_vendors_is_not_a_block():
    headers = {
        "content-security-policy": CSP,
        "server": "cloudflare",
        "cf-ray": "8a1b2c3d4e5f6789-AMS",
        "x-iinfo": "9-12345678-0 0NNN",
        "x-datadome": "protected",
    }
    answer = page(ARTICLE, 200, headers, text_chars=3000)
    assert vendor_challenge(answer) is None
    assert blocked(answer) is None
    assert judge(answer).kind == "ok"


def test_csp_header_does_not_hide_a_real_challenge():
    answer = page(
        "<html><head><title>Just a moment...</title></head></html>",
        403,
        {"content-security-policy": CSP},
    )
    assert judge(answer).reason == "challenge-cloudflare"


# -- SPA shell vs server-rendered pages

SHELL = (
    "<!DOCTYPE html><html><head><title>App</title></head><body>"
    "<div id='root'><noscript>You need to enable JavaScript to run this app.</noscript></div>"
    "<script src='/static/app.js'></script></body></html>"
)


@pytest.mark.parametrize("mount", ["root", "app", "__next", "__nuxt"])
def test_spa_shell_with_mount_point(mount):
    html = f"<html><head><title>App</title></head><body><div id='{mount}'></div></body></html>"
    assert spa_shell(page(html))


def test_spa_shell_with_scripts_and_no_text():
    assert spa_shell(page(SHELL))
    assert judge(page(SHELL)).kind == "shell"
    assert judge(page(SHELL)).escalate


def test_next_data_with_server_rendered_text_is_not_a_shell():
    html = (
        "<html><head><title>Post</title><script src='/_next/main.js' defer></script></head>"
        "<body><div id='__next'><h1>Post</h1><p>A server-rendered paragraph of real "
        "text, long enough to count as content.</p></div><script id='__NEXT_DATA__' "
        "type='application/json'>{\"props\": {}}</script></body></html>"
    )
    assert visible_text_chars(html) < 200
    assert not spa_shell(page(html))


def test_next_data_without_text_is_a_shell():
    html = (
        "<html><head><title>Post</title></head><body><div id='__next'></div>"
        "<script id='__NEXT_DATA__' type='application/json'>{\"props\": {}}</script>"
        "</body></html>"
    )
    assert spa_shell(page(html))


@pytest.mark.parametrize("chars", [0, 39, 41, 199, 200, 201, 1499, 1500, 1501, 5000])
def test_the_shell_and_denial_detectors_read_the_visible_text_once(chars):
    words = ("w" * 9 + " ") * (chars // 10) + "w" * (chars % 10)
    html = f"<html><body><div id='root'><p>{words.strip()}</p></div></body></html>"
    shell = page(html)
    expected = visible_text_chars(html) <= 200
    assert prejudge(shell).kind == ("shell" if expected else "ok")
    assert "visible_head" in vars(shell)  # read by the denial check, reused by the shell's
    assert spa_shell(page(html)) is expected


def test_long_server_rendered_page_with_mount_point_is_not_a_shell():
    html = ARTICLE.replace("<body>", "<body><div id='root'></div>")
    assert not spa_shell(page(html))


def test_short_static_page_without_scripts_or_mount_is_not_a_shell():
    assert not spa_shell(page("<html><body><p>Hello.</p></body></html>"))


@pytest.mark.parametrize("status", [404, 500])
def test_error_pages_are_never_shells(status):
    assert not spa_shell(page(SHELL, status))


def test_non_html_is_never_a_shell():
    assert not spa_shell(page("", is_html=False))


# -- thin content


def test_thin_page_with_scripts_is_thin():
    html = "<html><head><script src='/app.js'></script></head><body>" + "x " * 150 + "</body>"
    answer = page(html, text_chars=20)
    assert thin(answer, 100)
    assert judge(answer, 100).kind == "thin"


def test_thin_page_without_scripts_is_not_worth_a_browser():
    html = "<html><body>" + "x " * 150 + "</body></html>"
    assert not thin(page(html, text_chars=20), 100)
    assert judge(page(html, text_chars=20), 100).kind == "ok"


def test_page_with_enough_text_is_not_thin():
    html = ARTICLE.replace("</head>", "<script src='/app.js'></script></head>")
    assert not thin(page(html, text_chars=2500), 100)


def test_page_not_extracted_is_not_thin():
    html = "<html><head><script src='/app.js'></script></head><body>" + "x " * 150 + "</body>"
    assert not thin(page(html, text_chars=None), 100)


# -- genuine answers


@pytest.mark.parametrize("status", [404, 410])
def test_404_and_410_are_genuine_even_dressed_as_a_shell(status):
    verdict = judge(page(SHELL, status))
    assert verdict.kind == "genuine"
    assert verdict.reason == f"http-{status}"
    assert not verdict.escalate


@pytest.mark.parametrize("status", [301, 302, 304])
def test_redirects_and_not_modified_are_genuine(status):
    assert judge(page("", status)).kind == "genuine"


def test_200_article_is_not_genuine_but_ok():
    assert judge(page(text_chars=3000)).kind == "ok"


# -- helpers


def test_title_is_read_from_the_head():
    assert title_of("<html><head><title>\n  Just a\n moment...</title>") == "Just a moment..."
    assert title_of("<html><body>no title</body></html>") == ""


def test_visible_text_ignores_scripts_styles_and_comments():
    html = "<p>one</p><script>var two = 2;</script><style>.x{}</style><!-- three --><b>four</b>"
    assert visible_text_chars(html) == len("one four")


def test_visible_text_with_a_limit_stops_once_over_it_and_agrees_below_it():
    words = "<p>" + " ".join(["word"] * 100) + "</p>"  # 499 visible characters
    html = f"<script>{'x' * 5000}</script>{words}<div>{'<i>more</i>' * 1000}</div>"
    assert visible_text_chars(html, limit=200) > 200
    assert visible_text_chars(html, limit=200) < visible_text_chars(html)
    short = "<p> one   two </p><script>three</script><b>four</b>"
    assert visible_text_chars(short, limit=200) == visible_text_chars(short) == len("one two four")


SHELL_PAGE = "<html><body><div id='root'></div><script src='/app.js'></script></body></html>"


@pytest.mark.parametrize(
    ("html", "status", "text_chars"),
    [
        (ARTICLE, 200, 3000),  # ok
        (ARTICLE, 200, None),  # ok, not extracted
        (BLOCK_PAGE, 403, None),  # blocked
        (BLOCK_PAGE, 404, None),  # genuine
        (BLOCK_PAGE, 429, None),  # transient
        (SHELL_PAGE, 200, None),  # shell
        ("<p>tiny</p><script>x()</script>", 200, 10),  # thin
    ],
)
def test_judge_after_prejudge_is_judge(html, status, text_chars):
    # The extraction middleware prejudges, the ladder finishes: the same verdict.
    before = prejudge(page(html, status))
    assert judge(page(html, status, text_chars=text_chars), 100, before) == judge(
        page(html, status, text_chars=text_chars)
    )
    assert before.kind != "thin"  # thin needs the main text
