"""A generated website on loopback, for crawl tests and the benchmark.

``Site(pages=300)`` serves ``/p/0`` to ``/p/<pages-1>``. Every page links to the next one (so the
whole site is reachable from ``/p/0``) and to ``links_per_page - 1`` others chosen at random (a
fixed seed: the same site every time); one link in eight carries a ``#fragment``, which Scrapy's
fingerprints ignore, as crawlers meet them. The server counts the requests for every path, so a
test can check that each page was fetched exactly once.

``fail_once`` names pages whose first request answers HTTP 500 (a server that was briefly
overloaded); every later one answers as usual. ``served(status)`` counts the answers by path.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Site:
    def __init__(
        self,
        pages: int,
        links_per_page: int = 24,
        seed: int = 16,
        fail_once: Iterable[int] = (),
    ):
        self.pages = pages
        self.links_per_page = links_per_page
        self.seed = seed
        self.fail_once = set(fail_once)
        self.hits: Counter[str] = Counter()
        self.answers: Counter[tuple[str, int]] = Counter()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def links(self, page: int) -> list[str]:
        """The hrefs on ``/p/<page>``, in order."""
        rng = random.Random(self.seed * 1_000_003 + page)
        targets = [(page + 1) % self.pages]
        targets += [rng.randrange(self.pages) for _ in range(self.links_per_page - 1)]
        return [
            f"/p/{t}#c{rng.randrange(9)}" if rng.random() < 0.125 else f"/p/{t}" for t in targets
        ]

    def html(self, page: int) -> bytes:
        anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in self.links(page))
        return (
            f"<!doctype html><html><head><title>Page {page}</title></head>"
            f"<body><h1>Page {page}</h1><ul>{anchors}</ul></body></html>"
        ).encode()

    @property
    def paths(self) -> list[str]:
        return [f"/p/{n}" for n in range(self.pages)]

    @property
    def requests_per_crawl(self) -> int:
        """Dedup checks of a full crawl: the start request plus one per link on every page."""
        return 1 + self.pages * self.links_per_page

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def fetched(self) -> Counter[str]:
        with self._lock:
            return Counter(self.hits)

    def served(self, status: int = 200) -> Counter[str]:
        """How many times each path was answered with ``status``."""
        with self._lock:
            return Counter({path: n for (path, code), n in self.answers.items() if code == status})

    def start(self) -> Site:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                path = self.path.split("?", 1)[0]
                page = None
                if path.startswith("/p/") and path[3:].isdigit():
                    page = int(path[3:])
                with site._lock:
                    site.hits[path] += 1
                    if page is None or page >= site.pages:
                        status = 404
                    elif page in site.fail_once and site.hits[path] == 1:
                        status = 500
                    else:
                        status = 200
                    site.answers[(path, status)] += 1
                if status != 200:
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = site.html(page)
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Site:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
