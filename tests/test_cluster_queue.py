"""scrapy-redis's own Scheduler with FocusPriorityQueue: float scores, FIFO ties, no
pickle; and RedisSpider's start-URL key feeding a focused crawl.

Real crawls (``scrapy runspider``) against a real redis-server and the farm.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
import redis
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler

from scrapy_focus.cluster.queue import FocusPriorityQueue, sort_value
from scrapy_focus.state import FocusState, LinkContext
from tests.crawl import run_crawl
from tests.spiders.redis_queue_spider import RedisQueueSpider

QUEUE_KEY = "rq:requests"
SCRAPY_REDIS = {
    "ADDONS": {},
    "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
    "SCHEDULER_QUEUE_CLASS": "scrapy_focus.cluster.queue.FocusPriorityQueue",
    "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
    "SCHEDULER_PERSIST": True,
    "CONCURRENT_REQUESTS": 1,  # one request at a time: the crawl's order is the queue's
}


def spider_with_queue(url: str, serializer=None) -> tuple[Spider, FocusPriorityQueue]:
    crawler = get_crawler(RedisQueueSpider, {})
    spider = RedisQueueSpider.from_crawler(crawler)
    server = redis.Redis.from_url(url)
    return spider, FocusPriorityQueue(server, spider, QUEUE_KEY, serializer)


def scored(url: str, score: float | None, tag: str, priority: int = 0) -> Request:
    state = FocusState(link=LinkContext(url=url, score=score))
    return Request(url, priority=priority, meta={"focus": state, "tag": tag})


def test_the_queue_orders_by_priority_then_float_score_then_fifo(redis_server) -> None:
    _, queue = spider_with_queue(redis_server.url)
    pushed = [
        scored("http://a.test/1", 0.25, "low"),
        scored("http://a.test/2", 0.7, "high-first"),
        scored("http://a.test/3", 0.7, "high-second"),
        scored("http://a.test/4", 0.7000001, "higher"),
        scored("http://a.test/5", 0.0, "priority", priority=1),
        Request("http://a.test/6", meta={"tag": "no-score"}),
        scored("http://a.test/7", 0.7, "high-third"),
    ]
    for request in pushed:
        queue.push(request)
    assert len(queue) == 7
    order = [queue.pop().meta["tag"] for _ in range(7)]
    assert order == [
        "priority",
        "higher",
        "high-first",
        "high-second",
        "high-third",
        "low",
        "no-score",
    ]
    assert queue.pop() is None
    assert sort_value(Request("http://x", priority=-2)) > sort_value(scored("http://x", -5.0, ""))


def test_the_queue_keeps_its_order_across_a_redis_restart(redis_server) -> None:
    _, queue = spider_with_queue(redis_server.url)
    for n, score in enumerate([0.5, 0.5, 0.9]):
        queue.push(scored(f"http://a.test/{n}", score, f"t{n}"))
    redis_server.restart(kill=True)  # AOF: every push was written
    _, again = spider_with_queue(redis_server.url)
    again.push(scored("http://a.test/3", 0.5, "t3"))  # the sequence goes on
    assert [again.pop().meta["tag"] for _ in range(4)] == ["t2", "t0", "t1", "t3"]


def test_the_queue_stores_json_even_when_told_to_pickle(redis_server) -> None:
    from scrapy_redis import picklecompat

    _, queue = spider_with_queue(redis_server.url, serializer=picklecompat)
    request = scored("http://a.test/x", 0.5, "t")
    request = request.replace(body=b"\x00\x01binary", headers={"X-A": "b"})
    queue.push(request)
    member = queue.server.zrange(QUEUE_KEY, 0, 0)[0]
    data = json.loads(member[16:])  # JSON after the 16-hex-digit sequence
    assert data["url"] == "http://a.test/x" and int(member[:16], 16) == 1
    back = queue.pop()
    assert (back.body, back.headers[b"X-A"], back.meta["focus"].link.score) == (
        b"\x00\x01binary",
        b"b",
        0.5,
    )


def test_the_json_serializer_keeps_a_requests_data_and_runs_nothing() -> None:
    from scrapy_focus.cluster import serializer

    meta = {"$b": "aGk=", "text": 'say "$b"', "raw": b"\xff", "pairs": {(1, 2): b"v"}}
    data = Request("http://a.test/", body=b"\x00", meta=meta).to_dict()
    back = serializer.loads(serializer.dumps(data))
    assert back["meta"] == {**meta, "pairs": {(1, 2): b"v"}}  # a "$" key stays data
    assert back["body"] == b"\x00" and back["headers"] == data["headers"]
    for crafted in (b'{"url": "u", "$eval": "x"}', b'{"url": {"$b": "!!"}}', b"[1]", b"\x80"):
        with pytest.raises(ValueError):
            serializer.loads(crafted)
    with pytest.raises(TypeError, match="not plain data"):
        serializer.dumps({"url": "u", "meta": {"callback": print}})


class _Boom:
    """Pickles as a call of os.system: what scrapy-redis's pickle queue would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_crafted_queue_entry_is_quarantined_not_run(redis_server, tmp_path, caplog) -> None:
    spider, queue = spider_with_queue(redis_server.url)
    marker = tmp_path / "ran"
    crafted = pickle.dumps({"url": "http://a.test/", "x": _Boom(marker)})
    queue.server.zadd(QUEUE_KEY, {b"0" * 16 + crafted: -1e12})
    queue.server.zadd(QUEUE_KEY, {b"1" * 16 + b'{"url": "http://a.test/", "$x": 1}': -1e11})
    queue.push(Request("http://a.test/ok"))
    assert queue.pop() is None
    assert queue.pop() is None
    assert queue.pop().url == "http://a.test/ok"
    assert not marker.exists()
    kept = queue.server.lrange(f"{QUEUE_KEY}:quarantine", 0, -1)
    assert len(kept) == 2
    assert spider.crawler.stats.get_value("focus/queue/malformed") == 2


