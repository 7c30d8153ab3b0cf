"""The review app's connections are bounded: a silent one is closed after IDLE_TIMEOUT_S, and at most
MAX_CONNECTIONS are served at once, each on a thread (2,000 idle connections once held 1,995 threads)."""

from __future__ import annotations

import http.client
import socket
import threading

import pytest
import review_fixture as fixture

from pytest_hypeedit.review import server as server_module
from pytest_hypeedit.review.server import make_server

#: How long a test waits for what the server must do (it is never the figure asserted).
PATIENCE_S = 15


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    return fixture.app_of(fixture.build(tmp_path_factory.mktemp("review")))[0]


@pytest.fixture
def serve(app):
    """serve(idle_s, connections) -> port of a server with those bounds, stopped after the test."""
    started = []

    def start(idle_s: float, connections: int) -> int:
        server = make_server(app, "127.0.0.1", 0, idle_timeout_s=idle_s, max_connections=connections,
                             accept_wait_s=0.05)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
        return server.server_address[1]

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


def test_the_defaults_bound_both(app):
    server = make_server(app, "127.0.0.1", 0)
    try:
        assert 0 < server.RequestHandlerClass.timeout <= 60  # a browser's idle connection waits no longer
        assert server.connections._initial_value == server_module.MAX_CONNECTIONS <= 64
    finally:
        server.server_close()


def state_status(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=PATIENCE_S)
    conn.request("GET", "/api/state")
    status = conn.getresponse().status
    conn.close()
    return status


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` without a word (waits up to PATIENCE_S)."""
    sock.settimeout(PATIENCE_S)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_silent_connection_is_closed_and_its_thread_freed(serve):
    # Planted: Handler without its timeout: the connection stays open (and its thread held) until the client goes.
    port = serve(0.3, 1)
    idle = socket.create_connection(("127.0.0.1", port))
    try:
        assert closed_by_server(idle)
    finally:
        idle.close()
    assert state_status(port) == 200  # the only slot was given back


def test_connections_past_the_bound_are_closed_and_threads_stay_bounded(serve):
    # Planted: ReviewServer without process_request's bound: every connection gets a thread and waits.
    before = threading.active_count()
    port = serve(60.0, 4)
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
    extra = [socket.create_connection(("127.0.0.1", port)) for _ in range(12)]
    try:
        assert all(closed_by_server(sock) for sock in extra)
        assert threading.active_count() <= before + 1 + 4  # serve_forever's thread and one per held connection
    finally:
        for sock in held + extra:
            sock.close()
    assert state_status(port) == 200  # the held connections' slots came free when they closed
