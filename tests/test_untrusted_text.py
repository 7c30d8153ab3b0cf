"""Text from outside reaches no output raw: provider error texts, refusals and judge reasoning are cleaned of control
characters, escape sequences and bidi overrides, no output line is a CI workflow command, and every such text is
capped where it is stored (pytest_hypeedit/text.py).  Checked in the terminal (``--tb=short``, ``-rA``), the junit
XML, the records, the results and the HTML report, for texts that enter fresh and for records read back from disk.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchdata import make_tasks, write_split
from fake_judges import judges_conftest
from fake_models import models_conftest

from pytest_hypeedit.errors import JudgeError, ProviderError, Refusal
from pytest_hypeedit.judges.base import Verdict
from pytest_hypeedit.text import (
    COMMAND_MARKER,
    ERROR_LIMIT,
    REASONING_LIMIT,
    clean_text,
)

HOSTILE = ("bad \x1b[31mred\x1b[0m \x1b]0;pwned-title\x07 \x1b]52;c;ZXZpbA==\x1b\\ bell\x07 nul\x00 del\x7f "
           "c1\x9b2J \u202eevil\u202c\r\n::add-mask::secret-value\n  ::stop-commands::tok123\r::error file=x::boom\n"
           "##[error]old-syntax\u2028::warning::sep")
#: What none of the outputs may hold (the escapes' introducers, BEL, NUL, DEL, C1 CSI, the bidi override).
FORBIDDEN = ("\x1b", "\x07", "\x00", "\x7f", "\x9b", "\u202e", "\u202c", "\u2028")


def command_lines(text: str) -> list[str]:
    """Lines a CI runner would execute: first non-space characters ``::`` or ``##[`` (any line break)."""
    return [line for line in text.replace("\r", "\n").replace("\u2028", "\n").split("\n")
            if line.lstrip().startswith(("::", "##["))]


# --------------------------------------------------------------------------- the function


def test_clean_text_drops_escapes_controls_and_bidi_and_marks_command_lines():
    cleaned = clean_text(HOSTILE, 10_000)
    assert not [char for char in FORBIDDEN if char in cleaned], repr(cleaned)
    assert "pwned-title" not in cleaned and "ZXZpbA" not in cleaned  # OSC strings go whole, not only ESC
    assert command_lines(cleaned) == []
    assert f"{COMMAND_MARKER}::add-mask::secret-value" in cleaned  # shown, marked, never executed
    assert f"  {COMMAND_MARKER}::stop-commands::tok123" in cleaned.split("\n")
    assert f"{COMMAND_MARKER}##[error]old-syntax" in cleaned
    assert "bad red  " in cleaned and "evil" in cleaned and "\n" in cleaned


@pytest.mark.parametrize("text, cleaned", [("::add-mask::x", "| ::add-mask::x"), ("##[error]y", "| ##[error]y"),
                                           ("ok\n  ::error::z", "ok\n  | ::error::z"), ("##vso[task]w", "| ##vso[task]w")])
def test_a_command_line_with_nothing_else_to_clean_is_marked_too(text, cleaned):
    assert clean_text(text, 100) == cleaned


def test_a_rater_note_that_reads_as_a_command_is_marked_and_one_line():
    from pytest_hypeedit.labels import clean_note

    assert clean_note("::add-mask::x\n::error::y") == "| ::add-mask::x ::error::y"
    assert clean_note("\x1b[31mred\x1b[0m \u202eok") == "red ok"  # escape sequences go whole


def test_clean_text_keeps_honest_text_as_it_is():
    honest = "The car is gone.\n\tThe sky: unchanged; a::b and std::string stay. ünïcode 漢字 ✓"
    assert clean_text(honest, 1000) == honest


def test_clean_text_caps_and_says_how_much_was_cut():
    assert clean_text("x" * 100, 10) == "xxxxxxxxxx... [90 more characters cut]"
    many = clean_text("::a\n" * 1000, 50)
    assert len(many) < 50 + 40 and command_lines(many) == []


def test_a_huge_text_is_cut_before_it_is_scanned():
    import time

    huge = "\x1b]" + "y" * (64 << 20)
    started = time.monotonic()
    cleaned = clean_text(huge, REASONING_LIMIT)
    assert time.monotonic() - started < 1.0
    assert len(cleaned) < REASONING_LIMIT + 60


def test_one_line_mode_turns_breaks_into_spaces():
    assert clean_text("a\nb\tc\r\n::d", 100, multiline=False) == "a b c ::d"


