"""What a browser download may do, in real crawls with real Chromium: its main
frame stays in the crawl's scope, the crawl's headers go to the requested origin
only, the windows its page opens are closed, DOWNLOAD_MAXSIZE / DOWNLOAD_WARNSIZE
hold, and Chromium runs sandboxed where it can."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from scrapy import Request
from scrapy.settings import Settings

from harness.hostile import LINGER_DELAY, HostileWeb
from scrapy_focus.config import FocusConfig
from scrapy_focus.corpus.reader import Corpus
from scrapy_focus.engines.discovery import available_engines, chromium_args, sandbox_unavailable
from scrapy_focus.engines.guard import SizeLimit
from scrapy_focus.engines.headers import carries_crawl_headers
from tests.test_ladder import CHROMIUM, FIREFOX, Crawl, crawl

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM), reason="needs Debian's chromium (see .ci/setup)"
)

SECRETS = {
    "Authorization": "Bearer sekrit-authorization",
    "X-Api-Key": "sekrit-api-key",
    "Cookie": "session=sekrit-cookie",
}


def host(url: str) -> str:
    return urlsplit(url).hostname or ""


def on_host(items: list[dict], netloc: str) -> list[dict]:
    return [
        item
        for item in items
        if netloc in (host(item.get("url", "")), host(item.get("final_url") or ""))
    ]


def corpus_on_host(result: Crawl, netloc: str) -> list[str]:
    """URLs of the corpus's versions requested from or answered by *netloc*."""
    found = []
    with Corpus(result.corpus) as corpus:
        for page in corpus:
            for version in page.versions():
                if netloc in (host(version.url), host(version.final_url)):
                    found.append(version.final_url)
    return found


#: Both browser engines: the guard is one mechanism, in the handler they share.
BROWSERS = [
    "chromium",
    pytest.param(
        "stealth", marks=pytest.mark.skipif(not os.path.exists(FIREFOX), reason="needs firefox-esr")
    ),
]


def browser_crawl(
    tmp_path: Path, seeds: list[str], start: str, engine: str = "chromium", **settings: Any
) -> Crawl:
    """A crawl whose pages on *start* start on *engine* (the last one)."""
    return crawl(
        tmp_path,
        seeds,
        FOCUS_ENGINES=f"http,{engine}",
        FOCUS_ENGINE_DOMAINS={start: engine},
        **settings,
    )


# -- 1. scope ---------------------------------------------------------------------------


@pytest.mark.parametrize("engine", BROWSERS)
def test_script_leaving_scope_after_a_403_is_a_redirect_the_scheduler_rejects(
    hostile: HostileWeb, tmp_path: Path, engine: str
) -> None:
    escape, outside = hostile.escape, hostile.recorder
    outside.received.clear()
    target = outside.url("/stolen.html")
    result = crawl(
        tmp_path, [escape.hub(f"/blocked.html?to={target}")], FOCUS_ENGINES=f"http,{engine}"
    )
    assert on_host(result.result.items, outside.host) == []
    assert corpus_on_host(result, outside.host) == []
    assert [path for path, _ in outside.received] == []  # aborted before it left
    stats = result.stats
    # The 403 escalated to Chromium, whose page then went off scope.
    assert stats[f"focus/ladder/escalate/http-{engine}"] == 1
    assert stats[f"focus/engine/{engine}/left_scope"] == 1
    assert stats[f"focus/engine/{engine}/navigation_aborted"] == 1
    assert stats["focus/frontier/rejected/off-domain"] >= 1
    assert stats["focus/frontier/rejected_redirect"] >= 1


@pytest.mark.parametrize("engine", BROWSERS)
def test_browser_following_a_302_off_scope_stores_and_emits_nothing_of_it(
    hostile: HostileWeb, tmp_path: Path, engine: str
) -> None:
    escape, outside = hostile.escape, hostile.recorder
    target = outside.url("/moved-target.html")
    result = browser_crawl(tmp_path, [escape.hub(f"/moved.html?to={target}")], escape.host, engine)
    assert on_host(result.result.items, outside.host) == []
    assert corpus_on_host(result, outside.host) == []
    stats = result.stats
    assert stats[f"focus/engine/{engine}/left_scope"] == 1
    assert stats["focus/frontier/rejected/off-domain"] >= 1


# -- 2. credentials ---------------------------------------------------------------------


