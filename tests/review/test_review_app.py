"""The review app in headless Chromium: keyboard labelling, a killed server, a closed tab, resume.

The server runs in a subprocess so it can be SIGKILLed mid-session, as a crash would.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
import review_fixture as fixture

from pytest_hypeedit import labels

CHROMIUM = Path("/usr/bin/chromium")
playwright_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium); the browser tests need it", allow_module_level=True)

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]


class Server:
    """``python -m pytest_hypeedit.review`` in a subprocess; ``url`` is read from what it prints."""

    def __init__(self, paths: dict, rater: str = "ann", port: int = 0, extra: tuple[str, ...] = ()):
        args = [sys.executable, "-m", "pytest_hypeedit.review", *fixture.server_args(paths, rater, port), *extra]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.proc.stdout], daemon=True).start()
        self.output = []
        while True:
            line = lines.get(timeout=20)
            self.output.append(line)
            match = re.search(r"open (http://127\.0\.0\.1:(\d+)/)", line)
            if match:
                self.url, self.port = match.group(1), int(match.group(2))
                break

    def state(self) -> dict:
        with urllib.request.urlopen(self.url + "api/state", timeout=10) as response:
            return json.load(response)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def servers():
    started = []
    yield started
    for server in started:
        if server.proc.poll() is None:
            server.kill()


class Traffic:
    """Everything the page sent and received, to prove no model name is in it."""

    def __init__(self):
        self.requests, self.responses = [], []

    def watch(self, page):
        page.on("request", lambda r: self.requests.append(r.url + json.dumps(r.headers) + (r.post_data or "")))
        page.on("response", lambda r: self.responses.append(r))  # noqa: PLW0108 -- playwright sets an attribute on a handler, which list.append cannot take

    def text(self) -> str:
        parts = list(self.requests)
        for response in self.responses:
            parts.append(response.url + json.dumps(response.headers))
            try:
                parts.append(response.body().decode("latin-1"))
            except Exception:  # a response of a page that has closed since
                pass
        return "\n".join(parts)


def new_context(browser):
    # The app's Content-Security-Policy forbids eval, which Playwright's string predicates need.
    return browser.new_context(bypass_csp=True)


def current(page) -> str:
    return page.evaluate("document.body.dataset.item")


def press(page, key: str) -> None:
    before = current(page)
    page.keyboard.press(key)
    page.wait_for_function("b => document.body.dataset.item !== b", arg=before, timeout=5000)


def wait_saved(page) -> None:
    page.wait_for_function("document.body.dataset.pending === '0'", timeout=15000)


def open_page(context, url, traffic):
    page = context.new_page()
    traffic.watch(page)
    page.goto(url)
    page.wait_for_function("document.body.dataset.item !== ''", timeout=10000)
    return page


def saved_verdicts(path: Path) -> dict:
    """item key (task, alias, file) -> verdict, as written in the rater's file."""
    doc = json.loads(path.read_text())
    return {(task, alias, name): entry["verdict"] for task, by_alias in doc["judgements"].items()
            for alias, by_file in by_alias.items() for name, entry in by_file.items()}


def label(page, order, start, count, expected):
    """Label order[start:start+count] with the keyboard: every third FAIL, the rest PASS."""
    for i in range(start, start + count):
        assert current(page) == order[i], f"item {i} is not the next one in the shuffled order"
        verdict = "FAIL" if i % 3 == 0 else "PASS"
        expected[order[i]] = verdict
        press(page, verdict[0].lower())


