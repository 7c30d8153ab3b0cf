"""A verdict belongs to the bytes it judged (engine/provenance.py): a candidate replaced on disk after its PASS, by
its reference image, by a text file or by a symbolic link to a file outside the outputs, is never counted with the
old verdict.  The model is test_stray_files' conftest provider (JPEGs, every call logged); the judge is the real
``openai-rubric`` judge against a loopback chat-completions fake that counts its calls.
"""

from __future__ import annotations

import json
import os

import pytest
from genai_fakes.chat import verdict_reply
from paid_benches import chat_judged_bench
from terminal_text import said
from test_stray_files import ITEMS, JPEG_CONFTEST, args, model_calls

from pytest_hypeedit.engine.records import Record
from pytest_hypeedit.engine.store import Store
from pytest_hypeedit.errors import NotRegularFile
from pytest_hypeedit.files import check_regular, file_signature, sha256_of


@pytest.fixture
def judged_run(pytester: pytest.Pytester, monkeypatch, tmp_path):
    """A first run in which every candidate passed; yields (pytester, judge, the folder of task-00's candidates)."""
    with chat_judged_bench(pytester, monkeypatch, tmp_path, JPEG_CONFTEST, 2,
                           verdict_reply("PASS", "judged by the fake")) as judge:
        pytester.runpytest(*args(judge)).assert_outcomes(passed=ITEMS)
        judge.default = verdict_reply("FAIL", "the second look")  # a verdict given again is told apart
        yield pytester, judge, pytester.path / "out" / "mini" / "paid" / "task-00"


def record_of(folder, repeat=1) -> dict:
    return json.loads((folder / f"{repeat:03d}.json").read_text())


def test_the_record_keeps_the_hash_of_the_bytes_its_verdict_judged(judged_run):
    pytester, judge, folder = judged_run
    record = record_of(folder)
    assert record["candidate_sha256"] == sha256_of(folder / "001.jpg", folder)
    # and the file's signature, written with its hash when it was saved: the next run need not read it again
    assert record["candidate_stat"] == file_signature(os.stat(folder / "001.jpg"))
    reference = pytester.path / "images" / "task-00" / "001.png"
    assert record["references_sha256"] == [sha256_of(reference, None)]
    again = pytester.runpytest(*args(judge))
    again.assert_outcomes(passed=ITEMS)  # the same bytes: the PASS is reused, nothing is asked again
    assert len(judge.requests) == ITEMS and "hypeedit: warning" not in again.stdout.str()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_candidate_replaced_by_its_reference_is_judged_again(judged_run, tmp_path, workers):
    pytester, judge, folder = judged_run
    old = record_of(folder)
    assert old["signals"]["unchanged"] is False
    (folder / "001.jpg").write_bytes((pytester.path / "images" / "task-00" / "001.png").read_bytes())
    again = pytester.runpytest(*args(judge), *workers)
    again.assert_outcomes(passed=ITEMS - 1, failed=1)  # the old PASS is not counted: the new verdict is
    assert len(judge.requests) == ITEMS + 1 and len(model_calls(tmp_path)) == ITEMS  # judged, not bought again
    said(again, "*hypeedit: warning: *task-00?001.jpg: its bytes changed since its verdict; the old "
               "verdict is not counted, the candidate was judged again*")
    record = record_of(folder)
    assert record["verdict"] == "FAIL" and record["candidate_sha256"] == sha256_of(folder / "001.jpg", folder)
    assert Record.from_dict(record).cost == Record.from_dict(old).cost > 0  # the image paid for stays paid for
    history = record["extra"]["changed_candidates"]
    assert [(h["verdict"], h["sha256"]) for h in history] == [("PASS", old["candidate_sha256"])]
    assert record["signals"]["unchanged"] is True  # measured again, on the bytes now there
    pytester.runpytest(*args(judge)).assert_outcomes(passed=ITEMS - 1, failed=1)
    assert len(judge.requests) == ITEMS + 1  # judged once, then reused


