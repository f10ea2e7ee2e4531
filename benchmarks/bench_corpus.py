"""Corpus storage benchmark: ``LmdbCacheStorage`` side by side with Scrapy's cache storages.

One run measures, on the same machine and the same data:

1. **Storage**: store, then retrieve (in a shuffled order), N synthetic but
   realistic HTML responses through the ``HTTPCACHE_STORAGE`` interface
   (``open_spider``, ``store_response``, ``retrieve_response``, ``close_spider``)
   with a real crawler from ``scrapy.utils.test.get_crawler``, for
   ``LmdbCacheStorage`` (settings as the Addon sets them), Scrapy's
   ``FilesystemCacheStorage`` with ``HTTPCACHE_GZIP`` off and on, and
   ``DbmCacheStorage``; then the bytes on disk and the files each one created.
2. **Codecs**: compression ratio and speed of the corpus body codecs
   (``FOCUS_CORPUS_COMPRESSION``) on the same bodies.
3. **Crawl**: ``scrapy runspider`` over the test farm's 20,000-node link graph,
   plain Scrapy vs the scrapy-focus Addon (first run, then served from its cache).

Usage::

    .venv/bin/python benchmarks/bench_corpus.py [--pages 50000] [--crawl-pages 20000]
        [--skip-crawl] [--out FILE.md]

Everything runs on 127.0.0.1 and in a temporary directory (``--workdir`` to
choose where; it is removed afterwards unless ``--keep``).  Retrieval reads
files the OS has just written, so it runs against a warm page cache for every
storage alike (dropping the cache needs root and disturbs the machine).
"""

from __future__ import annotations

import argparse
import bisect
import datetime as dt
import gc
import gzip
import hashlib
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import Any

from repo_root import REPO
from scrapy import Request, Spider
from scrapy.http import HtmlResponse
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from harness.crawl import crawl_env, read_stats, scrapy_command, setting_args
from harness.farm_pages import GRAPH_NODES  # the farm's /graph/ nodes
from harness.machine import machine
from harness.processes import run_tree
from harness.provenance import git, git_commit
from scrapy_focus.corpus.db import BodyCodec

MB = 1_000_000
KB = 1_000
MIN_SIZE, MAX_SIZE = 5 * 1024, 200 * 1024
MEDIAN_SIZE, SIZE_SIGMA = 32 * 1024, 1.0
REPEATED_SHARE = 0.20
SPIDER = Path(__file__).resolve().parent / "graph_spider.py"
REAL_PAGE_SETS = ("wcxb-dev", "article-extraction-benchmark")  # in ../shared/data/


# -- synthetic pages --------------------------------------------------------------
#
# Realistic enough that compression ratios mean something.  Real pages of 5-200 KiB
# are about 13% visible text, 19% inline script, 12% inline style and the rest
# markup (measured on the WCXB dev set); these pages follow the same proportions:
# per-site inline CSS and JS, navigation, footer, class-laden blocks around
# paragraphs, teaser cards, ad slots, and article text made of pseudo-English
# words (English syllables, Zipf-distributed), with page-unique links, ids and
# tokens.  The report's calibration line compares their compression ratio with
# real pages.


def _words(text: str) -> list[str]:
    return text.split()


_SYLLABLES = _words(
    "the an re in er on at en ed es or ing al ar it is ic le ent ion ter con de com di "
    "per pro ex pre ma ca co mo po ta ti to la li lo na ne no ra ri ro sa se si so ve vi "
    "und ment tion ness able ful ly ous ive ate ize ist ure age ance ence ship ba be bi "
    "bo bu da do fa fe fi ga ge go ha he hi ho ja ka ke mi mu pa pe pi pu qua sta ste sti "
    "sto stra tra tre tri tro cha che chi sha she shi tha thi wa we wi"
)
_COMMON = _words(
    "the of and to a in is that for it as was with be by on not he this are or his from "
    "at which but have an they you were her she there been one all we their has would "
    "when if so no will more can who its also into only other than then some these may "
    "two about time up"
)
_CSS_PROPS = _words(
    "margin padding color background-color font-size line-height display border-radius "
    "max-width font-weight letter-spacing border-bottom gap flex-direction align-items "
    "justify-content position top left width height overflow text-decoration transition"
)
_CSS_VALUES = _words(
    "0 auto 1rem .5rem .25rem 2rem #1a1a1a #fff #f5f5f5 flex grid none 1.5 1.25 600 700 "
    "100% 50% 4px 8px 16px inherit block inline-block center space-between column "
    "relative absolute hidden underline .2s var(--accent) var(--gap)"
)
_JS_WORDS = _words(
    "function return var let const if else for this new null true false typeof document "
    "window addEventListener querySelector length push forEach map prototype call apply "
    "Object Array Promise then catch setTimeout"
)
_TAGS = ["news", "guide", "review", "analysis", "opinion", "video", "live", "explainer"]


