"""One line in settings.py enables everything, and never overrides the user."""

from __future__ import annotations

from scrapy.downloadermiddlewares.httpcache import HttpCacheMiddleware
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from scrapy_focus import settings as focus_settings

ADDON = {"scrapy_focus.Addon": 500}


def settings_with(**user):
    return get_crawler(settings_dict={"ADDONS": ADDON, **user}).settings


def test_addon_enables_the_corpus_and_canonical_fingerprints():
    settings = settings_with()
    assert settings.getbool("HTTPCACHE_ENABLED") is True
    assert settings["HTTPCACHE_STORAGE"] == "scrapy_focus.corpus.storage.LmdbCacheStorage"
    assert (
        settings["REQUEST_FINGERPRINTER_CLASS"] == "scrapy_focus.urls.CanonicalRequestFingerprinter"
    )


def test_every_focus_default_is_present_after_the_addon():
    settings = settings_with()
    for name, value in focus_settings.defaults().items():
        assert settings[name] == value, name


def test_without_the_addon_nothing_changes():
    settings = get_crawler().settings
    assert settings.getbool("HTTPCACHE_ENABLED") is False
    assert "FOCUS_CORPUS_ENABLED" not in settings


def test_user_values_win_over_the_addon():
    settings = settings_with(
        HTTPCACHE_STORAGE="scrapy.extensions.httpcache.FilesystemCacheStorage",
        FOCUS_CORPUS_COMPRESSION="zlib",
        REQUEST_FINGERPRINTER_CLASS="scrapy.utils.request.RequestFingerprinter",
    )
    assert settings["HTTPCACHE_STORAGE"] == "scrapy.extensions.httpcache.FilesystemCacheStorage"
    assert settings["FOCUS_CORPUS_COMPRESSION"] == "zlib"
    assert settings["REQUEST_FINGERPRINTER_CLASS"] == "scrapy.utils.request.RequestFingerprinter"


def test_download_size_limits_fit_text_and_the_user_still_wins():
    settings = settings_with()
    assert settings.getint("DOWNLOAD_MAXSIZE") == 16 * 1024 * 1024
    assert settings.getint("DOWNLOAD_WARNSIZE") == settings.getint("FOCUS_EXTRACT_MAX_BYTES")
    mine = settings_with(DOWNLOAD_MAXSIZE=1 << 30, DOWNLOAD_WARNSIZE=0)
    assert (mine.getint("DOWNLOAD_MAXSIZE"), mine.getint("DOWNLOAD_WARNSIZE")) == (1 << 30, 0)


def test_the_item_tasks_per_callback_stay_scrapys():
    # Fewer would save CPU, but a page's links would reach the frontier a few at a
    # time while it hands out the next requests (docs/benchmarks.md, "Throughput").
    assert settings_with().getint("CONCURRENT_ITEMS") == 100


def test_one_decoder_above_the_cache_unless_the_user_placed_scrapys():
    compression = "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware"
    ours = "scrapy_focus.corpus.compression.HttpDecompressionMiddleware"
    middlewares = {
        load_object(key): order
        for key, order in settings_with().getwithbase("DOWNLOADER_MIDDLEWARES").items()
    }
    assert middlewares[load_object(compression)] is None
    assert middlewares[load_object(ours)] > middlewares[HttpCacheMiddleware]
    placed = settings_with(DOWNLOADER_MIDDLEWARES={compression: 950})
    assert load_object(ours) not in {
        load_object(key) for key in placed.getdict("DOWNLOADER_MIDDLEWARES")
    }
    assert placed.getdict("DOWNLOADER_MIDDLEWARES")[compression] == 950


def test_explicitly_disabled_cache_stays_disabled():
    assert settings_with(HTTPCACHE_ENABLED=False).getbool("HTTPCACHE_ENABLED") is False


def test_each_component_has_a_switch():
    no_corpus = settings_with(FOCUS_CORPUS_ENABLED=False)
    assert no_corpus.getbool("HTTPCACHE_ENABLED") is False
    assert no_corpus["HTTPCACHE_STORAGE"] != "scrapy_focus.corpus.storage.LmdbCacheStorage"
    no_canonical = settings_with(FOCUS_CANONICAL_URLS_ENABLED=False)
    assert no_canonical["REQUEST_FINGERPRINTER_CLASS"] != (
        "scrapy_focus.urls.CanonicalRequestFingerprinter"
    )
    assert no_canonical.getbool("HTTPCACHE_ENABLED") is True


def test_defaults_are_fresh_copies():
    first = focus_settings.defaults()
    first["FOCUS_TRACKING_PARAMS"].append("mutated")
    assert "mutated" not in focus_settings.defaults()["FOCUS_TRACKING_PARAMS"]


def test_importing_scrapy_focus_installs_no_twisted_reactor():
    # Scrapy picks the reactor (TWISTED_REACTOR); a module that imports
    # twisted.internet.reactor at import time would install the default one first.
    import subprocess
    import sys

    script = (
        "import sys, pkgutil, importlib, scrapy_focus\n"
        "for m in pkgutil.walk_packages(scrapy_focus.__path__, 'scrapy_focus.'):\n"
        "    importlib.import_module(m.name)\n"
        "print('twisted.internet.reactor' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert result.stdout.strip() == "False", result.stderr


def test_no_component_ties_with_scrapys_own_or_another():
    from scrapy.settings import default_settings

    from scrapy_focus.addon import COMPONENTS

    for component in COMPONENTS:
        base = getattr(default_settings, f"{component.setting}_BASE")
        taken = {order for order in base.values() if order is not None}
        ours = [c.order for c in COMPONENTS if c.setting == component.setting]
        assert component.order not in taken, component
        assert ours.count(component.order) == 1, component


def test_the_ladder_sits_between_the_extraction_and_meta_refresh():
    from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware
    from scrapy.utils.conf import build_component_list

    from scrapy_focus.engines.ladder import EngineLadderMiddleware
    from scrapy_focus.extract.middleware import ExtractionMiddleware

    order = [
        load_object(path)
        for path in build_component_list(
            settings_with().get_component_priority_dict_with_base("DOWNLOADER_MIDDLEWARES")
        )
    ]
    assert (
        order.index(MetaRefreshMiddleware)
        < order.index(EngineLadderMiddleware)
        < order.index(ExtractionMiddleware)
    )
