"""The failure browser in Chromium: a real run's report (report_fixture.py), clicked through.

One report and one browser for the module; each test opens its own page at 1280 px and saves a
screenshot it asserts on.  What the tests prove: the summary comes first (calibrated figures marked,
failed gates highlighted, the tasks that got worse linked into the browser); a task card holds its
references and every repeat of every model in order; a click opens the full view with the reasoning,
the votes and notes and the facts; the keys move between tasks and candidates; the filters change
the rows; the address reopens the same view; text contrast is at least 4.5:1; nothing overflows at
1280 px; a copied folder keeps every link; pytest-html's table never opens on "No results found".
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest
import report_fixture as fixture
from PIL import Image

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
WIDTH = 1280

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="no Chromium at /usr/bin/chromium (Debian package 'chromium'; .ci/run installs it)")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    return fixture.make_report(tmp_path_factory.mktemp("browser-run"))


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    """Where the screenshots go: $HYPEEDIT_SCREENSHOTS to keep them for a look, else a temporary folder."""
    kept = os.environ.get("HYPEEDIT_SCREENSHOTS")
    if kept:
        Path(kept).mkdir(parents=True, exist_ok=True)
        return Path(kept)
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package (test extra) drives Chromium")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser, report):
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("dialog", lambda dialog: (problems.append("dialog: " + dialog.message), dialog.dismiss()))
    goto(page, report.as_uri())
    yield page
    page.close()
    assert problems == []  # no script error, and no alert() from an instruction or a reasoning ran


def goto(page, url: str) -> None:
    page.goto(url, wait_until="load")
    page.wait_for_selector("#hx-browser[data-ready='true']")


def screenshot(page, shots: Path, name: str, full_page: bool = False) -> Path:
    """Save a screenshot and check it is the 1280 px page, with nothing beyond its width."""
    assert page.evaluate("document.scrollingElement.scrollWidth") <= WIDTH, f"{name}: the page scrolls sideways"
    path = shots / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    with Image.open(path) as shot:
        assert shot.width == WIDTH and shot.height >= 900
    return path


def card(page, task: str):
    return page.locator(f".hx-task[data-task='mini/{task}']")


def badges(row) -> list[str]:
    return [text.strip() for text in row.locator(".hx-badge").all_inner_texts()]


def wait_images_loaded(page, scope) -> int:
    images = scope.locator("img")
    count = images.count()
    assert count > 0
    page.wait_for_function("els => els.every(i => i.complete && i.naturalWidth > 0)", arg=images.element_handles())
    return count


def viewer_open(page) -> bool:
    return page.evaluate("document.getElementById('hx-viewer').open")


def hash_params(page) -> dict[str, str]:
    # location.hash, not page.url: Playwright learns of a replaceState from an event that can arrive after the key
    # press that caused it has returned
    fragment = page.evaluate("location.hash").removeprefix("#")
    return {k: unquote(v.replace("+", " ")) for k, v in (p.split("=", 1) for p in fragment.split("&") if "=" in p)}


def pressed(page, group: str) -> list[str]:
    return page.locator(f"[data-filter='{group}'] .hx-chip[aria-pressed='true']").all_inner_texts()


def chip(page, group: str, text: str):
    return page.locator(f"[data-filter='{group}'] .hx-chip", has_text=re.compile(f"^{re.escape(text)}$"))


def shown_rows(page) -> list[tuple[str, str]]:
    return page.eval_on_selector_all(".hx-row", "rows => rows.map(r => [r.closest('.hx-task').dataset.task, r.dataset.model])")


# --------------------------------------------------------------------------- the summary


def test_the_summary_comes_first_with_calibrated_figures_failed_gates_and_the_tasks_that_got_worse(page, shots):
    summary, browser_top, table = (page.locator(s).bounding_box()["y"] for s in (".hx-summary", "#hx-browser", "#results-table"))
    assert summary < browser_top < table
    assert not page.locator("#environment").is_visible()  # pytest-html's environment is folded under the summary
    first = page.locator(".hx-metrics tbody tr").first.locator("td").first
    assert first.locator(".hx-cal .hx-mark").inner_text() == "cal"  # the calibrated figure comes first, marked
    assert first.locator(".hx-raw").inner_text().startswith("judge: ")
    assert page.locator(".hx-gate-fail").count() == 3 and page.locator(".hx-gate-pass").count() == 1
    failed_bg, passed_bg = (page.locator(s).first.evaluate("e => getComputedStyle(e).backgroundColor")
                            for s in (".hx-gate-fail", ".hx-gate-pass"))
    assert failed_bg != passed_bg and page.locator(".hx-gates-head.hx-bad").inner_text() == "3 of 4 gates failed"
    judge = page.locator("h4", has_text="The judge").locator("xpath=following-sibling::div[1]").inner_text()
    assert "91.0%" in judge and "83.0%" in judge and "2 of 16" in judge
    assert "Judged PASS but unchanged" in page.locator("h4", has_text="Pixel signals").locator("xpath=following-sibling::div[1]").inner_text()
    assert "Possibly paid" in page.locator(".hx-warning", has_text="Possibly paid").inner_text()
    screenshot(page, shots, "summary")
    worse = page.locator(".hx-worse-tasks a[href$='model=flaky']", has_text="task-00")  # 3/4 before, 0/3 now
    assert worse.locator("xpath=..").inner_text() == "task-00: 3/4 → 0/3 PASS (-75.0 pts)"
    worse.click()
    assert hash_params(page)["task"] == "mini/task-00" and pressed(page, "model") == ["flaky"]
    assert page.locator(".hx-task.hx-current").get_attribute("data-task") == "mini/task-00"
    assert shown_rows(page)[0] == ["mini/task-00", "flaky"]


# --------------------------------------------------------------------------- task cards


def test_a_task_card_holds_its_references_and_every_repeat_of_every_model_in_order(page, shots):
    task = card(page, "task-03")  # the fourth card: its images load lazily
    task.scroll_into_view_if_needed()
    assert task.locator(".hx-refs img").count() == 2  # both references
    rows = task.locator(".hx-row")
    assert [rows.nth(i).get_attribute("data-model") for i in range(rows.count())] == ["identity", "flaky"]
    assert badges(rows.nth(0)) == ["FAIL 1", "PASS 2", "FAIL 3", "PASS 4"]
    assert badges(rows.nth(1)) == ["PASS 1", "PASS 2", "FAIL 3", "PASS 4"]
    assert rows.nth(0).locator(".hx-row-count").inner_text() == "2/4 PASS"
    assert "5/8 PASS" in task.locator(".hx-task-head").inner_text() and "recolor" in task.locator(".hx-task-head").inner_text()
    # the models side by side: repeat columns line up, one model's row under the other's
    first, second = (rows.nth(i).locator(".hx-cand").first.bounding_box() for i in (0, 1))
    assert abs(first["x"] - second["x"]) < 1 and second["y"] > first["y"] + first["height"]
    assert wait_images_loaded(page, task) == 2 + 8
    assert all(tag == "lazy" for tag in task.locator(".hx-strip img").evaluate_all("els => els.map(i => i.loading)"))
    screenshot(page, shots, "task-card")


def test_a_three_sentence_instruction_wraps_and_never_pushes_the_images_aside(page, shots):
    long_card, short_card = card(page, "task-01"), card(page, "task-00")
    long_card.scroll_into_view_if_needed()
    text = long_card.locator(".hx-instruction")
    assert text.inner_text() == fixture.LONG_INSTRUCTION
    box = text.bounding_box()
    line = float(text.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)"))
    assert box["height"] > 2.5 * line and box["x"] + box["width"] <= WIDTH  # wrapped onto three lines or more
    long_thumb = long_card.locator(".hx-cand").first.bounding_box()
    short_thumb = short_card.locator(".hx-cand").first.bounding_box()
    assert abs(long_thumb["x"] - short_thumb["x"]) < 1 and long_thumb["y"] > box["y"] + box["height"]
    ref = long_card.locator(".hx-refs img").first.bounding_box()
    assert ref["x"] < long_thumb["x"]  # the reference on the left, the candidates beside it
    screenshot(page, shots, "long-instruction")


# --------------------------------------------------------------------------- the viewer


def test_clicking_a_candidate_opens_its_full_view_with_reasoning_votes_notes_and_facts(page, shots):
    card(page, "task-01").locator(".hx-row[data-model='identity'] .hx-cand").first.click()
    assert viewer_open(page)
    viewer = page.locator("#hx-viewer")
    assert viewer.locator("h3").inner_text() == "identity · mini / task-01 · repeat 1"
    candidate = viewer.locator(".hx-full-cand img")
    assert ".full." in candidate.get_attribute("src")
    wait_images_loaded(page, viewer)
    assert viewer.locator(".hx-full-cand a").get_attribute("href").endswith(".full.webp")
    text = viewer.inner_text()
    assert '<img src=x onerror="alert(2)"> the car is still there' in text  # shown as text, not markup
    assert viewer.locator("img[src='x']").count() == 0
    assert fixture.JUDGE_NOTE in viewer.locator(".hx-votes").inner_text()  # the judge's vote note
    human = viewer.locator(".hx-human-votes").inner_text()
    assert "alice: FAIL" in human and fixture.RATER_NOTE in human and "bob: FAIL" in human  # the raters' notes
    facts = dict(zip(viewer.locator(".hx-facts dt").all_inner_texts(), viewer.locator(".hx-facts dd").all_inner_texts()))
    assert facts["route"] == "identity" and facts["cost"] == "$0.0000" and facts["latency"].endswith(" s")
    assert facts["SSIM"] == "1.000" and facts["same size as the reference"] == "yes"
    assert hash_params(page)["open"] == "mini/task-01/identity/1"
    screenshot(page, shots, "viewer")


def test_a_candidate_the_humans_judged_otherwise_is_marked_and_says_so(page):
    disputed = card(page, "task-01").locator(".hx-row[data-model='identity'] .hx-cand").nth(1)
    assert disputed.locator(".hx-flag").inner_text() == "humans differ"
    disputed.click()
    panel = page.locator("#hx-viewer .hx-human").inner_text()
    assert "Panel: FAIL (the judge said otherwise)" in panel and fixture.RATER_NOTE in panel


def test_keys_move_between_tasks_and_candidates_and_open_and_close(page, shots):
    page.keyboard.press("j")
    assert hash_params(page)["task"] == "mini/task-00"
    page.keyboard.press("j")
    assert page.locator(".hx-task.hx-current").get_attribute("data-task") == "mini/task-01"
    page.keyboard.press("k")
    assert hash_params(page)["task"] == "mini/task-00" and not viewer_open(page)
    page.keyboard.press("Enter")
    assert viewer_open(page) and hash_params(page)["open"] == "mini/task-00/identity/1"
    page.keyboard.press("ArrowRight")
    assert hash_params(page)["open"] == "mini/task-00/identity/2"
    assert page.locator("#hx-viewer h3").inner_text().endswith("repeat 2")
    page.keyboard.press("ArrowLeft")
    assert hash_params(page)["open"] == "mini/task-00/identity/1"
    page.keyboard.press("j")  # with the viewer open: the next task's first candidate
    assert hash_params(page)["open"] == "mini/task-01/identity/1"
    screenshot(page, shots, "keyboard-viewer")
    page.keyboard.press("Escape")
    # the dialog closes itself on Escape and its close event, which rewrites the address, is a task queued after the
    # key: wait for it (a close that never clears the address times out here)
    page.wait_for_function("!/(^|[#&])open=/.test(location.hash)", timeout=5000)
    assert not viewer_open(page) and "open" not in hash_params(page)


# --------------------------------------------------------------------------- filters and the address


def test_filters_by_model_outcome_type_and_diagnostics_change_the_rows(page, shots):
    everything = shown_rows(page)
    assert len(everything) == 8
    chip(page, "model", "flaky").click()
    assert {model for _, model in shown_rows(page)} == {"flaky"} and len(shown_rows(page)) == 4
    chip(page, "outcome", "PASS").click()  # flaky passes only task-02 and task-03
    assert shown_rows(page) == [["mini/task-02", "flaky"], ["mini/task-03", "flaky"]]
    dimmed = page.locator(".hx-cand.hx-dim")
    assert dimmed.count() == 2 and set(dimmed.evaluate_all("els => els.map(e => e.dataset.outcome)")) == {"fail"}
    screenshot(page, shots, "filtered")
    page.locator(".hx-clear").click()
    assert shown_rows(page) == everything
    chip(page, "type", "recolor").click()
    assert {task for task, _ in shown_rows(page)} == {"mini/task-01", "mini/task-03"}
    page.locator(".hx-clear").click()
    chip(page, "flag", "judge and humans disagree").click()
    assert shown_rows(page) == [["mini/task-01", "identity"]]
    page.locator(".hx-clear").click()
    chip(page, "flag", "judged PASS but unchanged").click()  # identity returns the reference, and passes half
    assert {model for _, model in shown_rows(page)} == {"identity"} and len(shown_rows(page)) == 4
    page.locator(".hx-clear").click()
    chip(page, "flag", "size differs from the reference").click()
    assert {task for task, _ in shown_rows(page)} == {"mini/task-03"}
    chip(page, "outcome", "error").click()  # no candidate is an error of task-03
    assert shown_rows(page) == [] and "No task matches" in page.locator("#hx-status").inner_text()


def test_the_address_keeps_the_filters_and_the_open_candidate(page, browser, shots):
    chip(page, "model", "flaky").click()
    chip(page, "outcome", "FAIL").click()
    page.locator("#hx-sort").select_option("worst")
    card(page, "task-01").locator(".hx-cand").nth(2).click()
    title, rows, url = page.locator("#hx-viewer h3").inner_text(), shown_rows(page), page.url
    assert hash_params(page)["model"] == "flaky" and hash_params(page)["outcome"] == "fail"
    shared = browser.new_page(viewport={"width": WIDTH, "height": 900})
    try:
        goto(shared, url)
        assert pressed(shared, "model") == ["flaky"] and pressed(shared, "outcome") == ["FAIL"]
        assert shared.locator("#hx-sort").input_value() == "worst"
        assert shown_rows(shared) == rows
        assert viewer_open(shared) and shared.locator("#hx-viewer h3").inner_text() == title
        screenshot(shared, shots, "shared-link")
        shared.reload(wait_until="load")  # a reload shows the same view too
        shared.wait_for_selector("#hx-browser[data-ready='true']")
        assert viewer_open(shared) and shown_rows(shared) == rows
    finally:
        shared.close()


# --------------------------------------------------------------------------- readable, and fits


CONTRAST = """() => {
  const parse = c => { const m = c.match(/[\\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const lum = ([r, g, b]) => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
                               return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const over = (top, below) => top.slice(0, 3).map((v, i) => v * top[3] + below[i] * (1 - top[3]));
  const background = el => { const layers = [];
    for (let e = el; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor); if (c[3] > 0) layers.push(c); if (c[3] === 1) break; }
    return layers.reverse().reduce((acc, c) => over(c, acc), [255, 255, 255]); };
  const bad = [];
  let checked = 0;
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('svg, script, style, template, noscript, option')) continue;
    const text = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!text || !el.getClientRects().length || getComputedStyle(el).visibility !== 'visible') continue;
    const fg = parse(getComputedStyle(el).color), bg = background(el);
    const a = lum(over(fg, bg)), b = lum(bg);
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    checked++;
    if (ratio < 4.5) bad.push(`${el.tagName}.${el.className}: ${ratio.toFixed(2)} "${el.textContent.trim().slice(0, 40)}"`);
  }
  return {checked, bad};
}"""


def test_text_contrast_is_at_least_4_5_to_1_on_the_page_the_table_and_the_viewer(page):
    page.locator('input[data-test-result="failed"]').click()  # pytest-html's failed rows too
    page.locator('input[data-test-result="passed"]').click()
    page.locator("#environment-header").click()  # and its environment table
    found = page.evaluate(CONTRAST)
    assert found["checked"] > 200 and found["bad"] == []
    card(page, "task-01").locator(".hx-cand").first.click()
    found = page.evaluate(CONTRAST)
    assert found["bad"] == []


def test_nothing_overflows_at_1280_px_with_every_card_drawn(page, shots):
    page.keyboard.press("End")
    page.wait_for_function("() => !document.getElementById('hx-more').textContent")
    assert page.locator(".hx-task").count() == 4
    page.locator('input[data-test-result="failed"]').click()  # pytest-html's rows: long node ids wrap
    screenshot(page, shots, "whole-page", full_page=True)


# --------------------------------------------------------------------------- the folder and pytest-html's table


def data_urls(report: Path) -> list[str]:
    text = report.read_text()
    blob = re.search(r'<script type="application/json" id="hx-data">(.*?)</script>', text, re.S).group(1)
    data = json.loads(blob)
    images = [ref for task in data["tasks"] for ref in task["refs"]]
    images += [cand["img"] for row in data["rows"] for cand in row["c"] if cand.get("img")]
    return [image[key] for image in images for key in ("src", "view") if image.get(key)]


def test_a_copied_report_folder_keeps_every_link(report, browser, tmp_path):
    copy = tmp_path / "elsewhere" / "artifact"
    shutil.copytree(report.parent, copy)  # what CI uploads: the report's folder alone
    urls = data_urls(copy / "report.html")
    views = [u for u in urls if ".full." in u and "/references/" not in u]
    failed = sum(1 for p in (report.parent.parent / "out" / "mini").glob("*/*/*.json")
                 if json.loads(p.read_text()).get("outcome") == "fail")
    assert failed == 17 and len(views) == failed  # a full view of every failure
    assert len([u for u in urls if ".thumb." in u and "/references/" not in u]) == 31  # every candidate with an image
    for url in urls:
        target = (copy / unquote(url)).resolve()
        assert target.is_relative_to(copy.resolve()) and target.is_file(), url
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    try:
        goto(page, (copy / "report.html").as_uri())
        broken = page.evaluate("""urls => Promise.all(urls.map(u => new Promise(done => {
            const i = new Image(); i.onload = () => done(i.naturalWidth > 0 ? null : u); i.onerror = () => done(u); i.src = u;
        }))).then(r => r.filter(Boolean))""", urls)
        assert broken == []
    finally:
        page.close()


def test_pytest_html_table_lists_the_errored_item_and_each_failed_row_opens_its_candidate(page):
    assert page.locator("#not-found-message").count() == 0
    assert page.locator("tbody.error").count() == 1 and page.locator("#results-table").is_visible()
    assert "lists the 1 of 32 items that errored" in page.locator(".hx-table-note").inner_text()
    page.locator('input[data-test-result="failed"]').click()
    assert page.locator("tbody.failed").count() == 17
    link = page.locator("tbody.failed a.hypeedit-link").first
    key = unquote(link.get_attribute("href").split("=", 1)[1])
    link.click()
    assert viewer_open(page) and hash_params(page)["open"] == key


# --------------------------------------------------------------------------- against the baseline release


@pytest.fixture(scope="module")
def compare_folder(tmp_path_factory) -> Path:
    """A release compared with an earlier one (report_fixture.make_compare_report), its report folder copied
    alone and the old release's outputs deleted: what a CI artifact holds."""
    root = tmp_path_factory.mktemp("compare-run")
    report = fixture.make_compare_report(root)
    artifact = tmp_path_factory.mktemp("compare-artifact") / "report"
    shutil.copytree(report.parent, artifact)
    shutil.rmtree(root / "old-out")
    shutil.rmtree(root / "out")
    return artifact


