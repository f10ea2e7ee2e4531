"""The frontier's lease on a page lasts until every request the page's callback
yielded is enqueued (Scrapy enqueues them after the callback has finished): the
real scheduler, driven through Scrapy's interface and the page_done signal."""

from __future__ import annotations

from scrapy import Request

from scrapy_focus import signals as focus_signals
from scrapy_focus.signals import PageOutput
from tests.test_frontier_rediscovery import SITE, open_scheduler


def output_of(scheduler, page: Request, children: list[Request]) -> PageOutput:
    """What LinkContextMiddleware hands on for *page*: its children, counted."""
    output = PageOutput(page)
    for child in children:
        scheduler.outputs.yielded(output, child)
    output.complete = True
    return output


def done(scheduler, page: Request, output: PageOutput | None) -> None:
    scheduler.crawler.signals.send_catch_log(focus_signals.page_done, request=page, output=output)


def test_the_lease_waits_for_the_last_child(tmp_path):
    with open_scheduler(tmp_path) as scheduler:
        assert scheduler.enqueue_request(Request(f"{SITE}/index.html"))
        page = scheduler.next_request()
        children = [Request(f"{SITE}/{n}.html", meta={"depth": 1}) for n in range(2)]
        done(scheduler, page, output_of(scheduler, page, children))
        assert scheduler.store.leased() == 1  # the callback is done, its links are not in
        assert scheduler.enqueue_request(children[0])
        assert scheduler.store.leased() == 1
        assert scheduler.enqueue_request(children[1])
        assert scheduler.store.leased() == 0
        assert "_focus_page_output" not in children[1].meta  # not stored with the request


def test_a_page_without_links_and_an_exception_release_at_once(tmp_path):
    with open_scheduler(tmp_path) as scheduler:
        for path in ("/a.html", "/b.html"):
            assert scheduler.enqueue_request(Request(f"{SITE}{path}"))
        first, second = scheduler.next_request(), scheduler.next_request()
        done(scheduler, first, output_of(scheduler, first, []))
        done(scheduler, second, None)  # process_spider_exception: no output
        assert scheduler.store.leased() == 0


def test_an_exception_after_some_links_still_waits_for_them(tmp_path):
    with open_scheduler(tmp_path) as scheduler:
        assert scheduler.enqueue_request(Request(f"{SITE}/index.html"))
        page = scheduler.next_request()
        child = Request(f"{SITE}/1.html", meta={"depth": 1})
        done(scheduler, page, output_of(scheduler, page, [child]))  # the output's finally ...
        done(scheduler, page, None)  # ... then process_spider_exception
        assert scheduler.store.leased() == 1
        scheduler.enqueue_request(child)
        assert scheduler.store.leased() == 0


def test_an_earlier_outputs_last_child_leaves_a_later_output_waiting(tmp_path):
    with open_scheduler(tmp_path) as scheduler:
        assert scheduler.enqueue_request(Request(f"{SITE}/index.html"))
        page = scheduler.next_request()
        early, late = (Request(f"{SITE}/{n}.html", meta={"depth": 1}) for n in (1, 2))
        done(scheduler, page, output_of(scheduler, page, [early]))
        done(scheduler, page, output_of(scheduler, page, [late]))  # the same page answered again
        scheduler.enqueue_request(early)
        assert scheduler.store.leased() == 1  # the later output's link is not in yet
        scheduler.enqueue_request(late)
        assert scheduler.store.leased() == 0
