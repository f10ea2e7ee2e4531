"""The sections of the crawl's configuration: one frozen dataclass per component.

Plain values only; :mod:`scrapy_focus.config` reads them from the settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scrapy.utils.project import data_path

from scrapy_focus.contract import ContractRules
from scrapy_focus.corpus.freshness import RecrawlPolicy
from scrapy_focus.extract.options import ExtractOptions
from scrapy_focus.urls import Scope


@dataclass(frozen=True)
class CorpusConfig:
    """The LMDB corpus (:mod:`scrapy_focus.corpus`)."""

    enabled: bool
    directory: str  # empty: <HTTPCACHE_DIR>/<spider name>
    cache_dir: str
    expiration_secs: int
    map_size: int
    fsync: bool
    readahead: bool
    compression: str
    compression_level: int
    meta_keys: tuple[str, ...]
    max_decoded_size: int
    tracking_params: tuple[str, ...]
    response_classes: tuple[str, ...]

    def corpus_path(self, spider_name: str) -> Path:
        if self.directory:
            return Path(data_path(self.directory, createdir=True))
        return Path(data_path(self.cache_dir, createdir=True)) / spider_name

    def location(self) -> Path:
        """The directory holding corpora (without creating it): ``FOCUS_CORPUS_DIR``
        itself, or the ``HTTPCACHE_DIR`` whose subdirectories are per spider."""
        return Path(data_path(self.directory or self.cache_dir))


@dataclass(frozen=True)
class ExtractConfig:
    """Extraction in worker processes (:mod:`scrapy_focus.extract`)."""

    enabled: bool
    workers: int
    timeout: float
    mode: str
    function: str
    options: ExtractOptions
    # the limit counts the worker's CPU time, not the wall clock (FOCUS_REPRODUCIBLE_ORDER)
    cpu_time: bool = False
    # each host's main-text element learnt and read in place of trafilatura
    # (FOCUS_EXTRACT_TEMPLATES)
    templates: bool = True


@dataclass(frozen=True)
class ContractConfig:
    """Confidence, verdicts and what is emitted (:mod:`scrapy_focus.pipelines`)."""

    enabled: bool
    high_confidence: float
    medium_confidence: float
    rules: ContractRules
    emit_unchanged: bool
    emit_rejected: bool
    recrawl: RecrawlPolicy | None  # None: FOCUS_RECRAWL is off


@dataclass(frozen=True)
class TopicConfig:
    """What the crawl looks for (:mod:`scrapy_focus.frontier.relevance`)."""

    text: str
    examples: tuple[str, ...]
    page_classifier: str | None
    relevance_scale: float
    relevance_threshold: float
    inherit_decay: float
    semantic: str  # "auto" | "on" | "off" (FOCUS_SEMANTIC)


@dataclass(frozen=True)
class FrontierConfig:
    """The focused scheduler (:mod:`scrapy_focus.frontier`)."""

    enabled: bool
    jobdir: str | None
    scope: Scope
    seeds: tuple[str, ...]
    seed_scope: str  # "host" | "domain" | "any": what a seed adds to the allowed domains
    max_pages: int
    max_relevant_pages: int
    deadline: float
    saturation_score: float
    saturation_pages: int
    max_pages_per_host: int
    max_query_variants: int
    max_links_per_page: int
    hard_focus: bool
    relevance_threshold: float
    rescore_drift: float
    rescore_window: int
    dupefilter_class: str
    dupefilter_debug: bool
    fingerprinter_class: str
    scheduler_class: str
    log_unserializable: bool  # SCHEDULER_DEBUG, as Scrapy's scheduler reads it
    ignored_queue_settings: tuple[str, ...]  # Scrapy queue settings the user set
    trap_pages: int
    log_interval: float
    reproducible_order: bool
    concurrency: int  # CONCURRENT_REQUESTS: the C of the reproducible order
    order_wait: float
    max_unprocessed: int | None  # None: as many as the extraction workers (.backlog)
    ordered_start: int = 64  # without reproducible_order: the first N dispatches in order
    ordered_window: int = 2  # ... each once the evidence of all but this many is in


@dataclass(frozen=True)
class PolitenessConfig:
    """Per-host delays, concurrency and backoff (:mod:`scrapy_focus.frontier.politeness`)."""

    delay: float = 0.0
    concurrency: int = 8
    slots: dict[str, dict[str, Any]] = field(default_factory=dict)  # DOWNLOAD_SLOTS
    in_flight_timeout: float = 180.0 + 30.0  # DOWNLOAD_TIMEOUT + margin: leaked leases expire
    base_backoff: float = 5.0
    max_backoff: float = 600.0
    max_host_delay: float = 600.0  # a host asking for more is held back; 0: no cap
    robots_obey: bool = False
    robots_user_agent: str = ""


@dataclass(frozen=True)
class LadderConfig:
    """The engine ladder, its history and breakers (:mod:`scrapy_focus.engines`)."""

    enabled: bool
    engines: tuple[str, ...]  # empty: every known engine this machine has
    engine_domains: dict[str, str]  # domain → engine it always starts with
    min_content_chars: int
    history_enabled: bool
    history_half_life: float
    history_probe_rate: float
    history_learning_concurrency: int
    priority_adjust: int
    breaker_threshold: int
    breaker_cooldown: float
    breaker_max_cooldown: float
    seed: int  # FOCUS_SEED: the engine history's probes draw from it (0: unseeded)


@dataclass(frozen=True)
class BrowserConfig:
    """The browser engines (:mod:`scrapy_focus.engines`)."""

    http_handler: str  # the download handler of the "http" engine (a dotted path)
    chromium_executable: str | None
    chromium_sandbox: bool
    stealth_browser: str
    firefox_executable: str | None
    firefox_bidi: bool
    max_pages: int  # open pages per browser context
    context_pages: int  # a context is recycled after this many pages
    navigation_timeout: float  # seconds
    block_resources: bool
    reuse_pages: bool
    challenge_wait: float
    download_maxsize: int
    download_warnsize: int
    render: str  # "auto" | "always" | "never": the render wait (engines/render.py)
    render_wait: float  # seconds, per page
    render_quiet: float  # seconds without change that make a page stable


@dataclass(frozen=True)
class ClusterConfig:
    """Cluster mode: nodes sharing one crawl through Redis (:mod:`scrapy_focus.cluster`)."""

    enabled: bool
    url: str  # the Redis URL (redis://, rediss://, unix://)
    source: str  # the setting it came from, said at start-up
    params: dict[str, Any]  # REDIS_PARAMS, passed to the client as they are
    name: str  # empty: the spider's name
    key_prefix: str  # a template with %(crawl)s
    node: str  # empty: <hostname>-<pid>
    heartbeat: float
    lease_timeout: float
    lease_deadline: float
    max_backoff: float
    idle_check: float
    flush_on_close: bool
    seen_expected: int = 1_000_000  # URLs the seen set is sized for (cluster/seen.py)
    ignored_redis_settings: tuple[str, ...] = ()  # scrapy-redis settings the user set
    linger: float = 0.03  # seconds a message waits for company (cluster/pacing.py)
    lease_ahead: int = 4  # leased entries kept beyond the downloader's room


@dataclass(frozen=True)
class ReportConfig:
    """The crawl's time series and its live endpoint (:mod:`scrapy_focus.report`)."""

    series_interval: float  # seconds between samples; 0: no series
    top_hosts: int
    node_name: str  # empty: <hostname>-<pid>
    prometheus_port: int  # 0: no endpoint
    prometheus_host: str