@pytest.fixture
def compare_page(browser, compare_folder):
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("requestfailed", lambda request: problems.append("failed: " + request.url))
    goto(page, (compare_folder / "report.html").as_uri())
    yield page
    page.close()
    assert problems == []


def loaded_sources(page, selector: str) -> list[str]:
    images = page.locator(selector)
    page.wait_for_function("els => els.every(i => i.complete && i.naturalWidth > 0)", arg=images.element_handles())
    return [unquote(src) for src in images.evaluate_all("els => els.map(i => i.getAttribute('src'))")]


def test_the_baseline_release_is_beside_this_one_and_the_task_that_got_worse_comes_first(compare_page, compare_folder, shots):
    page = compare_page
    # flaky passed every repeat of task-03 in the old release and 3 of 4 now: the only task that got worse
    assert page.locator(".hx-task").first.get_attribute("data-task") == "mini/task-03"
    assert page.locator("#hx-sort").input_value() == "regressed"
    row = card(page, "task-03").locator(".hx-row[data-model='flaky']")
    assert row.locator(".hx-base-model").inner_text() == "baseline: flaky"
    assert [b.strip() for b in row.locator(".hx-base-badge").all_inner_texts()] == ["PASS 1", "PASS 2", "PASS 3", "PASS 4"]
    sources = loaded_sources(page, ".hx-task[data-task='mini/task-03'] .hx-row[data-model='flaky'] .hx-base-cand img")
    assert sources == [f"hypeedit-assets/baseline/mini/flaky/task-03/{r:03d}.thumb.webp" for r in range(1, 5)]
    assert all((compare_folder / src).is_file() for src in sources)  # copied into the report folder
    screenshot(page, shots, "compare-card")


