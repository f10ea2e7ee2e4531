"""The crawl's configuration: every setting scrapy-focus reads, read once, frozen
(the sections themselves, plain frozen dataclasses, are in :mod:`.sections`).

:meth:`FocusConfig.from_settings` is the only place that reads ``FOCUS_*``
settings (and the Scrapy settings our components interpret, such as
``DOWNLOAD_DELAY`` or ``HTTPCACHE_DIR``).  Defaults come from
:mod:`scrapy_focus.settings`, never repeated here: a value absent from the
crawler's settings (a crawler built without the add-on) means the documented
default.  Each component receives its section (``config.corpus``,
``config.frontier``, ...), a frozen dataclass of plain values; a bad value fails
here, at start-up, with the setting's name in the message.

The one exception is ``PLAYWRIGHT_*``: those are scrapy-playwright's, passed
through to its handler as they are (:mod:`scrapy_focus.engines.browser_settings`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy_focus import settings as defaults
from scrapy_focus.config.cluster import read_cluster
from scrapy_focus.config.sections import (
    BrowserConfig,
    ClusterConfig,
    ContractConfig,
    CorpusConfig,
    ExtractConfig,
    FrontierConfig,
    LadderConfig,
    PolitenessConfig,
    ReportConfig,
    TopicConfig,
)
from scrapy_focus.contract import ContractRules
from scrapy_focus.corpus.freshness import RecrawlPolicy
from scrapy_focus.extract.options import ExtractOptions, metadata_setting
from scrapy_focus.frontier.semantic import semantic_mode
from scrapy_focus.urls import WEB_SCHEMES, Scope

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

SEED_SCOPES = ("host", "domain", "any")
RENDER_MODES = ("auto", "always", "never")  # FOCUS_BROWSER_RENDER
# Scrapy's own queue settings, which the frontier replaces (said at start-up when set).
QUEUE_SETTINGS = (
    "SCHEDULER_PRIORITY_QUEUE",
    "SCHEDULER_DISK_QUEUE",
    "SCHEDULER_MEMORY_QUEUE",
    "SCHEDULER_START_DISK_QUEUE",
    "SCHEDULER_START_MEMORY_QUEUE",
)


class _Reader:
    """Typed reads of ``FOCUS_*`` settings, the type and default taken from
    :mod:`scrapy_focus.settings`."""

    def __init__(self, settings: BaseSettings) -> None:
        self.settings = settings

    def __call__(self, name: str) -> Any:
        default = getattr(defaults, name)
        settings = self.settings
        try:
            if isinstance(default, bool):
                return settings.getbool(name, default)
            if isinstance(default, int):
                return settings.getint(name, default)
            if isinstance(default, float):
                return settings.getfloat(name, default)
            if isinstance(default, list):
                return tuple(settings.getlist(name, default))
            if isinstance(default, dict):
                return dict(settings.getdict(name, default))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: {exc}") from None
        value = settings.get(name, default)
        return default if value is None else value

    def optional_float(self, name: str) -> float | None:
        value = self.settings.get(name, getattr(defaults, name))
        if value is None or value == "":
            return None
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number or None, not {value!r}") from None

    def optional_count(self, name: str) -> int | None:
        value = self.optional_float(name)
        if value is not None and (value < 0 or value != int(value)):
            raise ValueError(f"{name} must be a whole number >= 0 or None, not {value!r}")
        return None if value is None else int(value)

    def optional_str(self, name: str) -> str | None:
        return self.settings.get(name, getattr(defaults, name)) or None


@dataclass(frozen=True)
class FocusConfig:
    """Every setting of one crawl, by the component that uses it."""

    corpus: CorpusConfig
    extract: ExtractConfig
    contract: ContractConfig
    topic: TopicConfig
    frontier: FrontierConfig
    politeness: PolitenessConfig
    ladder: LadderConfig
    browser: BrowserConfig
    canonical_urls: bool
    tracking_params: tuple[str, ...]
    cluster: ClusterConfig
    report: ReportConfig

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> FocusConfig:
        read = _Reader(settings)
        return cls(
            corpus=_corpus(read),
            extract=_extract(read),
            contract=_contract(read),
            topic=_topic(read),
            frontier=_frontier(read),
            politeness=_politeness(read),
            ladder=_ladder(read),
            browser=_browser(read),
            canonical_urls=read("FOCUS_CANONICAL_URLS_ENABLED"),
            tracking_params=read("FOCUS_TRACKING_PARAMS"),
            cluster=read_cluster(read),
            report=_report(read),
        )


# -- reading each section ---------------------------------------------------------------


def _corpus(read: _Reader) -> CorpusConfig:
    settings = read.settings
    compression = read("FOCUS_CORPUS_COMPRESSION") or defaults.FOCUS_CORPUS_COMPRESSION
    return CorpusConfig(
        enabled=read("FOCUS_CORPUS_ENABLED"),
        directory=read("FOCUS_CORPUS_DIR") or "",
        cache_dir=settings.get("HTTPCACHE_DIR") or "httpcache",
        expiration_secs=settings.getint("HTTPCACHE_EXPIRATION_SECS"),
        map_size=read("FOCUS_CORPUS_MAP_SIZE"),
        fsync=read("FOCUS_CORPUS_FSYNC"),
        readahead=read("FOCUS_CORPUS_READAHEAD"),
        compression=compression,
        compression_level=read("FOCUS_CORPUS_COMPRESSION_LEVEL"),
        meta_keys=read("FOCUS_CORPUS_META_KEYS"),
        max_decoded_size=settings.getint("DOWNLOAD_MAXSIZE"),
        tracking_params=read("FOCUS_TRACKING_PARAMS"),
        response_classes=read("FOCUS_CORPUS_RESPONSE_CLASSES"),
    )


def _extract(read: _Reader) -> ExtractConfig:
    with_metadata, fields = metadata_setting(
        read.settings.get("FOCUS_EXTRACT_METADATA", defaults.FOCUS_EXTRACT_METADATA)
    )
    return ExtractConfig(
        enabled=read("FOCUS_EXTRACT_ENABLED"),
        workers=read("FOCUS_EXTRACT_WORKERS") or (os.cpu_count() or 1),
        timeout=read("FOCUS_EXTRACT_TIMEOUT"),
        mode=read("FOCUS_EXTRACT_MODE"),
        function=read("FOCUS_EXTRACT_FUNCTION") or defaults.FOCUS_EXTRACT_FUNCTION,
        options=ExtractOptions(
            fast=read("FOCUS_EXTRACT_FAST"),
            with_metadata=with_metadata,
            metadata_fields=fields,
            favor_precision=read("FOCUS_EXTRACT_FAVOR_PRECISION"),
            favor_recall=read("FOCUS_EXTRACT_FAVOR_RECALL"),
            include_tables=read("FOCUS_EXTRACT_TABLES"),
            max_tree_size=read("FOCUS_EXTRACT_MAX_TREE_SIZE"),
            max_html_bytes=read("FOCUS_EXTRACT_MAX_BYTES"),
            cascade=read("FOCUS_EXTRACT_CASCADE"),
            cascade_confidence=read("FOCUS_EXTRACT_CASCADE_CONFIDENCE"),
            prune_min_links=read("FOCUS_EXTRACT_PRUNE_LINKS"),
        ),
        cpu_time=read("FOCUS_REPRODUCIBLE_ORDER"),
        templates=read("FOCUS_EXTRACT_TEMPLATES"),
    )


def _contract(read: _Reader) -> ContractConfig:
    medium = read("FOCUS_MEDIUM_CONFIDENCE")
    min_confidence = read.optional_float("FOCUS_MIN_CONFIDENCE")
    return ContractConfig(
        enabled=read("FOCUS_CONTRACT_ENABLED"),
        high_confidence=read("FOCUS_HIGH_CONFIDENCE"),
        medium_confidence=medium,
        rules=ContractRules(
            min_content_chars=read("FOCUS_MIN_CONTENT_CHARS"),
            min_confidence=medium if min_confidence is None else min_confidence,
            languages=tuple(lang.lower() for lang in read("FOCUS_LANGUAGES")),
            required_fields=read("FOCUS_REQUIRED_FIELDS"),
            drop_off_topic=read("FOCUS_DROP_OFF_TOPIC"),
            relevance_threshold=read("FOCUS_RELEVANCE_THRESHOLD"),
        ),
        emit_unchanged=read("FOCUS_EMIT_UNCHANGED"),
        emit_rejected=read("FOCUS_EMIT_REJECTED"),
        recrawl=_recrawl(read) if read("FOCUS_RECRAWL") else None,
    )


def _recrawl(read: _Reader) -> RecrawlPolicy:
    policy = RecrawlPolicy(
        initial=read("FOCUS_RECRAWL_INTERVAL"),
        minimum=read("FOCUS_RECRAWL_MIN_INTERVAL"),
        maximum=read("FOCUS_RECRAWL_MAX_INTERVAL"),
        grow=read("FOCUS_RECRAWL_GROW"),
        shrink=read("FOCUS_RECRAWL_SHRINK"),
    )
    if not 0 < policy.minimum <= policy.initial <= policy.maximum:
        raise ValueError(
            "FOCUS_RECRAWL_MIN_INTERVAL <= FOCUS_RECRAWL_INTERVAL <= "
            f"FOCUS_RECRAWL_MAX_INTERVAL must hold, got {policy.minimum}, "
            f"{policy.initial}, {policy.maximum}"
        )
    if policy.grow < 1 or not 0 < policy.shrink <= 1:
        raise ValueError("FOCUS_RECRAWL_GROW must be >= 1 and FOCUS_RECRAWL_SHRINK in (0, 1]")
    return policy


def _topic(read: _Reader) -> TopicConfig:
    return TopicConfig(
        text=read("FOCUS_TOPIC") or "",
        examples=read("FOCUS_TOPIC_EXAMPLES"),
        page_classifier=read.optional_str("FOCUS_PAGE_CLASSIFIER"),
        relevance_scale=read("FOCUS_RELEVANCE_SCALE"),
        relevance_threshold=read("FOCUS_RELEVANCE_THRESHOLD"),
        inherit_decay=read("FOCUS_INHERIT_DECAY"),
        # "auto" or a boolean: not one type, so not read by the default's
        semantic=semantic_mode(read.settings.get("FOCUS_SEMANTIC", defaults.FOCUS_SEMANTIC)),
    )


def _scope(read: _Reader) -> Scope:
    try:
        allowed = Scope(allowed_domains=read("FOCUS_ALLOWED_DOMAINS"))
    except ValueError as exc:
        raise ValueError(f"FOCUS_ALLOWED_DOMAINS: {exc}") from None
    patterns = []
    for pattern in read("FOCUS_DENY"):
        try:
            patterns.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(f"FOCUS_DENY: {pattern!r} is not a regex: {exc}") from None
    return Scope(
        allowed_domains=allowed.allowed_domains,
        allowed_paths=read("FOCUS_ALLOWED_PATHS"),
        denied=tuple(patterns),
        schemes=read("FOCUS_SCHEMES") or WEB_SCHEMES,
        max_depth=read("FOCUS_MAX_DEPTH") or read.settings.getint("DEPTH_LIMIT"),
        max_url_length=read("FOCUS_MAX_URL_LENGTH"),
        max_repeated_segment=read("FOCUS_MAX_REPEATED_SEGMENT"),
        max_query_params=read("FOCUS_MAX_QUERY_PARAMS"),
    )


def _frontier(read: _Reader) -> FrontierConfig:
    settings = read.settings
    seed_scope = read("FOCUS_SEED_SCOPE")
    if seed_scope not in SEED_SCOPES:
        raise ValueError(
            f"FOCUS_SEED_SCOPE must be one of {', '.join(SEED_SCOPES)}, not {seed_scope!r}"
        )
    return FrontierConfig(
        enabled=read("FOCUS_FRONTIER_ENABLED"),
        jobdir=settings.get("JOBDIR") or None,
        scope=_scope(read),
        seeds=read("FOCUS_SEEDS"),
        seed_scope=seed_scope,
        max_pages=read("FOCUS_MAX_PAGES"),
        max_relevant_pages=read("FOCUS_MAX_RELEVANT_PAGES"),
        deadline=read("FOCUS_DEADLINE"),
        saturation_score=read("FOCUS_SATURATION_SCORE"),
        saturation_pages=read("FOCUS_SATURATION_PAGES"),
        max_pages_per_host=read("FOCUS_MAX_PAGES_PER_HOST"),
        max_query_variants=read("FOCUS_MAX_QUERY_VARIANTS"),
        max_links_per_page=read("FOCUS_MAX_LINKS_PER_PAGE"),
        hard_focus=read("FOCUS_HARD_FOCUS"),
        relevance_threshold=read("FOCUS_RELEVANCE_THRESHOLD"),
        rescore_drift=read("FOCUS_RESCORE_DRIFT"),
        rescore_window=read("FOCUS_RESCORE_WINDOW"),
        dupefilter_class=settings.get("DUPEFILTER_CLASS") or "",
        dupefilter_debug=settings.getbool("DUPEFILTER_DEBUG"),
        fingerprinter_class=settings.get("REQUEST_FINGERPRINTER_CLASS") or "",
        scheduler_class=settings.get("SCHEDULER") or "",
        log_unserializable=settings.getbool("SCHEDULER_DEBUG"),
        ignored_queue_settings=tuple(
            name for name in QUEUE_SETTINGS if (settings.getpriority(name) or 0) > 0
        ),
        trap_pages=read("FOCUS_TRAP_PAGES"),
        log_interval=read("FOCUS_LOG_INTERVAL"),
        reproducible_order=read("FOCUS_REPRODUCIBLE_ORDER"),
        concurrency=max(1, settings.getint("CONCURRENT_REQUESTS", 16)),
        order_wait=read("FOCUS_ORDER_WAIT"),
        ordered_start=read.optional_count("FOCUS_ORDERED_START") or 0,
        ordered_window=read.optional_count("FOCUS_ORDERED_START_WINDOW") or 1,
        max_unprocessed=read.optional_count("FOCUS_MAX_UNPROCESSED"),
    )


def _politeness(read: _Reader) -> PolitenessConfig:
    settings = read.settings
    return PolitenessConfig(
        delay=settings.getfloat("DOWNLOAD_DELAY"),
        concurrency=max(1, settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN", 8)),
        slots=settings.getdict("DOWNLOAD_SLOTS"),
        in_flight_timeout=settings.getfloat("DOWNLOAD_TIMEOUT", 180) + 30,
        base_backoff=read("FOCUS_BASE_BACKOFF"),
        max_backoff=read("FOCUS_MAX_BACKOFF"),
        max_host_delay=read("FOCUS_MAX_HOST_DELAY"),
        robots_obey=settings.getbool("ROBOTSTXT_OBEY"),
        robots_user_agent=settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT") or "",
    )


def engine_names(value: Any) -> tuple[str, ...]:
    """``FOCUS_ENGINES`` as names: a list, ``"http,chromium"`` or ``'["http", "chromium"]'``
    (what ``-s FOCUS_ENGINES=...`` gives)."""
    if isinstance(value, str) and value.strip().startswith("["):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    if isinstance(value, str):
        value = value.split(",")
    return tuple(str(name).strip() for name in value or () if str(name).strip())


def _ladder(read: _Reader) -> LadderConfig:
    settings = read.settings
    return LadderConfig(
        enabled=read("FOCUS_LADDER_ENABLED"),
        engines=engine_names(settings.get("FOCUS_ENGINES", defaults.FOCUS_ENGINES)),
        engine_domains={d.lower(): e for d, e in read("FOCUS_ENGINE_DOMAINS").items()},
        min_content_chars=read("FOCUS_MIN_CONTENT_CHARS"),
        history_enabled=read("FOCUS_HISTORY_ENABLED"),
        history_half_life=read("FOCUS_HISTORY_HALF_LIFE"),
        history_probe_rate=read("FOCUS_HISTORY_PROBE_RATE"),
        history_learning_concurrency=read("FOCUS_HISTORY_LEARNING_CONCURRENCY"),
        priority_adjust=read("FOCUS_LADDER_PRIORITY_ADJUST"),
        breaker_threshold=read("FOCUS_BREAKER_THRESHOLD"),
        breaker_cooldown=read("FOCUS_BREAKER_COOLDOWN"),
        breaker_max_cooldown=read("FOCUS_BREAKER_MAX_COOLDOWN"),
        seed=read("FOCUS_SEED"),
    )


def _browser(read: _Reader) -> BrowserConfig:
    settings = read.settings
    return BrowserConfig(
        http_handler=read("FOCUS_HTTP_HANDLER") or defaults.FOCUS_HTTP_HANDLER,
        chromium_executable=read.optional_str("FOCUS_CHROMIUM_EXECUTABLE"),
        chromium_sandbox=read("FOCUS_CHROMIUM_SANDBOX"),
        stealth_browser=read("FOCUS_STEALTH_BROWSER"),
        firefox_executable=read.optional_str("FOCUS_FIREFOX_EXECUTABLE"),
        firefox_bidi=read("FOCUS_FIREFOX_BIDI"),
        max_pages=max(1, read("FOCUS_BROWSER_MAX_PAGES")),
        context_pages=max(1, read("FOCUS_BROWSER_CONTEXT_PAGES")),
        navigation_timeout=read("FOCUS_BROWSER_NAVIGATION_TIMEOUT"),
        block_resources=read("FOCUS_BROWSER_BLOCK_RESOURCES"),
        reuse_pages=read("FOCUS_BROWSER_REUSE_PAGES"),
        challenge_wait=read("FOCUS_BROWSER_CHALLENGE_WAIT"),
        download_maxsize=settings.getint("DOWNLOAD_MAXSIZE"),
        download_warnsize=settings.getint("DOWNLOAD_WARNSIZE"),
        render=_render_mode(read("FOCUS_BROWSER_RENDER")),
        render_wait=max(0.0, read("FOCUS_BROWSER_RENDER_WAIT")),
        render_quiet=max(0.0, read("FOCUS_BROWSER_RENDER_QUIET")),
    )


def _render_mode(value: Any) -> str:
    mode = str(value).strip().lower()
    if mode not in RENDER_MODES:
        raise ValueError(
            f"FOCUS_BROWSER_RENDER must be one of {', '.join(RENDER_MODES)}, not {value!r}"
        )
    return mode


def _report(read: _Reader) -> ReportConfig:
    port = read("FOCUS_PROMETHEUS_PORT")
    if not 0 <= port <= 65535:
        raise ValueError(f"FOCUS_PROMETHEUS_PORT must be a port (0: off), not {port}")
    return ReportConfig(
        series_interval=max(0.0, read("FOCUS_SERIES_INTERVAL")),
        top_hosts=max(1, read("FOCUS_SERIES_TOP_HOSTS")),
        node_name=str(read("FOCUS_NODE_NAME") or ""),
        prometheus_port=port,
        prometheus_host=str(read("FOCUS_PROMETHEUS_HOST") or "127.0.0.1"),
    )
