"""Open a ``scrapy focus-report`` page in headless Chromium (Debian's) and look at it.

:func:`view` loads the file, records console errors, page errors and every request
the page makes besides itself (a self-contained page makes none), counts what each
chart drew (per chart: the ``data-*`` elements and the points of their paths), and
takes a full-page screenshot.  ``python -m harness.report_view REPORT.html OUT.png``
takes the screenshot docs/report.md shows.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]

# Per chart (a .chart div): its heading, the data elements, and the points drawn by them
# (the vertices of their paths: M/L commands; a bar or a marker is a closed path).
_COUNT = """() => [...document.querySelectorAll('.chart')].map(chart => {
  const data = [...chart.querySelectorAll('[id^="data-"]')];
  const points = data.map(g => [...g.querySelectorAll('path, use')].map(p =>
      p.tagName === 'use' ? 1 : ((p.getAttribute('d') || '').match(/[ML]/g) || []).length)
    .reduce((a, b) => a + b, 0)).reduce((a, b) => a + b, 0);
  return {title: chart.previousElementSibling.textContent, data: data.length, points};
})"""


@dataclass
class View:
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # besides the page itself
    charts: list[dict[str, Any]] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)  # an alert() that ran
    text: str = ""


def view(report: Path, screenshot: Path | None = None, width: int = 1100) -> View:
    from playwright.sync_api import sync_playwright

    url = report.resolve().as_uri()
    seen = View()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.on(
                "console",
                lambda m: seen.console_errors.append(m.text) if m.type == "error" else None,
            )
            page.on("pageerror", lambda e: seen.console_errors.append(str(e)))
            page.on("dialog", lambda d: (seen.dialogs.append(d.message), d.dismiss()))
            page.on("request", lambda r: seen.requests.append(r.url) if r.url != url else None)
            page.goto(url, wait_until="load")
            page.wait_for_timeout(200)  # anything a script would do at load has been done
            seen.charts = page.evaluate(_COUNT)
            seen.text = page.inner_text("body")
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return seen


if __name__ == "__main__":
    result = view(Path(sys.argv[1]), Path(sys.argv[2]))
    print(result.charts, result.console_errors, result.requests)
