"""The session (glue/session.py) takes the records of its own process's items as they are handed over, without
parsing them back from their reports' property, but trusts them no more than a report: their outside texts are
cleaned, and a property changed on its way (a plugin's hook) is read as the report carries it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TINY = Path(__file__).resolve().parents[2] / "examples" / "tiny-split"
ARGS = ("--model", "identity", f"--tasks={TINY / 'tiny.json'}", f"--images-base={TINY / 'images'}",
        "--judge", f"labels:{TINY / 'rater1.json'}", "--outputs", "out", "-p", "no:cacheprovider")
#: Every record the session aggregated, as its hook (``pytest_hypeedit_record``) is given them.
SEEN = """
import json, os

def pytest_hypeedit_record(config, record):
    with open(os.environ["SEEN_LOG"], "a") as log:
        log.write(json.dumps(record.reasoning) + "\\n")
"""


@pytest.fixture
def seen(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SEEN_LOG", str(tmp_path / "seen.log"))
    return lambda: [json.loads(line) for line in (tmp_path / "seen.log").read_text().splitlines()]


def test_a_handed_record_is_cleaned_like_one_read_from_a_report(pytester, seen):
    # a hostile text put on the item's record after its property was made: the handed record carries it
    pytester.makeconftest(SEEN + """
def pytest_runtest_call(item):
    if getattr(item, "record", None) is not None:
        item.record.reasoning = "fine \\x1b]52;c;ZXZpbA==\\x07 \\x1b[31mred\\x1b[0m"
""")
    pytester.runpytest(*ARGS)
    texts = seen()
    assert texts and all("\x1b" not in text and "\x07" not in text for text in texts)
    assert all("fine" in text and "red" in text for text in texts)  # the text arrived, cleaned


def test_a_property_changed_on_its_way_is_read_as_the_report_carries_it(pytester, seen):
    # a plugin rewrites the record on the teardown report: the report is what the session believes
    pytester.makeconftest(SEEN + """
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "teardown":
        changed = []
        for key, value in report.user_properties:
            if key == "hypeedit_record":
                fields = json.loads(value)
                fields["reasoning"] = "rewritten by a plugin"
                value = json.dumps(fields)
            changed.append((key, value))
        report.user_properties = changed
""")
    pytester.runpytest(*ARGS)
    texts = seen()
    assert texts and all(text == "rewritten by a plugin" for text in texts)
