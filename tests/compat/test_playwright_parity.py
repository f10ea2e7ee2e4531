"""scrapy-playwright's documented settings and request meta keys (its README), each in a
real crawl with real headless Chromium, run twice: with scrapy-playwright's own download
handler alone, and with the scrapy-focus add-on, whose FocusDownloadHandler wraps it.

The user's setup is the same in both runs (the same ``PLAYWRIGHT_*`` settings, the same
spider, tests/spiders/playwright_spider.py); every test asserts what the spider and the
test server (:class:`ParityWeb`, HTTP and HTTPS on 127.0.0.1) observed, and the same
assertion holds for both handlers.  A scenario's crawl runs once per handler and serves
all the tests that read it.  Differences scrapy-focus makes by design are strict xfails
of the scrapy-focus run, with the reason.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import os
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.crawl import CrawlResult, run_crawl

CHROMIUM = "/usr/bin/chromium"
PLAYWRIGHT_HANDLER = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
HELPERS = "tests.spiders.playwright_spider"
SPIDER = "playwright_spider.py"
CRAWL_TIMEOUT = 45  # each crawl takes 5-20 s; a hung one fails its tests

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM), reason="needs Debian's chromium (see .ci/setup)"
)

SCRAPY_PLAYWRIGHT = "scrapy-playwright"
SCRAPY_FOCUS = "scrapy-focus"
HANDLERS = [SCRAPY_PLAYWRIGHT, SCRAPY_FOCUS]
#: The two setups: the same user configuration, with or without the add-on.
HANDLER_SETTINGS: dict[str, dict[str, Any]] = {
    SCRAPY_PLAYWRIGHT: {
        "ADDONS": {},  # tests/crawl.py's BASE_SETTINGS enable the add-on
        "DOWNLOAD_HANDLERS": {"http": PLAYWRIGHT_HANDLER, "https": PLAYWRIGHT_HANDLER},
    },
    SCRAPY_FOCUS: {
        "ADDONS": {"scrapy_focus.Addon": 500},
        # The add-on obeys robots.txt (Scrapy's default outside a project is not to):
        # its /robots.txt fetch would be one more request the server counts.  The
        # corpus stays on: every URL is fetched once per crawl, so it serves nothing.
        "ROBOTSTXT_OBEY": False,
    },
}


def by_design(reason: str) -> Any:
    """A difference scrapy-focus makes on purpose: its run of the test must fail."""
    return pytest.mark.xfail(strict=True, reason=f"by design in scrapy-focus: {reason}")


def handlers(**focus_marks: Any) -> list[Any]:
    """The handler parameters, the scrapy-focus one marked with *focus_marks* values."""
    marks = list(focus_marks.values())
    return [SCRAPY_PLAYWRIGHT, pytest.param(SCRAPY_FOCUS, marks=marks)]


def launch_options(*args: str) -> dict[str, Any]:
    """Debian's Chromium, as a scrapy-playwright user on this machine launches it."""
    sandbox = ["--no-sandbox"] if os.geteuid() == 0 else []  # Chromium refuses root otherwise
    return {"executable_path": CHROMIUM, "args": [*sandbox, *args]}


LAUNCH_USER_AGENT = "LaunchOptions/1.0"
SCRAPY_USER_AGENT = "ParityScrapy/1.0"

