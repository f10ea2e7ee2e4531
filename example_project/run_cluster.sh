#!/usr/bin/env bash
# A cluster on one machine: a local redis-server and N nodes of the example project's
# main job (asyncio.toml), all crawling Debian's copy of the Python docs served on
# 127.0.0.1 through one Redis (FOCUS_CLUSTER_REDIS_URL).
#
#   bash example_project/run_cluster.sh                    # 3 nodes, until nothing is left
#   NODES=2 MAX_PAGES=30 bash example_project/run_cluster.sh
#
# Environment: NODES (default 3), MAX_PAGES (--max-pages, given to every node),
# TOPIC, DOCS_DIR (the folder to serve), WORK (default: example_project/cluster).
# Each node has its own folder WORK/node-N: its log, its pages.jsonl and its corpus
# (bodies never go through Redis); Redis keeps its data (AOF) in WORK/redis.  The last
# line counts the pages of all nodes and how many distinct URLs they are.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=serve.sh
source "$here/serve.sh"
nodes="${NODES:-3}"
work="${WORK:-$here/cluster}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"  # the nodes run in the project: an absolute path
redis_server="$(command -v redis-server || echo /usr/sbin/redis-server)"

if [[ ! -x "$redis_server" ]]; then
    echo "no $redis_server: run 'bash .ci/setup' in the repository first" >&2
    exit 1
fi

mkdir -p "$work/redis"
pids=()
trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done' EXIT

redis_port="$(free_port)"
"$redis_server" --port "$redis_port" --bind 127.0.0.1 --dir "$work/redis" --save "" \
    --appendonly yes --logfile "$work/redis/redis.log" &
pids+=($!)
docs_port="$(free_port)"
serve_docs "$docs_port"
pids+=($!)
wait_port "$redis_port" redis-server
wait_port "$docs_port" "the docs server"

redis_url="redis://127.0.0.1:$redis_port/0"
start_url="http://127.0.0.1:$docs_port/"
echo "redis at $redis_url, serving $docs_dir at $start_url, $nodes nodes in $work"

# The nodes share this machine's cores: a worker per core each would oversubscribe them,
# and a node reads ahead of its extraction by as many pages as it has workers.
workers=$(( $(nproc) / nodes ))
options=(
    --seed "$start_url"
    -s "FOCUS_EXTRACT_WORKERS=$(( workers > 0 ? workers : 1 ))"
    -s DOWNLOAD_DELAY=0
    -s AUTOTHROTTLE_ENABLED=False
    -s CONCURRENT_REQUESTS_PER_DOMAIN=2
    -s "FOCUS_CLUSTER_REDIS_URL=$redis_url"
    -s FOCUS_CLUSTER_NAME=asyncio
)
if [[ -n "${TOPIC:-}" ]]; then
    options+=(--topic "$TOPIC")
fi
if [[ -n "${MAX_PAGES:-}" ]]; then
    options+=(--max-pages "$MAX_PAGES")
fi

cd "$here"
crawls=()
for node in $(seq 1 "$nodes"); do
    folder="$work/node-$node"
    mkdir -p "$folder"
    "$scrapy" focus-crawl asyncio.toml "${options[@]}" \
        -s "FOCUS_NODE_NAME=node-$node" \
        -s "HTTPCACHE_DIR=$folder/httpcache" \
        -s "LOG_FILE=$folder/crawl.log" \
        -O "$folder/pages.jsonl" &
    crawls+=($!)
done
failed=0
for node in $(seq 1 "$nodes"); do
    if ! wait "${crawls[$((node - 1))]}"; then
        echo "node-$node failed: see $work/node-$node/crawl.log" >&2
        failed=1
    fi
done

"$python" - "$work" "$nodes" <<'PY'
import json, sys
from pathlib import Path

work, count = Path(sys.argv[1]), int(sys.argv[2])
urls = []
for node in range(1, count + 1):
    lines = (work / f"node-{node}" / "pages.jsonl").read_text().splitlines()
    pages = [json.loads(line)["url"] for line in lines if line.strip()]
    print(f"node-{node}: {len(pages)} pages")
    urls += pages
print(f"cluster: {len(urls)} pages from {count} nodes, {len(set(urls))} distinct URLs")
PY
exit "$failed"
