"""The HTML report: its files, escaping, the summary, the browser's data, pytest-html's table in Chromium.

The browser itself is clicked through in test_report_browser.py.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest
from hype_ci_fixtures import (
    SCRIPT_INSTRUCTION,
    args,
    bench,  # noqa: F401 - fixture
    html_run,
)

from pytest_hypeedit.analysis.enrich import task_deltas
from pytest_hypeedit.analysis.metrics import TaskTally
from pytest_hypeedit.engine.records import Record
from pytest_hypeedit.glue import html_report as report_html
from pytest_hypeedit.glue.html_report import table_note, table_script
from pytest_hypeedit.report.assets import Built, ImagePair
from pytest_hypeedit.report.browser.data import Images, browser_data
from pytest_hypeedit.report.browser.page import data_script
from pytest_hypeedit.report.summary import summary_html

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
HTML_REASONING = '<img src=x onerror="alert(2)"><b>not bold</b> & the car is still there'


def page_data(report: Path) -> dict:
    blob = re.search(r'<script type="application/json" id="hx-data">(.*?)</script>', report.read_text(), re.S)
    return json.loads(blob.group(1))


@pytest.fixture(scope="module")
def n2_runs() -> dict:
    """The module's one html_run under -n 2 (the two tests below assert on the same run): its result and a copy
    of its folder, once the first test that asks has made it."""
    return {}


@pytest.fixture
def n2_run(bench, n2_runs, tmp_path_factory):
    """``bench`` holding html_run(bench, "-n", "2")'s folder (the bench, its outputs and its report), and its result:
    made by the first test that asks, copied into the folder of each later one (a run takes seconds, a copy none)."""
    if not n2_runs:
        result = html_run(bench, "-n", "2")
        kept = tmp_path_factory.mktemp("n2-run") / "run"
        shutil.copytree(bench.path, kept, symlinks=True)
        n2_runs.update(result=result, folder=kept)
    else:
        shutil.copytree(n2_runs["folder"], bench.path, symlinks=True, dirs_exist_ok=True)
    return bench, n2_runs["result"]


def test_a_thumbnail_of_every_candidate_and_a_view_of_every_failure_inside_the_report_folder(n2_run):
    bench, result = n2_run
    result.assert_outcomes(passed=4, failed=8)
    assets = bench.path / "rep" / "hypeedit-assets"
    thumbs = sorted(p.relative_to(assets).as_posix() for p in assets.glob("mini/identity/*/*.thumb.webp"))
    assert thumbs == [f"mini/identity/task-{t:02d}/{r:03d}.thumb.webp" for t in range(4) for r in (1, 2, 3)]
    # the candidates are PNGs: their full-size views are WebPs of the same pixel size, failures only
    views = sorted(p.relative_to(assets).as_posix() for p in assets.glob("mini/identity/*/*.full.*"))
    assert views == [f"mini/identity/task-{t:02d}/{r:03d}.full.webp" for t in range(4) for r in (1, 3)]
    assert not (assets / "collages").exists()  # the browser's task cards took the collages' place
    data = page_data(bench.path / "rep" / "report.html")
    [row] = [r for r in data["rows"] if data["tasks"][r["t"]]["id"] == "task-00"]
    assert [c["r"] for c in row["c"]] == [1, 2, 3] and [c["o"] for c in row["c"]] == ["fail", "pass", "fail"]
    assert row["c"][0]["img"]["src"] == "hypeedit-assets/mini/identity/task-00/001.thumb.webp"  # linked, not embedded
    assert row["c"][0]["img"]["view"] == "hypeedit-assets/mini/identity/task-00/001.full.webp"
    assert "view" not in row["c"][1]["img"]  # a pass keeps its thumbnail only
    text = (bench.path / "rep" / "report.html").read_text()
    assert "../out/" not in text and "data:image" not in text
    assert SCRIPT_INSTRUCTION not in text and 'onerror="alert(2)"' not in text


def test_the_summary_says_what_ran_and_the_browser_keeps_the_task_files_order(bench):
    split = json.loads((bench.path / "mini.json").read_text())
    (bench.path / "mini.json").write_text(json.dumps(split[::-1]))  # task-03 first: not the ids' order
    bench.runpytest(*args()).assert_outcomes(passed=4, failed=8)
    # the first run's records were made between 10:00 and 11:30; the rerun below reuses them all
    for at, path in enumerate(sorted((bench.path / "out" / "mini").glob("identity/*/*.json"))):
        record = json.loads(path.read_text())
        record["generated_at"] = "2026-01-01T10:00:00+00:00" if at == 0 else "2026-01-01T10:30:00+00:00"
        for entry in [record] + list(record["judgements"].values()):
            entry["judged_at"] = "2026-01-01T12:30:00+01:00" if at == 5 else "2026-01-01T10:40:00+00:00"
        path.write_text(json.dumps(record))
    bench.runpytest(*args("--html", "rep/report.html")).assert_outcomes(passed=4, failed=8)
    report = bench.path / "rep" / "report.html"
    assert [task["id"] for task in page_data(report)["tasks"]] == ["task-03", "task-02", "task-01", "task-00"]
    facts = re.search(r'<dl class="hx-run-facts">(.*?)</dl>', report.read_text(), re.S).group(1)
    pairs = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", facts))
    assert pairs["Judge"] == "labels:r1.json" and pairs["Repeats"] == "3" and pairs["Retry cap"] == "4"
    assert pairs["Task files"].startswith("mini: ") and pairs["Task files"].endswith("mini.json")
    assert pairs["Review"] == "20 s per candidate at $50.00/h = $0.28 per candidate"
    assert pairs["Price tier"] == "standard"
    assert pairs["Duration"].startswith("1 h 30 min 00 s: ")  # both runs' records, not the rerun's seconds
    assert "2026-01-01 10:00:00 to 2026-01-01 11:30:00 UTC" in pairs["Duration"]


def hostile_record() -> Record:
    return Record("mini", "m<1>", "t1", 1, outcome="refused", refusal="</script><script>r()</script>",
                  reasoning=HTML_REASONING, error="<b>e</b>", route="<r>", provider_model="<pm>", request_id="<id>",
                  judge="<j>", votes=[{"judge": "<v>", "verdict": "FAIL", "reasoning": "<i>x</i>", "note": "<u>n</u>"}],
                  human={"verdict": "FAIL", "votes": [{"rater": "<a>", "verdict": "FAIL", "note": "</script>"}]})


def test_every_string_from_tasks_providers_and_judges_is_escaped():
    data = browser_data([hostile_record()], instruction=lambda r: "<script>alert(1)</script>", images=Images(),
                        url=lambda built: None)
    script = data_script(data)
    assert script.count("<") == 2 and script.count(">") == 2  # its own tags only: nothing can close the block
    decoded = json.loads(script[script.index(">") + 1:script.rindex("<")])
    assert decoded == json.loads(json.dumps(data))  # every string comes back as it was (the page shows it as text)
    assert decoded["tasks"][0]["instruction"] == "<script>alert(1)</script>"
    summary = summary_html({"rows": [{"model": "<svg onload=x>", "split": "<s>", "pass_rate": 0.5,
                                      "by_task_type": {"<t>": {"tasks": 1}},
                                      "baseline_tasks": [{"task_id": "<w>", "difference": -0.5}]}]}, ["FAIL <g>"])
    for raw in ("<svg onload", "<s>", "<t>", "<g>", "<w>"):
        assert raw not in summary


# --------------------------------------------------------------------------- the summary


def row(**extra) -> dict:
    return {"model": "m", "split": "s", "pass_rate": 0.4, "pass_at_4": 0.7, "intervals": {"pass_rate": [0.3, 0.5]},
            "judged": 10, "candidates": 10, **extra}


def test_calibrated_figures_come_first_and_marked_with_the_judges_beside_them():
    calibrated = {"pass_rate": {"value": 0.35, "low": 0.2, "high": 0.5}}
    text = summary_html({"rows": [row(calibrated=calibrated)]}, [])
    cell = re.search(r"<td><span class=\"hx-cal\".*?</td>", text).group(0)
    assert cell.index("35.0%") < cell.index(">cal<") < cell.index("judge: 40.0%")
    assert "[20.0%, 50.0%]" in cell and "[30.0%, 50.0%]" in cell
    assert "(calibrated)" in text  # the charts draw the calibrated figures when every row has them
    plain = summary_html({"rows": [row()]}, [])
    assert "hx-cal" not in plain and "40.0%" in plain and "(calibrated)" not in plain


def test_the_judge_signals_and_possibly_paid_show_only_when_present():
    plain = summary_html({"rows": [row()]}, [])
    for absent in ("The judge", "Pixel signals", "Possibly paid", "Tasks that got worse"):
        assert absent not in plain
    full = summary_html({"rows": [row(judge_error={"n_human": 30, "sensitivity": 0.9, "specificity": 0.8},
                                      judge_stability={"candidates": 20, "k": 3, "flips": 2, "flip_rate": 0.1},
                                      signals_summary={"size_mismatch": 3, "unchanged": 5, "unchanged_pass": 2,
                                                       "ssim_mean": 0.8, "delta_e_mean": None},
                                      possibly_paid=2, possibly_paid_cost=0.08)]}, [])
    assert "The judge" in full and "90.0%" in full and "2 of 20 (10.0%, k=3)" in full
    assert "Pixel signals" in full and "<td>2</td><td>0.800</td><td>n/a</td>" in full
    assert "2 candidates, up to $0.08" in full


def test_a_failed_gate_is_highlighted():
    text = summary_html({"rows": [row()]}, ["PASS gate 'a' on m (s): fine", "FAIL gate 'b' on m (s): low"])
    assert '<li class="hx-gate-fail">FAIL gate' in text and '<li class="hx-gate-pass">PASS gate' in text
    assert "1 of 2 gates failed" in text


def test_the_tasks_that_got_worse_are_listed_worst_first_with_links_into_the_browser():
    current = [TaskTally("t1", 1, 4, False), TaskTally("t2", 4, 4, True), TaskTally("t3", 0, 2, False),
               TaskTally("only-now", 0, 4, False)]
    before = [TaskTally("t1", 3, 4, True), TaskTally("t2", 2, 4, True), TaskTally("t3", 1, 4, False)]
    deltas = task_deltas(current, before)
    assert [(d["task_id"], d["difference"]) for d in deltas] == [("t1", -0.5), ("t3", -0.25), ("t2", 0.5)]
    text = summary_html({"rows": [row(baseline_tasks=deltas, baseline_model="m-old")]}, [])
    worse = text[text.index("Tasks that got worse"):]
    assert "2 of 3 shared tasks pass less often than in the baseline (m-old)" in worse
    assert worse.index("t1</a>: 3/4 &rarr; 1/4 PASS (-50.0 pts)") < worse.index("t3</a>") and "t2</a>" not in worse
    assert 'href="#task=s/t1&amp;model=m"' in worse


# --------------------------------------------------------------------------- the browser's data


def test_the_data_flags_disagreement_and_the_signals_and_keeps_every_note():
    human = {"verdict": "FAIL", "votes": [{"rater": "ann", "verdict": "FAIL", "note": "halo on the left"}]}
    records = [
        Record("s", "m", "t", 1, outcome="pass", verdict="PASS", human=human,
               votes=[{"judge": "rater-1", "verdict": "PASS", "note": "fine by me"}],
               signals={"unchanged": True, "size_match": False, "aspect_match": True, "ssim": float("nan")}),
        Record("s", "m", "t", 2, outcome="fail", verdict="FAIL", human={"verdict": None, "votes": []}),
        Record("s", "m", "t", 3, outcome="error", error="HTTP 503", human="doctored", signals=["not", "a", "dict"]),
    ]
    data = browser_data(records, instruction=lambda r: "edit", images=Images(), url=lambda built: None)
    first, second, third = data["rows"][0]["c"]
    assert first["flags"] == ["disagree", "unchanged_pass", "unchanged", "size_mismatch"]
    assert first["human"]["votes"] == [{"who": "ann", "verdict": "FAIL", "note": "halo on the left"}]
    assert first["votes"] == [{"who": "rater-1", "verdict": "PASS", "note": "fine by me"}]
    assert first["signals"] == {"unchanged": True, "size_match": False, "aspect_match": True}  # NaN left out
    assert "flags" not in second and second["human"] == {"verdict": None, "votes": []}  # a tie is not a disagreement
    assert "human" not in third and "signals" not in third and third["error"] == "HTTP 503"
    assert [key for key, _ in data["flags"]] == ["disagree", "unchanged_pass", "unchanged", "size_mismatch"]
    assert data["rows"][0]["pass"] == 1 and data["rows"][0]["judged"] == 2
    json.dumps(data, allow_nan=False)  # JSON.parse does not accept NaN: none gets through


def test_a_labels_judge_s_votes_are_written_once_and_shown_as_the_panel_s():
    votes = [{"judge": "ann", "verdict": "FAIL", "note": "halo on the left"}]
    record = Record("s", "m", "t", 1, outcome="fail", verdict="FAIL", votes=votes,
                    human={"verdict": "FAIL", "votes": [{"rater": "ann", "verdict": "FAIL", "note": "halo on the left"}]})
    (only,) = browser_data([record], instruction=lambda r: "edit", images=Images(), url=lambda built: None)["rows"][0]["c"]
    assert only["votes"] == [{"who": "ann", "verdict": "FAIL", "note": "halo on the left"}]
    assert only["human"] == {"verdict": "FAIL"}  # the viewer shows the judge's votes as the panel's


def test_the_data_orders_models_as_run_and_links_views_only_where_built(tmp_path):
    records = [Record("s", model, "t", 1, outcome="fail") for model in ("b-model", "a-model")]
    pair = ImagePair(Built("s/b-model/t/001.thumb.webp", (160, 120)), Built("s/b-model/t/001.full.jpg", (640, 480)))
    images = Images({records[0].key: pair}, {("s", "t"): [("001.png", None)]})
    data = browser_data(records, instruction=lambda r: "", images=images, url=lambda built: "u/" + built.name,
                        models=["b-model", "a-model"])
    assert data["models"] == ["b-model", "a-model"] and [r["m"] for r in data["rows"]] == [0, 1]
    assert data["rows"][0]["c"][0]["img"] == {"src": "u/s/b-model/t/001.thumb.webp", "w": 160, "h": 120,
                                              "view": "u/s/b-model/t/001.full.jpg", "vw": 640, "vh": 480}
    assert "img" not in data["rows"][1]["c"][0] and data["tasks"][0]["refs"] == [{"name": "001.png"}]


# --------------------------------------------------------------------------- pytest-html's table


def test_pytest_html_table_lists_errors_when_there_are_some_and_is_folded_when_not():
    listing = table_script(listed=2)
    assert "hx-table-folded" not in listing and "error,skipped,xfailed,xpassed,rerun" in listing
    assert "lists the 2 of 12 items that errored" in table_note({"passed": 4, "failed": 6, "error": 2}, 2)
    folded = table_script(listed=0)
    assert "classList.add('hx-table-folded')" in folded
    note = table_note({"passed": 4, "failed": 8}, 0)
    assert "List the 8 failed items" in note and "folded" in note


def test_self_contained_report_inlines_thumbnails_and_warns_when_large(bench, monkeypatch):
    monkeypatch.setattr(report_html, "SELF_CONTAINED_WARN_BYTES", 1000)
    result = html_run(bench, "--self-contained-html")
    result.stdout.fnmatch_lines(["*WARNING: the self-contained HTML report is * MB*drop --self-contained-html*"])
    assert not (bench.path / "rep" / "hypeedit-assets").exists()  # nothing beside the file
    text = (bench.path / "rep" / "report.html").read_text()
    data = page_data(bench.path / "rep" / "report.html")
    images = [c["img"] for r in data["rows"] for c in r["c"]] + [ref for t in data["tasks"] for ref in t["refs"]]
    assert len(images) == 12 + 4 and all(i["src"].startswith("data:image/webp;base64,") for i in images)
    assert ".full." not in text and data["selfContained"]  # no full-size views: the file holds thumbnails only


@pytest.mark.skipif(not CHROMIUM.exists(), reason="no Chromium at /usr/bin/chromium (Debian package 'chromium'; .ci/run installs it)")
def test_pytest_html_table_is_folded_with_a_note_when_nothing_errored_and_lists_failed_rows_on_request(n2_run):
    """With no errored or skipped item pytest-html's table would open on "No results found": it is folded
    under a note whose button lists the failed items, each linked to its candidate in the browser."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package (test extra) drives Chromium")
    bench, result = n2_run
    result.assert_outcomes(passed=4, failed=8)
    url = (bench.path / "rep" / "report.html").as_uri()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            dialogs = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            started = time.monotonic()
            page.goto(url, wait_until="load")
            page.wait_for_selector("#hx-browser[data-ready='true']")
            assert time.monotonic() - started < 3.0
            assert not page.locator("#results-table").is_visible() and not page.get_by_text("No results found").is_visible()
            note = page.locator("#hx-table-note")
            assert note.is_visible() and "none errored or was skipped" in note.inner_text()
            page.locator("#hx-table-show").click()
            assert page.locator("#results-table").is_visible() and page.locator("tbody.failed").count() == 8
            page.locator("tbody.failed a.hypeedit-link").first.click()
            assert page.evaluate("document.getElementById('hx-viewer').open")
            assert page.locator("#hx-viewer .hx-reasoning").inner_text() == HTML_REASONING  # text, not markup
            assert dialogs == []  # no alert() from the instruction or the reasoning ran
        finally:
            browser.close()