#: Each scenario: the spider's ``start_<name>`` requests, and the user's settings.
SCENARIOS: dict[str, dict[str, Any]] = {
    "basics": {
        "LOG_LEVEL": "DEBUG",  # scrapy-playwright's context and page lines are DEBUG
        "PLAYWRIGHT_BROWSER_TYPE": "chromium",
        "PLAYWRIGHT_LAUNCH_OPTIONS": launch_options(f"--user-agent={LAUNCH_USER_AGENT}"),
        "PLAYWRIGHT_CONTEXTS": {
            "default": {"java_script_enabled": False},
            "named": {"user_agent": "NamedContext/1.0"},
        },
    },
    "timeout": {
        "PLAYWRIGHT_LAUNCH_OPTIONS": launch_options(),
        "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": 1000,
    },
    "headers_custom": {
        "PLAYWRIGHT_LAUNCH_OPTIONS": launch_options(),
        "PLAYWRIGHT_PROCESS_REQUEST_HEADERS": f"{HELPERS}.parity_headers",
        "USER_AGENT": SCRAPY_USER_AGENT,
    },
    "headers_none": {
        "PLAYWRIGHT_LAUNCH_OPTIONS": launch_options(),
        "PLAYWRIGHT_PROCESS_REQUEST_HEADERS": None,  # the spider makes "None" None
        "USER_AGENT": SCRAPY_USER_AGENT,
    },
    "headers_default": {
        "PLAYWRIGHT_LAUNCH_OPTIONS": launch_options(),
        "USER_AGENT": SCRAPY_USER_AGENT,
    },
    "pages": {
        "PLAYWRIGHT_LAUNCH_OPTIONS": launch_options(),
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": 1,
    },
    "contexts": {
        "PLAYWRIGHT_LAUNCH_OPTIONS": launch_options(),
        "PLAYWRIGHT_MAX_CONTEXTS": 1,
    },
    "abort": {
        "PLAYWRIGHT_LAUNCH_OPTIONS": launch_options(),
        "PLAYWRIGHT_ABORT_REQUEST": f"{HELPERS}.abort_blocked_script",
    },
    "meta": {"PLAYWRIGHT_LAUNCH_OPTIONS": launch_options()},
    "meta_page": {"PLAYWRIGHT_LAUNCH_OPTIONS": launch_options()},
}
SCENARIO_HEADERS = {"headers_custom", "headers_none", "headers_default"}


# -- the test server --------------------------------------------------------------------


@dataclass
class Hit:
    """One request the server received."""

    scheme: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    started: float
    ended: float | None = None

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)
#: Every page has text enough for scrapy-focus's ladder to take it as it is (a thin
#: page or a script shell goes to a stronger engine: test_a_thin_page_...).
PAGE = """<!DOCTYPE html><html><head><title>{title}</title></head><body>
<article><h1>{title}</h1><p>{text}</p></article>
{body}</body></html>"""
PROBE = """<pre id="probe">no-js</pre>
<script>
console.log("parity-probe " + {id_json});
document.getElementById("probe").textContent = JSON.stringify({{
  ua: navigator.userAgent, vendor: navigator.vendor,
  init: window.__parity_init || null, referrer: document.referrer}});
</script>"""
#: Markers are built by the scripts: the HTML as served never holds them.
RENDERED = """<div id="js"></div>
<script>document.getElementById("js").textContent = "rendered-" + "by-js";</script>"""
ASSETS = """<img src="/assets/pixel.png">
<script src="/assets/allowed.js"></script><script src="/assets/blocked.js"></script>"""
CLICKY = """<button id="go" onclick="document.getElementById('out').textContent =
 'clicked-' + 'by-page-method'">go</button><p id="out"></p>
<a id="nav" href="/landing?from={id}">next</a>"""
LAZY = """<iframe src="/slow-frame?s=2"></iframe>
<script>addEventListener("load", () => document.body.setAttribute("data-" + "loaded", "yes"));
</script>"""
#: A script shell: the kind of page scrapy-focus's ladder sends to a stronger engine.
THIN = """<!DOCTYPE html><html><head><title>Thin</title></head><body>{body}</body></html>"""
TEXT = " ".join(["A paragraph of plain server-rendered text, long enough to read."] * 20)


class ParityWeb:
    """A threaded HTTP server and its HTTPS twin on 127.0.0.1: the pages above, each
    request recorded (path, query, headers, when it arrived and was answered)."""

    def __init__(self, certs: Path) -> None:
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self.servers = [self._server("http"), self._server("https", _tls_context(certs))]
        self._threads = [
            threading.Thread(target=server.serve_forever, daemon=True) for server in self.servers
        ]

    def _server(self, scheme: str, tls: ssl.SSLContext | None = None) -> ThreadingHTTPServer:
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                web._serve(self, scheme)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        if tls is not None:
            server.socket = tls.wrap_socket(server.socket, server_side=True)
        return server

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.servers[0].server_address[1]}"

    @property
    def tls_base(self) -> str:
        return f"https://127.0.0.1:{self.servers[1].server_address[1]}"

    def __enter__(self) -> ParityWeb:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()

    def since(self, start: int) -> list[Hit]:
        with self._lock:
            return self.hits[start:]

    def _serve(self, handler: BaseHTTPRequestHandler, scheme: str) -> None:
        parts = urlsplit(handler.path)
        query = dict(parse_qsl(parts.query))
        hit = Hit(
            scheme,
            parts.path,
            query,
            {name.lower(): value for name, value in handler.headers.items()},
            time.monotonic(),
        )
        with self._lock:
            self.hits.append(hit)
        status, content_type, body, delay = _page(parts.path, query)
        time.sleep(delay)
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # a page closed on a timeout
        hit.ended = time.monotonic()


