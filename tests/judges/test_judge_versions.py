"""The judge records the model version that answered, not the id it asked for: Google serves a retired Gemini id
with a newer model without an error (the reply's ``modelVersion``), OpenAI answers an alias with a dated snapshot
(the reply's ``model``).  The results count the versions per judge (``judge_versions``) and a run whose judge was
answered by another model than the one asked ends with a warning.  The real google-genai client does the calling,
against the loopback Gemini fake answering as the API does."""

from __future__ import annotations

import io
import json
import types

import pytest
from benchdata import make_tasks, write_split
from genai_fakes.chat import chat_reply, verdict_reply as chat_verdict
from genai_fakes.fixtures import fake_chat, fake_gemini  # noqa: F401 - fixtures
from genai_fakes.gemini import candidates_reply, png_bytes, verdict_reply
from PIL import Image
from upstream_stub import upstream_stub  # noqa: F401 - fixture

from pytest_hypeedit.judges import JudgeOptions
from pytest_hypeedit.judges.base import JudgeRequest
from pytest_hypeedit.judges.gemini import FLASH_MODEL, GeminiJudge
from pytest_hypeedit.judges.openai_compat import OpenAICompatJudge
from pytest_hypeedit.judges.versions import answering_model, judge_versions, same_model, version_warnings
from pytest_hypeedit.tasks import Task
from pytest_hypeedit.transport.http import RetryPolicy

OPTIONS = JudgeOptions(policy=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=0.0), timeout_s=5)
NEWER = "gemini-3.6-flash"


@pytest.fixture
def request_(tmp_path):
    buffer = io.BytesIO()
    Image.new("RGB", (10, 10), (1, 2, 3)).save(buffer, format="PNG")
    (tmp_path / "001.png").write_bytes(buffer.getvalue())
    (tmp_path / "cand.png").write_bytes(png_bytes(color=(0, 0, 255)))
    task = Task("task-9", ("001.png",), ("edit",), "Make the mug blue.", 1024, 1024, "public")
    return JudgeRequest(task, "seedream-4.5", 1, tmp_path / "cand.png", (tmp_path / "001.png",))


# --------------------------------------------------------------------------- one verdict


def test_the_gemini_judge_records_the_version_that_answered_not_the_id_it_asked(fake_gemini, request_, upstream_stub):
    fake_gemini.answered_by[FLASH_MODEL] = NEWER  # the API routes the id asked for to a newer model, silently
    fake_gemini.queue(verdict_reply("PASS", "ok"))
    judge = GeminiJudge(OPTIONS)
    verdict = judge.judge(request_)
    judge.close()
    assert fake_gemini.requests[0].path == f"/v1beta/models/{FLASH_MODEL}:generateContent"
    assert verdict.extra["judge_model"] == FLASH_MODEL and verdict.extra["model_version"] == NEWER


def test_the_gemini_judge_records_the_id_itself_when_that_model_answered(fake_gemini, request_, upstream_stub):
    fake_gemini.queue(verdict_reply("FAIL", "no"))
    judge = GeminiJudge(OPTIONS)
    assert judge.judge(request_).extra["model_version"] == FLASH_MODEL
    judge.close()


@pytest.mark.parametrize("version", [None, "", "x" * 500])
def test_a_reply_that_names_no_usable_version_records_none_never_the_id_asked(fake_gemini, request_, upstream_stub,
                                                                              version):
    parts = verdict_reply("PASS", "ok").body["candidates"][0]["content"]["parts"]
    fake_gemini.queue(candidates_reply(parts, modelVersion=version))  # set by the script: the fake keeps it
    judge = GeminiJudge(OPTIONS)
    verdict = judge.judge(request_)
    judge.close()
    assert verdict.passed and verdict.extra["model_version"] is None


def test_a_version_that_echoes_the_key_is_recorded_masked(fake_gemini, request_, upstream_stub):
    from genai_fakes.fixtures import FAKE_GEMINI_KEY

    fake_gemini.answered_by[FLASH_MODEL] = f"models/{FAKE_GEMINI_KEY}"
    fake_gemini.queue(verdict_reply("PASS", "ok"))
    judge = GeminiJudge(OPTIONS)
    version = judge.judge(request_).extra["model_version"]
    judge.close()
    assert version.startswith("models/") and FAKE_GEMINI_KEY not in version


def test_the_openai_judge_records_the_reply_model(fake_chat, request_, upstream_stub):
    fake_chat.answered_by["gpt-4.1"] = "gpt-4.1-2025-04-14"
    fake_chat.queue(chat_verdict("PASS", "ok"))
    judge = OpenAICompatJudge("gpt-4.1", OPTIONS)
    verdict = judge.judge(request_)
    judge.close()
    assert fake_chat.requests[0].json["model"] == "gpt-4.1"
    assert verdict.extra["judge_model"] == "gpt-4.1" and verdict.extra["model_version"] == "gpt-4.1-2025-04-14"


