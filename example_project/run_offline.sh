#!/usr/bin/env bash
# The main job, offline: a focused crawl of a real documentation site, Debian's
# Python docs (/usr/share/doc/python3.11/html, package python3.11-doc) served on
# 127.0.0.1, with `scrapy focus-crawl asyncio.toml` inside the example project.
#
#   bash example_project/run_offline.sh           # until nothing is left, ~530 pages
#   MAX_PAGES=30 bash example_project/run_offline.sh
#
# Environment: TOPIC (what the crawl is about; default: the job file's), MAX_PAGES (stop
# after that many pages, FOCUS_MAX_PAGES), DOCS_DIR (the folder to serve), PORT
# (default: 8642 if free, else any free port; a stable port lets a second run be
# served from the corpus).
# Writes pages.jsonl (one line per page, with its relevance and its content-contract
# state) and the corpus (.scrapy/httpcache/focus) in example_project/, then prints
# `scrapy focus-corpus stats` and a one-line harvest summary, and writes the crawl's
# report (`scrapy focus-report`, docs/report.md) to example_project/report.html.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=serve.sh
source "$here/serve.sh"

port="${PORT:-$(free_port 8642)}"
serve_docs "$port"
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
wait_port "$port" "the docs server"

start_url="http://127.0.0.1:$port/"
echo "serving $docs_dir at $start_url"

cd "$here"
options=(
    --seed "$start_url"
    # Our own server on loopback: no need to wait between requests.
    -s DOWNLOAD_DELAY=0
    -s AUTOTHROTTLE_ENABLED=False
    -s CONCURRENT_REQUESTS_PER_DOMAIN=4
    # A crawl of minutes: a sample of its figures every 2 s (default 10) for the report.
    -s FOCUS_SERIES_INTERVAL=2
)
if [[ -n "${TOPIC:-}" ]]; then
    options+=(--topic "$TOPIC")
fi
if [[ -n "${MAX_PAGES:-}" ]]; then
    options+=(--max-pages "$MAX_PAGES")
fi
"$scrapy" focus-crawl asyncio.toml "${options[@]}"

echo "$(wc -l <pages.jsonl) pages in $here/pages.jsonl"
"$scrapy" focus-corpus stats --spider focus
"$python" - pages.jsonl <<'PY'
import json, sys
from collections import Counter

pages = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
# Relevant: at or above FOCUS_RELEVANCE_THRESHOLD (0.5), as the crawl counted them.
relevant = sum(1 for page in pages if (page["relevance"] or 0) >= 0.5)
states = Counter(page["state"] for page in pages)
print(
    f"harvest: {relevant} of {len(pages)} pages on the topic ({relevant / max(len(pages), 1):.0%}); "
    + ", ".join(f"{states[state]} {state}" for state in ("accepted", "unchanged", "rejected"))
)
PY
# The report of the crawl: one HTML page, charts and tables, readable offline.
"$scrapy" focus-report .scrapy/httpcache/focus -o report.html
