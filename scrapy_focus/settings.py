"""Every ``FOCUS_*`` setting and its default, in one place.

The :class:`~scrapy_focus.Addon` copies these into a crawler's settings at
``addon`` priority, so a value set in a project's ``settings.py``, a spider's
``custom_settings`` or on the command line always wins.  Components never read
settings themselves: :class:`~scrapy_focus.config.FocusConfig` reads them once,
with these defaults for any the crawler's settings lack.
"""

from __future__ import annotations

from typing import Any

#: Master switch of the corpus: the Addon enables Scrapy's ``HttpCacheMiddleware``
#: with :class:`~scrapy_focus.corpus.storage.LmdbCacheStorage` as its storage.
FOCUS_CORPUS_ENABLED = True

#: Where the corpus lives.  Empty: ``<HTTPCACHE_DIR>/<spider name>``, resolved
#: inside the project's data directory the way Scrapy resolves ``HTTPCACHE_DIR``.
FOCUS_CORPUS_DIR = ""

#: Initial LMDB map size in bytes.  The map doubles on demand, so this only
#: matters for the first few hundred MiB of a crawl.
FOCUS_CORPUS_MAP_SIZE = 256 * 1024 * 1024

#: ``True`` flushes every write to stable storage (survives power loss, costs
#: an fsync per stored page).  ``False`` is safe against the crawler process
#: being killed at any moment, which is the failure that happens in practice.
FOCUS_CORPUS_FSYNC = False

#: OS readahead on the corpus map.  ``True`` reads a compressed body (several
#: 4 KiB pages) in one disk read instead of one per page: 2-3x faster retrieval
#: from a cold page cache (docs/benchmarks.md).  ``False`` (``MDB_NORDAHEAD``)
#: only for random reads of small records in a corpus much larger than RAM.
FOCUS_CORPUS_READAHEAD = True

#: Body compression: ``"zstd"`` (default, fastest at the same ratio; measured in
#: docs/benchmarks.md), ``"zlib"`` or ``"none"``.  Readers handle all three.
FOCUS_CORPUS_COMPRESSION = "zstd"
FOCUS_CORPUS_COMPRESSION_LEVEL = 3

#: Request meta keys stored with each version, when JSON-serialisable.  ``focus``
#: (the request's :class:`~scrapy_focus.state.FocusState`) is stored as its record:
#: the link, the engine and the attempts before the stored one.
FOCUS_CORPUS_META_KEYS: list[str] = ["depth", "focus"]

#: Response classes, besides Scrapy's own (Response, TextResponse, HtmlResponse,
#: XmlResponse, JsonResponse), that a stored version may be rebuilt as (dotted
#: paths).  A corpus naming any other class never imports it: the version is read
#: as data, its class guessed from its headers (``focus/corpus/untrusted_response_class``).
FOCUS_CORPUS_RESPONSE_CLASSES: list[str] = []

#: Canonical URLs: the Addon installs :class:`~scrapy_focus.urls.CanonicalRequestFingerprinter`
#: so that every component (dupefilter, cache, corpus) keys pages by their canonical URL.
FOCUS_CANONICAL_URLS_ENABLED = True

#: Query parameters dropped by canonicalisation.  Entries ending in ``*`` are
#: prefixes (``utm_*`` drops ``utm_source``, ``utm_medium``, ...).
FOCUS_TRACKING_PARAMS: list[str] = [
    "utm_*",
    "gclid",
    "gclsrc",
    "dclid",
    "fbclid",
    "msclkid",
    "yclid",
    "mc_cid",
    "mc_eid",
    "_ga",
    "_gl",
    "igshid",
    "ref_src",
]


# -- extraction (scrapy_focus.extract) ---------------------------------------------

