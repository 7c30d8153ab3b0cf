"""A candidate belongs to the release that made it (engine/release.py): issue 33's first finding, end to end.

A models file points ``ourmodel`` at ``provider_model: ep-rel-a``, a run buys its candidates; then the file
points it at ``ep-rel-b`` (or only ``--release`` changes) and a second run on the same outputs buys its own, in
its own folder, and reports its own figures; the first release's candidates stay on disk, untouched, and the
results name each release.  A fake provider paints release ep-rel-a's images red (PASS) and the others' red only
on repeat 1 (fake_models.ModelIdProvider, fake_judges.PixelJudge), so the figures tell which release was counted.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from benchdata import make_tasks, write_split
from fake_judges import judges_conftest
from fake_models import models_conftest

TASKS, REPEATS = 3, 2
PLANNED = TASKS * REPEATS


def models_file(provider_model: str, release: str | None = None) -> str:
    extra = f"\n    release: {release}" if release else ""
    return f"models:\n  ourmodel:\n    route: paid\n    provider_model: {provider_model}\n    price: 0.04{extra}\n"


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path) -> pytest.Pytester:
    pytester.makeconftest(models_conftest("ModelIdProvider", models=(), log="{task} {model} {repeat}")
                          + judges_conftest("PixelJudge"))
    write_split(pytester.path, "mini", make_tasks(TASKS), pytester.path / "images")
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    return pytester


def run(bench: pytest.Pytester, *extra: str) -> pytest.RunResult:
    return bench.runpytest("-p", "no:cacheprovider", "--model", "ourmodel", "--models-file", "models.yaml",
                           "--tasks", "mini.json", "--images-base", "images", "--repeats", str(REPEATS),
                           "--outputs", "out", "--judge", "pixeljudge", *extra)


def calls(tmp_path: Path) -> int:
    log = tmp_path / "calls.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def row(bench: pytest.Pytester) -> dict:
    rows = json.loads((bench.path / "out" / "results.json").read_text())["rows"]
    return next(r for r in rows if r["split"] == "mini")


def images(folder: Path) -> dict[str, str]:
    """Every candidate image under ``folder``, by path, with the SHA-256 of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("[0-9][0-9][0-9].png"))}


def records(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.rglob("[0-9][0-9][0-9].json"))]