def test_a_candidate_replaced_by_a_text_file_is_bought_again(judged_run, tmp_path):
    pytester, judge, folder = judged_run
    (folder / "001.jpg").write_text("root:x:0:0:root:/root:/bin/bash\n")
    again = pytester.runpytest(*args(judge))
    again.assert_outcomes(passed=ITEMS - 1, failed=1)
    assert model_calls(tmp_path)[ITEMS:] == ["task-00 1"] and len(judge.requests) == ITEMS + 1
    said(again, "*hypeedit: warning: *task-00?001.jpg: not a readable image any more (*); the old "
               "verdict is not counted, the candidate was bought again*")
    record = record_of(folder)
    assert record["extra"]["lost_candidates"][0]["verdict"] == "PASS"
    assert record["candidate_sha256"] == sha256_of(folder / "001.jpg", folder)


def test_a_candidate_replaced_by_a_link_outside_is_unusable_and_never_read(judged_run, tmp_path):
    pytester, judge, folder = judged_run
    outside = tmp_path / "secret.png"
    outside.write_bytes((pytester.path / "images" / "task-00" / "001.png").read_bytes())
    (folder / "001.jpg").unlink()
    (folder / "001.jpg").symlink_to(outside)
    again = pytester.runpytest(*args(judge), "--html", "report.html")
    again.assert_outcomes(passed=ITEMS - 1, errors=1)
    said(again, "*task-00?001.jpg: a symbolic link; the outputs hold regular files only, it was not "
               "followed*")
    assert len(judge.requests) == ITEMS and len(model_calls(tmp_path)) == ITEMS  # nothing sent, nothing bought
    assert (folder / "001.jpg").is_symlink()  # left for the user to look at
    assets = pytester.path / "hypeedit-assets" / "mini" / "paid" / "task-00"
    assert sorted(p.name for p in assets.iterdir()) == ["002.thumb.webp"]  # nothing made of the file outside
    assert "001.jpg: a symbolic link" in (pytester.path / "report.html").read_text()  # the row says why


def test_a_link_to_etc_passwd_with_a_pass_record_is_not_counted(judged_run, tmp_path):
    pytester, judge, folder = judged_run
    (folder / "002.jpg").unlink()
    (folder / "002.jpg").symlink_to("/etc/passwd")
    again = pytester.runpytest(*args(judge))
    again.assert_outcomes(passed=ITEMS - 1, errors=1)
    assert len(judge.requests) == ITEMS and len(model_calls(tmp_path)) == ITEMS


def test_a_linked_task_folder_is_unusable(judged_run, tmp_path):
    pytester, judge, folder = judged_run
    moved = tmp_path / "elsewhere"
    folder.rename(moved)
    folder.symlink_to(moved, target_is_directory=True)
    again = pytester.runpytest(*args(judge))
    again.assert_outcomes(passed=ITEMS - 2, errors=2)  # both repeats of task-00
    said(again, "*task-00: a symbolic link inside *; the outputs hold real folders only*")
    assert len(judge.requests) == ITEMS and len(model_calls(tmp_path)) == ITEMS


def test_a_record_of_an_older_version_is_trusted_once_and_bound(judged_run, tmp_path):
    pytester, judge, folder = judged_run
    record = record_of(folder)
    digest = record.pop("candidate_sha256")
    record.pop("references_sha256")
    (folder / "001.json").write_text(json.dumps(record))
    again = pytester.runpytest(*args(judge))
    again.assert_outcomes(passed=ITEMS)  # the migration path: its PASS stands, nothing is asked
    assert len(judge.requests) == ITEMS and "hypeedit: warning" not in again.stdout.str()
    assert record_of(folder)["candidate_sha256"] == digest  # recorded now: the next run checks it


def test_an_older_record_whose_file_is_not_an_image_is_bought_again(judged_run, tmp_path):
    pytester, judge, folder = judged_run
    record = record_of(folder)
    record.pop("candidate_sha256")
    (folder / "001.json").write_text(json.dumps(record))
    (folder / "001.jpg").write_text("not an image")
    pytester.runpytest(*args(judge)).assert_outcomes(passed=ITEMS - 1, failed=1)
    assert model_calls(tmp_path)[ITEMS:] == ["task-00 1"]


