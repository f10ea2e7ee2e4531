"""The render wait: a browser download returns when the page's content is there, not at ``load``.

The contract:

* a tracker runs in every document of the download's page before the page's own
  scripts (an init script, added once per page by :meth:`RenderWait.init`, the page
  init callback): it counts ``fetch`` (``keepalive`` beacons aside) and
  XMLHttpRequest calls in flight, one-shot timers due within the budget
  (``setTimeout`` of at most ``FOCUS_BROWSER_RENDER_WAIT``; intervals and longer
  timers are not waited for), animation frames requested outside an animation
  frame (a frame loop is not waited for), and content changes after
  DOMContentLoaded: nodes added or removed outside ``<head>`` (scripts, styles
  and links aside), text changed, and client-side route changes (``pushState``,
  ``replaceState``, ``hashchange``);
* after ``load`` (:meth:`RenderWait.settle`, a PageMethod after the challenge
  wait and before the user's), :func:`decide`: with ``FOCUS_BROWSER_RENDER``
  ``"auto"``, a page with nothing pending and no content change since
  DOMContentLoaded returns at once (``"complete"``, nothing waited).  Otherwise
  (and always with ``"always"``) the wait polls the tracker until nothing is
  pending and neither the content (the tracker's changes and the length of
  ``document.body.innerText``) nor any pending work has changed for
  ``FOCUS_BROWSER_RENDER_QUIET`` seconds (``"stable"``), for at most
  ``FOCUS_BROWSER_RENDER_WAIT`` seconds and never past the navigation timeout or
  the request's ``download_timeout``, counted from the download's start
  (``"budget"``).  A main-frame navigation to another document, or an answer the
  download's :class:`~scrapy_focus.engines.guard.DownloadGuard` has decided (a
  navigation out of scope, a redirect, DOWNLOAD_MAXSIZE), ends it
  (``"navigation"``; after a navigation the guard let through, once the document
  it led to has loaded, within the same limits); a page that closes or crashes,
  ``"closed"``.
  ``"never"`` adds neither the tracker nor the wait;
* the outcome is the attempt's ``render_wait`` (seconds waited) and
  ``render_end`` (:meth:`RenderWait.record`), and the stats
  ``focus/render/end/<end>`` and ``focus/render/seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy.utils.misc import load_object

from scrapy_focus.engines.headers import main_frame_navigation

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_focus.engines.guard import DownloadGuard
    from scrapy_focus.state import Attempt

RENDER_ENDS = ("complete", "stable", "budget", "navigation", "closed")
POLL = 0.1  # seconds between two reads of the tracker

#: The tracker (see the module docstring); ``BUDGET_MS`` is the budget in ms.
TRACKER = """(() => {
  if (window.__focusRender) return;
  const s = {inflight: 0, timers: new Set(), frames: new Set(), changes: 0,
             changed: null, activity: 0, ready: false, inFrame: false};
  Object.defineProperty(window, '__focusRender', {value: s, enumerable: false});
  const now = () => performance.now();
  const touch = () => { s.activity = now(); };
  const change = () => { if (s.ready) { s.changes++; s.changed = now(); touch(); } };
  const st = window.setTimeout, ct = window.clearTimeout;
  const ended = () => { let done = false;
    return () => { if (!done) { done = true; s.inflight--; touch(); } }; };
  if (window.fetch) { const fetch = window.fetch;
    window.fetch = function (input, init) {
      if (init && init.keepalive) return fetch.apply(this, arguments);  // a beacon
      s.inflight++; touch(); const end = ended();
      try { const p = fetch.apply(this, arguments); p.then(end, end); return p; }
      catch (e) { end(); throw e; } }; }
  if (window.XMLHttpRequest) { const send = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function () { s.inflight++; touch(); const end = ended();
      this.addEventListener('loadend', end);
      try { return send.apply(this, arguments); } catch (e) { end(); throw e; } }; }
  window.setTimeout = function (fn, delay) {
    if (typeof fn !== 'function' || (Number(delay) || 0) > BUDGET_MS)
      return st.apply(window, arguments);
    const rest = Array.prototype.slice.call(arguments, 2);
    const id = st.call(window, function () { s.timers.delete(id); touch();
      return fn.apply(this, arguments); }, delay, ...rest);
    s.timers.add(id); return id; };
  window.clearTimeout = function (id) { s.timers.delete(id); return ct.call(window, id); };
  if (window.requestAnimationFrame) {
    const raf = window.requestAnimationFrame, caf = window.cancelAnimationFrame;
    window.requestAnimationFrame = function (fn) {
      if (s.inFrame || typeof fn !== 'function') return raf.call(window, fn);
      const id = raf.call(window, function (t) { s.frames.delete(id); touch(); s.inFrame = true;
        try { return fn(t); } finally { s.inFrame = false; } });
      s.frames.add(id); return id; };
    window.cancelAnimationFrame = function (id) {
      s.frames.delete(id); return caf.call(window, id); };
  }
  for (const name of ['pushState', 'replaceState']) { const original = history[name];
    history[name] = function () {
      const r = original.apply(this, arguments); change(); return r; }; }
  window.addEventListener('hashchange', change);
  const silent = new Set(['SCRIPT', 'STYLE', 'LINK', 'META', 'NOSCRIPT', 'TEMPLATE']);
  const counts = (nodes) => Array.prototype.some.call(nodes, (n) => !silent.has(n.nodeName));
  new MutationObserver((records) => { for (const r of records) {
    const target = r.type === 'characterData' ? r.target.parentNode : r.target;
    if (!target || silent.has(target.nodeName) || (document.head && document.head.contains(target)))
      continue;
    if (r.type === 'characterData' || counts(r.addedNodes) || counts(r.removedNodes)) {
      change(); return; } } }).observe(document, {childList: true, subtree: true,
      characterData: true});
  window.addEventListener('DOMContentLoaded', () => st.call(window, () => { s.ready = true; }, 0));
})();"""

#: What the wait reads of the tracker (null: no tracker in this document).
READ = """() => { const s = window.__focusRender; if (!s) return null; const t = performance.now();
  return {pending: s.inflight + s.timers.size + s.frames.size, changes: s.changes,
          changed: s.changed === null ? null : (t - s.changed) / 1000,
          activity: (t - s.activity) / 1000,
          text: document.body ? document.body.innerText.length : 0}; }"""


@dataclass(frozen=True)
class Reading:
    """One read of the tracker: work pending, content changes since DOMContentLoaded,
    seconds since the last content change (None: none) and since the last pending
    work began or ended, and the length of the body's visible text."""

    pending: int
    changes: int
    changed: float | None
    activity: float
    text: int