def test_a_new_provider_model_buys_its_own_candidates_and_keeps_the_old(bench, tmp_path):
    (bench.path / "models.yaml").write_text(models_file("ep-rel-a"))
    run(bench).assert_outcomes(passed=PLANNED)
    first = row(bench)
    assert first["pass_rate"] == 1.0 and first["candidates"] == PLANNED
    assert first["release"]["provider_model"] == "ep-rel-a" and first["release"]["label"] is None
    assert set(first["release"]) == {"id", "label", "route", "provider_model"}
    old = images(bench.path / "out" / "mini" / "ourmodel")
    assert len(old) == PLANNED and calls(tmp_path) == PLANNED

    (bench.path / "models.yaml").write_text(models_file("ep-rel-b"))
    result = run(bench)
    result.assert_outcomes(passed=PLANNED // 2, failed=PLANNED // 2)  # its own figures: red on repeat 1 only
    second = row(bench)
    assert calls(tmp_path) == 2 * PLANNED  # every candidate of the new release bought, once
    assert second["release"]["provider_model"] == "ep-rel-b" and second["release"]["id"] != first["release"]["id"]
    assert second["pass_rate"] == 0.5 and second["candidates"] == PLANNED and second["spent"] > 0
    aside = bench.path / "out" / "mini" / f"ourmodel@{second['release']['id']}"
    assert images(bench.path / "out" / "mini" / "ourmodel") == old  # the old release's, untouched
    assert len(images(aside)) == PLANNED
    assert {r["release"]["provider_model"] for r in records(aside)} == {"ep-rel-b"}
    assert {r["release"]["provider_model"] for r in records(bench.path / "out" / "mini" / "ourmodel")} == {"ep-rel-a"}
    text = result.stdout.str()
    assert f"release of ourmodel: ep-rel-b via paid (id {second['release']['id']})" in text
    assert "holds another release's candidates (kept, not counted)" in text

    # each release resumes in its own folder, paying nothing again, with its own figures
    (bench.path / "models.yaml").write_text(models_file("ep-rel-a"))
    run(bench).assert_outcomes(passed=PLANNED)
    assert calls(tmp_path) == 2 * PLANNED and row(bench)["pass_rate"] == 1.0
    assert row(bench)["release"]["id"] == first["release"]["id"]
    (bench.path / "models.yaml").write_text(models_file("ep-rel-b"))
    run(bench).assert_outcomes(passed=PLANNED // 2, failed=PLANNED // 2)
    assert calls(tmp_path) == 2 * PLANNED and row(bench)["pass_rate"] == 0.5


def test_only_the_release_label_changed(bench, tmp_path):
    """An endpoint that never changes name ("latest"): the label is what tells the releases apart."""
    (bench.path / "models.yaml").write_text(models_file("ep-latest"))
    run(bench, "--release", "2026-11-21").assert_outcomes(passed=PLANNED // 2, failed=PLANNED // 2)
    first = row(bench)
    assert first["release"]["label"] == "2026-11-21" and calls(tmp_path) == PLANNED
    old = images(bench.path / "out" / "mini" / "ourmodel")

    result = run(bench, "--release", "2026-11-28")
    result.assert_outcomes(passed=PLANNED // 2, failed=PLANNED // 2)
    second = row(bench)
    assert calls(tmp_path) == 2 * PLANNED  # bought again: another release
    assert second["release"]["label"] == "2026-11-28" and second["release"]["id"] != first["release"]["id"]
    assert second["spent"] > 0 and second["candidates"] == PLANNED
    assert images(bench.path / "out" / "mini" / "ourmodel") == old
    assert len(images(bench.path / "out" / "mini" / f"ourmodel@{second['release']['id']}")) == PLANNED
    assert "release 2026-11-28" in result.stdout.str()

    # the label in the models file is the same release as the same label on the command line
    (bench.path / "models.yaml").write_text(models_file("ep-latest", "2026-11-28"))
    run(bench).assert_outcomes(passed=PLANNED // 2, failed=PLANNED // 2)
    assert calls(tmp_path) == 2 * PLANNED and row(bench)["release"]["id"] == second["release"]["id"]


def test_a_label_that_is_no_plain_word_is_a_usage_error(bench, tmp_path):
    (bench.path / "models.yaml").write_text(models_file("ep-rel-a"))
    result = run(bench, "--release", "v1\x1b[2J;rm -rf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--release" in result.stderr.str() and "not a plain label" in result.stderr.str()
    assert calls(tmp_path) == 0 and not (bench.path / "out").exists()


def as_an_earlier_version_wrote_it(outputs: Path) -> None:
    """The outputs as a version before releases left them: no marker, no release in any record."""
    shutil.rmtree(outputs / ".hypeedit-releases", ignore_errors=True)
    for path in outputs.rglob("[0-9][0-9][0-9].json"):
        record = json.loads(path.read_text())
        record.pop("release", None)
        path.write_text(json.dumps(record))


def test_an_earlier_versions_records_are_adopted_only_when_they_prove_the_release(bench, tmp_path):
    (bench.path / "models.yaml").write_text(models_file("ep-rel-a"))
    run(bench).assert_outcomes(passed=PLANNED)
    outputs = bench.path / "out"
    as_an_earlier_version_wrote_it(outputs)
    old = images(outputs / "mini" / "ourmodel")

    # the same provider model and route, no label: proved, adopted, nothing bought, and marked from now on
    result = run(bench)
    result.assert_outcomes(passed=PLANNED)
    assert calls(tmp_path) == PLANNED and row(bench)["pass_rate"] == 1.0
    assert "another release" not in result.stdout.str()
    assert (outputs / ".hypeedit-releases" / "mini" / "ourmodel.json").is_file()
    as_an_earlier_version_wrote_it(outputs)

    # another provider model: the old records cannot be this release's; kept, not counted, said once
    (bench.path / "models.yaml").write_text(models_file("ep-rel-b"))
    result = run(bench)
    result.assert_outcomes(passed=PLANNED // 2, failed=PLANNED // 2)
    assert calls(tmp_path) == 2 * PLANNED and row(bench)["pass_rate"] == 0.5
    text = result.stdout.str()
    assert text.count("written by an earlier version") == 1 and "kept, not counted" in text
    assert images(outputs / "mini" / "ourmodel") == old
    assert not (outputs / ".hypeedit-releases" / "mini" / "ourmodel.json").exists()  # not marked as anyone's

    # the same provider model with a label: an earlier version recorded no label, so nothing proves it
    (bench.path / "models.yaml").write_text(models_file("ep-rel-a"))
    run(bench, "--release", "v2").assert_outcomes(passed=PLANNED)
    assert calls(tmp_path) == 3 * PLANNED and images(outputs / "mini" / "ourmodel") == old


def test_a_baseline_of_the_same_release_is_warned_about(bench, tmp_path):
    (bench.path / "models.yaml").write_text(models_file("ep-rel-a"))
    run(bench, "--results", "accepted.json").assert_outcomes(passed=PLANNED)

    (bench.path / "models.yaml").write_text(models_file("ep-rel-b"))
    other = run(bench, "--baseline", "accepted.json")
    assert "compared with itself" not in other.stdout.str()
    assert row(bench)["baseline_release"]["provider_model"] == "ep-rel-a"

    (bench.path / "models.yaml").write_text(models_file("ep-rel-a"))
    same = run(bench, "--baseline", "accepted.json", "--html", "rep/report.html")
    same.assert_outcomes(passed=PLANNED)
    assert "the baseline of ourmodel is the same release" in same.stdout.str()
    report = (bench.path / "rep" / "report.html").read_text(encoding="utf-8")
    release = row(bench)["release"]
    assert f"ep-rel-a via paid (id {release['id']})" in report  # What ran names the release
    assert "a release compared with itself" in report


def test_a_record_of_another_release_copied_into_this_ones_folder_is_never_counted_nor_overwritten(bench, tmp_path):
    (bench.path / "models.yaml").write_text(models_file("ep-rel-a"))
    run(bench).assert_outcomes(passed=PLANNED)
    (bench.path / "models.yaml").write_text(models_file("ep-rel-b"))
    run(bench).assert_outcomes(passed=PLANNED // 2, failed=PLANNED // 2)
    release = row(bench)["release"]["id"]
    ours, theirs = bench.path / "out" / "mini" / f"ourmodel@{release}", bench.path / "out" / "mini" / "ourmodel"
    for name in ("002.json", "002.png"):  # release a's repeat 2 of task-00 (a PASS) over release b's (a FAIL)
        shutil.copyfile(theirs / "task-00" / name, ours / "task-00" / name)
    planted = (ours / "task-00" / "002.json").read_bytes()

    result = run(bench, "-rE")
    result.assert_outcomes(passed=PLANNED // 2, failed=PLANNED // 2 - 1, errors=1)
    said = " ".join(line.strip() for line in result.outlines)  # folded to the terminal's width
    assert f"ERROR task-00 ourmodel r002: out/mini/ourmodel@{release}/task-00/002.json: a record of another " \
           "release" in said
    partial = json.loads((bench.path / "out" / "results.partial.json").read_text())["rows"][0]
    # task-00 counts its repeat 1 only (a PASS), each other task 1 of 2: release a's planted PASS is not counted
    assert partial["pass_rate"] == pytest.approx((1 + 0.5 + 0.5) / 3) and partial["errors"] == 1
    assert partial["spent"] == pytest.approx(5 * 0.04)  # nor what it cost
    assert (ours / "task-00" / "002.json").read_bytes() == planted  # kept as it is, never overwritten
    assert calls(tmp_path) == 2 * PLANNED  # nothing bought over it


def test_every_xdist_worker_buys_into_the_folder_of_the_run_release(bench, tmp_path):
    (bench.path / "models.yaml").write_text(models_file("ep-rel-a"))
    run(bench, "-n", "2").assert_outcomes(passed=PLANNED)
    (bench.path / "models.yaml").write_text(models_file("ep-rel-b"))
    run(bench, "-n", "2").assert_outcomes(passed=PLANNED // 2, failed=PLANNED // 2)
    assert calls(tmp_path) == 2 * PLANNED
    release = row(bench)["release"]["id"]
    assert len(images(bench.path / "out" / "mini" / f"ourmodel@{release}")) == PLANNED
    assert {r["release"]["id"] for r in records(bench.path / "out" / "mini" / f"ourmodel@{release}")} == {release}


def test_a_baselines_candidates_are_read_from_the_folder_of_its_release(bench, tmp_path):
    from pytest_hypeedit.report.baseline import read_candidates

    (bench.path / "models.yaml").write_text(models_file("ep-rel-a"))
    run(bench).assert_outcomes(passed=PLANNED)
    (bench.path / "models.yaml").write_text(models_file("ep-rel-b"))
    run(bench, "--results", "b.json").assert_outcomes(passed=PLANNED // 2, failed=PLANNED // 2)
    b = json.loads((bench.path / "b.json").read_text())["rows"][0]["release"]

    (bench.path / "models.yaml").write_text(models_file("ep-rel-a"))
    run(bench, "--baseline", "b.json", "--html", "rep/report.html").assert_outcomes(passed=PLANNED)
    assert row(bench)["baseline_release"] == b
    found = read_candidates(bench.path / "out", "mini", "ourmodel", "task-00", REPEATS, b["id"])
    assert [c.record.release["provider_model"] for c in found] == ["ep-rel-b"] * REPEATS
    assert all(c.image is not None and c.image.parent.parent.name == f"ourmodel@{b['id']}" for c in found)
    report = (bench.path / "rep" / "report.html").read_text(encoding="utf-8")
    assert "baseline/mini/ourmodel/task-00/002" in report  # its candidates shown beside this run's
