"""Serve one page on 127.0.0.1 (never another interface) until the caller stops it."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class PageServer(ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 that answers ``/`` with one page (``port=0``: a free port).

    >>> import threading, urllib.request
    >>> with PageServer("<p>episode 0</p>") as server:
    ...     threading.Thread(target=server.serve_forever, daemon=True).start()
    ...     page = urllib.request.urlopen(server.url).read()
    ...     server.shutdown()
    >>> page
    b'<p>episode 0</p>'
    """

    daemon_threads = True

    def __init__(self, page: str, port: int = 0) -> None:
        self.page = page.encode()
        super().__init__(("127.0.0.1", port), _PageHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/"


class _PageHandler(BaseHTTPRequestHandler):
    server: PageServer

    def do_GET(self) -> None:  # the name http.server dispatches to
        if self.path.split("?", 1)[0] not in ("/", "/index.html"):
            self.send_error(404, "only / is served")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.server.page)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(self.server.page)

    def log_message(self, format: str, *args) -> None:  # http.server's signature
        pass  # one line per request would bury the address the user needs