#: Extract main text, metadata and structured data from every HTML response,
#: once, in worker processes (``ExtractionMiddleware``).
FOCUS_EXTRACT_ENABLED = True
FOCUS_EXTRACT_WORKERS = 0  # worker count; 0 means one per CPU core
#: ``"process"`` (a hung page is killed at the time limit) or ``"thread"``.
FOCUS_EXTRACT_MODE = "process"
#: Hard time limit per page, in seconds.  A page over it is rejected with
#: reason ``extraction-timeout`` and the crawl goes on.
FOCUS_EXTRACT_TIMEOUT = 10.0
#: The extraction function, ``(body, url, content_type, options) -> Extraction``.
FOCUS_EXTRACT_FUNCTION = "scrapy_focus.extract.page.extract_page"
#: trafilatura without its fallback extractors: about 20% faster, but 3 points of
#: word F1 lower on WCXB-dev (forums and service pages suffer most; the article
#: set does not notice).  See docs/benchmarks.md.
FOCUS_EXTRACT_FAST = False
#: Title, author, date, description, site name, language.
FOCUS_EXTRACT_METADATA = True
FOCUS_EXTRACT_FAVOR_PRECISION = False
FOCUS_EXTRACT_FAVOR_RECALL = False
FOCUS_EXTRACT_TABLES = True
#: Elements kept of a page's tree (the rest is dropped before extraction): twice
#: the largest of 1,678 labelled pages; trafilatura needs seconds per 10,000.
FOCUS_EXTRACT_MAX_TREE_SIZE = 30_000
#: Bodies larger than this are not extracted (rejected as ``oversized``).
FOCUS_EXTRACT_MAX_BYTES = 8 * 1024 * 1024
#: The extraction cascade: trafilatura without its fallbacks first, the full one again
#: where that result is short or holds little of the page's own text (a little more F1
#: for a little more CPU: docs/benchmarks.md).  No effect with FOCUS_EXTRACT_FAST.
FOCUS_EXTRACT_CASCADE = False
#: With the cascade, also run the full extraction where the cheap result's confidence
#: (scrapy_focus.extract.confidence) is below this; 0.0: the score never escalates
#: (it did not improve F1 for its cost on WCXB-dev).
FOCUS_EXTRACT_CASCADE_CONFIDENCE = 0.0
#: A block of at least this many links, nearly all link text (a site map, a table of
#: contents, a general index), is cut to its first 100 links before trafilatura walks
#: it; the page measures still count all of it.  0: never.
FOCUS_EXTRACT_PRUNE_LINKS = 2000
#: Learn per host the element holding trafilatura's main text, then read it in its place,
#: audited (scrapy_focus.extract.templates): less CPU; False: trafilatura on every page.
FOCUS_EXTRACT_TEMPLATES = True

# -- confidence and the content contract (scrapy_focus.pipelines) -----------------

#: ConfidencePipeline + ContractPipeline + re-queueing from the corpus.
FOCUS_CONTRACT_ENABLED = True
FOCUS_HIGH_CONFIDENCE = 0.75
FOCUS_MEDIUM_CONFIDENCE = 0.45
#: Pages below this confidence are rejected (``low-confidence``); None: MEDIUM.
FOCUS_MIN_CONFIDENCE: float | None = None
#: Main text shorter than this is rejected (``too-short``).
FOCUS_MIN_CONTENT_CHARS = 100
#: Accepted languages (ISO 639-1, e.g. ``["en", "de"]``); empty: any.
FOCUS_LANGUAGES: list[str] = []
#: Page fields that must be non-empty (e.g. ``["title", "date"]``).
FOCUS_REQUIRED_FIELDS: list[str] = []
#: Reject pages whose relevance is below FOCUS_RELEVANCE_THRESHOLD.
FOCUS_DROP_OFF_TOPIC = False
FOCUS_RELEVANCE_THRESHOLD = 0.5
#: Emit items for unchanged / rejected pages too (they are always recorded).
FOCUS_EMIT_UNCHANGED = False
FOCUS_EMIT_REJECTED = False

# -- adaptive re-crawl (scrapy_focus.corpus.freshness) -------------------------------

#: Re-fetch accepted pages when due; the interval grows while a page stays
#: unchanged and shrinks when it changes.
FOCUS_RECRAWL = False
FOCUS_RECRAWL_INTERVAL = 86_400.0
FOCUS_RECRAWL_MIN_INTERVAL = 3_600.0
FOCUS_RECRAWL_MAX_INTERVAL = 30 * 86_400.0
FOCUS_RECRAWL_GROW = 1.5
FOCUS_RECRAWL_SHRINK = 0.5


