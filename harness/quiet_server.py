"""A threaded HTTP server on a loopback address that logs nothing.

:class:`QuietServer` binds when it is built (port 0: a free one, read back from
``port``), serves from :meth:`~QuietServer.start` to :meth:`~QuietServer.stop` in a
daemon thread, one daemon thread per connection, and is a context manager doing
both.  A crawl sends thousands of requests, so handlers derived from
:class:`QuietHandler` log none of them; a client that hangs up in the middle of an
answer (a crawl killed, a browser aborting a resource it blocked) is not an
error, and any other exception in a handler is reported as ``socketserver``
reports it.  :func:`serve_directory` serves the files of a directory.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that writes no access log."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class QuietFileHandler(SimpleHTTPRequestHandler):
    """The files of a directory (``directory=``), with no access log."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class QuietServer(ThreadingHTTPServer):
    """*handler* on ``host:port``, served in a thread between start() and stop()."""

    daemon_threads = True

    def __init__(
        self, handler: type[BaseHTTPRequestHandler] | Any, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__((host, port), handler)
        self.host: str = str(self.server_address[0])
        self.port: int = int(self.server_address[1])
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        """``http://HOST:PORT``, no trailing slash."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> QuietServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.thread.is_alive():  # shutdown() waits for a serve_forever that never ran
            self.shutdown()
        self.server_close()

    def __enter__(self) -> QuietServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve_directory(directory: Path, host: str = "127.0.0.1") -> Iterator[QuietServer]:
    """The files under *directory*, served on *host* while the block runs."""
    with QuietServer(functools.partial(QuietFileHandler, directory=str(directory)), host) as server:
        yield server