@pytest.mark.parametrize("engine", BROWSERS)
def test_crawl_headers_reach_the_requested_origin_only(
    hostile: HostileWeb, tmp_path: Path, engine: str
) -> None:
    escape, other = hostile.escape, hostile.recorder
    escape.received.clear()
    other.received.clear()
    seeds = [
        escape.hub(f"/secret.html?to={other.farm.base}", f"/moved.html?to={other.url('/hop.html')}")
    ]
    result = browser_crawl(
        tmp_path,
        seeds,
        escape.host,
        engine,
        # Both hosts in scope (host:port: an entry without a port admits only the
        # default ones): the iframe, the script's navigation and the redirect all happen.
        FOCUS_ALLOWED_DOMAINS=f"{escape.host}:{escape.farm.port},{other.host}:{other.farm.port}",
        DEFAULT_REQUEST_HEADERS=SECRETS,
    )
    asked = {path: headers for path, headers in escape.received}
    assert asked["/secret.html"]["authorization"] == SECRETS["Authorization"]
    assert asked["/secret.html"]["x-api-key"] == SECRETS["X-Api-Key"]
    got = {path: headers for path, headers in other.received}
    # The script's navigation and the redirect's target reached the other host.  The
    # iframe may not: a page answered with the crawl's headers is fetched outside the
    # browser, and Chromium's Local Network Access checks then refuse its requests to
    # loopback addresses.  Whatever arrived carries no secret.
    assert {"/next.html", "/hop.html"} <= set(got)
    for path, headers in other.received:
        if path != "/hop.html":  # a download of its own, see below
            leaked = [v for v in headers.values() if "sekrit" in v]
            assert leaked == [], f"{path} received {leaked}"
    # The redirect was not followed by the browser with the crawl's headers: it went
    # back through RedirectMiddleware and the scheduler, which fetched /hop.html as
    # a request of its own (DEFAULT_REQUEST_HEADERS go with every request of a
    # crawl, on plain HTTP too).
    assert result.stats[f"focus/engine/{engine}/redirect_unfollowed"] >= 1


# -- 3. popups --------------------------------------------------------------------------


@pytest.mark.parametrize("engine", BROWSERS)
def test_windows_a_page_opens_are_closed(hostile: HostileWeb, tmp_path: Path, engine: str) -> None:
    escape = hostile.escape
    escape.reset()
    # /popup.html links to /linger.html, which keeps the crawl (and the browser)
    # open for LINGER_DELAY seconds after /popup.html's download returned.
    result = browser_crawl(tmp_path, [escape.url("/popup.html")], escape.host, engine)
    assert escape.hits_for("/linger.html")
    pings = escape.hits_for("/ping")
    # Unclosed, the popup pings every 100 ms all the while: about 30 times.
    assert len(pings) <= 2, f"{len(pings)} pings in {LINGER_DELAY} s"
    assert result.stats[f"focus/engine/{engine}/popups_closed"] >= 1


# -- 4. DOWNLOAD_MAXSIZE / DOWNLOAD_WARNSIZE ---------------------------------------------


@pytest.mark.parametrize("engine", BROWSERS)
def test_download_maxsize_cancels_a_browser_download(
    hostile: HostileWeb, tmp_path: Path, engine: str
) -> None:
    """A document over DOWNLOAD_MAXSIZE by its Content-Length, and a small one whose
    script makes its page larger than that."""
    huge, escape = hostile.huge, hostile.escape
    huge.reset()
    result = crawl(
        tmp_path,
        [huge.hub("/huge.html"), escape.url("/inflate.html")],
        FOCUS_ENGINES=f"http,{engine}",
        FOCUS_ENGINE_DOMAINS={huge.host: engine, escape.host: engine},
        DOWNLOAD_MAXSIZE=500_000,
    )
    urls = [item["url"] for item in result.result.items]
    assert huge.url("/huge.html") not in urls and escape.url("/inflate.html") not in urls
    log = result.result.log
    assert f"Expected to receive {len(huge.body)} bytes which is larger than download max" in log
    assert "bytes which is larger than download max size (500000)" in log.split("Received ")[1]
    assert len(huge.hits_for("/huge.html")) == 1  # cancelled, not retried nor escalated
    stats = result.stats
    assert stats[f"focus/engine/{engine}/maxsize_cancelled"] == 2
    assert stats["playwright/page_count/closed"] == stats["playwright/page_count"]
    assert result.leftovers == {}


@pytest.mark.parametrize("engine", BROWSERS)
def test_download_warnsize_warns_of_a_browser_download(
    hostile: HostileWeb, tmp_path: Path, engine: str
) -> None:
    huge = hostile.huge
    result = browser_crawl(
        tmp_path, [huge.hub("/huge.html")], huge.host, engine, DOWNLOAD_WARNSIZE=500_000
    )
    assert "bytes which is larger than download warn size (500000)" in result.result.log
    assert result.stats[f"focus/engine/{engine}/warnsize"] == 1
    item = result.item(huge.url("/huge.html"))
    assert item["engine"] == engine


def test_size_limits_are_read_as_scrapys_http_handler_reads_them() -> None:
    settings = Settings({"DOWNLOAD_MAXSIZE": 1000, "DOWNLOAD_WARNSIZE": 100})
    browser = FocusConfig.from_settings(settings).browser

    class Plain:
        pass

    class Small:
        download_maxsize = 500
        download_warnsize = 50

    assert SizeLimit.of(Request("http://a/"), Plain(), browser) == SizeLimit(1000, 100)
    assert SizeLimit.of(Request("http://a/"), Small(), browser) == SizeLimit(500, 50)
    meta = {"download_maxsize": 0, "download_warnsize": 7}
    assert SizeLimit.of(Request("http://a/", meta=meta), Small(), browser) == SizeLimit(0, 7)


