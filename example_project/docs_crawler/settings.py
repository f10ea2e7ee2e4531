"""Settings of the example project: Scrapy's usual ones, plus one line for scrapy-focus."""

BOT_NAME = "docs_crawler"
SPIDER_MODULES = ["docs_crawler.spiders"]
NEWSPIDER_MODULE = "docs_crawler.spiders"

# scrapy-focus: the corpus (an LMDB HTTP cache under .scrapy/httpcache/<spider>),
# canonical URLs, the focused frontier, extraction and the content contract.
# FOCUS_* settings below this line override its defaults.
ADDONS = {"scrapy_focus.Addon": 500}

# Be polite to the sites you crawl: say who you are, obey robots.txt, one or
# two requests at a time per site, and slow down when the site does.
USER_AGENT = "docs_crawler/0.1 (scrapy-focus example project; put your contact URL or e-mail here)"
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS_PER_DOMAIN = 2
DOWNLOAD_DELAY = 0.5
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 1.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 1.0

FEED_EXPORT_ENCODING = "utf-8"
# Every field of the items exported: the docs spider's own (docs_crawler.items.PageItem),
# scrapy-focus's page items (PAGE_FIELDS) for `scrapy focus-crawl`.
FEED_EXPORT_FIELDS = None
LOG_LEVEL = "INFO"