HTML = "text/html; charset=utf-8"


def _page(path: str, query: dict[str, str]) -> tuple[int, str, bytes, float]:
    """Status, content type, body and delay of the page at *path*."""
    id = query.get("id", "")
    delay = float(query.get("s", 0))
    probe = PROBE.format(id_json=json.dumps(id))
    bodies = {
        "/probe": probe,
        "/slow": probe,
        "/plain": RENDERED,
        "/assets-page": ASSETS,
        "/clicky": CLICKY.format(id=id),
        "/landing": "<p>landed</p>",
        "/lazy": LAZY,
    }
    if path in bodies:
        html = PAGE.format(title=f"{path[1:].title()} {id}".strip(), text=TEXT, body=bodies[path])
        return 200, HTML, html.encode(), delay
    if path == "/thin":
        return 200, HTML, THIN.format(body=probe).encode(), delay
    if path == "/slow-frame":
        return 200, HTML, THIN.format(body="a frame").encode(), delay
    if path == "/assets/pixel.png":
        return 200, "image/png", PIXEL, 0.0
    if path.startswith("/assets/") and path.endswith(".js"):
        return 200, "application/javascript", b"window.__asset = (window.__asset || 0) + 1;", 0.0
    return 404, HTML, b"<html><body>not found</body></html>", 0.0


def _tls_context(directory: Path) -> ssl.SSLContext:
    """A server context with a self-signed certificate for 127.0.0.1."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "parity.test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return context


# -- crawls -------------------------------------------------------------------------------


@dataclass
class Run:
    """One scenario's crawl with one handler: the crawl's result, the server's hits."""

    handler: str
    result: CrawlResult
    hits: list[Hit]
    items: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.items = {item["id"]: item for item in self.result.items}

    def tail(self) -> str:
        return self.result.log[-4000:]

    def item(self, id: str) -> dict[str, Any]:
        assert id in self.items, f"no item {id!r} ({self.handler}); log tail:\n{self.tail()}"
        return self.items[id]

    def page(self, id: str) -> dict[str, Any]:
        """The item of a request that must have been answered."""
        item = self.item(id)
        assert "error" not in item, f"{id} failed ({self.handler}): {item}"
        return item

    def hits_for(self, path: str, **query: str) -> list[Hit]:
        return [
            hit
            for hit in self.hits
            if hit.path == path and all(hit.query.get(k) == v for k, v in query.items())
        ]

    def stat(self, name: str) -> Any:
        return self.result.stats.get(name)


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ParityWeb]:
    with ParityWeb(tmp_path_factory.mktemp("certs")) as running:
        yield running


@pytest.fixture(scope="module")
def crawl(web: ParityWeb, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Run]:
    """``crawl(scenario, handler)``: that crawl, run on first use (crawls run one at a
    time, so the server's hits since its start are its own)."""
    runs: dict[tuple[str, str], Run] = {}

    def run(scenario: str, handler: str) -> Run:
        if (scenario, handler) not in runs:
            workdir = tmp_path_factory.mktemp(f"{scenario}-{handler}")
            start = len(web.hits)
            args = {"scenario": _spider_scenario(scenario), "base": web.base, "tls": web.tls_base}
            settings = {**SCENARIOS[scenario], **HANDLER_SETTINGS[handler]}
            try:
                result = run_crawl(
                    workdir, [], settings, spider=SPIDER, args=args, timeout=CRAWL_TIMEOUT
                )
            except subprocess.TimeoutExpired as exc:
                result = _timed_out(workdir, exc)  # its tests fail on what is missing
            runs[scenario, handler] = Run(handler, result, web.since(start))
        return runs[scenario, handler]

    return run