def test_changed_reference_images_send_the_verdict_back_to_the_judge(judged_run, tmp_path):
    pytester, judge, _ = judged_run
    from benchdata import png_bytes

    (pytester.path / "images" / "task-00" / "001.png").write_bytes(png_bytes((1, 2, 3)))
    again = pytester.runpytest(*args(judge))
    again.assert_outcomes(passed=ITEMS - 2, failed=2)  # both repeats of task-00 judged again
    said(again, "*task-00?00?.jpg: the task's reference images changed since its verdict*")
    assert len(model_calls(tmp_path)) == ITEMS


# --------------------------------------------------------------------------- the helpers' own rules


def test_check_regular_does_not_accept_links_and_folders_and_what_lies_outside(tmp_path):
    root = tmp_path / "out"
    folder = root / "s" / "m" / "t"
    folder.mkdir(parents=True)
    (folder / "001.png").write_bytes(b"x")
    check_regular(folder / "001.png", root)
    (folder / "002.png").symlink_to(folder / "001.png")  # a link, even to a file inside
    (folder / "003.png").mkdir()
    (root / "s" / "linked").symlink_to(root / "s" / "m", target_is_directory=True)
    outside = tmp_path / "other.png"
    outside.write_bytes(b"x")
    for path in (folder / "002.png", folder / "003.png", root / "s" / "linked" / "t" / "001.png", outside):
        with pytest.raises(NotRegularFile, match="symbolic link|not a regular file|not inside"):
            check_regular(path, root)
    with pytest.raises(FileNotFoundError):
        check_regular(folder / "004.png", root)
    linked_root = tmp_path / "via-link"
    linked_root.symlink_to(root, target_is_directory=True)
    check_regular(linked_root / "s" / "m" / "t" / "001.png", linked_root)  # the root the user chose may be one


def test_the_store_does_not_accept_a_linked_candidate_record_or_folder(tmp_path):
    store = Store(tmp_path)
    folder = tmp_path / "s" / "m" / "t"
    folder.mkdir(parents=True)
    (folder / "001.jpg").write_bytes(b"x")
    assert store.find("s", "m", "t", 1, named="001.jpg").unusable is None
    (folder / "001.json").symlink_to(tmp_path / "elsewhere.json")
    assert "001.json: a symbolic link" in store.find("s", "m", "t", 1, named="001.jpg").unusable
    (tmp_path / "elsewhere.json").write_text(json.dumps({"split": "s", "model": "m", "task_id": "t", "repeat": 1}))
    assert store.read_record("s", "m", "t", 1) is None  # a linked record is never read
    os.unlink(folder / "001.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "s" / "m" / "u").symlink_to(empty, target_is_directory=True)  # nothing in it yet: nothing written
    assert "u: a symbolic link inside" in store.find("s", "m", "u", 1).unusable
    (folder / "001.png").symlink_to(folder / "001.jpg")
    found = store.find("s", "m", "t", 1, named="001.jpg")
    assert found.candidate is None and "001.png: a symbolic link" in found.unusable


def test_an_adopted_image_is_bound_to_its_bytes(judged_run, tmp_path):
    pytester, judge, folder = judged_run
    (folder / "002.json").unlink()  # a run killed between writing the image and its record: the image is adopted
    pytester.runpytest(*args(judge)).assert_outcomes(passed=ITEMS - 1, failed=1)
    assert record_of(folder, 2)["candidate_sha256"] == sha256_of(folder / "002.jpg", folder)
    (folder / "002.jpg").write_bytes((pytester.path / "images" / "task-00" / "001.png").read_bytes())
    judge.default = verdict_reply("PASS", "a third look")
    pytester.runpytest(*args(judge)).assert_outcomes(passed=ITEMS)  # judged once more: the bytes changed
    assert len(judge.requests) == ITEMS + 2