def test_a_request_that_is_not_data_is_not_queued(redis_server) -> None:
    spider, queue = spider_with_queue(redis_server.url)
    queue.push(Request("http://a.test/", meta={"obj": object()}))
    assert len(queue) == 0
    assert spider.crawler.stats.get_value("focus/queue/unserializable") == 1


def test_scrapy_redis_scheduler_crawls_in_focus_order(farm, redis_server, tmp_path) -> None:
    spider, queue = spider_with_queue(redis_server.url)
    scores = [0.1, 0.9, 0.5, 0.9, 0.1, 0.5, 0.9, 0.3]
    for n, score in enumerate(scores):
        url = farm.url(f"/articles/{n}.html")
        request = scored(url, score, f"a{n}").replace(callback=spider.parse_article)
        queue.push(request)
    marker = tmp_path / "ran"
    queue.server.zadd(QUEUE_KEY, {b"0" * 16 + pickle.dumps(_Boom(marker)): -1e12})
    settings = {**SCRAPY_REDIS, "REDIS_URL": redis_server.url}
    result = run_crawl(tmp_path, [], settings, spider="redis_queue_spider.py")
    assert result.returncode == 0, result.log[-3000:]
    tags = [item["tag"] for item in result.items]
    # best score first; among equal scores, the order they were pushed in
    assert tags == ["a1", "a3", "a6", "a2", "a5", "a7", "a0", "a4"], result.log[-3000:]
    assert [item["score"] for item in result.items] == sorted(scores, reverse=True)
    assert not marker.exists()
    assert result.stats["focus/queue/malformed"] == 1
    assert "quarantined" in result.log


REDIS_SPIDER = """
import scrapy
from scrapy_redis.spiders import RedisSpider


class Feed(RedisSpider):
    name = "feed"

    def parse(self, response):
        link = response.meta["focus"].link
        score = link.score if link is not None else None
        yield {"url": response.url, "depth": response.meta.get("depth", 0), "score": score}
        for href in response.css("a::attr(href)").getall()[:3]:
            yield response.follow(href)
"""


def _redis_spider_crawl(farm, redis_server, tmp_path, settings):
    spider_file = tmp_path / "feed_spider.py"
    spider_file.write_text(REDIS_SPIDER)
    client = redis.Redis.from_url(redis_server.url)
    seeds = [farm.url("/articles/1.html"), farm.url("/articles/2.html")]
    client.lpush("feed:start_urls", *seeds)
    merged = {
        "REDIS_URL": redis_server.url,
        "MAX_IDLE_TIME_BEFORE_CLOSE": 3,
        "FOCUS_TOPIC": "article",
        "FOCUS_MAX_PAGES": 8,
        **settings,
    }
    result = run_crawl(tmp_path, [], merged, spider=str(spider_file))
    return client, seeds, result


def test_redis_spider_start_urls_feed_a_focused_crawl(farm, redis_server, tmp_path) -> None:
    client, seeds, result = _redis_spider_crawl(farm, redis_server, tmp_path, {})
    assert result.returncode == 0, result.log[-3000:]
    urls = [item["url"] for item in result.items]
    assert set(seeds) <= set(urls), result.log[-3000:]
    followed = [item for item in result.items if item["depth"] > 0]
    assert followed and all(isinstance(item["score"], float) for item in followed)  # ranked
    assert result.stats["focus/pages_fetched"] == len(urls)
    assert client.llen("feed:start_urls") == 0


def test_redis_spider_start_urls_feed_a_cluster_crawl(farm, redis_server, tmp_path) -> None:
    client, seeds, result = _redis_spider_crawl(
        farm, redis_server, tmp_path, {"FOCUS_CLUSTER_NAME": "feed"}
    )
    assert result.returncode == 0, result.log[-3000:]
    urls = {item["url"] for item in result.items}
    assert set(seeds) <= urls
    # The crawl's pages were counted by the cluster, in Redis
    assert int(client.hget("focus:{feed}:counters", "fetched")) == len(result.items)
    assert sum("Cluster mode: crawl" in line for line in result.log.splitlines()) == 1