def test_the_viewer_compares_side_by_side_as_a_slider_a_flip_and_a_difference(compare_page, compare_folder, shots):
    page = compare_page
    mine = "hypeedit-assets/mini/flaky/task-03/003.full.webp"
    theirs = "hypeedit-assets/baseline/mini/flaky/task-03/003.full.webp"
    card(page, "task-03").locator(".hx-row[data-model='flaky'] .hx-cand[data-key='mini/task-03/flaky/3']").click()
    assert viewer_open(page) and page.locator(".hx-compare").get_attribute("data-mode") == "side"
    assert loaded_sources(page, ".hx-compare .hx-side img") == [mine, theirs]
    screenshot(page, shots, "compare-side")

    page.locator(".hx-mode[data-mode='slider']").click()
    assert loaded_sources(page, ".hx-slider img") == [theirs, mine]  # the baseline under, this run over it
    stage = page.locator(".hx-slider").bounding_box()
    page.mouse.move(stage["x"] + stage["width"] * 0.5, stage["y"] + stage["height"] / 2)
    page.mouse.down()
    page.mouse.move(stage["x"] + stage["width"] * 0.2, stage["y"] + stage["height"] / 2, steps=4)
    page.mouse.up()
    assert int(page.locator(".hx-slider-range").input_value()) in range(18, 23)
    clip = page.locator(".hx-slider-over").evaluate("i => i.style.clipPath")
    assert re.fullmatch(r"inset\(0(px)? (7[7-9]|8[0-2])% 0(px)? 0(px)?\)", clip), clip
    screenshot(page, shots, "compare-slider")

    page.keyboard.press("f")  # the flip's key opens the flip, then flips
    flip = page.locator(".hx-flip-image")
    assert flip.get_attribute("data-showing") == "current" and unquote(flip.get_attribute("src")) == mine
    page.keyboard.press("f")
    assert flip.get_attribute("data-showing") == "baseline" and unquote(flip.get_attribute("src")) == theirs
    page.locator(".hx-flip").click()
    assert flip.get_attribute("data-showing") == "current"
    assert loaded_sources(page, ".hx-flip-image") == [mine]

    page.locator(".hx-mode[data-mode='diff']").click()
    [diff] = loaded_sources(page, "img.hx-diff")
    assert diff == "hypeedit-assets/mini/flaky/task-03/003.diff.webp"
    size = page.locator("img.hx-diff").evaluate("i => [i.naturalWidth, i.naturalHeight, i.clientWidth, i.clientHeight]")
    assert min(size) > 0
    with Image.open(compare_folder / diff) as image:  # this run returns the reference, the old one its negative
        assert image.size == (256, 192) and max(image.convert("L").getextrema()) > 100
    screenshot(page, shots, "compare-diff")


def test_a_baseline_whose_outputs_are_not_found_is_said_once_and_the_report_still_builds(page):
    # report_fixture's old.json is a results file alone: no outputs folder anywhere
    notes = page.locator(".hx-summary .hx-warning", has_text="The baseline's images were not found")
    assert notes.count() == 1 and "--baseline-outputs DIR" in notes.inner_text()
    assert page.locator(".hx-base-row").count() == 0 and page.locator(".hx-task").count() > 0
