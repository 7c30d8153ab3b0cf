"""The review app's HTTP API without a browser: blinding, path traversal, binding, saving."""

from __future__ import annotations

import http.client
import json
import threading

import pytest
import review_fixture as fixture

from pytest_hypeedit import labels
from pytest_hypeedit.review import __main__ as cli
from pytest_hypeedit.review.catalog import assign_aliases
from pytest_hypeedit.review.server import make_server


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """An app on an in-process server; yields (port, app, paths)."""
    paths = fixture.build(tmp_path_factory.mktemp("review"))
    app, args = fixture.app_of(paths)
    server = make_server(app, args.host, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], app, paths
    server.shutdown()
    server.server_close()


def request(port, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path, body=body, headers=headers or {})  # the path goes out exactly as given
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), data


TRAVERSALS = [
    "/../secret.txt", "/static/../../secret.txt", "/static/..%2f..%2fsecret.txt", "/%2e%2e/%2e%2e/secret.txt",
    "/static/%2e%2e/%2e%2e/secret.txt", "/img/..%2F..%2Fsecret.txt", "/img/%2e%2e", "//etc/passwd",
    "/etc/passwd", "/static//etc/passwd", "/static/app.js/../../../secret.txt", "/img/../tasks.json",
    "/static/%2fetc%2fpasswd", "/img/0000000000000000", "/tasks.json", "/outputs/", "/static/",
    "/static/index.html/..", "/images/task-0/001.png", "/img/" + "../" * 8 + "etc/passwd",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_path_traversal_serves_nothing(served, path):
    port, app, paths = served
    status, _, body = request(port, "GET", path)
    assert status in (400, 404)
    assert b"TOPSECRET" not in body and b"root:" not in body and b"task_id" not in body
    absolute = str(paths["outputs"] / "fixture" / fixture.MODELS[0] / "task-0" / "001.png")
    status, _, _ = request(port, "GET", absolute)
    assert status == 404


def test_state_and_images_never_name_a_model(served):
    port, app, paths = served
    status, headers, body = request(port, "GET", "/api/state")
    assert status == 200 and headers["Cache-Control"] == "no-store"
    assert "script-src 'self'" in headers["Content-Security-Policy"] and headers["X-Content-Type-Options"] == "nosniff"
    state = json.loads(body)
    assert len(state["items"]) == paths["candidates"] and state["aliases"] == ["M01", "M02"]
    responses = [body, request(port, "GET", "/")[2], request(port, "GET", "/static/app.js")[2]]
    for item in state["items"][:6]:
        status, headers, image = request(port, "GET", f"/img/{item['image']}")
        assert status == 200 and headers["Content-Type"] == "image/png"
        responses.append(image + json.dumps(headers).encode())
    for model in fixture.MODELS:
        assert not any(model.encode() in data for data in responses), model
    # the source files do carry the name (in PNG metadata): re-encoding is what removed it
    assert fixture.MODELS[0].encode() in (paths["outputs"] / "fixture" / fixture.MODELS[0] / "task-0" / "001.png").read_bytes()


def test_verdicts_are_saved_at_once_in_the_upstream_schema(served):
    port, app, paths = served
    items = json.loads(request(port, "GET", "/api/state")[2])["items"]
    ops = [{"op": "a", "item": items[0]["id"], "verdict": "PASS", "ms": 1500},
           {"op": "b", "item": items[1]["id"], "verdict": "FAIL", "ms": 900},
           {"op": "c", "item": "nope", "verdict": "PASS", "ms": 1},
           {"op": "d", "item": items[2]["id"], "verdict": "MAYBE", "ms": 1}]
    status, _, body = request(port, "POST", "/api/verdicts", json.dumps({"ops": ops}),
                              {"Content-Type": "application/json"})
    result = json.loads(body)
    assert status == 200 and result["acked"] == ["a", "b"] and [r["op"] for r in result["rejected"]] == ["c", "d"]
    rater = labels.read_labels(app.store.path, known_models=fixture.MODELS)
    assert sorted(rater.verdicts.values()) == [False, True]
    assert json.loads(request(port, "GET", "/api/state")[2])["resume"] == items[2]["id"]


def test_posts_must_be_same_origin_json(served):
    port, app, _ = served
    body = json.dumps({"ops": []})
    assert request(port, "POST", "/api/verdicts", body, {"Content-Type": "text/plain"})[0] == 415
    assert request(port, "POST", "/api/verdicts", body, {"Content-Type": "application/json",
                                                         "Origin": "http://evil.example"})[0] == 403
    assert request(port, "GET", "/api/state", headers={"Host": "evil.example"})[0] == 421


def test_default_bind_is_loopback_only():
    args = cli.parse_args(["--outputs", "o", "--rater", "ann"])
    assert args.host == "127.0.0.1"
    with pytest.raises(SystemExit):
        cli.parse_args(["--outputs", "o", "--rater", "../ann"])


def test_aliases_are_stable_and_kept_from_an_existing_file():
    first = assign_aliases(["b-model", "a-model", "c-model"], seed=3)
    assert first == assign_aliases(["c-model", "a-model", "b-model"], seed=3)
    assert sorted(first) == ["M01", "M02", "M03"]
    kept = assign_aliases(["a-model", "d-model"], seed=3, existing={"M02": "a-model"})
    assert kept["M02"] == "a-model" and kept["M01"] == "d-model"


def test_one_server_per_rater_file_and_a_clear_error_without_candidates(tmp_path, capsys):
    from pytest_hypeedit.errors import InputError

    path = tmp_path / "ann.json"
    held = cli.lock_labels_file(path)
    with pytest.raises(InputError, match="another hypeedit-review is writing"):
        cli.lock_labels_file(path)
    held.release()
    paths = fixture.build(tmp_path / "b")
    args = fixture.server_args(paths)
    args[args.index("--outputs") + 1] = str(tmp_path / "empty")
    assert cli.main(args) == 2
    assert "no candidates under" in capsys.readouterr().err


# --------------------------------------------------------------------------- bounds and binding


def test_the_host_and_origin_checks_hold_on_any_address_not_only_the_loopback_names(tmp_path):
    from pytest_hypeedit.review import server as review_server

    app, _ = fixture.app_of(fixture.build(tmp_path))
    server = make_server(app, "127.0.0.2", 0)  # not one of the names LOOPBACK lists
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        def get(host):
            conn = http.client.HTTPConnection("127.0.0.2", port, timeout=10)
            conn.request("GET", "/api/state", headers={"Host": host})
            status = conn.getresponse().status
            conn.close()
            return status
        assert get("evil.example") == 421 and get(f"evil.example:{port}") == 421
        assert get(f"127.0.0.2:{port}") == 200 and get(f"localhost:{port}") == 200
        conn = http.client.HTTPConnection("127.0.0.2", port, timeout=10)
        conn.request("POST", "/api/verdicts", body="{}", headers={"Host": f"127.0.0.2:{port}", "Content-Type":
                                                                 "application/json", "Origin": "http://evil.example"})
        assert conn.getresponse().status == 403
        conn.close()
    finally:
        server.shutdown()
        server.server_close()
    assert "127.0.0.2" in review_server.host_names("127.0.0.2")
    import socket
    assert socket.gethostname().lower() in review_server.host_names("0.0.0.0")  # a wildcard: this machine's names
    assert "proxy.example" in review_server.host_names("0.0.0.0", ("Proxy.Example",))


def test_a_server_beyond_loopback_is_warned_about():
    from pytest_hypeedit.review.server import exposure_warning

    assert exposure_warning("127.0.0.1", 8765, "ann") is None and exposure_warning("::1", 8765, "ann") is None
    warning = exposure_warning("0.0.0.0", 8765, "ann")
    assert "0.0.0.0:8765" in warning and "label them as ann" in warning and "--allow-host" in warning


def test_a_burst_of_connections_waits_in_the_listen_queue_not_in_syn_retries(served):
    """50 connections at once, none accepted yet (the server's loop is not running): each completes its handshake
    into the listen queue at once.  With the stdlib's queue of 5, the seventh waits for SYN retries (1 s, 3 s...)."""
    import socket

    _, app, _ = served
    server = make_server(app, "127.0.0.1", 0)  # never serve_forever: nothing is accepted
    port = server.server_address[1]
    sockets = []
    try:
        for _ in range(50):
            sock = socket.create_connection(("127.0.0.1", port), timeout=0.8)
            sockets.append(sock)
    finally:
        for sock in sockets:
            sock.close()
        server.server_close()
    assert len(sockets) == 50


def big_png_table(tmp_path, count, **kwargs):
    """An image table of ``count`` noisy 700x700 images (each a PNG of about 1.4 MB once re-encoded)."""
    import os as _os

    from PIL import Image

    from pytest_hypeedit.review.catalog import Catalog
    from pytest_hypeedit.review.server import ImageTable

    paths = []
    for i in range(count):
        path = tmp_path / f"ref{i}.png"
        Image.frombytes("RGB", (700, 700), _os.urandom(700 * 700 * 3)).save(path)
        paths.append(path)
    catalog = Catalog("s", {}, (), {})
    table = ImageTable(catalog, {"task": paths}, **kwargs)
    return table, table.reference_images["task"]


def test_the_image_cache_is_bounded_by_bytes(tmp_path):
    table, ids = big_png_table(tmp_path, 6, cache_bytes=8 << 20)
    sizes = [len(table.png(image_id)) for image_id in ids]
    assert sum(sizes) > 8 << 20 and max(sizes) < 2 << 20  # more than the bound in all, each under a quarter of it
    assert 0 < table.cached_bytes <= 8 << 20
    assert table.png(ids[0]) is not None and table.cached_bytes <= 8 << 20  # the oldest, decoded again


def test_an_image_larger_than_a_quarter_of_the_cache_is_served_not_kept(tmp_path):
    table, ids = big_png_table(tmp_path, 1, cache_bytes=4 << 20)
    assert len(table.png(ids[0])) > 1 << 20 and table.cached_bytes == 0


def test_at_most_two_images_are_decoded_at_once(tmp_path, monkeypatch):
    import time

    from pytest_hypeedit.review import server as review_server

    table, ids = big_png_table(tmp_path, 6)
    lock, running, peak = threading.Lock(), [0], [0]

    def slow_reencode(path):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.3)
        with lock:
            running[0] -= 1
        return b"png"

    monkeypatch.setattr(review_server, "_reencode_png", slow_reencode)
    threads = [threading.Thread(target=table.png, args=(image_id,)) for image_id in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    assert peak[0] <= review_server.DECODES == 2  # six requests at once, two decodes at a time
