"""A loopback-only HTTP server showing a campaign's dashboard while the campaign runs.

``GET /`` answers the dashboard, regenerated only when the directory changed (new result shards,
ledger writes, new bench/scale/profile files); ``GET /version`` answers a short fingerprint of
the directory, which the page polls to reload itself when results land.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from drivesim.report.dashboard import DashboardOptions, render_dashboard
from drivesim.report.data import load_campaign

WATCHED = ("ledger.sqlite", "ledger.sqlite-wal", "results", "bench", "scale", "profile")


def fingerprint(campaign_dir: Path) -> str:
    """A short hash of the names, sizes and modification times of the files the dashboard reads."""
    digest = hashlib.sha1()
    for name in WATCHED:
        path = campaign_dir / name
        entries = [path] if path.is_file() else sorted(path.iterdir()) if path.is_dir() else []
        for entry in entries:
            if entry.name.startswith(".") or entry.name.endswith(".tmp"):
                continue
            try:
                st = entry.stat()
            except OSError:
                continue
            digest.update(f"{entry.name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and "localhost"."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_header_ok(value: str | None) -> bool:
    """True when an HTTP Host header names a loopback host (with or without a port)."""
    if not value:
        return False
    value = value.strip()
    if value.startswith("["):  # [::1]:port
        host = value[1 : value.find("]")] if "]" in value else ""
    else:
        host = value.rsplit(":", 1)[0] if value.count(":") == 1 else value
    return is_loopback(host.lower())


class LiveDashboardServer:
    """Serve ``campaign_dir``'s dashboard on loopback; ``port=0`` picks a free port.

    Use ``start()`` (serves from a daemon thread), ``url`` and ``stop()``, or a ``with`` block.
    """

    def __init__(self, campaign_dir: str | Path, host: str = "127.0.0.1", port: int = 0, poll_s: float = 2.0):
        if not is_loopback(host):
            raise ValueError(f"LiveDashboardServer binds to loopback only; refusing host {host!r}")
        self.campaign_dir = Path(campaign_dir)
        self.poll_s = poll_s
        self._lock = threading.Lock()
        self._cached: tuple[str, bytes] | None = None
        server_class = _IPv6Server if ":" in host else ThreadingHTTPServer
        self._httpd = server_class((host, port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = str(self._httpd.server_address[0]), self._httpd.server_address[1]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}/"

    def start(self) -> LiveDashboardServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="drivesim-live-html", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (safe to call without start())."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> LiveDashboardServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def version(self) -> str:
        return fingerprint(self.campaign_dir)

    def page(self) -> bytes:
        """The dashboard HTML, re-rendered only when the directory's fingerprint changed."""
        with self._lock:
            version = self.version()
            if self._cached is None or self._cached[0] != version:
                options = DashboardOptions(live_poll_s=self.poll_s, version=version)
                html = render_dashboard(load_campaign(self.campaign_dir), options)
                self._cached = (version, html.encode("utf-8"))
            return self._cached[1]


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def _handler_for(server: LiveDashboardServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self._answer(with_body=True)

        def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
            self._answer(with_body=False)

        def _answer(self, with_body: bool) -> None:
            try:
                if not host_header_ok(self.headers.get("Host")):
                    # DNS rebinding: a page of another site resolving its name to 127.0.0.1
                    self.send_error(HTTPStatus.FORBIDDEN, "Host header must name a loopback address")
                    return
                path = self.path.split("?", 1)[0]
                if path in ("/", "/index.html", "/dashboard.html"):
                    self._send(server.page(), "text/html; charset=utf-8", with_body)
                elif path == "/version":
                    self._send(server.version().encode(), "text/plain; charset=utf-8", with_body)
                else:
                    self.send_error(HTTPStatus.NOT_FOUND)
            except (BrokenPipeError, ConnectionResetError):  # the client went away: nothing to say
                self.close_connection = True

        def _send(self, body: bytes, kind: str, with_body: bool = True) -> None:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def log_message(self, fmt: str, *args) -> None:
            if os.environ.get("DRIVESIM_HTTP_LOG"):
                super().log_message(fmt, *args)

    return Handler