def test_keyboard_labelling_survives_killed_server_and_closed_tab(browser, servers, tmp_path):
    paths = fixture.build(tmp_path)
    servers.append(Server(paths))
    state = servers[0].state()
    order, by_id = [i["id"] for i in state["items"]], {i["id"]: i for i in state["items"]}
    labels_file = paths["labels"] / "ann.json"
    context, traffic, expected = new_context(browser), Traffic(), {}
    page = open_page(context, servers[0].url, traffic)

    label(page, order, 0, 12, expected)
    wait_saved(page)
    assert len(saved_verdicts(labels_file)) == 12  # each verdict on disk as soon as it is acknowledged

    page.keyboard.press("u")  # undo the 12th: back on it, its verdict gone from the file
    wait_saved(page)
    assert current(page) == order[11] and len(saved_verdicts(labels_file)) == 11
    expected[order[11]] = "FAIL"
    press(page, "f")
    wait_saved(page)

    servers[0].kill()  # the server dies; the rater goes on labelling 4 more
    label(page, order, 12, 4, expected)
    page.wait_for_function("document.body.dataset.pending === '4'")
    page.wait_for_selector("#save-status.error", timeout=10000)
    assert len(saved_verdicts(labels_file)) == 12
    page.close()  # ...then the tab dies too, with 4 verdicts only in the browser's storage

    servers.append(Server(paths, port=servers[0].port))  # restarted on the same port (same origin)
    page = open_page(context, servers[1].url, traffic)
    wait_saved(page)
    assert len(saved_verdicts(labels_file)) == 16
    label(page, order, 16, 4, expected)
    wait_saved(page)

    servers[1].kill()
    servers.append(Server(paths, port=servers[0].port))
    page = open_page(context, servers[2].url, traffic)
    assert current(page) == order[20], "a restart resumes at the first unlabelled item"
    assert page.inner_text("#progress") == f"20 / {paths['candidates']} labelled"

    saved = saved_verdicts(labels_file)
    expected_keys = {(by_id[i]["task"], by_id[i]["alias"], f"{by_id[i]['repeat']:03d}.png"): v for i, v in expected.items()}
    assert saved == expected_keys
    rater = labels.read_labels(labels_file, known_models=fixture.MODELS)  # the upstream schema, readable back
    assert len(rater.verdicts) == 20 and set(rater.models) == set(fixture.MODELS)
    doc = json.loads(labels_file.read_text())
    assert all(isinstance(e["ms"], int) and e["ms"] >= 0
               for by_alias in doc["judgements"].values() for by_file in by_alias.values() for e in by_file.values())

    seen = traffic.text() + page.content()
    assert "/img/" in seen and "api/verdicts" in seen  # the traffic really was recorded
    for model in fixture.MODELS:
        assert model not in seen, f"model name {model!r} reached the browser"
    context.close()


def test_filters_and_flip(browser, servers, tmp_path):
    paths = fixture.build(tmp_path)
    servers.append(Server(paths, rater="bob"))
    context = new_context(browser)
    page = open_page(context, servers[0].url, Traffic())

    page.select_option("#filter-alias", "M02")
    page.select_option("#filter-type", "colour")
    for _ in range(3):  # 3 repeats of the one colour task by M02
        assert page.inner_text("#meta").startswith("M02 · task task-1 ")
        page.keyboard.press("ArrowRight")

    assert page.inner_text("#stage-label") == "CANDIDATE"
    page.keyboard.press("o")
    assert page.inner_text("#stage-label") == "REFERENCE 1"
    assert page.is_visible("#stage-reference") and not page.is_visible("#stage-candidate")
    box_ref = page.locator("#stage-reference").bounding_box()
    page.keyboard.press("o")
    assert page.locator("#stage-candidate").bounding_box() == box_ref  # same place, same size

    first = current(page)
    press(page, "p")
    page.check("#filter-unlabelled")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert current(page) != first  # the labelled one has left the "unlabelled only" view
    wait_saved(page)
    assert page.inner_text("#progress") == f"1 / {paths['candidates']} labelled"
    context.close()