def _timed_out(workdir: Path, exc: subprocess.TimeoutExpired) -> CrawlResult:
    """What a crawl killed at CRAWL_TIMEOUT left: its log and the items it wrote."""
    log = exc.stderr.decode() if isinstance(exc.stderr, bytes) else exc.stderr or ""
    items_file = workdir / "items.jsonl"
    lines = items_file.read_text().splitlines() if items_file.exists() else []
    items = []
    for line in lines:
        with contextlib.suppress(ValueError):  # the last line may be cut short
            items.append(json.loads(line))
    return CrawlResult(-9, f"{log}\n(killed after {CRAWL_TIMEOUT} s)", items, {})


def _spider_scenario(scenario: str) -> str:
    return "headers" if scenario in SCENARIO_HEADERS else scenario


def max_in_flight(hits: list[Hit]) -> int:
    """The most of *hits* the server was answering at one time."""
    events = sorted(
        [(hit.started, 1) for hit in hits] + [(hit.ended or float("inf"), -1) for hit in hits]
    )
    # At equal times an answer ends before the next request starts: (t, -1) < (t, 1).
    most = current = 0
    for _, step in events:
        current += step
        most = max(most, current)
    return most


# -- PLAYWRIGHT_BROWSER_TYPE, PLAYWRIGHT_LAUNCH_OPTIONS, PLAYWRIGHT_CONTEXTS ----------------


@pytest.mark.parametrize("handler", HANDLERS)
def test_browser_type_chromium_renders_in_chromium(crawl: Callable, handler: str) -> None:
    run = crawl("basics", handler)
    item = run.page("bare")
    assert "playwright" in item["flags"]
    assert item["probe"]["vendor"] == "Google Inc."  # Chromium's; Firefox's is ""


@pytest.mark.parametrize("handler", HANDLERS)
def test_launch_options_args_reach_the_browser(crawl: Callable, handler: str) -> None:
    # "bare" is a context of no options: the browser's --user-agent shows through.
    item = crawl("basics", handler).page("bare")
    assert item["probe"]["ua"] == LAUNCH_USER_AGENT


@pytest.mark.parametrize("handler", HANDLERS)
def test_contexts_default_applies_to_requests_that_name_no_context(
    crawl: Callable, handler: str
) -> None:
    item = crawl("basics", handler).page("default")
    assert item["probe"] == "no-js"  # PLAYWRIGHT_CONTEXTS["default"]: java_script_enabled False


@pytest.mark.parametrize(
    "handler",
    handlers(
        name=by_design(
            "requests that name no context go to scrapy-focus's own contexts, "
            "focus-<engine>-<n> (docs/engines.md, 'For scrapy-playwright users')"
        )
    ),
)
def test_request_naming_no_context_reports_context_default(crawl: Callable, handler: str) -> None:
    assert crawl("basics", handler).page("default")["context"] == "default"


@pytest.mark.parametrize("handler", HANDLERS)
def test_playwright_context_meta_uses_the_named_context_of_the_settings(
    crawl: Callable, handler: str
) -> None:
    item = crawl("basics", handler).page("named")
    assert item["context"] == "named"
    assert item["probe"]["ua"] == "NamedContext/1.0"


@pytest.mark.parametrize("handler", HANDLERS)
def test_meta_playwright_renders_and_its_absence_downloads_plainly(
    crawl: Callable, handler: str
) -> None:
    run = crawl("basics", handler)
    rendered, plain = run.page("rendered"), run.page("unrendered")
    assert rendered["rendered"] and "playwright" in rendered["flags"]
    assert not plain["rendered"] and "playwright" not in plain["flags"]


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_thin_page_requested_with_playwright_is_answered_by_chromium_alone(
    crawl: Callable, handler: str
) -> None:
    run = crawl("basics", handler)
    assert run.page("thin")["probe"]["vendor"] == "Google Inc."
    assert len(run.hits_for("/thin", id="thin")) == 1


# -- scrapy-playwright's log lines ----------------------------------------------------------

