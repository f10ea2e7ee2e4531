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
venv="$(cd "$here/.." && pwd)/.venv"
python="$venv/bin/python"
scrapy="$venv/bin/scrapy"
docs_dir="${DOCS_DIR:-/usr/share/doc/python3.11/html}"

if [[ ! -x "$scrapy" ]]; then
    echo "no $scrapy: run 'bash .ci/setup' in the repository first" >&2
    exit 1
fi
if [[ ! -f "$docs_dir/index.html" ]]; then
    echo "no $docs_dir/index.html: install python3.11-doc ('bash .ci/setup' does)" >&2
    exit 1
fi

port="${PORT:-$("$python" - <<'PY'
import socket

def free(port):
    with socket.socket() as sock:
        # As http.server does: a port whose last connections are in TIME_WAIT is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return None
        return sock.getsockname()[1]

print(free(8642) or free(0))
PY
)}"

"$python" -m http.server "$port" --bind 127.0.0.1 --directory "$docs_dir" \
    >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT

# Wait (up to 10 s) until the server answers.
"$python" - "$port" <<'PY'
import socket, sys, time

deadline = time.monotonic() + 10
while True:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit(f"the docs server on 127.0.0.1:{sys.argv[1]} did not start")
        time.sleep(0.1)
PY

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