def test_errors_refusals_and_verdicts_are_clean_where_they_are_made():
    for text in (str(ProviderError(HOSTILE)), str(JudgeError(HOSTILE * 1000)), Refusal(HOSTILE).reason):
        assert not [c for c in FORBIDDEN if c in text] and command_lines(text) == []
    assert len(str(ProviderError("e" * 100_000))) < ERROR_LIMIT + 60
    verdict = Verdict(passed=False, reasoning=HOSTILE + "r" * 100_000, judge="j",
                      votes=[{"rater": "ann", "note": HOSTILE}])
    assert len(verdict.reasoning) < REASONING_LIMIT + 60 and command_lines(verdict.reasoning) == []
    assert "\x1b" not in verdict.votes[0]["note"] and command_lines(verdict.votes[0]["note"]) == []


# --------------------------------------------------------------------------- end to end

CONFTEST = models_conftest("HostileProvider", ({"name": "hostile", "route": "hostile", "provider_model": "h-1",
                                                "price": 0.01},), route="hostile", log=None, hostile=HOSTILE) + \
    judges_conftest("HostileJudge", hostile=HOSTILE) + """
import pytest

@pytest.hookimpl(optionalhook=True)
def pytest_hypeedit_record(config, record):
    # what a plugin sees of each record on the controller, written as it is
    with open("hook.log", "a", encoding="utf-8") as log:
        log.write(f"{record.reasoning}\\n{record.error}\\n{record.refusal}\\n{record.votes}\\n{record.request_id}\\n")
"""

ARGS = ["-p", "no:cacheprovider", "--model", "hostile", "--tasks", "mini.json", "--images-base", "images",
        "--repeats", "2", "--outputs", "out", "--judge", "hostilejudge", "--junitxml", "junit.xml",
        "--html", "report/report.html", "--tb=short", "-rA"]


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path):
    pytester.makeconftest(CONFTEST)
    write_split(pytester.path, "mini", make_tasks(3), pytester.path / "images")
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    return pytester


def outputs_of(root: Path, result) -> dict[str, str]:
    """The terminal and every file the run wrote (records, results, junit XML, report), by name."""
    files = {str(path.relative_to(root)): path.read_bytes().decode("utf-8", "replace")
             for path in root.rglob("*") if path.is_file() and path.suffix in (".json", ".md", ".xml", ".html", ".log")}
    assert {"out/results.json", "junit.xml", "report/report.html", "hook.log"} <= set(files)  # a missing file proves nothing
    return {"terminal": result.stdout.str() + result.stderr.str(), **files}


def assert_clean(outputs: dict[str, str]) -> None:
    for name, text in outputs.items():
        found = [repr(char) for char in FORBIDDEN if char in text]
        assert not found, f"{name} holds {found}"
        assert command_lines(text) == [], f"{name}: {command_lines(text)[:3]}"


def test_hostile_provider_texts_and_reasoning_reach_no_output_raw(bench, monkeypatch):
    monkeypatch.setenv("HOSTILE", "1")
    result = bench.runpytest(*ARGS)
    result.assert_outcomes(failed=3, errors=3)
    outputs = outputs_of(bench.path, result)
    assert_clean(outputs)
    terminal = outputs["terminal"]
    assert f"{COMMAND_MARKER}::add-mask::secret-value" in terminal  # the texts did reach it, marked
    assert len(terminal) < 200_000  # 2 MB of reasoning per failure, cut where stored
    assert len(outputs["junit.xml"]) < 400_000
    records = [json.loads(text) for name, text in outputs.items() if name.startswith("out/mini/")]
    assert max(len(r["reasoning"] or "") for r in records) < REASONING_LIMIT + 60
    assert max(len(r["error"] or "") for r in records) < ERROR_LIMIT + 60


def test_a_record_read_back_from_disk_is_cleaned_before_any_output(bench):
    bench.runpytest(*ARGS).assert_outcomes(failed=6)  # plain reasoning, stored as a reusable verdict
    for path in (bench.path / "out" / "mini" / "hostile").rglob("[0-9][0-9][0-9].json"):
        data = json.loads(path.read_text())
        data["judgements"]["hostilejudge"]["reasoning"] = HOSTILE + "z" * 100_000
        path.write_text(json.dumps(data))
    (bench.path / "hook.log").unlink()
    result = bench.runpytest(*ARGS)
    result.assert_outcomes(failed=6)  # the verdicts reused (no judge call), their reasoning hostile
    outputs = outputs_of(bench.path, result)
    assert f"{COMMAND_MARKER}::add-mask::secret-value" in outputs["hook.log"]  # the hostile text got that far
    assert_clean({name: text for name, text in outputs.items() if not name.startswith("out/mini/")})
    # 100 KB of reasoning per record read back, cut to REASONING_LIMIT: six FAILs, each shown by --tb=short and -rA
    assert len(outputs["terminal"]) < 6 * 2 * REASONING_LIMIT + 20_000 < 6 * 100_000