#: (id, scenario, level, message): what scrapy-playwright's users look for in a crawl's
#: log, under its "scrapy-playwright" logger; {base} is the server's URL.
LOG_LINES = [
    ("versions", "INFO", "Starting download handler. Versions: scrapy-playwright=="),
    ("browser-launched", "INFO", "Browser chromium launched"),
    ("startup-contexts", "INFO", "Launching 2 startup context(s)"),
    ("startup-contexts-done", "INFO", "Startup context(s) launched"),
    ("context-default", "DEBUG", "Browser context started: 'default' (persistent=False"),
    ("context-while-crawling", "DEBUG", "Browser context started: 'bare' (persistent=False"),
    ("page-default", "DEBUG", "[Context=default] New page created, page count is"),
    ("page-named", "DEBUG", "[Context=named] New page created, page count is"),
    (
        "request-default",
        "DEBUG",
        "[Context=default] Request: <GET {base}/probe?id=default> (resource type: document)",
    ),
    ("response-default", "DEBUG", "[Context=default] Response: <200 {base}/probe?id=default>"),
    ("response-named", "DEBUG", "[Context=named] Response: <200 {base}/probe?id=named>"),
    (
        "closing-page",
        "WARNING",
        "Closing page due to failed request: <GET {base}/slow?s=3&id=goto-timeout>",
    ),
    ("closing-handler", "INFO", "Closing download handler"),
    ("closing-browser", "INFO", "Closing browser"),
]
_FOCUS_CONTEXTS = (
    "a request that names no context runs in scrapy-focus's focus-chromium-<n> context, "
    "so scrapy-playwright logs [Context=focus-chromium-0], not [Context=default] "
    "(docs/engines.md, 'For scrapy-playwright users')"
)
#: Lines scrapy-focus does not keep, and why (the others it keeps, word for word).
LOG_LINES_DROPPED: dict[str, str] = {
    "page-default": _FOCUS_CONTEXTS,
    "request-default": _FOCUS_CONTEXTS,
    "response-default": _FOCUS_CONTEXTS,
}


def _log_params() -> list[Any]:
    params = []
    for id, level, message in LOG_LINES:
        for handler in HANDLERS:
            marks = []
            if handler == SCRAPY_FOCUS and id in LOG_LINES_DROPPED:
                marks.append(by_design(LOG_LINES_DROPPED[id]))
            params.append(pytest.param(handler, level, message, id=f"{id}-{handler}", marks=marks))
    return params


@pytest.mark.parametrize(("handler", "level", "message"), _log_params())
def test_scrapy_playwright_log_line_appears(
    crawl: Callable, web: ParityWeb, handler: str, level: str, message: str
) -> None:
    run = crawl("basics", handler)
    line = f"[scrapy-playwright] {level}: {message.format(base=web.base)}"
    assert line in run.result.log, f"{line!r} not logged ({handler})"


# -- PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT --------------------------------------------------


@pytest.mark.parametrize("handler", HANDLERS)
def test_default_navigation_timeout_fails_a_slower_page(crawl: Callable, handler: str) -> None:
    run = crawl("timeout", handler)
    slow = run.item("slow")
    assert slow.get("error") == "TimeoutError", slow
    assert "Timeout 1000ms exceeded" in slow["message"]
    assert run.page("fast")["probe"]["ua"]  # a fast page loads


@pytest.mark.parametrize("handler", HANDLERS)
def test_a_browser_download_that_timed_out_is_not_fetched_again(
    crawl: Callable, handler: str
) -> None:
    run = crawl("timeout", handler)
    run.item("slow")
    assert len(run.hits_for("/slow", id="slow")) == 1


# -- PLAYWRIGHT_PROCESS_REQUEST_HEADERS -------------------------------------------------------


def _navigation(run: Run) -> Hit:
    hits = run.hits_for("/assets-page", id="headers")
    assert len(hits) == 1, f"{len(hits)} navigations ({run.handler}); log:\n{run.tail()}"
    return hits[0]


def _script(run: Run) -> Hit:
    hits = run.hits_for("/assets/allowed.js")
    assert hits, f"the page's script was not requested ({run.handler})"
    return hits[0]