@pytest.mark.skipif(not CHROMIUM.exists(), reason="no Chromium at /usr/bin/chromium (Debian package 'chromium'; .ci/run installs it)")
def test_500_candidate_report_is_small_and_opens_fast(tmp_path):
    """The acceptance run: 50 tasks x 10 repeats, identity + labels judge, --html with -n 2."""
    pytest.importorskip("playwright.sync_api", reason="the playwright package (test extra) drives Chromium")
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_report", Path(__file__).parents[2] / "bench" / "bench_report.py")
    bench_report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_report)
    bench_report.make_benchmark(tmp_path, (512, 384))
    code, _ = bench_report.run_benchmark(tmp_path, workers=2)
    assert code == 0  # the gate pass_rate>=0.3 holds although ~300 items failed
    total, _ = bench_report.report_size(tmp_path / "report")
    candidates = tmp_path / "report" / "hypeedit-assets" / "bench" / "identity"
    assert len(list(candidates.glob("*/*.thumb.webp"))) == 500  # a thumbnail of every candidate
    views = list(candidates.glob("*/*.full.webp"))
    assert 250 < len(views) < 380  # a view of every failure (40% pass in the labels)
    assert views[0].read_bytes() == (tmp_path / "out" / "bench" / "identity" / views[0].parent.name /
                                     views[0].name.replace(".full", "")).read_bytes()  # its own view, copied
    all_views = sum(v.stat().st_size for v in (tmp_path / "report").rglob("*.full.*"))  # references' too
    assert total < 30e6 and total - all_views < 3e6  # the thumbnails and the page
    assert bench_report.chromium_load_seconds(tmp_path / "report" / "report.html") < 3.0