# -- the focused frontier (scrapy_focus.frontier) ---------------------------------------

#: FocusScheduler as SCHEDULER, LinkContextMiddleware, the periodic focus log line.
FOCUS_FRONTIER_ENABLED = True
#: What the crawl is about: a query or a paragraph.  Empty: no topic, the
#: frontier is a polite breadth-first scheduler.
FOCUS_TOPIC = ""
#: On-topic examples: texts, or URLs fetched first whose text joins the topic.
FOCUS_TOPIC_EXAMPLES: list[str] = []
#: Dotted path to ``(extraction) -> float in [0, 1]`` replacing page relevance.
FOCUS_PAGE_CLASSIFIER: str | None = None
#: Page relevance is cos / (cos + FOCUS_RELEVANCE_SCALE), cos being the page's
#: cosine with the topic: a page at this cosine scores 0.5.
FOCUS_RELEVANCE_SCALE = 0.15
#: Seeds for FocusSpider and ``scrapy focus-crawl``.
FOCUS_SEEDS: list[str] = []
#: Do not follow links of pages below the relevance threshold (default: follow
#: them with lower scores, "soft focus").
FOCUS_HARD_FOCUS = False
#: Shark-search decay of the score a relevant page hands down to its links.
FOCUS_INHERIT_DECAY = 0.5
#: Links' meaning from a static embedding model where their words share none with the
#: topic (frontier/semantic.py, the ``semantic`` extra): "auto" when installed, True
#: required, False never (the default: it did not pay, docs/benchmarks.md).
FOCUS_SEMANTIC = False
#: Stop conditions (0: off).  FOCUS_DEADLINE is in seconds.
FOCUS_MAX_PAGES = 0
FOCUS_MAX_RELEVANT_PAGES = 0
FOCUS_DEADLINE = 0.0
#: Saturation stop: the best frontier score stayed below FOCUS_SATURATION_SCORE
#: for FOCUS_SATURATION_PAGES dequeues in a row.
FOCUS_SATURATION_SCORE = 0.0
FOCUS_SATURATION_PAGES = 0
#: Scope.  Allowed domains match subdomains too, on the default ports (80, 443);
#: ``host:port`` allows another port; Unicode names are matched as IDNA.  Empty:
#: the spider's ``allowed_domains``, else the seeds' hosts (FOCUS_SEED_SCOPE
#: "host"), their registrable domains by the Public Suffix List ("domain"), or
#: anything ("any").  A seed on another port allows that port on its host.  With
#: neither allowed domains nor "any", a crawl that gets no seed first stops
#: (close reason ``focus_no_scope``).
FOCUS_ALLOWED_DOMAINS: list[str] = []
FOCUS_SEED_SCOPE = "host"
FOCUS_ALLOWED_PATHS: list[str] = []
FOCUS_DENY: list[str] = []  # URL regexes
FOCUS_SCHEMES: list[str] = ["http", "https"]
FOCUS_MAX_DEPTH = 0  # 0: DEPTH_LIMIT, or unlimited
#: Crawler-trap guards.
FOCUS_MAX_URL_LENGTH = 2048
FOCUS_MAX_REPEATED_SEGMENT = 2
FOCUS_MAX_QUERY_PARAMS = 12
FOCUS_MAX_QUERY_VARIANTS = 200  # distinct query strings per path
FOCUS_MAX_PAGES_PER_HOST = 0  # 0: unlimited
#: A URL pattern (host, path with numbers made 0, query parameter names) whose
#: pages brought almost no new text (under a quarter of their word 3-shingles new
#: to the pattern) this many times in a row is a crawler trap: none of its URLs
#: are fetched from then on (``trap-stale-content``).  0: off.
FOCUS_TRAP_PAGES = 20
#: Most distinct link URLs one page adds to the frontier (the first ones in the
#: order the callback yields them, which is document order for FocusSpider);
#: the rest are dropped and counted in ``focus/links/dropped``.  0: unlimited.
FOCUS_MAX_LINKS_PER_PAGE = 1000
#: Re-score pending links after the link model's group estimates moved this much
#: in total (the sum of their changes), at most this many entries at a time.
FOCUS_RESCORE_DRIFT = 2.0
FOCUS_RESCORE_WINDOW = 2000
#: Backoff after 429/503 without Retry-After: doubles from BASE up to MAX seconds.
FOCUS_BASE_BACKOFF = 5.0
FOCUS_MAX_BACKOFF = 600.0
#: A host asking for a longer wait between requests than this many seconds
#: (robots.txt ``Crawl-delay``, a ``Retry-After``) is held back: its pending
#: requests are set aside (kept with JOBDIR) and the crawl ends without them.
#: 0: wait as long as any host asks.
FOCUS_MAX_HOST_DELAY = 600.0
#: Seconds between two "focus:" log lines (harvest rate, frontier size); 0: off.
FOCUS_LOG_INTERVAL = 30.0
#: The same crawl with the same CONCURRENT_REQUESTS fetches in the same order (pages'
#: evidence applied in dispatch order: scrapy_focus.frontier.ordering), and how long
FOCUS_REPRODUCIBLE_ORDER = False
FOCUS_ORDERED_START = 64  # without it, the first N requests in that order (0: off), each
FOCUS_ORDERED_START_WINDOW = 2  # once the evidence of all but the last N is in
FOCUS_ORDER_WAIT = 300.0  # the oldest page may hold the others back (0: forever)
#: No request is handed out while this many responses are downloaded and not through the
#: downloader middlewares (the extraction), and a cluster node leases no more of hosts
#: ready now than would fill it: the next choice sees what was read (frontier/backlog.py).
FOCUS_MAX_UNPROCESSED = None  # FOCUS_EXTRACT_WORKERS; 0: no limit


