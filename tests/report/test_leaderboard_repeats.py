"""The leaderboard keeps runs of different repeats apart, names Pass@k for what it is, and its HTML index prints every
row as its Markdown does (marks, list price, release)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_report_index import Page

from pytest_hypeedit.report.leaderboard import main

SETTINGS = {"retry_cap": 4, "review_cost": 0.27778, "judge": "gemini-3-flash"}


def row(model: str, repeats: int | None, split: str = "public", **overrides) -> dict:
    found = {"model": model, "split": split, "tasks": 50, "candidates": 50 * (repeats or 10), "judged": 50 * (repeats or 10),
             "errors": 0, "pass_rate": 0.4, "pass_at_4": 0.7, "pass_at_10": 0.8, "expected_attempts": 2.0,
             "effective_cost": 1.0, "first_attempt_pass_rate": 0.5, "hype_gap": 0.3}
    if repeats is not None:
        found["repeats"] = repeats
    return found | overrides


def write(tmp_path: Path, name: str, rows: list[dict], repeats: int, **extra) -> str:
    folder = tmp_path / name
    folder.mkdir()
    results = {"schema": "hypeedit-results/1", "settings": {**SETTINGS, "repeats": repeats}, "rows": rows, **extra}
    (folder / "results.json").write_text(json.dumps(results))
    (folder / "report.html").write_text(f"<html>report of {name}</html>")
    return str(folder / "results.json")


def tables(markdown: str) -> dict[str, list[list[str]]]:
    """Each '## ' section's first table: the header row, then the rows, as cell texts."""
    found: dict[str, list[list[str]]] = {}
    title = None
    for line in markdown.splitlines():
        if line.startswith("## "):
            title = re.sub(r" \(generated at .*\)$", "", line[3:])
        elif title and line.startswith("| ") and not line.startswith("| ---"):
            cells = [c.strip().replace("\\|", "|") for c in line.strip("|").split(" | ")]
            found.setdefault(title, [])
            if found[title] and cells[0] == "Model":  # a second table of the section (intervals): not this one
                title = None
                continue
            found[title].append(cells)
        elif title and found.get(title) and not line.strip():
            title = None  # the first table ended
    return found


def test_rows_of_2_and_4_repeats_are_never_one_table(tmp_path, capsys):
    """Planted: sections() grouping a split's rows by split alone -> one table holds both models under 'Pass@10'."""
    two = write(tmp_path, "two", [row("alpha", 2)], 2)
    four = write(tmp_path, "four", [row("beta", 4)], 4)
    assert main([two, four]) == 0
    found = tables(capsys.readouterr().out)
    assert sorted(found) == ["Public, 2 images per task", "Public, 4 images per task"]
    assert found["Public, 2 images per task"][0][3:] == ["Pass@2", "Expected attempts", "Effective cost/success",
                                                        "Hype gap@2"]
    assert [r[0] for r in found["Public, 2 images per task"][1:]] == ["alpha"]
    assert found["Public, 4 images per task"][0][3] == "Pass@4 (any)"
    assert [r[0] for r in found["Public, 4 images per task"][1:]] == ["beta"]


def test_an_older_file_without_row_repeats_is_placed_by_its_settings(tmp_path, capsys):
    two = write(tmp_path, "two", [row("alpha", None)], 2)
    ten = write(tmp_path, "ten", [row("beta", None)], 10)
    assert main([two, ten]) == 0
    found = tables(capsys.readouterr().out)
    assert [r[0] for r in found["Public, 2 images per task"][1:]] == ["alpha"]
    assert found["Public, 10 images per task"][0][3] == "Pass@10"


