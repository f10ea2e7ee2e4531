"""The challenge wait: give a JavaScript challenge time to clear itself.

The contract: a page whose first main-frame answer is a challenge status
(403/429/503) and that carries scripts gets up to ``FOCUS_BROWSER_CHALLENGE_WAIT``
seconds to navigate to a document that is not a challenge, and for that document
to load; the download's response is then the page the browser ended on, with that
navigation's status and headers (:meth:`ChallengeWait.final_response`).  A plain
error page (no script) is answered at once, and the wait ends as soon as the
download's :class:`~scrapy_focus.engines.guard.DownloadGuard` has decided the
answer (a navigation out of scope, a redirect, DOWNLOAD_MAXSIZE).  The wait runs as
scrapy-playwright's page init callback (to listen from the first response) and a
first ``PageMethod`` (to wait before the page is read), the user's own after them.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy.utils.misc import load_object

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response

    from scrapy_focus.engines.guard import DownloadGuard

#: Statuses of a challenge page that may clear itself with JavaScript.
CHALLENGE_STATUSES = frozenset({403, 429, 503})
_SCRIPT = re.compile(rb"<script\b", re.I)


class ChallengeWait:
    """The challenge wait of one download (see the module docstring)."""

    def __init__(self, guard: DownloadGuard, wait: float, user_init: Any = None) -> None:
        self.guard = guard
        self.wait = wait
        self.user_init = user_init  # the user's playwright_page_init_callback
        self.navigations: Navigations | None = None

    async def init(self, page: Any, request: Request) -> None:
        """scrapy-playwright's page init callback: listen to the page from its start."""
        self.navigations = Navigations(page, guard=self.guard)
        self.guard.changed = self.navigations.changed
        self.navigations.attach()
        if self.user_init:
            await load_object(self.user_init)(page, request)

    async def settle(self, page: Any) -> None:
        """The first PageMethod: the wait itself."""
        if self.navigations is not None:
            await self.navigations.settle(page, self.wait)

    def page_methods(self, user_methods: Any) -> list[Any]:
        """The download's PageMethods: the wait, then the user's."""
        from scrapy_playwright.page import PageMethod

        methods = user_methods.values() if isinstance(user_methods, dict) else user_methods
        return [PageMethod(self.settle), *(methods or ())]

    def detach(self) -> None:
        if self.navigations is not None:
            self.navigations.detach()

    def final_response(self, response: Response) -> Response | None:
        """The response of the document the challenge led to, or None if it is
        *response* itself."""
        final = self.navigations.final if self.navigations is not None else None
        if final is None or final[0] == response.status:
            return None
        status, headers, url = final
        headers = {k: v for k, v in headers.items() if k.lower() != "content-encoding"}
        return response.replace(status=status, headers=headers, url=url)


@dataclass
class Navigations:
    """Main-frame document responses and load events of one page, while it is open."""

    page: Any
    responses: list[Any] = field(default_factory=list)
    loads: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    final: tuple[int, dict[str, str], str] | None = None  # status, headers, url
    guard: DownloadGuard | None = None  # its decision ends the wait

    def attach(self) -> None:
        self.page.on("response", self._response)
        self.page.on("load", self._load)

    def detach(self) -> None:
        """Stop listening: the page may serve another download."""
        self.page.remove_listener("response", self._response)
        self.page.remove_listener("load", self._load)

    def _response(self, response: Any) -> None:
        try:
            main = response.frame == self.page.main_frame
            navigation = response.request.is_navigation_request()
        except Exception:  # a frame detached meanwhile
            return
        if main and navigation:
            self.responses.append(response)
            self.changed.set()

    def _load(self, *_: Any) -> None:
        self.loads += 1
        self.changed.set()

    async def settle(self, page: Any, wait: float) -> None:
        """A PageMethod: give a challenge page *wait* seconds to clear itself, i.e. to
        navigate to a document that is not a challenge, and that document to load."""
        if not self.responses or self.responses[0].status not in CHALLENGE_STATUSES:
            return
        with contextlib.suppress(Exception):  # navigating already: that is the reload
            if not _SCRIPT.search((await page.content()).encode()):
                return  # a plain error page: nothing will run
        deadline = time.monotonic() + wait
        while self.responses[-1].status in CHALLENGE_STATUSES or self.loads < len(self.responses):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (self.guard is not None and self.guard.ended):
                return
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except asyncio.TimeoutError:
                return
        last = self.responses[-1]
        with contextlib.suppress(Exception):
            self.final = (last.status, await last.all_headers(), last.url)
