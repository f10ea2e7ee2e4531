"""Extraction off the reactor thread, with a hard time limit per page.

trafilatura has no timeout of its own and can run for minutes on adversarial
HTML; on the reactor thread it would also stall every download.  The pool runs
the extraction function in worker processes (``FOCUS_EXTRACT_MODE =
"process"``, the default: no GIL contention, and a page over its time limit is
stopped by killing its worker, which is then replaced) or in threads
(``"thread"``: no pickling, but an over-time page is only abandoned, its
thread keeps running).

Contract of :meth:`ExtractionPool.submit`: it returns a Deferred that always
fires with an :class:`ExtractionResult` (never errbacks); ``failure`` is None,
``"timeout"`` or ``"error"``.  At most ``workers`` pages are extracted at once;
more wait in the pool's queue (the downloader's concurrency bounds how many).

The limit is wall time, unless ``cpu_time`` (process mode, with
``FOCUS_REPRODUCIBLE_ORDER``): then it counts the CPU time the worker spent on
the page (``ITIMER_PROF``), so that the same page times out or not whatever else
the machine runs, and the wall clock only stops a worker stuck past
``WALL_FACTOR`` times the limit.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from typing import Any

from scrapy.utils.misc import load_object
from twisted.internet import defer

from scrapy_focus.extract.page import Extraction, ExtractOptions

DEFAULT_FUNCTION = "scrapy_focus.extract.page.extract_page"


@dataclass(frozen=True)
class ExtractionResult:
    extraction: Extraction | None
    failure: str | None = None  # None | "timeout" | "error"
    error: str | None = None  # the exception, for quarantine
    seconds: float = 0.0  # wall time from submit to result
    worker: str = ""  # "pid:thread" that ran it


#: With a CPU-time limit, the wall time past which a worker is stopped anyway.
WALL_FACTOR = 4.0


class CpuTimeout(TimeoutError):
    """The page used up its CPU time in the worker."""


def _cpu_expired(signum: int, frame: Any) -> None:
    raise CpuTimeout("the page's CPU time ran out")


def _run(
    function_path: str,
    body: bytes,
    url: str,
    content_type: str | None,
    options: ExtractOptions,
    cpu_limit: float = 0.0,
) -> tuple[Extraction, str]:
    function: Callable[..., Extraction] = _load(function_path)
    if cpu_limit:
        signal.signal(signal.SIGPROF, _cpu_expired)
        signal.setitimer(signal.ITIMER_PROF, cpu_limit)
    try:
        extraction = function(body, url, content_type, options)
    finally:
        if cpu_limit:
            signal.setitimer(signal.ITIMER_PROF, 0)
    if isinstance(extraction, Extraction) and extraction.confidence is None:
        # Scored here, in the worker, rather than by the ConfidencePipeline on the
        # reactor thread (a few ms of regexes over the text per page).
        from scrapy_focus.extract.confidence import confidence

        with contextlib.suppress(Exception):  # the pipeline scores it again, and reports
            extraction = replace(extraction, confidence=confidence(extraction, min_content_chars=0))
    return extraction, f"{os.getpid()}:{threading.get_ident()}"


_LOADED: dict[str, Any] = {}


def _load(path: str) -> Any:
    if path not in _LOADED:
        _LOADED[path] = load_object(path)
    return _LOADED[path]


def _warm(function_path: str) -> str:
    _load(function_path)
    return str(os.getpid())


class ExtractionPool:
    def __init__(
        self,
        workers: int,
        timeout: float,
        mode: str = "process",
        function: str = DEFAULT_FUNCTION,
        options: ExtractOptions | None = None,
        cpu_time: bool = False,
    ) -> None:
        if mode not in {"process", "thread"}:
            raise ValueError(f"FOCUS_EXTRACT_MODE={mode!r}: use 'process' or 'thread'")
        self.workers = max(1, workers)
        self.timeout = timeout
        self.mode = mode
        self.function = function
        self.options = options or ExtractOptions()
        self.cpu_time = cpu_time and mode == "process"  # a thread has no CPU timer of its own
        self._pool: Any = None
        try:  # fail at start-up, in the crawl's own process, on a bad path
            _load(function)
        except (ImportError, AttributeError, ValueError, NameError) as exc:
            raise ValueError(
                f"FOCUS_EXTRACT_FUNCTION={function!r} cannot be loaded: {exc}"
            ) from exc

    def start(self) -> None:
        if self.mode == "process":
            import pebble  # a dependency; imported here to keep `import scrapy_focus` light

            # forkserver: workers never inherit the reactor's threads and locks,
            # and a replacement for a killed worker starts in milliseconds.
            context = multiprocessing.get_context("forkserver")
            # The forkserver imports (and so runs) the warm-up once, for every worker.
            context.set_forkserver_preload(["scrapy_focus.extract.warm"])
            self._pool = pebble.ProcessPool(max_workers=self.workers, context=context)
            for _ in range(self.workers):
                self._pool.schedule(_warm, (self.function,))
        else:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="focus-extract")
            self._pool.submit(importlib.import_module, "scrapy_focus.extract.warm")

    def close(self) -> None:
        if self._pool is None:
            return
        if self.mode == "process":
            self._pool.stop()
            self._pool.join(timeout=10)
        else:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None

    def submit(
        self,
        body: bytes,
        url: str,
        content_type: str | None,
        options: ExtractOptions | None = None,
    ) -> defer.Deferred:
        """Extract *body* with *options* (the pool's own if None)."""
        if self._pool is None:
            raise RuntimeError("ExtractionPool.submit() before start() or after close()")
        # Imported here: importing twisted.internet.reactor at module level would
        # install a reactor before Scrapy chooses one (TWISTED_REACTOR).
        from twisted.internet import reactor

        started = time.monotonic()
        args = (self.function, body, url, content_type, options or self.options)
        result: defer.Deferred = defer.Deferred()
        if self.cpu_time:
            wall = self.timeout * WALL_FACTOR
            future: Future = self._pool.schedule(_run, (*args, self.timeout), timeout=wall)
        elif self.mode == "process":
            future = self._pool.schedule(_run, args, timeout=self.timeout)
        else:
            future = self._pool.submit(_run, *args)
            # A thread cannot be stopped: past the limit its result is abandoned.
            timer = reactor.callLater(self.timeout, _abandon, result, started)
            result.addBoth(_cancel_timer, timer)

        def done(finished: Future) -> None:
            reactor.callFromThread(_fire, result, finished, started)

        future.add_done_callback(done)
        return result


def _cancel_timer(value: Any, timer: Any) -> Any:
    if timer.active():
        timer.cancel()
    return value


def _abandon(result: defer.Deferred, started: float) -> None:
    if not result.called:
        result.callback(ExtractionResult(None, "timeout", seconds=time.monotonic() - started))


def _fire(result: defer.Deferred, finished: Future, started: float) -> None:
    if result.called:  # abandoned by the thread-mode timer
        return
    seconds = time.monotonic() - started
    try:
        extraction, worker = finished.result()
    except (FutureTimeout, TimeoutError):
        result.callback(ExtractionResult(None, "timeout", seconds=seconds))
    except Exception as exc:
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        remote = getattr(exc, "traceback", None)  # pebble keeps the worker's traceback
        result.callback(ExtractionResult(None, "error", error=remote or detail, seconds=seconds))
    else:
        result.callback(ExtractionResult(extraction, seconds=seconds, worker=worker))