def test_a_note_goes_with_the_verdict_and_can_be_changed_later(browser, servers, tmp_path):
    paths = fixture.build(tmp_path)
    servers.append(Server(paths, rater="cy"))
    context = new_context(browser)
    page = open_page(context, servers[0].url, Traffic())
    first = current(page)
    page.keyboard.press("c")
    page.keyboard.type("the logo is missing; pf")  # P and F typed into the note are text, not verdicts
    page.keyboard.press("Escape")
    assert current(page) == first and page.inner_text("#verdict") == ""
    press(page, "f")
    wait_saved(page)
    labels_file = paths["labels"] / "cy.json"
    entries = [e for by_alias in json.loads(labels_file.read_text())["judgements"].values()
               for by_file in by_alias.values() for e in by_file.values()]
    assert [(e["verdict"], e.get("note")) for e in entries] == [("FAIL", "the logo is missing; pf")]
    assert page.input_value("#note") == ""  # the next item starts without a note

    page.keyboard.press("ArrowLeft")
    assert current(page) == first and page.input_value("#note") == "the logo is missing; pf"
    page.fill("#note", "the logo is cut off")
    page.keyboard.press("Escape")  # leaving the note sends the same verdict with the new note
    wait_saved(page)
    rater = labels.read_labels(labels_file, known_models=fixture.MODELS)
    assert list(rater.notes.values()) == ["the logo is cut off"] and list(rater.verdicts.values()) == [False]
    context.close()


def click(page, selector: str) -> None:
    before = current(page)
    page.click(selector)
    page.wait_for_function("b => document.body.dataset.item !== b", arg=before, timeout=5000)


def test_pass_and_fail_buttons_label_like_the_keys(browser, servers, tmp_path):
    paths = fixture.build(tmp_path)
    servers.append(Server(paths, rater="dee"))
    state = servers[0].state()
    order, by_id = [i["id"] for i in state["items"]], {i["id"]: i for i in state["items"]}
    context = new_context(browser)
    page = open_page(context, servers[0].url, Traffic())
    assert page.is_visible("#button-pass") and page.is_visible("#button-fail")
    click(page, "#button-pass")
    click(page, "#button-fail")
    page.keyboard.press("Enter")  # the button clicked last does not keep the focus: Enter presses nothing
    page.keyboard.press(" ")
    page.keyboard.press(" ")  # Space flips there and back, and does not press a button either
    page.wait_for_timeout(300)
    assert current(page) == order[2] and page.inner_text("#stage-label") == "CANDIDATE"
    press(page, "p")  # the keys still work beside the buttons
    assert current(page) == order[3]
    page.keyboard.press(" ")
    assert page.inner_text("#stage-label") == "REFERENCE 1" and current(page) == order[3]
    wait_saved(page)
    saved = saved_verdicts(paths["labels"] / "dee.json")
    def key(i):
        return by_id[order[i]]["task"], by_id[order[i]]["alias"], f"{by_id[order[i]]['repeat']:03d}.png"
    assert saved == {key(0): "PASS", key(1): "FAIL", key(2): "PASS"}
    context.close()


def test_missing_references_stop_the_start_unless_allowed_and_then_each_task_says_so(browser, servers, tmp_path):
    import shutil

    paths = fixture.build(tmp_path)
    shutil.rmtree(paths["images"] / "task-1")
    not_started = subprocess.run([sys.executable, "-m", "pytest_hypeedit.review", *fixture.server_args(paths)],
                                 capture_output=True, text=True, timeout=60)
    assert not_started.returncode == 2
    assert "reference images of 1 task(s) cannot be found" in not_started.stderr
    assert "task task-1: 001.png" in not_started.stderr and "--allow-missing-references" in not_started.stderr
    assert "open http" not in not_started.stdout  # never served

    servers.append(Server(paths, rater="eve", extra=("--allow-missing-references",)))
    state = servers[0].state()
    assert state["tasks"]["task-1"]["refs_missing"] == 1 and state["tasks"]["task-0"]["refs_missing"] == 0
    context = new_context(browser)
    page = open_page(context, servers[0].url, Traffic())
    page.select_option("#filter-type", "colour")  # task-1 only
    assert page.inner_text("#meta").split(" · ")[1] == "task task-1"
    assert page.is_visible("#refs-missing") and "missing" in page.inner_text("#refs-missing")
    page.select_option("#filter-type", "object")  # task-3: its references are there
    assert not page.is_visible("#refs-missing")
    context.close()