# -- engines and the ladder (scrapy_focus.engines) ---------------------------------------

#: FocusDownloadHandler for http/https and EngineLadderMiddleware.  Browser
#: engines need the ``browser`` extra (scrapy-playwright); without it the
#: ladder has one rung and switches itself off.
FOCUS_LADDER_ENABLED = True
#: The ladder, cheapest first.  Engines that cannot run here are skipped.
FOCUS_ENGINES: list[str] = ["http", "chromium", "stealth"]
#: Per-domain start engine, e.g. ``{"example.com": "chromium"}`` (subdomains too).
FOCUS_ENGINE_DOMAINS: dict[str, str] = {}
#: The download handler of the ``http`` engine (a dotted path).
FOCUS_HTTP_HANDLER = "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler"
#: Chromium binary; None: Playwright's own build if installed, else a
#: chromium / google-chrome on PATH (Debian: /usr/bin/chromium).
FOCUS_CHROMIUM_EXECUTABLE: str | None = None
#: Run Chromium in its sandbox.  Where it cannot have one (the crawl runs as
#: root, or user namespaces are off) it runs without, with a warning; False:
#: always without (see docs/engines.md for what that costs).
FOCUS_CHROMIUM_SANDBOX = True
#: "auto": Camoufox when its browser is installed, else Firefox; "camoufox"; "firefox".
FOCUS_STEALTH_BROWSER = "auto"
#: Firefox binary for the stealth engine; None: firefox-esr or firefox on PATH.
FOCUS_FIREFOX_EXECUTABLE: str | None = None
#: Drive a stock Firefox over WebDriver BiDi (needed for Debian's firefox-esr).
FOCUS_FIREFOX_BIDI = True
FOCUS_BROWSER_MAX_PAGES = 4  # open pages per browser context
FOCUS_BROWSER_CONTEXT_PAGES = 100  # a context is recycled after this many pages
FOCUS_BROWSER_NAVIGATION_TIMEOUT = 30.0  # seconds
FOCUS_BROWSER_BLOCK_RESOURCES = True  # no images, media, fonts, known trackers
FOCUS_BROWSER_REUSE_PAGES = True  # a page that answered serves the next download
#: Seconds a browser engine gives a JavaScript challenge (a 403/429/503 page
#: with scripts) to clear itself and reload; 0: take the first answer.
FOCUS_BROWSER_CHALLENGE_WAIT = 10.0
#: The render wait: a browser download returns once the page's content is there,
#: not at ``load`` (docs/engines.md, "Render completion").  "auto": a page with
#: nothing pending (fetch/XHR, short timers, animation frames) and no content change
#: since DOMContentLoaded returns at once, any other waits until it is stable;
#: "always": every page waits until stable; "never": the page as ``load`` left it.
FOCUS_BROWSER_RENDER = "auto"
#: Seconds a page may take to become stable after ``load`` (never past the
#: navigation timeout or the request's download_timeout).
FOCUS_BROWSER_RENDER_WAIT = 5.0
#: Seconds without a content change and with nothing pending that make a page stable.
FOCUS_BROWSER_RENDER_QUIET = 0.5
#: DomainHistory: where a domain's requests start, learnt from what worked.
#: False: every request starts on the first engine of FOCUS_ENGINES (unless
#: FOCUS_ENGINE_DOMAINS or the request's meta says otherwise) and nothing is
#: learnt or stored; the ladder still escalates.
FOCUS_HISTORY_ENABLED = True
#: DomainHistory: how fast old evidence fades, and the share of probes of a
#: cheaper engine than the learnt one.
FOCUS_HISTORY_HALF_LIFE = 6 * 3600.0
FOCUS_HISTORY_PROBE_RATE = 0.05
#: The seed of the crawl's random choices (the probes above, the only ones); 0: unseeded.
FOCUS_SEED = 0
#: A slow start per domain: requests in flight to a new domain, doubled by each page
#: answered on the engine it started on, back to this after a page that had to escalate
#: (probes aside), so DomainHistory learns before a domain's first pages all leave.  0: off.
FOCUS_HISTORY_LEARNING_CONCURRENCY = 1
#: Added to the priority of an escalated request, so that a page's next
#: attempt goes before its host's other pages (Scrapy's redirects: +2).
FOCUS_LADDER_PRIORITY_ADJUST = 1
#: Circuit breaker: consecutive failures on every engine before a domain is
#: held, for a cool-down that doubles up to the maximum.
FOCUS_BREAKER_THRESHOLD = 5
FOCUS_BREAKER_COOLDOWN = 60.0
FOCUS_BREAKER_MAX_COOLDOWN = 3600.0


