#!/usr/bin/env bash
# Crawl a real documentation site offline: Debian's Python docs
# (/usr/share/doc/python3.11/html, package python3.11-doc) served on 127.0.0.1.
#
#   bash example_project/run_offline.sh           # the whole site, ~530 pages
#   MAX_PAGES=30 bash example_project/run_offline.sh
#
# Environment: MAX_PAGES (stop after that many pages, CLOSESPIDER_PAGECOUNT),
# DOCS_DIR (the folder to serve), PORT (default: 8642 if free, else any free port;
# a stable port lets a second run be served from the corpus).
# Writes pages.jsonl and the corpus (.scrapy/httpcache/docs) in example_project/,
# then prints `scrapy focus-corpus stats`.
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
settings=(
    # Our own server on loopback: no need to wait between requests.
    -s DOWNLOAD_DELAY=0
    -s AUTOTHROTTLE_ENABLED=False
    -s CONCURRENT_REQUESTS_PER_DOMAIN=8
)
if [[ -n "${MAX_PAGES:-}" ]]; then
    settings+=(-s "CLOSESPIDER_PAGECOUNT=$MAX_PAGES")
fi
"$scrapy" crawl docs -a "start_url=$start_url" -O pages.jsonl "${settings[@]}"

echo "$(wc -l <pages.jsonl) pages in $here/pages.jsonl"
"$scrapy" focus-corpus stats --spider docs