def test_an_openai_reply_without_model_records_none(fake_chat, request_, upstream_stub):
    reply = chat_reply(json.dumps({"verdict": "PASS", "reasoning": "ok"}))
    reply.body["model"] = None  # a local server that leaves it out
    fake_chat.queue(reply)
    judge = OpenAICompatJudge("qwen2.5-vl", OPTIONS)
    assert judge.judge(request_).extra["model_version"] is None
    judge.close()


# --------------------------------------------------------------------------- counting them


def _record(judge: str, extra: dict) -> types.SimpleNamespace:
    return types.SimpleNamespace(judge=judge, judgements={judge: {"judge": judge, "extra": extra}})


def test_versions_are_counted_per_judge_and_per_juror_and_only_a_swap_differs():
    asked = {"judge_model": FLASH_MODEL}
    records = [_record("gemini-3-flash", {**asked, "model_version": NEWER}),
               _record("gemini-3-flash", {**asked, "model_version": FLASH_MODEL}),
               _record("gemini-3-flash", {**asked, "model_version": None}),
               _record("gemini-3-flash", dict(asked)),  # a verdict of before versions were kept: not counted
               _record("identity", {"anything": 1}),  # a judge that asks no model
               _record("majority:gemini-3-flash,openai:gpt-4.1", {"tie": False, "jurors": {
                   "gemini-3-flash": {**asked, "model_version": FLASH_MODEL},
                   "openai:gpt-4.1": {"judge_model": "gpt-4.1", "model_version": "gpt-4.1-2025-04-14"}}})]
    versions = judge_versions(records)
    assert versions == {
        "gemini-3-flash": {"asked": {FLASH_MODEL: 4}, "answered": {FLASH_MODEL: 2, NEWER: 1}, "unnamed": 1,
                           "differs": 1},
        "openai:gpt-4.1": {"asked": {"gpt-4.1": 1}, "answered": {"gpt-4.1-2025-04-14": 1}, "unnamed": 0,
                           "differs": 0},
    }
    lines = version_warnings(versions)
    assert len(lines) == 1 and "judge gemini-3-flash asked for gemini-3-flash-preview" in lines[0]
    assert "1 of its 4 verdicts were answered by another model: gemini-3.6-flash (1)" in lines[0]


@pytest.mark.parametrize("asked, answered, same", [
    ("gemini-3-flash-preview", "gemini-3-flash-preview", True),
    ("gemini-3-flash-preview", "models/gemini-3-flash-preview", True),
    ("gpt-4.1", "gpt-4.1-2025-04-14", True),
    ("gemini-2.0-flash", "gemini-2.0-flash-001", True),
    ("gemini-3-flash-preview", "gemini-3.6-flash", False),
    ("gpt-4.1", "gpt-4.1-mini-2025-04-14", False),
    ("gpt-4", "gpt-4o", False),
])
def test_a_snapshot_of_the_id_asked_is_the_same_model_another_model_is_not(asked, answered, same):
    assert same_model(asked, answered) is same


def test_what_is_no_identifier_is_no_version():
    assert [answering_model(v) for v in (" gemini-3.6-flash ", "", None, 7, "a\nb", "x" * 201)] == \
        ["gemini-3.6-flash", None, None, None, None, None]


# --------------------------------------------------------------------------- a whole run


@pytest.fixture
def bench(pytester, upstream_stub, fake_gemini):
    write_split(pytester.path, "mini", make_tasks(2), pytester.path / "images")
    fake_gemini.default = verdict_reply("FAIL", "Nothing was edited.")
    return pytester


def run(bench):
    return bench.runpytest("-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json",
                           "--images-base", "images", "--repeats", "1", "--outputs", "out")


def test_a_run_whose_judge_was_answered_by_another_model_says_so_in_results_and_warns_once(bench, fake_gemini):
    fake_gemini.answered_by[FLASH_MODEL] = NEWER
    result = run(bench)
    result.assert_outcomes(failed=2)
    results = json.loads((bench.path / "out" / "results.json").read_text())
    assert results["judge_versions"] == {"gemini-3-flash": {"asked": {FLASH_MODEL: 2}, "answered": {NEWER: 2},
                                                            "unnamed": 0, "differs": 2}}
    record = json.loads(next((bench.path / "out" / "mini" / "identity").glob("*/001.json")).read_text())
    assert record["judgements"]["gemini-3-flash"]["extra"]["model_version"] == NEWER
    out = result.stdout.str()
    assert out.count("judge gemini-3-flash asked for gemini-3-flash-preview") == 1  # once per judge, not per verdict
    assert "2 of its 2 verdicts were answered by another model: gemini-3.6-flash (2)" in " ".join(out.split())


def test_a_run_answered_by_the_model_it_asked_for_does_not_warn(bench, fake_gemini):
    result = run(bench)
    result.assert_outcomes(failed=2)
    results = json.loads((bench.path / "out" / "results.json").read_text())
    assert results["judge_versions"]["gemini-3-flash"]["answered"] == {FLASH_MODEL: 2}
    assert results["judge_versions"]["gemini-3-flash"]["differs"] == 0
    assert "answered by another model" not in result.stdout.str()