def test_baseline_candidates_are_read_from_their_outputs_only(tmp_path):
    from pytest_hypeedit.report.baseline import locate_outputs, read_candidates

    old = tmp_path / "old"
    folder = old / "mini" / "m" / "t1"
    folder.mkdir(parents=True)
    for repeat in (1, 2, 3):
        (folder / f"{repeat:03d}.json").write_text(json.dumps(Record("mini", "m", "t1", repeat, outcome="pass").to_dict()))
    (folder / "001.png").write_bytes(b"png")
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"not the outputs'")
    (folder / "002.png").symlink_to(secret)  # a doctored baseline pointing outside its outputs
    found = read_candidates(old, "mini", "m", "t1", 3)
    assert [(c.record.repeat, c.image) for c in found] == [(1, folder / "001.png"), (2, None), (3, None)]
    assert read_candidates(old, "mini", "../m", "t1", 3) == []  # a name from the file that is no plain name
    results = old / "results.json"
    assert locate_outputs(results, {"outputs": str(tmp_path / "gone")}, None, ["mini"]).root == old  # its folder
    assert locate_outputs(results, {"outputs": "."}, None, ["mini"]).root == old  # relative to the file
    missing = locate_outputs(results, {"outputs": str(tmp_path / "gone")}, None, ["other"])
    assert missing.root is None and missing.tried == (str(tmp_path / "gone"), str(old))
    assert locate_outputs(results, {}, str(tmp_path), ["mini"]).root is None  # --baseline-outputs: only there
