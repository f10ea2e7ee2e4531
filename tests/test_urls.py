"""Canonical URLs and the fingerprint everything keys pages by."""

from __future__ import annotations

import gc
import random
import weakref

import pytest
from scrapy import Request
from scrapy.utils.test import get_crawler

from scrapy_focus import urls
from scrapy_focus.urls import (
    CanonicalRequestFingerprinter,
    TrackingParams,
    canonicalize_url,
)


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("HTTP://Example.COM/a", "http://example.com/a"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443", "https://example.com/"),
        ("http://example.com:8080/a", "http://example.com:8080/a"),
        ("http://example.com/a#frag", "http://example.com/a"),
        ("http://example.com/a?b=2&a=1", "http://example.com/a?a=1&b=2"),
        ("http://example.com/a?utm_source=x&utm_medium=y&id=3", "http://example.com/a?id=3"),
        ("http://example.com/a?gclid=1&fbclid=2&msclkid=3", "http://example.com/a"),
        ("http://example.com/%7euser/", "http://example.com/~user/"),
        ("http://user:pw@Example.com:81/", "http://example.com:81/"),  # no secret in a key
        ("http://[::1]:80/x", "http://[::1]/x"),
        ("http://例え.jp/パス", "http://xn--r8jz45g.jp/%E3%83%91%E3%82%B9"),
    ],
)
def test_canonical_form(url, canonical):
    assert canonicalize_url(url) == canonical


def test_plain_url_shortcut_gives_what_the_full_canonicalisation_gives():
    # canonicalize_url skips w3lib for plain URLs; on URLs built from the pieces
    # that matter to either path (case, ports, dot segments, escapes, IDNA,
    # parameters, queries, fragments), both must agree.
    rng = random.Random(7)
    schemes = ["http", "https", "HTTP", "Https", "ftp"]
    hosts = "example.com Example.COM a-b.c0 xn--bcher-kva.de XN--BCHER-KVA.de bücher.de".split()
    hosts += "127.0.0.1 [::1] a..b host a.b. -x.com".split()
    ports = ["", "", "", ":80", ":443", ":8080", ":080", ":0", ":65535", ":99999", ":x", ":"]
    # The first 19 pieces need no escaping; the rest are what the shortcut must refuse.
    pieces = [*"aB0-_.~!$&'()*+,=:@", "..", "%41", "%7e", "%zz", "%", ";p", "é", " "]
    pieces += [*'|[]"<{^`\\', ".well-known", "index.html"]
    tails = ["", "", "", "?b=2&a=1", "?q=a+b", "?", "#top", "#", "?utm_source=x&id=1#f"]
    plain = 0
    for _ in range(6000):
        alphabet = pieces if rng.random() < 0.5 else pieces[:19]
        segments = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3)))
            for _ in range(rng.randint(0, 4))
        ]
        path = "".join("/" + segment for segment in segments)
        if rng.random() < 0.1:
            path += "/"
        url = (
            f"{rng.choice(schemes)}://{rng.choice(hosts)}{rng.choice(ports)}{path}"
            f"{rng.choice(tails)}"
        )
        expected = urls._canonicalize_parsed(url, urls.DEFAULT_TRACKING_PARAMS)
        assert canonicalize_url(url) == expected, url
        plain += urls._PLAIN_URL.fullmatch(url) is not None
    assert plain > 200  # the shortcut was taken, not only the full pass


def test_malformed_url_gets_a_stable_key_instead_of_an_exception():
    assert canonicalize_url("http://a.com:abc/x") == canonicalize_url("http://A.com:abc/x")


def test_tracking_params_are_configurable_with_prefixes():
    tracking = TrackingParams(["ref", "pk_*"])
    assert canonicalize_url("http://e.com/?ref=1&pk_campaign=2&utm_source=3", tracking) == (
        "http://e.com/?utm_source=3"
    )
    assert canonicalize_url("http://e.com/?utm_source=3", TrackingParams([])) == (
        "http://e.com/?utm_source=3"
    )


def test_fingerprinter_follows_scrapys_contract_and_is_set_by_the_addon():
    crawler = get_crawler(settings_dict={"ADDONS": {"scrapy_focus.Addon": 500}})
    fingerprinter = crawler.request_fingerprinter
    assert isinstance(fingerprinter, CanonicalRequestFingerprinter)
    same = [
        Request("http://example.com/a?b=2&a=1&utm_campaign=z"),
        Request("HTTP://EXAMPLE.com:80/a?a=1&b=2#top"),
    ]
    prints = {fingerprinter.fingerprint(request) for request in same}
    assert len(prints) == 1
    assert len(prints.pop()) == 20
    assert fingerprinter.fingerprint(Request("http://example.com/a")) != fingerprinter.fingerprint(
        Request("http://example.com/a", method="POST")
    )
    assert fingerprinter.fingerprint(
        Request("http://example.com/a", method="POST", body=b"1")
    ) != fingerprinter.fingerprint(Request("http://example.com/a", method="POST", body=b"2"))


def test_verbatim_url_meta_skips_canonicalisation():
    fingerprinter = CanonicalRequestFingerprinter()
    plain = Request("http://example.com/a?utm_source=x")
    verbatim = Request("http://example.com/a?utm_source=x", meta={"verbatim_url": True})
    assert fingerprinter.fingerprint(plain) != fingerprinter.fingerprint(verbatim)


def test_tracking_params_setting_reaches_the_fingerprinter():
    crawler = get_crawler(
        settings_dict={"ADDONS": {"scrapy_focus.Addon": 500}, "FOCUS_TRACKING_PARAMS": ["sid"]}
    )
    fingerprinter = crawler.request_fingerprinter
    assert fingerprinter.fingerprint(Request("http://e.com/?sid=1")) == fingerprinter.fingerprint(
        Request("http://e.com/")
    )
    assert fingerprinter.fingerprint(
        Request("http://e.com/?utm_source=1")
    ) != fingerprinter.fingerprint(Request("http://e.com/"))


def test_fingerprinter_canonicalises_each_request_once(monkeypatch):
    seen = []

    def counting(url, tracking):
        seen.append(url)
        return canonicalize_url(url, tracking)

    monkeypatch.setattr(urls, "canonicalize_url", counting)
    fingerprinter = CanonicalRequestFingerprinter()
    request = Request("http://Example.com/a?b=2&a=1")
    first = fingerprinter.fingerprint(request)
    assert fingerprinter.canonical_url(request) == "http://example.com/a?a=1&b=2"
    assert fingerprinter.fingerprint(request) == first
    assert seen == [request.url]


def test_fingerprinter_follows_a_later_verbatim_url_and_keeps_no_request_alive():
    fingerprinter = CanonicalRequestFingerprinter()
    request = Request("http://example.com/a?utm_source=x")
    canonical = fingerprinter.fingerprint(request)
    request.meta["verbatim_url"] = True
    assert fingerprinter.fingerprint(request) != canonical
    assert fingerprinter.canonical_url(request) == request.url
    alive = weakref.ref(request)
    del request
    gc.collect()
    assert alive() is None
