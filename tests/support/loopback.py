"""The HTTP server under every loopback fake."""

from __future__ import annotations

from http.server import ThreadingHTTPServer


class LoopbackHTTPServer(ThreadingHTTPServer):
    """A threaded server with a listen queue as deep as a real front end's (nginx listens with 511).

    socketserver's default queue is 5: when 64 calls connect at once to a fake starved of CPU, the kernel drops
    the connections it has no room for, and a client uploading a large body sees its connection reset
    ("Server disconnected without sending a response"): a fault of the fake, which a paid request, sent once,
    reports as possibly paid.  The counter TcpExtListenOverflows in /proc/net/netstat shows when it happens.
    """

    request_queue_size = 1024
    daemon_threads = True
