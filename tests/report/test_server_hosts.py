"""The live server refuses foreign Host headers (DNS rebinding) and answers HEAD."""

from __future__ import annotations

import http.client
import socket

from drivesim.report.server import LiveDashboardServer, host_header_ok


def _request(server, method: str, host: str | None):
    port = server._httpd.server_address[1]
    con = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        con.putrequest(method, "/version", skip_host=True)
        if host is not None:
            con.putheader("Host", host)
        con.endheaders()
        resp = con.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        con.close()


def test_host_header_rules():
    for ok in ("127.0.0.1:8000", "localhost:1", "[::1]:80", "127.0.0.1", "LOCALHOST"):
        assert host_header_ok(ok), ok
    for bad in (None, "", "evil.example", "evil.example:8000", "10.0.0.1:80", "[2001:db8::1]:80"):
        assert not host_header_ok(bad), bad


def test_foreign_host_refused_and_head_answered(tmp_path):
    with LiveDashboardServer(tmp_path) as server:
        port = server._httpd.server_address[1]
        status, _, _ = _request(server, "GET", f"rebind.example:{port}")
        assert status == 403
        status, _, body = _request(server, "GET", f"127.0.0.1:{port}")
        assert status == 200 and body
        status, headers, body = _request(server, "HEAD", f"localhost:{port}")
        assert status == 200 and body == b"" and int(headers["Content-Length"]) > 0
        # a client that hangs up mid-answer leaves the server serving
        raw = socket.create_connection(("127.0.0.1", port))
        raw.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        raw.close()
        assert _request(server, "GET", f"127.0.0.1:{port}")[0] == 200
