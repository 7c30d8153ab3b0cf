"""A candidate is the file its record names: an image dropped beside it is a stray, never adopted over the paid
verdict, and reported; an image no record names (a run killed between the two writes) is still adopted.

The model is a conftest provider that returns JPEGs and logs every call; the judge is the real ``openai:MODEL``
judge against a loopback chat-completions fake that counts its calls.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from fake_models import models_conftest
from genai_fakes import FakeChat
from genai_fakes.chat import verdict_reply
from paid_benches import chat_judged_bench
from PIL import Image
from terminal_text import said

from pytest_hypeedit.engine.records import Record
from pytest_hypeedit.engine.store import Store

TASKS, REPEATS = 2, 2
ITEMS = TASKS * REPEATS

JPEG_CONFTEST = models_conftest(image="jpeg")


@pytest.fixture
def paid_run(pytester: pytest.Pytester, monkeypatch, tmp_path):
    with chat_judged_bench(pytester, monkeypatch, tmp_path, JPEG_CONFTEST, TASKS,
                           verdict_reply("PASS", "judged by the fake")) as judge:
        yield pytester, judge


def args(judge: FakeChat) -> list[str]:
    return ["-p", "no:cacheprovider", "--model", "paid", "--tasks", "mini.json", "--images-base", "images",
            "--repeats", str(REPEATS), "--outputs", "out", "--judge", "openai-rubric:judge-model",
            "--judge-base-url", judge.base_url]


def model_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def png(color) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buffer, format="PNG")
    return buffer.getvalue()


def test_a_stray_image_beside_a_paid_candidate_is_reported_and_never_adopted(paid_run, tmp_path):
    pytester, judge = paid_run
    pytester.runpytest(*args(judge)).assert_outcomes(passed=ITEMS)
    folder = pytester.path / "out" / "mini" / "paid" / "task-00"
    paid_record = json.loads((folder / "001.json").read_text())
    stray = folder / "001.png"  # .png comes before .jpg in the readers' order: it used to be adopted
    stray.write_bytes(png((255, 0, 0)))

    again = pytester.runpytest(*args(judge))
    again.assert_outcomes(passed=ITEMS)
    assert (len(model_calls(tmp_path)), len(judge.requests)) == (ITEMS, ITEMS)  # nothing bought or judged again
    kept = json.loads((folder / "001.json").read_text())
    assert kept["candidate"] == "001.jpg"
    assert kept["judgements"] == paid_record["judgements"]
    assert Record.from_dict(kept).cost == Record.from_dict(paid_record).cost == 0.04
    said(again, f"warning: {stray.relative_to(pytester.path)}: not the file its record names (the candidate is "
                "001.jpg); ignored, never adopted over a paid verdict")
    assert stray.read_bytes() == png((255, 0, 0))  # left alone for the user to look at


def test_an_image_whose_record_was_never_written_is_adopted(paid_run, tmp_path):
    pytester, judge = paid_run
    pytester.runpytest(*args(judge)).assert_outcomes(passed=ITEMS)
    record = pytester.path / "out" / "mini" / "paid" / "task-01" / "002.json"
    record.unlink()  # a run killed between writing the image (first) and its record
    again = pytester.runpytest(*args(judge))
    again.assert_outcomes(passed=ITEMS)
    assert len(model_calls(tmp_path)) == ITEMS  # the paid image is adopted, not bought again
    assert len(judge.requests) == ITEMS + 1  # its verdict went with the record: judged once more
    assert json.loads(record.read_text())["candidate"] == "002.jpg"
    assert "hypeedit: warning" not in again.stdout.str()


def test_a_record_naming_a_file_that_is_gone_buys_it_once_and_adopts_no_stray(paid_run, tmp_path):
    pytester, judge = paid_run
    pytester.runpytest(*args(judge)).assert_outcomes(passed=ITEMS)
    folder = pytester.path / "out" / "mini" / "paid" / "task-01"
    (folder / "001.jpg").unlink()
    (folder / "001.png").write_bytes(png((0, 255, 0)))  # not the paid image: never taken for it
    pytester.runpytest(*args(judge)).assert_outcomes(passed=ITEMS)
    assert model_calls(tmp_path)[ITEMS:] == ["task-01 1"]
    record = json.loads((folder / "001.json").read_text())
    assert record["candidate"] == "001.jpg" and (folder / "001.jpg").is_file()
    assert record["extra"]["lost_candidates"][0]["file"] == "001.jpg"
    pytester.runpytest(*args(judge)).assert_outcomes(passed=ITEMS)
    assert len(model_calls(tmp_path)) == ITEMS + 1  # bought once, not on every run


def test_a_candidate_bought_again_keeps_the_cost_of_its_first_purchase(paid_run, tmp_path):
    # The first image and its verdict were paid; when the image goes missing the candidate is bought again, and
    # the results' spent is both purchases (it used to be the last one only: $0.82 spent, $0.41 reported).
    pytester, judge = paid_run
    pytester.runpytest(*args(judge)).assert_outcomes(passed=ITEMS)
    first = json.loads((pytester.path / "out" / "results.json").read_text())["rows"][0]["spent"]
    assert first == pytest.approx(0.04 * ITEMS)
    (pytester.path / "out" / "mini" / "paid" / "task-00" / "002.jpg").unlink()
    pytester.runpytest(*args(judge)).assert_outcomes(passed=ITEMS)
    assert len(model_calls(tmp_path)) == ITEMS + 1
    row = json.loads((pytester.path / "out" / "results.json").read_text())["rows"][0]
    assert row["spent"] == pytest.approx(0.04 * len(model_calls(tmp_path)))  # what the model billed, all of it
    assert row["spent_breakdown"]["resubmitted"] == pytest.approx(0.04)
    record = json.loads((pytester.path / "out" / "mini" / "paid" / "task-00" / "002.json").read_text())
    assert record["extra"]["lost_candidates"][0]["file"] == "002.jpg" and Record.from_dict(record).cost == 0.04
    # the first image's cost: an entry of the call ledger, left behind; the second's its own, billed
    left, own = [call for call in record["calls"] if call["kind"] == "generation"]
    assert (own["state"], own["price"]) == ("billed", 0.04)
    assert (left["kind"], left["state"], left["price"], left["route"]) == ("generation", "left_behind", 0.04, "paid")
    pytester.runpytest(*args(judge)).assert_outcomes(passed=ITEMS)  # a third run reuses: same spend, once
    assert json.loads((pytester.path / "out" / "results.json").read_text())["rows"][0]["spent"] == \
        pytest.approx(0.04 * (ITEMS + 1))


# --------------------------------------------------------------------------- the store's own rules


def test_the_store_offers_the_named_file_and_calls_the_others_strays(tmp_path):
    store = Store(tmp_path)
    folder = tmp_path / "s" / "m" / "t"
    folder.mkdir(parents=True)
    for name in ("003.webp", "003.png", "003.jpg"):
        (folder / name).write_bytes(b"x")
    named = store.find("s", "m", "t", 3, named="003.jpg")
    assert named.candidate == folder / "003.jpg" and {p.name for p in named.strays} == {"003.webp", "003.png"}
    unnamed = store.find("s", "m", "t", 3)
    assert unnamed.candidate == folder / "003.webp" and len(unnamed.strays) == 2
    for made_up in ("004.jpg", "../../etc/passwd", "003.gif"):  # another repeat's, a path, not an image of ours
        found = store.find("s", "m", "t", 3, named=made_up)
        assert (found.candidate, found.missing, len(found.strays)) == (None, made_up, 3)
