"""Browser pages: a new page per download against a page reused, in Chromium and Firefox.

Why ``FOCUS_BROWSER_REUSE_PAGES`` is on by default.  For each browser, in one
run: ``--pages`` downloads of a small local page, ``--concurrency`` at a time,
each as scrapy-playwright makes one (route every request of the page to Python,
navigate, read the document):

``new page``   open a page, route, navigate, read, close it (scrapy-playwright's way);
``reused``     take an open page of the context, re-route it, navigate, read.

Reports wall and CPU seconds per page (CPU of this process and every process it
started: Playwright's driver, the browsers; harness.processes) and the ratios.

Usage::

    .venv/bin/python benchmarks/bench_browser_pages.py [--pages 200] [--concurrency 4]
        [--chromium /usr/bin/chromium] [--firefox /usr/bin/firefox-esr]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import shutil
import sys
import time

import repo_root  # noqa: F401 - the repository root on sys.path

from harness.processes import TreeSampler
from harness.provenance import git_commit
from harness.quiet_server import QuietHandler, QuietServer

BODY = (
    "<!DOCTYPE html><html><head><title>An article</title></head><body><article>"
    "<h1>An article</h1>" + "<p>A paragraph of the article, long enough to read.</p>" * 30 + ""
    "</article></body></html>"
).encode()


class _Page(QuietHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


def serve() -> str:
    return QuietServer(_Page).start().origin


async def measure(
    browser: object, base: str, pages: int, concurrency: int, reuse: bool
) -> tuple[float, float]:
    context = await browser.new_context()  # type: ignore[attr-defined]

    async def route(route: object) -> None:
        await route.continue_()  # type: ignore[attr-defined]

    idle = []
    warm = await context.new_page()
    await warm.goto(f"{base}/warm")
    if reuse:
        idle.append(warm)
    else:
        await warm.close()
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(pages):
        queue.put_nowait(n)

    async def worker() -> None:
        while not queue.empty():
            n = queue.get_nowait()
            page = idle.pop() if reuse and idle else await context.new_page()
            if reuse:
                await page.unroute("**")
            await page.route("**", route)
            await page.goto(f"{base}/{n}.html")
            await page.content()
            if reuse:
                idle.append(page)
            else:
                await page.close()

    # Every 20 ms: Chromium's renderer of a closed page exits, and its CPU with it.
    tree = TreeSampler(os.getpid(), interval=0.02, since_now=True).start()
    started = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.monotonic() - started
    cpu = tree.stop()
    await context.close()
    return wall / pages, cpu / pages


async def run(args: argparse.Namespace) -> list[tuple[str, str, float, float]]:
    from playwright.async_api import async_playwright

    base = serve()
    rows = []
    async with async_playwright() as playwright:
        browsers = {
            "chromium": lambda: playwright.chromium.launch(
                headless=True,
                executable_path=args.chromium,
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
            ),
            "firefox": lambda: playwright.firefox.launch(
                headless=True, executable_path=args.firefox, channel="moz-firefox"
            ),
        }
        for name, launch in browsers.items():
            browser = await launch()
            for mode in ("new page", "reused"):
                wall, cpu = await measure(
                    browser, base, args.pages, args.concurrency, mode == "reused"
                )
                rows.append((name, mode, wall, cpu))
                print(f"{name} {mode}: {wall:.3f} s/page, {cpu:.3f} CPU s/page", file=sys.stderr)
            await browser.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--firefox", default=shutil.which("firefox-esr") or "/usr/bin/firefox-esr")
    args = parser.parse_args()
    started = dt.datetime.now()
    rows = asyncio.run(run(args))
    print(
        f"Run {started:%Y-%m-%d %H:%M}, commit {git_commit()}, {args.pages} pages per row, "
        f"{args.concurrency} at a time; Python {platform.python_version()}.\n"
    )
    print("| browser | pages | s/page | CPU s/page | new page / reused (CPU) |")
    print("|---|---|---|---|---|")
    by = {(name, mode): (wall, cpu) for name, mode, wall, cpu in rows}
    for name, mode, wall, cpu in rows:
        ratio = by[(name, "new page")][1] / cpu if mode == "reused" else 1.0
        print(f"| {name} | {mode} | {wall:.3f} | {cpu:.3f} | {ratio:.1f}x |")


if __name__ == "__main__":
    main()