def test_a_2_repeat_run_is_never_beside_the_papers_10_repeat_figures(tmp_path, capsys):
    """Planted: the published rows set beside a section whatever its repeats -> the 2-repeat table holds them."""
    two = write(tmp_path, "two", [row("alpha", 2)], 2)
    assert main([two, "--with-published"]) == 0
    markdown = capsys.readouterr().out
    found = tables(markdown)
    ours = found["Public, 2 images per task"]
    assert [r[0] for r in ours[1:]] == ["alpha (judge)"] and "Pass@10" not in ours[0]
    published = found["Public, published (10 images per task)"]
    assert published[0][3] == "Pass@10" and all(r[0].endswith("(published)") for r in published[1:])
    assert "Pass@2: tasks with a PASS among their 2 images" in markdown and "do not compare with them" in markdown
    ten = write(tmp_path, "ten", [row("beta", 10)], 10)
    assert main([ten, "--with-published"]) == 0
    beside = tables(capsys.readouterr().out)["Public"]  # at 10 repeats: one table, the paper's rows beside
    assert "beta (judge)" in [r[0] for r in beside] and any(r[0].endswith("(published)") for r in beside)


def test_a_combined_row_pooled_over_different_repeats_is_left_out(tmp_path, capsys):
    two = write(tmp_path, "two", [row("alpha", 2, "public")], 2)
    four = write(tmp_path, "four", [row("alpha", 4, "private")], 4)
    assert main([two, four, "--json", str(tmp_path / "merged.json")]) == 0
    markdown = capsys.readouterr().out
    assert "## Combined" not in markdown and "- alpha: its splits were measured on different numbers" in markdown
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert [r["split"] for r in merged["rows"]] == ["public", "private"] and merged["combined_left_out"]


def test_the_index_prints_every_row_as_the_markdown_does(tmp_path):
    """Marks (incomplete, judge, published, release) and prices (list price) cell for cell.  Planted: the index's
    own cells at the price paid (effective_cost) -> the batch row differs; its model cell without the (incomplete)
    mark -> the partial row differs."""
    release = {"id": "r-1", "label": "rc1", "route": "ark", "provider_model": "ep-rel-b"}
    batch = row("batch", 10, effective_cost=0.50, effective_cost_list=1.00, cost_per_candidate=0.04,
                cost_per_candidate_paid=0.02, release=release)
    partial = row("partial", 10, pass_rate=0.2, release={"id": "r-2", "label": None, "route": "ark",
                                                         "provider_model": "ep-rel-c"})
    older = row("older", 4)  # no release: an older version's row
    same = row("same", 10, release={"id": "r-3", "label": None, "route": "openai", "provider_model": "same"})
    files = [write(tmp_path, "batch", [batch], 10), write(tmp_path, "older", [older], 4),
             write(tmp_path, "same", [same], 10),
             write(tmp_path, "partial", [partial], 10, complete=False,
                   coverage={"reasons": [{"reason": "errors", "count": 1, "detail": "1 error"}]})]
    markdown_path, index_path = tmp_path / "RESULTS.md", tmp_path / "index.html"
    assert main([*files, "--allow-incomplete", "--with-published", "-o", str(markdown_path),
                 "--index", str(index_path)]) == 0
    markdown = tables(markdown_path.read_text())
    page = Page(index_path.read_text())
    html_rows = [[re.sub(r" \(report\)$", "", cells[0]), *cells[1:]] for cells in page.rows if cells]
    markdown_rows = [cells for section in markdown.values() for cells in section[1:]]
    assert html_rows == markdown_rows
    by_model = {cells[0]: cells for cells in markdown_rows}
    assert by_model["batch (release ep-rel-b, rc1) (judge)"][5] == "$1.00"  # list price, not the $0.50 paid
    assert "same (judge)" in by_model  # a provider model id that is the model's name says nothing more
    assert "partial (release ep-rel-c) (judge) (incomplete)" in by_model
    assert "older (judge)" in by_model
    html = index_path.read_text()
    for title in markdown:  # the same tables, titled the same
        assert f"<h2>{title}</h2>" in html
    assert "at each model&#x27;s list price" in html or "at each model's list price" in html
