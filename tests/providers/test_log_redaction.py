"""A key never reaches a log line, DEBUG included, nor the judge's kept thoughts.

httpcore logs every reply's headers at DEBUG.  A provider (or a proxy) that echoes the key in a header
would put it in the terminal's live log, in pytest's captured log, and from there in the junit XML and
report.html.  The runs below turn every log on and read everything they wrote.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from benchdata import make_tasks, write_labels, write_split
from genai_fakes.fixtures import FAKE_GEMINI_KEY, fake_gemini  # noqa: F401 - fixture
from genai_fakes.gemini import verdict_reply
from providers_fakes.bfl import FakeBfl
from upstream_stub import upstream_stub  # noqa: F401 - fixture

from pytest_hypeedit.judges import JudgeOptions
from pytest_hypeedit.judges.base import JudgeRequest
from pytest_hypeedit.judges.gemini import GeminiJudge
from pytest_hypeedit.secrets import MASK, install_log_redaction, register_secret
from pytest_hypeedit.tasks import Task
from pytest_hypeedit.transport.http import RetryPolicy

SECRET = "log-secret-value-0123456789"
DEBUG_EVERYWHERE = ["--log-level=DEBUG", "-o", "log_cli=true", "--log-cli-level=DEBUG", "-o", "junit_logging=all",
                    "--junitxml", "junit.xml", "--html", "report/report.html"]


def everything_written(root: Path, result) -> str:
    files = [path.read_bytes().decode("utf-8", "replace") for path in root.rglob("*") if path.is_file()]
    return "\n".join([result.stdout.str(), result.stderr.str(), *files])


def test_a_log_record_is_masked_whoever_writes_it(caplog):
    install_log_redaction()
    register_secret(SECRET)
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("httpcore.http11").debug("receive_response_headers.complete return_value=%r",
                                                   [(b"x-echo", SECRET.encode())])
        try:
            raise ValueError(f"the server said {SECRET}")
        except ValueError:
            logging.getLogger("some.library").exception("failed")
    text = caplog.text
    assert SECRET not in text and f"b'{MASK}'" in text and f"the server said {MASK}" in text


def test_debug_logging_of_a_provider_that_echoes_the_key_in_a_header_leaks_nothing(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    tasks = make_tasks(2)
    write_split(pytester.path, "mini", tasks, pytester.path / "images")
    write_labels(pytester.path / "r1.json", {(t["task_id"], "flux-2-max", 1): i == 0 for i, t in enumerate(tasks)})
    (pytester.path / "fast.yaml").write_text("models:\n  flux-2-max: {options: {poll_s: 0.01, poll_max_s: 0.05}}\n")
    with FakeBfl(pending_polls=1) as bfl:
        monkeypatch.setenv(bfl.env, bfl.base)
        monkeypatch.setenv(bfl.key_env, bfl.key)
        bfl.inject("headers", headers={"x-echo-key": bfl.key}, count=10_000)  # every reply echoes the key
        result = pytester.runpytest("-p", "no:cacheprovider", "--model", "flux-2-max", "--tasks", "mini.json",
                                    "--images-base", "images", "--repeats", "1", "--outputs", "out",
                                    "--judge", "labels:r1.json", "--models-file", "fast.yaml", *DEBUG_EVERYWHERE)
        assert bfl.seen() and all("x-key" in seen.headers for seen in bfl.seen("/v1/"))
    result.assert_outcomes(passed=1, failed=1)
    text = everything_written(pytester.path, result)
    assert bfl.key not in text
    # The headers were logged (so the check above means something), with the key masked:
    echoed = f"(b'x-echo-key', b'{MASK}')"
    assert echoed in result.stdout.str()  # the live log in the terminal
    assert echoed in (pytester.path / "junit.xml").read_text()  # the captured log in junit XML
    assert "x-echo-key" in (pytester.path / "report" / "report.html").read_text()


# --------------------------------------------------------------------------- the judge's kept thoughts


def test_the_judges_kept_thoughts_are_redacted(fake_gemini, upstream_stub, tmp_path):
    from genai_fakes.gemini import png_bytes

    (tmp_path / "ref.png").write_bytes(png_bytes())
    (tmp_path / "cand.png").write_bytes(png_bytes(color=(0, 0, 255)))
    task = Task("task-9", ("ref.png",), ("edit",), "Make the mug blue.", 1024, 1024, "public")
    fake_gemini.queue(verdict_reply("PASS", "ok", thoughts=f"The request was signed {FAKE_GEMINI_KEY}; fine."))
    judge = GeminiJudge(JudgeOptions(policy=RetryPolicy(max_attempts=2, base_delay=0.01), timeout_s=5))
    verdict = judge.judge(JudgeRequest(task, "m", 1, tmp_path / "cand.png", (tmp_path / "ref.png",)))
    judge.close()
    assert verdict.extra["thoughts"] == f"The request was signed {MASK}; fine."


def test_thoughts_that_quote_the_key_leave_no_key_in_the_record_or_any_output(pytester, upstream_stub, fake_gemini):
    write_split(pytester.path, "mini", make_tasks(2), pytester.path / "images")
    fake_gemini.default = verdict_reply("FAIL", "Nothing was edited.",
                                        thoughts=f"Comparing. (debug: key={FAKE_GEMINI_KEY})")
    result = pytester.runpytest("-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json",
                                "--images-base", "images", "--repeats", "1", "--outputs", "out",
                                "--judge", "gemini-3-flash", *DEBUG_EVERYWHERE)
    result.assert_outcomes(failed=2)
    records = [json.loads(p.read_text()) for p in (pytester.path / "out").rglob("001.json")]
    thoughts = [r["judgements"]["gemini-3-flash"]["extra"]["thoughts"] for r in records]
    assert thoughts == [f"Comparing. (debug: key={MASK})"] * 2
    assert FAKE_GEMINI_KEY not in everything_written(pytester.path, result)