# -- Cluster mode (scrapy_focus.cluster; the ``cluster`` extra) ---------------------------

#: The Redis server that nodes of one crawl share, as a URL
#: (``redis://host:6379/0``, ``rediss://...``, ``unix:///path/redis.sock``).  Empty:
#: scrapy-redis's own ``REDIS_URL`` / ``REDIS_HOST`` + ``REDIS_PORT`` (with
#: ``REDIS_PARAMS``) when the project sets one, else no cluster (one machine).
FOCUS_CLUSTER_REDIS_URL = ""
#: The crawl's name: nodes with the same name share one frontier.  Empty: the spider's.
FOCUS_CLUSTER_NAME = ""
#: Every key of a crawl starts with this template (``%(crawl)s``: the crawl's name); the
#: braces are a Redis Cluster hash tag (one crawl's keys in one slot, for its scripts).
#: Keys under it (docs/cluster.md): ``:q:<host>`` (a host's queue), ``:payloads`` (entry -> request
#: as data, never a pickle), ``:pending`` / ``:entry_seen`` (seen member <-> entry), ``:seq``,
#: ``:host:<host>`` (delay, concurrency, last request, backoff, held), ``:inflight:<host>``,
#: ``:ready`` / ``:waiting`` (hosts ready now / by when), ``:seen:<bucket>`` / ``:seen:buckets``,
#: ``:leases`` / ``:deadlines`` / ``:node:<node>`` (leases out), ``:nodes`` (heartbeats),
#: ``:counts``, ``:counters`` (fetched, relevant, started), ``:history`` (``<domain>\0<engine>`` ->
#: JSON), ``:breaker``, ``:model`` (the link model's sums), ``:state``, ``:quarantine`` and
#: ``:quarantine:seams`` (values that are not valid data), ``:wake`` and ``:wake:<node>`` (tokens
#: that end a parked node's wait).
FOCUS_CLUSTER_KEY_PREFIX = "focus:{%(crawl)s}"
#: A node's heartbeat period (and how far ahead it keeps a host's turns); its leases go
#: back to the frontier when no heartbeat came for FOCUS_CLUSTER_LEASE_TIMEOUT seconds,
#: or FOCUS_CLUSTER_LEASE_DEADLINE after the lease whatever the heartbeats say.
FOCUS_CLUSTER_HEARTBEAT = 2.0
FOCUS_CLUSTER_LEASE_TIMEOUT = 15.0
FOCUS_CLUSTER_LEASE_DEADLINE = 900.0
#: While Redis does not answer, a node retries with a backoff growing to this many
#: seconds (logged once per outage), losing nothing.
FOCUS_CLUSTER_MAX_BACKOFF = 30.0
#: A node finishes when the cluster's frontier is empty, no host is pending and no lease
#: is out, on two checks this many seconds apart.
FOCUS_CLUSTER_IDLE_CHECK = 3.0
#: Delete the crawl's keys when a node closes with the frontier finished.  Off: shared
#: state is never flushed unless asked (``scrapy focus-cluster flush``-style tools).
FOCUS_CLUSTER_FLUSH_ON_CLOSE = False
#: How many URLs the crawl expects to see: the seen set is split into buckets of about
#: 256 fingerprints each (so a crawl of twice that stays compact), fixed when the crawl's
#: first node starts; a crawl far beyond it still works, at several times the memory.
FOCUS_CLUSTER_SEEN_EXPECTED = 1_000_000
#: Seconds a node's pushes and releases wait for company before a round trip to Redis (a
#: release to a host with a delay up to half of it, an ack until the next round; 0: none);
#: leased requests kept beyond the downloader's room, as FOCUS_MAX_UNPROCESSED allows.
FOCUS_CLUSTER_LINGER = 0.03
FOCUS_CLUSTER_LEASE_AHEAD = 4