def decide(mode: str, reading: Reading | None, quiet: float, text_age: float | None) -> str | None:
    """Why the wait ends now (``"complete"``, ``"stable"``), or None to go on.

    *reading* is the tracker's, None when the document has none (not HTML, or
    replaced meanwhile); *text_age* the seconds the visible text's length has
    been the same as the wait saw it (None on the first reading)."""
    if reading is None:
        return "complete"
    if text_age is None and mode == "auto" and not reading.pending and not reading.changes:
        return "complete"
    if reading.pending or reading.activity < quiet:
        return None
    if reading.changed is not None and reading.changed < quiet:
        return None
    return "stable" if text_age is not None and text_age >= quiet else None


class RenderWait:
    """The render wait of one download (see the module docstring)."""

    def __init__(
        self,
        guard: DownloadGuard,
        mode: str,
        budget: float,
        quiet: float,
        cap: float,
        tracked: weakref.WeakSet[Any],
        user_init: Any = None,
    ) -> None:
        self.guard = guard
        self.mode = mode
        self.budget = budget
        self.quiet = quiet
        self.deadline = time.monotonic() + cap  # the hard cap, from the download's start
        self.tracked = tracked  # the pages that have the tracker already
        self.user_init = user_init  # the user's playwright_page_init_callback
        self.waited: float | None = None
        self.end: str | None = None
        self._navigated = asyncio.Event()
        self._loaded = asyncio.Event()

    async def init(self, page: Any, request: Request) -> None:
        """scrapy-playwright's page init callback: the tracker, in every document
        the page loads from now on."""
        if page not in self.tracked:
            await page.add_init_script(TRACKER.replace("BUDGET_MS", str(int(self.budget * 1000))))
            self.tracked.add(page)
        if self.user_init:
            await load_object(self.user_init)(page, request)

    def page_methods(self, user_methods: Any) -> list[Any]:
        """The download's PageMethods from here: the wait, then the user's."""
        from scrapy_playwright.page import PageMethod

        methods = user_methods.values() if isinstance(user_methods, dict) else user_methods
        return [PageMethod(self.settle), *(methods or ())]

    async def settle(self, page: Any) -> None:
        """The PageMethod: the wait itself."""
        started = time.monotonic()
        deadline = min(started + self.budget, self.deadline)
        page.on("request", self._on_request)
        page.on("load", self._on_load)
        try:
            self.end = await self._wait(page, deadline)
            if self.end == "navigation" and not self.guard.ended:
                # The answer is the document it led to, loaded (scrapy-playwright reads
                # the page next, and may find the navigation not begun yet).
                with contextlib.suppress(asyncio.TimeoutError):
                    remaining = max(0.0, deadline - time.monotonic())
                    await asyncio.wait_for(self._loaded.wait(), remaining)
        finally:
            page.remove_listener("request", self._on_request)
            page.remove_listener("load", self._on_load)
        self.waited = 0.0 if self.end == "complete" else time.monotonic() - started

    def _on_request(self, playwright_request: Any) -> None:
        if main_frame_navigation(playwright_request):
            self._navigated.set()

    def _on_load(self, *_: Any) -> None:
        self._loaded.set()  # a document after the one the wait began on

    async def _wait(self, page: Any, deadline: float) -> str:
        text: int | None = None
        text_since = 0.0
        while True:
            now = time.monotonic()
            if self._navigated.is_set() or self.guard.ended:
                return "navigation"
            try:
                # Bounded: a page whose script never yields never answers.
                raw = await asyncio.wait_for(page.evaluate(READ), max(POLL, deadline - now))
            except asyncio.TimeoutError:
                return "budget"
            except Exception:  # the document went away under the read
                return "closed" if page.is_closed() else "navigation"
            reading = Reading(**raw) if raw else None
            now = time.monotonic()
            first = text is None
            if reading is not None and reading.text != text:
                text, text_since = reading.text, now
            end = decide(self.mode, reading, self.quiet, None if first else now - text_since)
            if end is not None:
                return end
            remaining = deadline - now
            if remaining <= 0:
                return "budget"
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._navigated.wait(), min(POLL, remaining))

    def record(self, attempt: Attempt | None, stats: Any) -> None:
        """The wait's outcome on the download's attempt and in the stats."""
        if self.end is None:
            return  # the page never loaded: no wait ran
        if attempt is not None:
            attempt.render_wait = round(self.waited or 0.0, 3)
            attempt.render_end = self.end
        stats.inc_value(f"focus/render/end/{self.end}")
        stats.inc_value("focus/render/seconds", round(self.waited or 0.0, 3))