class PageFactory:
    """Deterministic HTML pages of a requested size, from a hundred-odd sites."""

    def __init__(self, seed: int, sites: int = 120) -> None:
        self.rng = random.Random(seed)
        rng = self.rng
        vocab = list(_COMMON)
        seen = set(vocab)
        syllable_cum = list(_cumulative(1.0 / (rank + 1) for rank in range(len(_SYLLABLES))))
        while len(vocab) < 8_000:
            count = rng.choices((1, 2, 3, 4), (30, 40, 22, 8))[0]
            word = "".join(rng.choices(_SYLLABLES, cum_weights=syllable_cum, k=count))
            if word not in seen:
                seen.add(word)
                vocab.append(word)
        self.vocab = vocab
        self._cum = list(_cumulative((rank + 1.0) ** -1.15 for rank in range(len(vocab))))
        self.sentences = [self._sentence() for _ in range(60_000)]
        self.sites = [self._site(k) for k in range(sites)]

    def words(self, count: int) -> list[str]:
        return self.rng.choices(self.vocab, cum_weights=self._cum, k=count)

    def slug(self, count: int = 4) -> str:
        return "-".join(self.words(count))

    def title(self, low: int = 4, high: int = 10) -> str:
        return " ".join(self.words(self.rng.randint(low, high))).capitalize()

    def _sentence(self) -> str:
        rng = self.rng
        words = self.words(rng.randint(6, 28))
        words[0] = words[0].capitalize()
        if rng.random() < 0.3:
            words[rng.randrange(len(words))] += ","
        if rng.random() < 0.1:
            words.insert(rng.randrange(len(words)), str(rng.randrange(1, 10_000)))
        return " ".join(words) + rng.choice(".....?!")

    def _site(self, k: int) -> dict[str, Any]:
        rng = self.rng
        host = f"www.{self.slug(2)}{k}.example"
        p = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 5)))
        classes = [f"{p}-{self.slug(rng.randint(1, 2))}" for _ in range(rng.randint(20, 60))]
        declarations = [
            f"{rng.choice(_CSS_PROPS)}:{rng.choice(_CSS_VALUES)}"
            for _ in range(rng.randint(40, 120))
        ]
        css = "".join(
            f".{rng.choice(classes)}"
            + (f" .{rng.choice(classes)}" if rng.random() < 0.4 else "")
            + (rng.choice((":hover", "::before", ">a", "")) if rng.random() < 0.3 else "")
            + "{"
            + ";".join(rng.choices(declarations, k=rng.randint(1, 7)))
            + "}"
            + ("\n" if rng.random() < 0.05 else "")
            for _ in range(2000)
        )
        idents = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(1, 2)))
                  for _ in range(25)] + self.vocab[100:125]  # fmt: skip
        js = []
        size = 0
        while size < 120_000:
            a, b, c = rng.sample(idents, 3)
            roll = rng.random()
            if roll < 0.3:
                piece = f"function {a}({b},{c}){{{rng.choice(_JS_WORDS)} {b}.{rng.choice(idents)}"
                piece += f"=={c}?{b}:{rng.choice(idents)}({c},{rng.randint(0, 99)})}}"
            elif roll < 0.55:
                piece = f'{a}.{b}=function({c}){{return {c}&&{c}.{rng.choice(idents)}||"'
                piece += f'{rng.choice(self.vocab)}"}};'
            elif roll < 0.75:
                piece = f'var {a}={{"{b}":{rng.randint(0, 99)},"{c}":"{rng.choice(idents)}"}};'
            elif roll < 0.9:
                piece = f'document.querySelector(".{rng.choice(classes)}").addEventListener("'
                piece += f'{rng.choice(("click", "scroll", "load"))}",{a});'
            else:
                piece = (
                    f"if(!{a}||!{a}.{b})return;for(var {c}=0;{c}<{a}.length;{c}++){b}({a}[{c}]);"
                )
            js.append(piece)
            size += len(piece)
        icon = "".join(
            f'<svg class="{p}-icon" viewBox="0 0 24 24" aria-hidden="true"><path d="M'
            + " ".join(
                f"{rng.randint(0, 24)}.{rng.randint(0, 9)}" for _ in range(rng.randint(8, 30))
            )
            + 'z"/></svg>'
            for _ in range(6)
        )
        sections = [self.slug(1) for _ in range(rng.randint(5, 12))]
        nav = "\n".join(
            f'<li class="{p}-nav__item"><a class="{p}-nav__link" '
            f'href="/{rng.choice(sections)}/{self.slug(3)}">{" ".join(self.words(2)).title()}'
            "</a></li>"
            for _ in range(rng.randint(15, 150))
        )
        footer = "\n".join(
            f'<li class="{p}-footer__item"><a href="/{self.slug(2)}">'
            f"{' '.join(self.words(2)).title()}</a></li>"
            for _ in range(rng.randint(10, 60))
        )
        return {
            "host": host,
            "p": p,
            "classes": classes,
            "build": f"{rng.getrandbits(48):012x}",
            "sections": sections,
            "css": css,
            "js": "".join(js),
            "icons": icon,
            "icon": icon[: icon.index("</svg>") + 6],
            "nav": f'<header class="{p}-header"><nav class="{p}-nav"><ul>\n{nav}\n</ul></nav>'
            f'<div class="{p}-share">{icon}</div></header>\n',
            "footer": f'<footer class="{p}-footer"><ul>\n{footer}\n</ul>'
            f"<p>&copy; {rng.randint(2005, 2025)} {host}. All rights reserved.</p></footer>\n",
        }

    def page(self, target: int) -> tuple[str, bytes]:
        """A URL and an HTML body of about *target* bytes."""
        rng = self.rng
        site = rng.choice(self.sites)
        p, section = site["p"], rng.choice(site["sections"])
        slug = f"{self.slug(rng.randint(3, 8))}-{rng.randrange(10**7)}"
        url = f"https://{site['host']}/{section}/{slug}"
        title = self.title()
        head = [
            '<!DOCTYPE html>\n<html lang="en"><head>\n<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{title} | {site['host']}</title>",
            f'<link rel="canonical" href="{url}">',
            f'<meta property="og:title" content="{title}">',
            f'<meta property="og:url" content="{url}">',
            f'<meta name="description" content="{rng.choice(self.sentences)}">',
            f'<meta name="csrf-token" content="{rng.getrandbits(128):032x}">',
            f'<link rel="stylesheet" href="/static/{site["build"]}/main.css">',
            f'<link rel="preload" href="/static/{site["build"]}/app.js" as="script">',
        ]
        # Inline style and script in the proportions of real pages.
        css, js = site["css"], site["js"]
        css_at = rng.randrange(len(css) // 2)
        head.append(f"<style>{css[css_at : css_at + int(target * rng.uniform(0.05, 0.2))]}</style>")
        head.append(
            '<script type="application/ld+json">'
            + json.dumps(
                {
                    "@context": "https://schema.org",
                    "@type": "NewsArticle",
                    "headline": title,
                    "url": url,
                    "datePublished": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                    "author": {"@type": "Person", "name": " ".join(self.words(2)).title()},
                }
            )
            + "</script>"
        )
        top = "\n".join(head) + f'\n</head>\n<body class="{p}-{section}">\n'
        if len(site["nav"]) < target * 0.25:
            top += site["nav"]
        tail = site["footer"] if len(site["footer"]) < target * 0.1 else ""
        js_at = rng.randrange(len(js) // 2)
        tail += f"<script>{js[js_at : js_at + int(target * rng.uniform(0.08, 0.3))]}</script>\n"
        tail += f'<script src="/static/{site["build"]}/app.js" defer></script>\n</body></html>\n'
        parts = [
            f'<main id="main" class="{p}-main"><article class="{p}-article" '
            f'data-id="{rng.randrange(10**8)}">',
            f'<h1 class="{p}-headline">{title}</h1>',
            f'<div class="{p}-byline"><span class="{p}-author">By '
            f'{" ".join(self.words(2)).title()}</span> &middot; <time datetime="2024-'
            f'{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}">{rng.choice(_TAGS)}</time></div>',
        ]
        size = len(top) + len(tail) + sum(len(part) for part in parts) + 40
        while size < target:
            roll = rng.random()
            block = f'<div class="{p}-block {p}-block--{len(parts) % 3}" data-block="{len(parts)}">'
            if roll < 0.45:
                text = " ".join(rng.choices(self.sentences, k=rng.randint(1, 4)))
                if rng.random() < 0.4:
                    words = text.split(" ")
                    at = rng.randrange(len(words))
                    words[at] = (
                        f'<a class="{p}-link" href="/{section}/{self.slug()}-{rng.randrange(10**6)}">{words[at]}</a>'  # noqa: E501
                    )
                    text = " ".join(words)
                part = f'{block}<p class="{p}-paragraph">{text}</p></div>'
            elif roll < 0.55:
                part = f'{block}<h2 class="{p}-subhead">{self.title(3, 8)}</h2></div>'
            elif roll < 0.8:
                tag = rng.choice(_TAGS)
                part = (
                    f'<div class="{p}-card {p}-card--{tag} {p}-grid__item" data-track="card" '
                    f'data-track-position="{len(parts)}"><div class="{p}-card__inner">'
                    f'<a class="{p}-card__link {p}-link--block" '
                    f'href="/{rng.choice(site["sections"])}/{self.slug()}-{rng.randrange(10**7)}">'
                    f'<div class="{p}-card__media '
                    f'{p}-ratio {p}-ratio--16x9"><img class="{p}-card__image {p}-lazy" '
                    f'src="/media/{rng.getrandbits(40):010x}.jpg" alt="" width="320" height="180" '
                    f'loading="lazy" decoding="async"></div><div class="{p}-card__body">'
                    f'<span class="{p}-card__kicker {p}-text--small">{tag}</span>'
                    f'<h3 class="{p}-card__title {p}-text--title">{self.title()}</h3></div></a>'
                    f'<div class="{p}-card__meta"><span class="{p}-card__time">'
                    f"{rng.randint(1, 59)} min read</span>"
                    f'<button class="{p}-card__save {p}-button {p}-button--icon" '
                    f'type="button" aria-label="Save">{site["icon"]}</button></div></div></div>'
                )
            elif roll < 0.9:
                part = (
                    f'<div class="{p}-ad {p}-ad--{rng.choice(("inline", "mpu", "leaderboard"))}" '
                    f'data-ad-unit="/2156/{site["host"]}/{section}" data-sizes="[[300,250],'
                    f'[728,90]]" data-slot="{rng.randrange(100)}" aria-hidden="true"></div>'
                )
            else:
                part = (
                    f'<figure class="{p}-figure"><img src="/media/{rng.getrandbits(64):016x}.jpg" '
                    f'alt="{" ".join(self.words(5))}" width="{rng.choice((640, 800, 1200))}" '
                    f'loading="lazy"><figcaption class="{p}-caption">{rng.choice(self.sentences)}'
                    f"</figcaption></figure>"
                )
            parts.append(part)
            size += len(part) + 1
        parts.append(f'<div class="{p}-share {p}-share--bottom">{site["icons"]}</div>')
        parts.append("</article></main>")
        body = top + "\n".join(parts) + "\n" + tail
        return url, body.encode()


def _cumulative(weights: Iterable[float]) -> Iterable[float]:
    total = 0.0
    for weight in weights:
        total += weight
        yield total


def _headers(rng: random.Random, body: bytes, now: float) -> dict[str, str]:
    headers = {
        "Content-Type": "text/html; charset=utf-8",
        "Content-Length": str(len(body)),
        "Date": formatdate(now, usegmt=True),
        "Server": rng.choice(("nginx/1.24.0", "Apache/2.4.58 (Debian)", "cloudflare", "envoy")),
        "Cache-Control": rng.choice(("max-age=600, public", "no-cache", "private, max-age=0")),
        "Last-Modified": formatdate(now - rng.randrange(86400 * 365), usegmt=True),
        "ETag": f'"{hashlib.md5(body).hexdigest()}"',
        "Vary": "Accept-Encoding",
        "X-Request-Id": f"{rng.getrandbits(128):032x}",
        "Strict-Transport-Security": "max-age=31536000; includeSubDomains",
    }
    if rng.random() < 0.4:
        headers["Set-Cookie"] = f"session={rng.getrandbits(96):024x}; Path=/; HttpOnly; Secure"
    return headers


@dataclass
class Corpus:
    """The pages every storage is given: URLs, responses, and which bodies repeat."""

    urls: list[str]
    responses: list[HtmlResponse]
    unique_bodies: list[bytes]

    @property
    def total_bytes(self) -> int:
        return sum(len(response.body) for response in self.responses)


def generate_corpus(pages: int, seed: int) -> Corpus:
    """*pages* responses; sizes log-normal, clipped; 20% reuse another page's body."""
    factory = PageFactory(seed)
    rng = random.Random(seed + 1)
    unique_count = pages - round(pages * REPEATED_SHARE)
    unique_bodies: list[bytes] = []
    urls: list[str] = []
    bodies: list[bytes] = []
    for _ in range(unique_count):
        target = int(rng.lognormvariate(math.log(MEDIAN_SIZE), SIZE_SIGMA))
        url, body = factory.page(min(MAX_SIZE, max(MIN_SIZE, target)))
        unique_bodies.append(body)
        urls.append(url)
        bodies.append(body)
    for _ in range(pages - unique_count):
        # Another URL serving a body already seen (mirrors, www/non-www, print views).
        url, _ = factory.page(0)
        urls.append(url + "?view=print")
        bodies.append(rng.choice(unique_bodies))
    order = list(range(pages))
    rng.shuffle(order)
    now = time.time()
    responses = []
    for index in order:
        body = bodies[index]
        responses.append(
            HtmlResponse(
                url=urls[index],
                status=200,
                headers=_headers(rng, body, now),
                body=body,
                protocol="HTTP/1.1",
            )
        )
    return Corpus([urls[index] for index in order], responses, unique_bodies)


# -- storage benchmark ------------------------------------------------------------


class BenchSpider(Spider):
    name = "bench"


@dataclass(frozen=True)
class StorageCase:
    label: str
    settings: dict[str, Any]
    subdir: str = ""  # where under HTTPCACHE_DIR it writes (for the disk walk)


def storage_cases() -> list[StorageCase]:
    return [
        StorageCase(
            "LmdbCacheStorage (zstd 3)",
            # The Addon sets HTTPCACHE_STORAGE and REQUEST_FINGERPRINTER_CLASS
            # (scrapy_focus.urls.CanonicalRequestFingerprinter).
            {"ADDONS": {"scrapy_focus.Addon": 500}},
        ),
        StorageCase(
            "FilesystemCacheStorage",
            {"HTTPCACHE_STORAGE": "scrapy.extensions.httpcache.FilesystemCacheStorage"},
        ),
        StorageCase(
            "FilesystemCacheStorage, HTTPCACHE_GZIP",
            {
                "HTTPCACHE_STORAGE": "scrapy.extensions.httpcache.FilesystemCacheStorage",
                "HTTPCACHE_GZIP": True,
            },
        ),
        StorageCase(
            "DbmCacheStorage",
            {"HTTPCACHE_STORAGE": "scrapy.extensions.httpcache.DbmCacheStorage"},
        ),
    ]


@dataclass
class StorageResult:
    label: str
    pages: int
    body_bytes: int
    store_s: float  # store_response for every page, then close_spider
    close_s: float  # of which close_spider
    retrieve_s: float  # open_spider, retrieve_response for every page (shuffled), close
    cold_s: float  # the same once the storage's files are evicted from the page cache
    cpu_s: tuple[float, float, float]  # process CPU time of store, retrieve, cold retrieve
    disk_bytes: int  # sum of st_blocks * 512 over files and directories
    files: int
    dirs: int
    backend: str = ""
    misses: int = 0

    def store_rate(self) -> float:
        return self.pages / self.store_s

    def retrieve_rate(self) -> float:
        return self.pages / self.retrieve_s

    def cold_rate(self) -> float:
        return self.pages / self.cold_s


def _open_storage(case: StorageCase, cache_dir: Path) -> tuple[Any, Spider]:
    crawler = get_crawler(BenchSpider, {**case.settings, "HTTPCACHE_DIR": str(cache_dir)})
    spider = BenchSpider.from_crawler(crawler)
    storage = load_object(crawler.settings["HTTPCACHE_STORAGE"])(crawler.settings)
    storage.open_spider(spider)
    return storage, spider


def bench_storage(
    case: StorageCase, corpus: Corpus, workdir: Path, seed: int, log: Callable[[str], None]
) -> StorageResult:
    cache_dir = workdir / "storage" / _slug(case.label)
    cache_dir.mkdir(parents=True)
    store_requests = [Request(url) for url in corpus.urls]
    gc.collect()
    start, start_cpu = time.perf_counter(), time.process_time()
    storage, spider = _open_storage(case, cache_dir)
    for request, response in zip(store_requests, corpus.responses, strict=True):
        storage.store_response(spider, request, response)
    closing = time.perf_counter()
    storage.close_spider(spider)
    end = time.perf_counter()
    store_s, close_s = end - start, end - closing
    store_cpu = time.process_time() - start_cpu
    log(f"  {case.label}: stored {len(store_requests)} pages in {store_s:.1f} s")
    del store_requests, storage, spider

    order = list(range(len(corpus.urls)))
    random.Random(seed + 2).shuffle(order)
    retrieve_s, retrieve_cpu, misses = _retrieve_all(case, cache_dir, corpus, order)
    log(f"  {case.label}: retrieved in {retrieve_s:.1f} s, warm ({misses} misses)")
    evict_from_page_cache(cache_dir)
    cold_s, cold_cpu, cold_misses = _retrieve_all(case, cache_dir, corpus, order)
    log(f"  {case.label}: retrieved in {cold_s:.1f} s, cold ({cold_misses} misses)")
    _check_sample(case, cache_dir, corpus, order)

    disk_bytes, files, dirs = disk_usage(cache_dir)
    backend = ""
    if "Dbm" in case.label:
        import dbm

        backend = dbm.whichdb(str(cache_dir / f"{BenchSpider.name}.db")) or "?"
    return StorageResult(
        case.label,
        len(corpus.urls),
        corpus.total_bytes,
        store_s,
        close_s,
        retrieve_s,
        cold_s,
        (store_cpu, retrieve_cpu, cold_cpu),
        disk_bytes,
        files,
        dirs,
        backend,
        misses + cold_misses,
    )


def _retrieve_all(
    case: StorageCase, cache_dir: Path, corpus: Corpus, order: list[int]
) -> tuple[float, float, int]:
    """Wall and CPU seconds to open, retrieve every page in *order* and close; misses."""
    requests = [Request(corpus.urls[index]) for index in order]
    expected = [len(corpus.responses[index].body) for index in order]
    misses = 0
    gc.collect()
    start, start_cpu = time.perf_counter(), time.process_time()
    storage, spider = _open_storage(case, cache_dir)
    for request, size in zip(requests, expected, strict=True):
        response = storage.retrieve_response(spider, request)
        if response is None or len(response.body) != size:
            misses += 1
    storage.close_spider(spider)
    return time.perf_counter() - start, time.process_time() - start_cpu, misses


def evict_from_page_cache(root: Path) -> None:
    """Drop the page-cache pages of every file under *root* (no root needed).

    ``os.sync()`` writes dirty pages out first, then ``POSIX_FADV_DONTNEED``
    asks the kernel to drop each file's now clean pages.  Only these files are
    affected; directory entries and inodes stay cached.
    """
    os.sync()
    for path, _dirnames, filenames in os.walk(root):
        for name in filenames:
            fd = os.open(os.path.join(path, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def _check_sample(case: StorageCase, cache_dir: Path, corpus: Corpus, order: list[int]) -> None:
    """Outside the timings: a sample of retrieved bodies equals what was stored."""
    storage, spider = _open_storage(case, cache_dir)
    try:
        for index in order[:: max(1, len(order) // 200)]:
            response = storage.retrieve_response(spider, Request(corpus.urls[index]))
            if response is None or response.body != corpus.responses[index].body:
                raise SystemExit(f"{case.label}: {corpus.urls[index]} came back different")
    finally:
        storage.close_spider(spider)


def disk_usage(root: Path) -> tuple[int, int, int]:
    """Bytes allocated on disk (st_blocks * 512) under *root*, files, directories."""
    allocated, files, dirs = 0, 0, 0
    for path, dirnames, filenames in os.walk(root):
        dirs += len(dirnames)
        for name in filenames:
            allocated += os.lstat(os.path.join(path, name)).st_blocks * 512
            files += 1
        for name in dirnames:
            allocated += os.lstat(os.path.join(path, name)).st_blocks * 512
    return allocated, files, dirs


def _slug(label: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in label.lower()).strip("-")


# -- codec comparison -------------------------------------------------------------


@dataclass
class CodecResult:
    label: str
    raw_bytes: int
    stored_bytes: int
    compress_s: float
    decompress_s: float


def bench_codecs(bodies: list[bytes]) -> list[CodecResult]:
    """Each corpus codec (through BodyCodec, as the storage uses it) on *bodies*."""
    raw = sum(len(body) for body in bodies)
    cases: list[tuple[str, Callable[[bytes], bytes], Callable[[bytes], bytes]]] = []
    for label, name, level in (
        ("zstd 1", "zstd", 1),
        ("zstd 3 (default)", "zstd", 3),
        ("zlib 6", "zlib", 6),
        ("none", "none", 0),
    ):
        codec = BodyCodec(name, level)
        cases.append((label, codec.encode, BodyCodec.decode))
    cases.append(
        (
            "gzip 9 (Scrapy's HTTPCACHE_GZIP, for reference)",
            lambda body: gzip.compress(body, compresslevel=9),
            gzip.decompress,
        )
    )
    results = []
    for label, encode, decode in cases:
        gc.collect()
        start = time.perf_counter()
        stored = [encode(body) for body in bodies]
        compress_s = time.perf_counter() - start
        start = time.perf_counter()
        for blob in stored:
            decode(blob)
        decompress_s = time.perf_counter() - start
        results.append(
            CodecResult(label, raw, sum(len(blob) for blob in stored), compress_s, decompress_s)
        )
    return results


@dataclass
class Calibration:
    real_pages: int
    real_ratio: float  # real pages' zstd-3 ratio, weighted to the synthetic size mix
    synthetic_ratio: float


def _real_page_folders() -> list[Path]:
    """The real page sets in ``shared/data`` beside the checkout (or its main worktree)."""
    roots = [REPO.parent]
    try:
        common = git("rev-parse", "--path-format=absolute", "--git-common-dir")
        roots.append(Path(common).parent.parent)
    except (OSError, subprocess.CalledProcessError):
        pass
    for root in roots:
        folders = [root / "shared" / "data" / name / "html" for name in REAL_PAGE_SETS]
        if any(folder.is_dir() for folder in folders):
            return [folder for folder in folders if folder.is_dir()]
    return []


def calibrate(bodies: list[bytes]) -> Calibration | None:
    """zstd-3 ratio of real pages of the same sizes as *bodies*, to check they are realistic.

    Real pages (WCXB dev set and the article extraction benchmark, 5-200 KiB)
    are bucketed by size; each bucket's ratio is weighted by the synthetic bytes
    in that bucket, since bigger pages compress better.
    """
    edges = [MIN_SIZE, 10 * 1024, 25 * 1024, 50 * 1024, 100 * 1024, MAX_SIZE + 1]
    real_raw = [0] * (len(edges) - 1)
    real_packed = [0] * (len(edges) - 1)
    codec = BodyCodec("zstd", 3)
    count = 0
    for folder in _real_page_folders():
        for path in sorted(folder.glob("*.html.gz")):
            body = gzip.decompress(path.read_bytes())
            bucket = bisect.bisect_right(edges, len(body)) - 1
            if 0 <= bucket < len(real_raw):
                real_raw[bucket] += len(body)
                real_packed[bucket] += len(codec.encode(body))
                count += 1
    if not count:
        return None
    synthetic_raw = [0] * len(real_raw)
    synthetic_packed = 0
    for body in bodies:
        bucket = min(max(bisect.bisect_right(edges, len(body)) - 1, 0), len(real_raw) - 1)
        synthetic_raw[bucket] += len(body)
        synthetic_packed += len(codec.encode(body))
    weighted_raw = weighted_packed = 0.0
    for raw, real, packed in zip(synthetic_raw, real_raw, real_packed, strict=True):
        if real:
            weighted_raw += raw
            weighted_packed += raw * packed / real
    return Calibration(count, weighted_raw / weighted_packed, sum(synthetic_raw) / synthetic_packed)


# -- crawl benchmark --------------------------------------------------------------


@dataclass
class CrawlResult:
    label: str
    pages: int
    wall_s: float
    crawl_s: float  # from the spider's start_time to its close, as the crawler saw it
    crawler_cpu_s: float
    farm_cpu_s: float
    cache_hits: int
    returncode: int
    stats: dict[str, Any] = field(default_factory=dict)

    def rate(self) -> float:
        return self.pages / self.wall_s

    def crawl_rate(self) -> float:
        return self.pages / self.crawl_s if self.crawl_s else 0.0

    def cpu_rate(self) -> float:
        return self.pages / self.crawler_cpu_s if self.crawler_cpu_s else 0.0


def crawl_runs(workdir: Path) -> list[tuple[str, dict[str, Any]]]:
    """Plain Scrapy; the Addon as users enable it; the Addon with only the corpus on.

    "Corpus only" switches off every other ``FOCUS_*_ENABLED`` component (extraction,
    contract, ...), so the difference from plain Scrapy is the corpus and its
    canonical fingerprints.
    """
    from scrapy_focus import settings as focus_defaults

    addon = {"ADDONS": {"scrapy_focus.Addon": 500}}
    full = {**addon, "HTTPCACHE_DIR": str(workdir / "crawl-httpcache")}
    corpus_only = {
        **addon,
        "HTTPCACHE_DIR": str(workdir / "crawl-httpcache-corpus-only"),
        **{
            name: False
            for name in focus_defaults.defaults()
            if name.endswith("_ENABLED")
            and name not in {"FOCUS_CORPUS_ENABLED", "FOCUS_CANONICAL_URLS_ENABLED"}
        },
    }
    return [
        ("plain Scrapy, no cache", {}),
        ("scrapy-focus Addon, first run", full),
        ("scrapy-focus Addon, second run (from cache)", full),
        ("Addon with only the corpus on, first run", corpus_only),
        ("Addon with only the corpus on, second run (from cache)", corpus_only),
    ]


def run_crawl(
    label: str, extra: dict[str, Any], base_url: str, limit: int, workdir: Path
) -> CrawlResult:
    stats_file = workdir / f"stats-{_slug(label)}.json"
    settings = {
        "CONCURRENT_REQUESTS": 32,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
        "LOG_LEVEL": "WARNING",
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        **extra,
    }
    command = scrapy_command("runspider", str(SPIDER), "-a", f"start={base_url}/graph/0.html")
    command += ["-a", f"limit={limit}", "-a", f"stats={stats_file}", *setting_args(settings)]
    env = crawl_env()
    self_before = _cpu(resource.RUSAGE_SELF)
    output = workdir / f"output-{_slug(label)}.txt"
    with output.open("w") as out:
        # The whole process tree: RUSAGE_CHILDREN misses the extraction workers.
        run = run_tree(command, cwd=workdir, env=env, stdout=out)
    farm_cpu = _cpu(resource.RUSAGE_SELF) - self_before
    if run.returncode != 0:
        sys.stderr.write(output.read_text(errors="replace")[-4000:])
    stats = read_stats(stats_file)
    return CrawlResult(
        label,
        int(stats.get("response_received_count", 0)),
        run.wall_s,
        float(stats.get("elapsed_time_seconds", 0.0)),
        run.cpu_s,
        farm_cpu,
        int(stats.get("httpcache/hit", 0)),
        run.returncode,
        stats,
    )


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def bench_crawl(limit: int, workdir: Path, log: Callable[[str], None]) -> list[CrawlResult]:
    from harness.farm import Farm

    results = []
    with Farm() as farm:
        for label, extra in crawl_runs(workdir):
            result = run_crawl(label, extra, farm.base, limit, workdir)
            log(
                f"  {label}: {result.pages} pages in {result.wall_s:.1f} s "
                f"(crawler CPU {result.crawler_cpu_s:.1f} s, farm CPU {result.farm_cpu_s:.1f} s)"
            )
            results.append(result)
    return results


# -- report -----------------------------------------------------------------------


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _x(value: float) -> str:
    return f"{value:.1f}x" if value >= 1 else f"{value:.2f}x"


def report(
    args: argparse.Namespace,
    corpus_info: dict[str, Any],
    storage: list[StorageResult],
    codecs: list[CodecResult],
    calibration: Calibration | None,
    crawl: list[CrawlResult],
) -> str:
    out = [
        f"Run {dt.datetime.now().strftime('%Y-%m-%d %H:%M')} "
        f"({(time.perf_counter() - args.started) / 60:.0f} min), commit {git_commit()}; "
        f"{machine(args.load_at_start)}.",
        f"Command: `{' '.join(['.venv/bin/python', 'benchmarks/bench_corpus.py', *args.argv])}`",
        "",
    ]
    if storage:
        info = corpus_info
        out += [
            f"**Storage** — {info['pages']:,} pages, {info['unique']:,} distinct bodies "
            f"({REPEATED_SHARE:.0%} of pages repeat another URL's body); sizes log-normal "
            f"(median {MEDIAN_SIZE // 1024} KiB, sigma {SIZE_SIGMA}) clipped to "
            f"[{MIN_SIZE // 1024}, {MAX_SIZE // 1024}] KiB: median {info['median'] / KB:.0f} kB, "
            f"mean {info['mean'] / KB:.0f} kB, {info['total'] / MB:,.0f} MB in all. "
            "MB = 10^6 bytes of (uncompressed) body. Store = every `store_response` plus "
            "`close_spider`; retrieve = `open_spider`, every `retrieve_response` in a shuffled "
            "order, `close_spider`, with the OS page cache warm (the files were just written); "
            "cold = the same after `os.sync()` and `posix_fadvise(DONTNEED)` on each of the "
            "storage's files (their data leaves the page cache, directory entries and inodes "
            "stay cached). Disk = sum of st_blocks x 512 over the files and directories the "
            "storage created. LMDB x = LMDB's rate / that storage's rate; LMDB disk / = LMDB's "
            "bytes / that storage's bytes.",
            "",
        ]
        lmdb = storage[0]
        rows = []
        for result in storage:
            label = result.label + (f" ({result.backend})" if result.backend else "")
            rows.append(
                [
                    label,
                    f"{result.store_rate():,.0f}",
                    f"{result.body_bytes / MB / result.store_s:,.0f}",
                    f"{result.retrieve_rate():,.0f}",
                    f"{result.body_bytes / MB / result.retrieve_s:,.0f}",
                    f"{result.cold_rate():,.0f}",
                    f"{result.disk_bytes / result.pages / 1024:,.1f}",
                    f"{result.files:,} / {result.dirs:,}",
                    "—" if result is lmdb else _x(lmdb.store_rate() / result.store_rate()),
                    "—" if result is lmdb else _x(lmdb.retrieve_rate() / result.retrieve_rate()),
                    "—" if result is lmdb else _x(lmdb.cold_rate() / result.cold_rate()),
                    "—" if result is lmdb else f"{lmdb.disk_bytes / result.disk_bytes:.2f}",
                ]
            )
        out += [
            _table(
                [
                    "storage",
                    "store pages/s",
                    "store MB/s",
                    "retrieve pages/s",
                    "retrieve MB/s",
                    "cold retrieve pages/s",
                    "disk KiB/page",
                    "files / dirs",
                    "LMDB store x",
                    "LMDB retrieve x",
                    "LMDB cold x",
                    "LMDB disk /",
                ],
                rows,
            ),
            "",
        ]
        misses = [f"{r.label}: {r.misses}" for r in storage if r.misses]
        if misses:
            out += [f"Retrieval misses (should be none): {', '.join(misses)}", ""]
        out += [
            "Seconds, wall / CPU of this process (CPU well below wall means waiting: for the "
            "disk, or for a CPU taken by other processes; load average in the first line):",
            "",
            _table(
                ["storage", "store", "of which close_spider", "retrieve", "cold retrieve"],
                [
                    [
                        r.label,
                        f"{r.store_s:.1f} / {r.cpu_s[0]:.1f}",
                        f"{r.close_s:.1f}",
                        f"{r.retrieve_s:.1f} / {r.cpu_s[1]:.1f}",
                        f"{r.cold_s:.1f} / {r.cpu_s[2]:.1f}",
                    ]
                    for r in storage
                ],
            ),
            "",
        ]
        out += [*_goals(storage), ""]
    if codecs:
        sample = codecs[0]
        out += [
            f"**Codecs** (`FOCUS_CORPUS_COMPRESSION`) on {corpus_info['codec_bodies']:,} of the "
            f"distinct bodies ({sample.raw_bytes / MB:,.0f} MB), one body at a time as the "
            "corpus stores them:",
            "",
            _table(
                ["codec", "ratio", "compress MB/s", "decompress MB/s"],
                [
                    [
                        c.label,
                        f"{c.raw_bytes / c.stored_bytes:.2f}",
                        f"{c.raw_bytes / MB / c.compress_s:,.0f}",
                        f"{c.raw_bytes / MB / c.decompress_s:,.0f}",
                    ]
                    for c in codecs
                ],
            ),
            "",
        ]
        if calibration:
            out += [
                f"Realism check: zstd 3 compresses these synthetic pages "
                f"{calibration.synthetic_ratio:.2f}x; {calibration.real_pages:,} real pages of "
                f"5-200 KiB (WCXB dev set and the article extraction benchmark, in "
                f"`../shared/data/`), weighted to the same size mix, "
                f"{calibration.real_ratio:.2f}x.",
                "",
            ]
    if crawl:
        plain = crawl[0]
        farm_busy = max(r.farm_cpu_s / r.wall_s for r in crawl)
        out += [
            f"**Crawl** — `scrapy runspider` over the farm's link graph, {plain.pages:,} pages "
            "from `/graph/0.html`, CONCURRENT_REQUESTS = CONCURRENT_REQUESTS_PER_DOMAIN = 32, "
            "LOG_LEVEL=WARNING, no robots.txt. Pages/s over the whole process (start-up "
            "included) and over the crawl itself (spider open to close). Farm: a "
            "ThreadingHTTPServer in the benchmark process. Second runs use the first run's "
            f"HTTPCACHE_DIR. Corpus only: {_corpus_only_note()}.",
            "",
            _table(
                [
                    "run",
                    "pages",
                    "wall s",
                    "pages/s (process)",
                    "x plain",
                    "pages/s (crawl)",
                    "x plain",
                    "pages per crawler CPU s",
                    "x plain",
                    "crawler CPU",
                    "farm CPU",
                    "cache hits",
                ],
                [
                    [
                        r.label,
                        f"{r.pages:,}",
                        f"{r.wall_s:.1f}",
                        f"{r.rate():,.0f}",
                        _x(r.rate() / plain.rate()) if plain.pages else "?",
                        f"{r.crawl_rate():,.0f}",
                        _x(r.crawl_rate() / plain.crawl_rate()) if plain.crawl_rate() else "?",
                        f"{r.cpu_rate():,.0f}",
                        _x(r.cpu_rate() / plain.cpu_rate()) if plain.cpu_rate() else "?",
                        f"{r.crawler_cpu_s / r.wall_s:.0%}",
                        f"{r.farm_cpu_s / r.wall_s:.0%}",
                        f"{r.cache_hits:,}",
                    ]
                    for r in crawl
                ],
            ),
            "",
            "CPU columns: CPU seconds / wall seconds (100% = one core); the crawler's "
            "counts the crawl process and every process it started (extraction workers "
            "and their forkserver, sampled every 0.1 s). Pages per crawler CPU second is "
            "the figure that holds when other processes share the CPUs. "
            + (
                "The farm used close to a full core in some run: it may be the bottleneck there."
                if farm_busy > 0.85
                else f"The farm never used more than {farm_busy:.0%} of a core: the crawler, "
                "not the server, sets the pace."
            ),
            "",
        ]
        failed = [r.label for r in crawl if r.returncode != 0]
        if failed:
            out += [f"Crawls that failed: {', '.join(failed)}", ""]
    return "\n".join(out)


def _corpus_only_note() -> str:
    from scrapy_focus import settings as focus_defaults

    off = [
        name
        for name in focus_defaults.defaults()
        if name.endswith("_ENABLED")
        and name not in {"FOCUS_CORPUS_ENABLED", "FOCUS_CANONICAL_URLS_ENABLED"}
    ]
    return ", ".join(f"{name}=False" for name in off) or "nothing else to switch off"


def _goals(storage: list[StorageResult]) -> list[str]:
    lmdb = storage[0]
    by_label = {r.label: r for r in storage}
    fs = by_label.get("FilesystemCacheStorage")
    fs_gzip = by_label.get("FilesystemCacheStorage, HTTPCACHE_GZIP")
    rows = []
    if fs:
        ratio = lmdb.retrieve_rate() / fs.retrieve_rate()
        rows.append(["retrieve ≥ 5x FilesystemCacheStorage (warm)", _x(ratio), _met(ratio >= 5)])
        ratio = lmdb.cold_rate() / fs.cold_rate()
        rows.append(["retrieve ≥ 5x FilesystemCacheStorage (cold)", _x(ratio), _met(ratio >= 5)])
        ratio = lmdb.store_rate() / fs.store_rate()
        rows.append(["store ≥ 3x FilesystemCacheStorage", _x(ratio), _met(ratio >= 3)])
    if fs_gzip:
        ratio = lmdb.retrieve_rate() / fs_gzip.retrieve_rate()
        rows.append(["(retrieve vs the gzip variant, warm)", _x(ratio), _met(ratio >= 5)])
        ratio = lmdb.cold_rate() / fs_gzip.cold_rate()
        rows.append(["(retrieve vs the gzip variant, cold)", _x(ratio), _met(ratio >= 5)])
        ratio = lmdb.store_rate() / fs_gzip.store_rate()
        rows.append(["(store vs the gzip variant)", _x(ratio), _met(ratio >= 3)])
        share = lmdb.disk_bytes / fs_gzip.disk_bytes
        rows.append(
            ["disk ≤ 1/3 of FilesystemCacheStorage with gzip", f"{share:.2f}", _met(share <= 1 / 3)]
        )
    rows.append(
        ["constant number of files", f"{lmdb.files} files, {lmdb.dirs} dirs", _met(lmdb.files <= 2)]
    )
    return [_table(["goal", "measured", "met"], rows)]


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


# -- main -------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=50_000, help="pages to store (50000)")
    parser.add_argument(
        "--crawl-pages",
        type=int,
        default=GRAPH_NODES,
        help=f"pages of the farm's graph to crawl (default and maximum {GRAPH_NODES})",
    )
    parser.add_argument("--skip-crawl", action="store_true", help="no crawl benchmark")
    parser.add_argument("--skip-storage", action="store_true", help="no storage/codec benchmark")
    parser.add_argument("--codec-bodies", type=int, default=3000, help="bodies for the codecs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="also write the Markdown report here")
    parser.add_argument("--workdir", type=Path, help="parent of the temporary directory")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    args.argv = argv
    if not 1 <= args.crawl_pages <= GRAPH_NODES:
        parser.error(f"--crawl-pages must be between 1 and {GRAPH_NODES}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    args.load_at_start = os.getloadavg()
    args.started = time.perf_counter()

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="bench-corpus-", dir=args.workdir))
    storage: list[StorageResult] = []
    codecs: list[CodecResult] = []
    calibration: Calibration | None = None
    corpus_info: dict[str, Any] = {}
    try:
        if not args.skip_storage:
            log(f"generating {args.pages:,} pages ...")
            start = time.perf_counter()
            corpus = generate_corpus(args.pages, args.seed)
            sizes = [len(response.body) for response in corpus.responses]
            corpus_info = {
                "pages": len(sizes),
                "unique": len(corpus.unique_bodies),
                "median": statistics.median(sizes),
                "mean": statistics.fmean(sizes),
                "total": sum(sizes),
            }
            log(f"  {corpus_info['total'] / MB:,.0f} MB in {time.perf_counter() - start:.0f} s")
            for case in storage_cases():
                storage.append(bench_storage(case, corpus, workdir, args.seed, log))
                shutil.rmtree(workdir / "storage")
            log("codecs ...")
            sample = corpus.unique_bodies[: args.codec_bodies]
            corpus_info["codec_bodies"] = len(sample)
            codecs = bench_codecs(sample)
            calibration = calibrate(sample)
            del corpus, sample
            gc.collect()
        crawl: list[CrawlResult] = []
        if not args.skip_crawl:
            log(f"crawling {args.crawl_pages:,} pages, plain and with the Addon ...")
            crawl = bench_crawl(args.crawl_pages, workdir, log)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    text = report(args, corpus_info, storage, codecs, calibration, crawl)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
