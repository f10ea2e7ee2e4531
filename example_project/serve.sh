# Sourced by run_offline.sh and run_cluster.sh (not run by itself): what both need
# to serve Debian's Python docs on 127.0.0.1 to the example project's crawls.
# Expects $here (the example project's folder); sets venv, python, scrapy, docs_dir
# (DOCS_DIR, default Debian's python3.11-doc) after checking they are there.

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

free_port() {  # [PREFERRED]: PREFERRED if it is free, else any free port of 127.0.0.1
    "$python" - "${1:-0}" <<'PY'
import socket, sys

def free(port):
    with socket.socket() as sock:
        # As http.server does: a port whose last connections are in TIME_WAIT is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return None
        return sock.getsockname()[1]

print(free(int(sys.argv[1])) or free(0))
PY
}

wait_port() {  # PORT WHAT: until something answers on 127.0.0.1:PORT (10 s at most)
    "$python" - "$1" "$2" <<'PY'
import socket, sys, time

deadline = time.monotonic() + 10
while True:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit(f"{sys.argv[2]} on 127.0.0.1:{sys.argv[1]} did not start")
        time.sleep(0.1)
PY
}

serve_docs() {  # PORT: serve $docs_dir there in the background; its pid in $!
    "$python" -m http.server "$1" --bind 127.0.0.1 --directory "$docs_dir" >/dev/null 2>&1 &
}