# -- seeing a crawl (scrapy_focus.report) -------------------------------------------------

#: Seconds between two samples of the crawl's time series (one JSON line each, in
#: ``<corpus directory>/focus-series/<node>.jsonl``, plus one at close), which
#: ``scrapy focus-report`` draws.  Recorded only when the corpus is on; 0: off.
FOCUS_SERIES_INTERVAL = 10.0
#: Hosts a sample describes one by one (the most requested; the crawl-wide figures
#: count every host).
FOCUS_SERIES_TOP_HOSTS = 20
#: This node's name in the series (its file name, a Prometheus label) and, in cluster
#: mode, in its leases and heartbeats; empty: ``<hostname>-<pid>``.  Each node of a
#: cluster records its own series file.
FOCUS_NODE_NAME = ""
#: Serve the same figures in Prometheus' text format on this port (``/metrics``,
#: needs the ``metrics`` extra: prometheus-client); 0: off.
FOCUS_PROMETHEUS_PORT = 0
#: The address the Prometheus endpoint listens on: this machine only by default.
FOCUS_PROMETHEUS_HOST = "127.0.0.1"


# -- Scrapy's own settings the add-on changes (at addon priority: a user's value wins)

#: Scrapy's 1 GiB is no size for a page of text, and every byte of a body is held in
#: memory.  Twice FOCUS_EXTRACT_MAX_BYTES: a body up to that is downloaded, stored and
#: rejected as ``oversized`` (a verdict the crawl records) rather than cancelled
#: mid-download; the limit holds for the decoded body too (focus/decompression/too_large).
SCRAPY_DOWNLOAD_MAXSIZE = 2 * FOCUS_EXTRACT_MAX_BYTES
#: A warning for each body the extraction will not read.
SCRAPY_DOWNLOAD_WARNSIZE = FOCUS_EXTRACT_MAX_BYTES


def scrapy_defaults() -> dict[str, Any]:
    """Scrapy settings the add-on sets at its priority, by their Scrapy names."""
    return {
        "DOWNLOAD_MAXSIZE": SCRAPY_DOWNLOAD_MAXSIZE,
        "DOWNLOAD_WARNSIZE": SCRAPY_DOWNLOAD_WARNSIZE,
    }


def defaults() -> dict[str, Any]:
    """All ``FOCUS_*`` defaults as a dict (a fresh copy: lists can be mutated)."""
    return {
        name: (list(value) if isinstance(value, list) else value)
        for name, value in globals().items()
        if name.startswith("FOCUS_")
    }