@pytest.mark.parametrize("handler", HANDLERS)
def test_process_request_headers_function_sets_headers_of_every_request(
    crawl: Callable, handler: str
) -> None:
    run = crawl("headers_custom", handler)
    run.page("headers")
    navigation, script = _navigation(run), _script(run)
    assert navigation.header("x-parity") == "custom"
    assert script.header("x-parity") == "custom"
    # The function sees the Scrapy request's headers for its navigation.
    assert navigation.header("x-from-scrapy") == "yes"


@pytest.mark.parametrize("handler", HANDLERS)
def test_process_request_headers_none_sends_the_browsers_headers_only(
    crawl: Callable, handler: str
) -> None:
    run = crawl("headers_none", handler)
    run.page("headers")
    navigation = _navigation(run)
    assert "Chrome/" in (navigation.header("user-agent") or "")
    assert navigation.header("x-from-scrapy") is None  # README: Request.headers are ignored


@pytest.mark.parametrize("handler", HANDLERS)
def test_process_request_headers_default_sends_the_requests_headers(
    crawl: Callable, handler: str
) -> None:
    run = crawl("headers_default", handler)
    run.page("headers")
    assert _navigation(run).header("x-from-scrapy") == "yes"


@pytest.mark.parametrize(
    "handler",
    handlers(
        user_agent=by_design(
            "a browser's navigations carry the browser's own User-Agent unless "
            "PLAYWRIGHT_PROCESS_REQUEST_HEADERS is set (docs/engines.md, 'What browsers send')"
        )
    ),
)
def test_process_request_headers_default_sends_scrapys_user_agent(
    crawl: Callable, handler: str
) -> None:
    run = crawl("headers_default", handler)
    run.page("headers")
    assert _navigation(run).header("user-agent") == SCRAPY_USER_AGENT


# -- PLAYWRIGHT_MAX_PAGES_PER_CONTEXT, PLAYWRIGHT_MAX_CONTEXTS ---------------------------------


@pytest.mark.parametrize("handler", HANDLERS)
def test_max_pages_per_context_limits_the_open_pages_of_each_context(
    crawl: Callable, handler: str
) -> None:
    run = crawl("pages", handler)
    for id in ("A1", "A2", "B1", "B2"):
        run.page(id)
    per_context = {ctx: max_in_flight(run.hits_for("/slow", ctx=ctx)) for ctx in "AB"}
    assert per_context == {"A": 1, "B": 1}
    assert max_in_flight(run.hits_for("/slow")) == 2  # the two contexts side by side


@pytest.mark.parametrize("handler", HANDLERS)
def test_max_contexts_holds_a_new_context_until_one_is_closed(
    crawl: Callable, handler: str
) -> None:
    run = crawl("contexts", handler)
    for id in ("c1", "c2", "c3"):
        assert run.page(id)["context"] == id
    assert max_in_flight(run.hits_for("/slow")) == 1
    assert run.stat("playwright/context_count/max_concurrent") == 1


# -- PLAYWRIGHT_ABORT_REQUEST ---------------------------------------------------------------


@pytest.mark.parametrize("handler", HANDLERS)
def test_abort_request_aborts_what_the_predicate_matches(crawl: Callable, handler: str) -> None:
    run = crawl("abort", handler)
    run.page("abort")
    assert run.hits_for("/assets/blocked.js") == []
    assert run.stat("playwright/request_count/aborted") == 1


@pytest.mark.parametrize("handler", HANDLERS)
def test_abort_request_loads_what_the_predicate_lets_through(crawl: Callable, handler: str) -> None:
    run = crawl("abort", handler)
    run.page("abort")
    assert len(run.hits_for("/assets/allowed.js")) == 1
    assert len(run.hits_for("/assets/pixel.png")) == 1  # the user's predicate keeps images


# -- request meta keys ----------------------------------------------------------------------

META_IDS = [
    "include", "chain1", "chain2", "methods", "navigate", "init", "goto", "goto-default",
    "events", "kwargs1", "kwargs2", "security-http", "security-https",
]  # fmt: skip


