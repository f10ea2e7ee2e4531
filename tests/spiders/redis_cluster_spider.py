"""The spider of a scrapy-redis cluster node, as scrapy-redis's users write it.

A ``RedisSpider``: its start URLs are JSON objects (``{"url": ...}``) pushed to the
``cluster:start_urls`` list (harness/cluster_nodes.py pushes the seeds once, before
the nodes start), read in batches when the node is idle; it follows every link
through scrapy-redis's Scheduler and RFPDupeFilter.  It closes after
``MAX_IDLE_TIME_BEFORE_CLOSE`` seconds idle.  No items: the farm counts pages.
"""

from __future__ import annotations

from collections.abc import Iterator

import scrapy
from scrapy_redis.spiders import RedisSpider


class RedisClusterSpider(RedisSpider):
    name = "cluster"

    def parse(self, response: scrapy.http.Response) -> Iterator[scrapy.Request]:
        if isinstance(response, scrapy.http.TextResponse):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href)
