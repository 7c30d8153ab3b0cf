"""The review app's HTTP API without a browser: blinding, path traversal, binding, saving."""

from __future__ import annotations

import http.client
import json
import threading

import pytest

from pytest_hypeedit import labels
from pytest_hypeedit.review import __main__ as cli
from pytest_hypeedit.review.catalog import assign_aliases
from pytest_hypeedit.review.server import make_server

import review_fixture as fixture


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """An app on an in-process server; yields (port, app, paths)."""
    paths = fixture.build(tmp_path_factory.mktemp("review"))
    args = cli.parse_args(fixture.server_args(paths))
    split, images_base = cli.load_tasks(args)
    app, _ = cli.build_app(args, split, images_base, cli.labels_path(args, split.name))
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
