"""hypeedit-leaderboard --index: one HTML page over several runs, each model linked to its own report."""

from __future__ import annotations

import json
from html import escape
from html.parser import HTMLParser
from pathlib import Path

from pytest_hypeedit.report.leaderboard import main


class Page(HTMLParser):
    """The links, the table rows (cell texts) and the tags of an HTML page."""

    def __init__(self, text: str):
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.rows: list[list[str]] = []
        self.tags: list[str] = []
        self._href: str | None = None
        self._in_cell = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "a":
            self._href = dict(attrs)["href"]
        elif tag == "tr":
            self.rows.append([])
        elif tag == "td" and self.rows:
            self.rows[-1].append("")
            self._in_cell = True

    def handle_endtag(self, tag):
        if tag == "a":
            self._href = None
        elif tag == "td":
            self._in_cell = False

    def handle_data(self, data):
        if self._href is not None:
            self.links.append((self._href, data))
        if self._in_cell:
            self.rows[-1][-1] += data


def job_folder(root: Path, model: str, pass_rate: float, report: bool = True) -> Path:
    """What one CI job leaves: <root>/<model>/results.json and, if it got that far, report.html."""
    folder = root / model
    folder.mkdir(parents=True)
    row = {"model": model, "split": "public", "tasks": 50, "candidates": 500, "judged": 500, "errors": 0,
           "pass_rate": pass_rate, "pass_at_4": 0.7, "pass_at_10": 0.9, "expected_attempts": 2.0,
           "effective_cost": 1.0, "first_attempt_pass_rate": 0.5, "hype_gap": 0.4}
    settings = {"repeats": 10, "retry_cap": 4, "review_cost": 0.27778, "judge": "gemini-3-flash"}
    (folder / "results.json").write_text(json.dumps({"schema": "hypeedit-results/1", "settings": settings, "rows": [row]}))
    if report:
        (folder / "report.html").write_text(f"<html>report of {model}</html>")
    return folder / "results.json"


def build_index(tmp_path: Path, *extra: str, models=(("seedream-4.5", 0.4), ("gpt-image-1.5", 0.6))) -> Page:
    files = [str(job_folder(tmp_path / "artifacts", model, rate)) for model, rate in models]
    index = tmp_path / "site" / "index.html"
    assert main([*files, "--index", str(index), "-o", str(tmp_path / "RESULTS.md"), *extra]) == 0
    return Page(index.read_text())


def test_each_model_links_to_the_report_beside_its_results_and_the_link_resolves(tmp_path):
    page = build_index(tmp_path)
    assert page.links == [("../artifacts/gpt-image-1.5/report.html", "report"),
                          ("../artifacts/seedream-4.5/report.html", "report")]  # sorted by pass rate
    for href, _ in page.links:
        assert (tmp_path / "site" / href).read_text().startswith("<html>report of ")
    table = [row for row in page.rows if row]
    assert table == [["gpt-image-1.5 (report)", "60.0%", "70.0%", "90.0%", "2.00", "$1.00", "40.0%"],
                     ["seedream-4.5 (report)", "40.0%", "70.0%", "90.0%", "2.00", "$1.00", "40.0%"]]


def test_a_job_that_left_no_report_is_listed_without_a_link(tmp_path):
    files = [str(job_folder(tmp_path / "a", "seedream-4.5", 0.4, report=False))]
    index = tmp_path / "index.html"
    assert main([*files, "--index", str(index)]) == 0
    page = Page(index.read_text())
    assert page.links == [] and ["seedream-4.5", "40.0%"] == next(row for row in page.rows if row)[:2]


def test_the_published_rows_are_in_the_index_too(tmp_path):
    page = build_index(tmp_path, "--with-published")
    published = [row[0] for row in page.rows if row and row[0].endswith("(published)")]
    assert len(published) == 21 and "riverflow-2-b1 (published)" in published
    assert len(page.links) == 2  # published rows link nowhere


def test_a_hostile_model_name_is_escaped(tmp_path):
    page = build_index(tmp_path, models=(('<script>alert(1)</script>', 0.5),))
    assert "script" not in page.tags
    assert next(row for row in page.rows if row)[0].startswith("<script>alert(1)</script>")


def test_the_index_says_what_the_markdown_says_under_the_tables(tmp_path):
    """Which models cannot be told apart (or why a row was not compared) and the serving section: the index page
    carries the Markdown's notes, escaped (planted: the index without them, as before: caught)."""
    for root, model, passes in (("artifacts", "seedream-4.5", 4), ("artifacts", "gpt-image-1.5", 6),
                                ("older", "seedream-4.5", 5)):  # one model in two files: serving between runs
        path = job_folder(tmp_path / root, model, passes / 10)
        data = json.loads(path.read_text())
        data["rows"][0]["task_tallies"] = [{"task_id": f"t{i}", "passes": passes, "judged": 10, "first_passed": True}
                                           for i in range(12)]
        path.write_text(json.dumps(data))
    old = tmp_path / "older" / "seedream-4.5" / "results.json"
    index = tmp_path / "index.html"
    args = [str(p) for p in sorted((tmp_path / "artifacts").glob("*/results.json"))]
    assert main([*args, str(old), "--prefer", "first", "--index", str(index), "-o", str(tmp_path / "R.md")]) == 0
    markdown, page = (tmp_path / "R.md").read_text(), index.read_text()
    said = [line for line in markdown.splitlines() if line.startswith(("Cannot be told apart", "Every pair"))]
    assert said and all(escape(line) in page for line in said)
    assert "<h2>Serving (not a model&#x27;s score)</h2>" in page
    assert "Serving (not a model's score)" in markdown
