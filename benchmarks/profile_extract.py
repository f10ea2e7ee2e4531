"""Where extract_page spends its time: the top entries of a cProfile of a page set.

Prints, for the Python docs (every page) or WCXB-dev (every ``--step``-th page),
the functions with the largest cumulative share of the profiled ``extract_page``
time, with their own share, as Markdown table rows (docs/benchmarks.md,
"Extraction cost").

Usage::

    .venv/bin/python benchmarks/profile_extract.py wcxb [--step 10] [--top 30]
    .venv/bin/python benchmarks/profile_extract.py docs [--docs-dir DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import pstats
from pathlib import Path

from repo_root import REPO

from scrapy_focus.extract.page import extract_page

WCXB = REPO.parent / "shared" / "data" / "wcxb-dev" / "html"
DOCS_DIR = Path("/usr/share/doc/python3.11/html")


def pages(which: str, step: int, docs_dir: Path) -> list[tuple[bytes, str]]:
    if which == "docs":
        return [(path.read_bytes(), path.as_uri()) for path in sorted(docs_dir.rglob("*.html"))]
    files = sorted(WCXB.glob("*.html.gz"))[::step]
    return [
        (gzip.decompress(path.read_bytes()), f"https://example.com/{path.name}") for path in files
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("which", choices=["docs", "wcxb"])
    parser.add_argument("--step", type=int, default=10)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--docs-dir", type=Path, default=DOCS_DIR)
    args = parser.parse_args()
    bodies = pages(args.which, args.step, args.docs_dir)
    extract_page(*bodies[0])  # imports and first-use caches are not part of the profile
    profile = cProfile.Profile()
    profile.enable()
    for body, url in bodies:
        extract_page(body, url, "text/html")
    profile.disable()
    stats = pstats.Stats(profile)
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    for (filename, _line, function), entry in stats.stats.items():  # type: ignore[attr-defined]
        own, cumulative = entry[2], entry[3]
        where = filename.split("site-packages/")[-1].split("scrapy_focus/")[-1]
        rows.append((cumulative, own, f"{where}:{function}"))
    print(f"{args.which}: {len(bodies)} pages, {total:.1f} s profiled")
    for cumulative, own, name in sorted(rows, reverse=True)[: args.top]:
        print(f"| `{name}` | {cumulative / total:.0%} | {own / total:.0%} |")


if __name__ == "__main__":
    main()