@pytest.mark.parametrize("handler", HANDLERS)
def test_every_request_using_the_meta_keys_together_is_answered(
    crawl: Callable, handler: str
) -> None:
    """The ``meta`` crawl: every meta key in one crawl (pages kept by the spider,
    pages of their own, named contexts), as one spider uses them."""
    run = crawl("meta", handler)
    missing = [id for id in META_IDS if id not in run.items]
    assert missing == [], f"unanswered ({handler}): {missing}; log tail:\n{run.tail()}"
    assert run.result.returncode == 0


@pytest.mark.parametrize("handler", HANDLERS)
def test_include_page_hands_the_page_to_the_callback(crawl: Callable, handler: str) -> None:
    item = crawl("meta", handler).page("include")
    assert item["has_page"]
    assert (item["title"], item["answer"], item["closed"]) == ("Probe include", 42, True)


@pytest.mark.parametrize("handler", HANDLERS)
def test_playwright_page_meta_downloads_in_the_given_page(crawl: Callable, handler: str) -> None:
    run = crawl("meta", handler)
    run.page("chain1")
    second = run.page("chain2")
    assert second["same_page"]
    assert second["history"] == 3  # the same tab: about:blank, chain1, chain2


@pytest.mark.parametrize("handler", HANDLERS)
def test_page_methods_run_in_order_and_keep_their_results(crawl: Callable, handler: str) -> None:
    item = crawl("meta", handler).page("methods")
    assert item["evaluate"] == 3
    assert item["clicked"]  # the click's effect is in the response
    assert item["png"]  # the screenshot's bytes are the result


@pytest.mark.parametrize("handler", HANDLERS)
def test_page_method_click_navigating_sets_the_response_url(
    crawl: Callable, web: ParityWeb, handler: str
) -> None:
    item = crawl("meta", handler).page("navigate")
    assert item["url"] == f"{web.base}/landing?from=navigate"


@pytest.mark.parametrize("handler", HANDLERS)
def test_page_init_callback_runs_before_the_page_loads(crawl: Callable, handler: str) -> None:
    assert crawl("meta", handler).page("init")["probe"]["init"] == "ran"


@pytest.mark.parametrize("handler", HANDLERS)
def test_page_goto_kwargs_referer_is_sent(crawl: Callable, web: ParityWeb, handler: str) -> None:
    run = crawl("meta_page", handler)
    run.page("goto")
    (hit,) = run.hits_for("/lazy", id="goto")
    assert hit.header("referer") == f"{web.base}/from-here"


@pytest.mark.parametrize("handler", HANDLERS)
def test_page_goto_kwargs_wait_until_decides_when_the_page_is_read(
    crawl: Callable, handler: str
) -> None:
    run = crawl("meta_page", handler)
    assert not run.page("goto")["loaded"]  # wait_until="domcontentloaded": read before load
    assert run.page("goto-default")["loaded"]  # goto's default: after load


@pytest.mark.parametrize("handler", HANDLERS)
def test_page_event_handlers_see_the_pages_events(
    crawl: Callable, web: ParityWeb, handler: str
) -> None:
    events = crawl("meta_page", handler).page("events")["events"]
    assert "parity-probe events" in events.get("console", [])  # a callable
    assert f"{web.base}/probe?id=events" in events.get("response", [])  # a method's name


@pytest.mark.parametrize("handler", HANDLERS)
def test_context_kwargs_make_the_context_and_are_ignored_once_it_exists(
    crawl: Callable, handler: str
) -> None:
    run = crawl("meta", handler)
    first, second = run.page("kwargs1"), run.page("kwargs2")
    assert (first["context"], second["context"]) == ("fresh", "fresh")
    assert first["probe"]["ua"] == second["probe"]["ua"] == "KwargsContext/1.0"


@pytest.mark.parametrize("handler", HANDLERS)
def test_security_details_are_none_over_plain_http(crawl: Callable, handler: str) -> None:
    assert crawl("meta", handler).page("security-http")["security"] is None


@pytest.mark.parametrize("handler", HANDLERS)
def test_security_details_describe_the_tls_connection(crawl: Callable, handler: str) -> None:
    security = crawl("meta", handler).page("security-https")["security"]
    assert isinstance(security, dict), security
    assert security["subjectName"] == security["issuer"] == "parity.test"  # self-signed
    assert security["protocol"].startswith("TLS")