# -- 5. the sandbox ---------------------------------------------------------------------


def launch_args(settings: Settings) -> list[str]:
    config = FocusConfig.from_settings(settings)
    chromium = available_engines(config.browser, config.ladder.engines)["chromium"]
    return chromium.settings["PLAYWRIGHT_LAUNCH_OPTIONS"]["args"]


def test_sandbox_is_off_only_where_chromium_cannot_have_it(tmp_path: Path) -> None:
    assert "root" in (sandbox_unavailable(uid=0) or "")
    off = tmp_path / "max_user_namespaces"
    off.write_text("0\n")
    assert "user namespaces" in (sandbox_unavailable(uid=1000, switches=[(str(off), "0")]) or "")
    on = tmp_path / "unprivileged_userns_clone"
    on.write_text("1\n")
    assert sandbox_unavailable(uid=1000, switches=[(str(on), "0")]) is None
    settings = Settings({"FOCUS_ENGINES": "http,chromium", "FOCUS_CHROMIUM_EXECUTABLE": CHROMIUM})
    args = launch_args(settings)
    assert ("--no-sandbox" in args) == (sandbox_unavailable() is not None)
    settings.set("FOCUS_CHROMIUM_SANDBOX", False)
    args = launch_args(settings)
    assert "--no-sandbox" in args


def test_unsandboxed_chromium_is_said_once_at_start_up(hostile: HostileWeb, tmp_path: Path) -> None:
    if sandbox_unavailable() is None:
        pytest.skip("Chromium can have its sandbox here: nothing to warn about")
    static = hostile.static
    result = browser_crawl(tmp_path, [static.hub("/articles/1.html")], static.host)
    assert result.result.log.count("Chromium runs without its sandbox") == 1
    assert result.stats["focus/engine/chromium/sandbox"] is False
    assert result.item(static.url("/articles/1.html"))["engine"] == "chromium"


UNPRIVILEGED = "nobody"


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("runuser") is None,
    reason="needs root, to run Chromium as an unprivileged user",
)
def test_chromium_runs_sandboxed_as_an_unprivileged_user(
    hostile: HostileWeb, tmp_path: Path
) -> None:
    """The command line the engine builds for a user who is not root, run as that
    user: Chromium keeps its sandbox (it exits when it cannot have one) and fetches.
    (Chromium alone: this machine's Python lives where that user cannot read.)"""
    uid = pwd.getpwnam(UNPRIVILEGED).pw_uid
    assert sandbox_unavailable(uid=uid) is None
    settings = Settings({"FOCUS_CHROMIUM_EXECUTABLE": CHROMIUM})
    args, warning = chromium_args(FocusConfig.from_settings(settings).browser, uid=uid)
    assert "--no-sandbox" not in args and warning is None
    # pytest's tmp_path lies under a directory only root may enter.
    home = Path(tempfile.mkdtemp(prefix="focus-unprivileged-"))
    shutil.chown(home, user=UNPRIVILEGED)
    url = hostile.static.url("/articles/1.html")
    proc = subprocess.run(
        [
            "runuser",
            "-u",
            UNPRIVILEGED,
            "--",
            CHROMIUM,
            "--headless",
            *args,
            f"--user-data-dir={home}/profile",
            "--dump-dom",
            url,
        ],
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home),
            "XDG_CACHE_HOME": str(home),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    shutil.rmtree(home, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "<article>" in proc.stdout
    assert "No usable sandbox" not in proc.stderr


def test_only_main_frame_navigations_of_the_requested_origin_carry_crawl_headers(
    hostile: HostileWeb,
) -> None:
    """The rule itself, in a real Chromium on the page of the crawl test above: its
    iframe (another origin) and its script's navigation get no crawl header.  (The
    crawl cannot show the iframe: a page fetched with the crawl's headers is a public
    page to Chromium, whose iframes to loopback addresses it refuses.)"""
    from playwright.sync_api import sync_playwright

    escape, other = hostile.escape, hostile.recorder
    url = escape.url(f"/secret.html?to={other.farm.base}")
    seen: dict[str, bool] = {}
    with sync_playwright() as playwright:
        args, _ = chromium_args(FocusConfig.from_settings(Settings()).browser)
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            page = browser.new_page()

            def route(route: Any, request: Any) -> None:
                seen[urlsplit(request.url).path] = carries_crawl_headers(request, url)
                route.continue_()

            page.route("**", route)
            page.goto(url)
            page.wait_for_url(other.url("/next.html"))
        finally:
            browser.close()
    assert seen == {"/secret.html": True, "/frame.html": False, "/next.html": False}
