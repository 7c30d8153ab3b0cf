"""--judge gemini-3-flash is the upstream judge: its prompt read out of the pinned upstream script
(downloaded once, sha256-checked, parsed with ast), not accepted when tampered, the rubric kept as a
named variant, and stored verdicts given under another prompt judged again, never reused silently.

The real upstream file is not in this repository: ``upstream_stub`` serves a script of the same
shape with our own prompt and points the pins at it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from benchdata import FileServer, make_tasks, write_split
from genai_fakes.chat import verdict_reply as chat_verdict
from genai_fakes.fixtures import fake_chat, fake_gemini  # noqa: F401 - fixtures
from genai_fakes.gemini import png_bytes, verdict_reply
from PIL import Image
from terminal_text import said
from upstream_stub import make_script, sha256, upstream_stub  # noqa: F401 - fixture

from pytest_hypeedit.errors import JudgeScriptError
from pytest_hypeedit.judges import JudgeOptions, builtin_judge, make_judge, upstream
from pytest_hypeedit.judges.base import JudgeRequest
from pytest_hypeedit.judges.gemini import GeminiJudge
from pytest_hypeedit.judges.prompting import RUBRIC, RUBRIC_SHA256, UpstreamPrompt
from pytest_hypeedit.tasks import Task, load_manifest
from pytest_hypeedit.transport.http import RetryPolicy

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=0.0)
DEAD_URL = "http://127.0.0.1:9/judge_gemini_3_flash.py"  # nothing listens on the discard port


@pytest.fixture
def request_(tmp_path):
    buffer = io.BytesIO()
    Image.new("RGB", (10, 10), (1, 2, 3)).save(buffer, format="WEBP")
    (tmp_path / "001.webp").write_bytes(buffer.getvalue())
    (tmp_path / "cand.png").write_bytes(png_bytes(color=(0, 0, 255)))
    task = Task("task-9", ("001.webp",), ("edit",), "Make the mug blue.", 1024, 1024, "public")
    return JudgeRequest(task, "seedream-4.5", 1, tmp_path / "cand.png", (tmp_path / "001.webp",))


# --------------------------------------------------------------------------- the pins


def test_the_pins_are_the_upstream_judge_at_the_task_files_commit(monkeypatch):
    monkeypatch.delenv(upstream.URL_VARIABLE, raising=False)
    pins = upstream.PINNED
    manifest = Path(__file__).parents[2] / "pytest_hypeedit" / "splits" / "public.yaml"
    commit = load_manifest(manifest).location.split("/")[-4]
    assert pins.url == ("https://raw.githubusercontent.com/sourceful-official/hype-edit-1-benchmark/"
                        f"{commit}/src/judge_gemini_3_flash.py")
    assert commit == "268591e7f7e73435cecb1dc5308aa4c1da27d478"
    assert pins.script_sha256 == "a7fb1af90ab57d8e4ce489391c13bf5e55758ad4e98b9895eba41694b250c03e"
    assert pins.prompt_sha256 == "e9e150a843c2671c57c7f6c7fa7f9b152f157d08112038729675356452f02895"
    assert (pins.class_name, pins.method, pins.variable) == ("Gemini3FlashJudge", "judge", "prompt")
    # ...and they are what the judge uses: its prompt is named by the pinned sha256, with no download
    judge = builtin_judge("gemini-3-flash", None, JudgeOptions())
    assert judge.prompt.sha256 == pins.prompt_sha256
    assert judge.stale_reason({"extra": {"prompt_sha256": pins.prompt_sha256}}) is None
    assert upstream.script_location(pins) == pins.url


# --------------------------------------------------------------------------- reading the script


def test_the_prompt_is_read_with_ast_and_never_executed():
    script, prompt = make_script("Z")  # the script calls os._exit(97) at import: it would end this process
    assert "STUB PROMPT Z" in prompt and '{"verdict":"PASS"|"FAIL"' in prompt
    pins = upstream.ScriptPins(url="x", script_sha256=sha256(script), prompt_sha256=sha256(prompt))
    assert upstream.extract_prompt(script, "judge.py", pins) == prompt


@pytest.mark.parametrize("pieces, words", [
    (("f'{len(instruction)} images'",), "is not a string literal"),
    (("'a' + 'b'",), "is not a string literal"),
])
def test_a_prompt_that_is_not_one_literal_is_not_accepted(pieces, words):
    script, _ = make_script(pieces=("'x'",))
    script = script.replace(b"'x'", pieces[0].encode())
    pins = upstream.ScriptPins(url="x", script_sha256=sha256(script), prompt_sha256="0" * 64)
    with pytest.raises(JudgeScriptError, match=words) as caught:
        upstream.extract_prompt(script, "judge.py", pins)
    assert "judge.py" in str(caught.value) and "Gemini3FlashJudge.judge" in str(caught.value)


@pytest.mark.parametrize("change, words", [
    ((b"class Gemini3FlashJudge", b"class OtherJudge"), "0 assignments 'prompt = ...' in Gemini3FlashJudge.judge"),
    ((b"        prompt = (", b"        text = ("), "0 assignments"),
    ((b"        parts = []", b"        prompt = 'first'"), "2 assignments"),
    ((b"class Gemini3", b"class Gemini3(:"), "not Python"),
])
def test_a_script_without_the_prompt_where_upstream_keeps_it_is_not_accepted(change, words):
    script, prompt = make_script()
    script = script.replace(*change)
    pins = upstream.ScriptPins(url="x", script_sha256=sha256(script), prompt_sha256=sha256(prompt))
    with pytest.raises(JudgeScriptError, match=words):
        upstream.extract_prompt(script, "judge.py", pins)


def test_pins_that_disagree_are_not_accepted():
    script, prompt = make_script()
    pins = upstream.ScriptPins(url="x", script_sha256=sha256(script), prompt_sha256=sha256("another prompt"))
    with pytest.raises(JudgeScriptError, match=f"has sha256 {sha256(prompt)}, not the pinned {sha256('another prompt')}"):
        upstream.extract_prompt(script, "judge.py", pins)


# --------------------------------------------------------------------------- download, cache, mirror


def test_downloaded_once_into_the_cache_and_checked_on_every_load(upstream_stub):
    assert upstream.load_prompt(upstream_stub.cache_dir) == upstream_stub.prompt
    assert upstream.load_prompt(upstream_stub.cache_dir) == upstream_stub.prompt
    assert upstream_stub.hits == 1 and upstream_stub.cached().read_bytes() == upstream_stub.script
    upstream_stub.cached().write_bytes(upstream_stub.script + b"# changed\n")  # the cached copy was edited
    with pytest.raises(JudgeScriptError) as caught:
        upstream.load_prompt(upstream_stub.cache_dir)
    message = str(caught.value)
    assert str(upstream_stub.cached()) in message and "Delete" in message
    assert upstream_stub.pins.script_sha256 in message and sha256(upstream_stub.script + b"# changed\n") in message


def test_a_tampered_download_is_not_accepted_and_never_cached(upstream_stub):
    tampered = upstream_stub.script.replace(b"STUB PROMPT A", b"STUB PROMPT B")
    upstream_stub.serve(tampered)
    with pytest.raises(JudgeScriptError) as caught:
        upstream.load_prompt(upstream_stub.cache_dir)
    message = str(caught.value)
    assert upstream_stub.pins.url in message and "nothing was judged" in message
    assert f"sha256 {sha256(tampered)}, not the pinned {upstream_stub.pins.script_sha256}" in message
    assert not upstream_stub.cached().exists()


def test_the_mirror_variable_names_where_the_script_comes_from(upstream_stub, monkeypatch, tmp_path):
    monkeypatch.setattr(upstream, "PINNED", upstream.ScriptPins(
        url=DEAD_URL, script_sha256=upstream_stub.pins.script_sha256, prompt_sha256=upstream_stub.pins.prompt_sha256))
    with FileServer({"/mirror/judge.py": upstream_stub.script}) as mirror:
        monkeypatch.setenv(upstream.URL_VARIABLE, mirror.url + "/mirror/judge.py")
        assert upstream.load_prompt(tmp_path / "c1") == upstream_stub.prompt
        assert mirror.hits["/mirror/judge.py"] == 1
        mirror.files["/mirror/judge.py"] = b"# not the judge\n"  # the pin applies to a mirror too
        with pytest.raises(JudgeScriptError, match=f"{upstream.URL_VARIABLE} must name that exact file"):
            upstream.load_prompt(tmp_path / "c2")
    local = tmp_path / "judge_gemini_3_flash.py"
    local.write_bytes(upstream_stub.script)
    monkeypatch.setenv(upstream.URL_VARIABLE, str(local))  # a local copy: no network at all
    assert upstream.load_prompt(tmp_path / "c3") == upstream_stub.prompt


def test_an_unreachable_script_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.delenv(upstream.URL_VARIABLE, raising=False)
    monkeypatch.setattr(upstream, "PINNED", upstream.ScriptPins(url=DEAD_URL, script_sha256="0" * 64,
                                                                prompt_sha256="1" * 64))
    with pytest.raises(JudgeScriptError, match=f"download failed.*set {upstream.URL_VARIABLE}.*gemini-3-flash-rubric"):
        UpstreamPrompt(tmp_path).text()


# --------------------------------------------------------------------------- the rubric variant and openai


def test_the_rubric_variant_asks_with_the_rubric_and_needs_no_download(fake_gemini, request_, monkeypatch, tmp_path):
    monkeypatch.setattr(upstream, "PINNED", upstream.ScriptPins(url=DEAD_URL, script_sha256="0" * 64,
                                                                prompt_sha256="1" * 64))
    fake_gemini.queue(verdict_reply("FAIL", "The mug is still red."))
    judge = builtin_judge("gemini-3-flash-rubric", None, JudgeOptions(policy=FAST, cache_dir=tmp_path))
    verdict = judge.judge(request_)
    judge.close()
    assert verdict.judge == "gemini-3-flash-rubric" and not verdict.passed
    assert verdict.extra["prompt"] == "rubric" and verdict.extra["prompt_sha256"] == RUBRIC_SHA256
    texts = fake_gemini.requests[0].parsed["texts"]
    assert texts[0] == texts[-1] == RUBRIC and texts[-2] == "Candidate output image:"
    assert fake_gemini.requests[0].parsed["config"]["max_output_tokens"] == 4096  # only the prompt differs
    assert judge.stale_reason({"extra": {"prompt_sha256": RUBRIC_SHA256}}) is None


def test_openai_rubric_variant(fake_chat, request_, monkeypatch, tmp_path):
    monkeypatch.setattr(upstream, "PINNED", upstream.ScriptPins(url=DEAD_URL, script_sha256="0" * 64,
                                                                prompt_sha256="1" * 64))
    fake_chat.queue(chat_verdict("PASS", "fine"))
    judge = builtin_judge("openai-rubric", "qwen", JudgeOptions(policy=FAST, cache_dir=tmp_path))
    verdict = judge.judge(request_)
    judge.close()
    assert verdict.judge == "openai-rubric:qwen" and verdict.extra["prompt_sha256"] == RUBRIC_SHA256
    assert fake_chat.requests[0].parsed["texts"][0] == fake_chat.requests[0].parsed["texts"][-1] == RUBRIC


def test_a_verdict_recovered_from_a_cut_reply_says_so(fake_gemini, request_, upstream_stub):
    from genai_fakes.gemini import text_reply

    fake_gemini.queue(text_reply('{"verdict": "FAIL", "reasoning": "The mug handle', finish="MAX_TOKENS"))
    judge = GeminiJudge(JudgeOptions(policy=FAST))
    verdict = judge.judge(request_)
    judge.close()
    assert not verdict.passed and verdict.reasoning == "The mug handle" and len(fake_gemini.requests) == 1
    assert verdict.extra["recovered_from_truncated_reply"] and verdict.extra["finish_reason"] == "MAX_TOKENS"


# --------------------------------------------------------------------------- stale verdicts


def test_stale_reasons_name_the_prompts(upstream_stub):
    judge = GeminiJudge(JudgeOptions())
    current = sha256(upstream_stub.prompt)
    assert judge.stale_reason({"extra": {"prompt_sha256": current}}) is None
    old_default = judge.stale_reason({"extra": {"prompt_sha256": RUBRIC_SHA256}})  # our old default's records
    assert old_default == f"given under another prompt (the rubric {RUBRIC_SHA256[:12]}, now the upstream prompt {current[:12]})"
    assert judge.stale_reason({"extra": {}}).startswith("given under an unrecorded prompt")
    assert judge.stale_reason({"extra": "junk"}).startswith("given under an unrecorded prompt")
    panel = make_judge("gemini-3-flash,openai:q", JudgeOptions())
    fresh = {"extra": {"jurors": {"gemini-3-flash": {"prompt_sha256": current}, "openai:q": {"prompt_sha256": current}}}}
    assert panel.stale_reason(fresh) is None
    fresh["extra"]["jurors"]["openai:q"]["prompt_sha256"] = RUBRIC_SHA256
    assert panel.stale_reason(fresh).startswith("juror openai:q: given under another prompt (the rubric")


# --------------------------------------------------------------------------- whole runs


@pytest.fixture
def bench(pytester, upstream_stub, fake_gemini, tmp_path):
    """Split 'mini' of two tasks, judged by gemini-3-flash (the stub's prompt) on the fake Gemini."""
    write_split(pytester.path, "mini", make_tasks(2), pytester.path / "images")
    fake_gemini.default = verdict_reply("FAIL", "Nothing was edited.", thoughts="Both images are the same.")
    return pytester


def run(bench, *extra):
    return bench.runpytest("-p", "no:cacheprovider", "--model", "identity", "--tasks", "mini.json",
                           "--images-base", "images", "--repeats", "1", "--outputs", "out", *extra)


def records(bench) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((bench.path / "out" / "mini" / "identity").glob("*/001.json"))]


def test_a_tampered_upstream_script_is_not_accepted_before_any_call(bench, upstream_stub, fake_gemini):
    tampered = upstream_stub.script + b"\n# one more line\n"
    upstream_stub.serve(tampered)
    result = run(bench)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{upstream_stub.pins.url}: the upstream judge script has sha256 {sha256(tampered)}, "
                                 f"not the pinned {upstream_stub.pins.script_sha256}*"])
    assert fake_gemini.requests == [] and not (bench.path / "out").exists()  # nothing judged, nothing bought
    assert "Traceback" not in result.stderr.str()


def test_stale_verdicts_are_judged_again_and_reported_and_current_ones_reused(bench, upstream_stub, fake_gemini):
    first = run(bench)
    first.assert_outcomes(failed=2)
    assert len(fake_gemini.requests) == 2 and upstream_stub.hits == 1
    for seen in fake_gemini.requests:
        assert seen.parsed["texts"][0] == seen.parsed["texts"][-1] == upstream_stub.prompt
    for record in records(bench):
        entry = record["judgements"]["gemini-3-flash"]
        assert entry["extra"]["prompt_sha256"] == sha256(upstream_stub.prompt) and "replaced" not in entry
        assert entry["extra"]["thoughts"] == "Both images are the same." and entry["reasoning"] == "Nothing was edited."

    # Records as our old default left them: judge id gemini-3-flash, the rubric's prompt.
    for path in sorted((bench.path / "out" / "mini" / "identity").glob("*/001.json")):
        record = json.loads(path.read_text())
        record["judgements"]["gemini-3-flash"]["extra"]["prompt_sha256"] = RUBRIC_SHA256
        path.write_text(json.dumps(record))
    second = run(bench)
    second.assert_outcomes(failed=2)
    assert len(fake_gemini.requests) == 4  # judged again, not reused
    reason = f"given under another prompt (the rubric {RUBRIC_SHA256[:12]}, now the upstream prompt "
    said(second, f"2 verdicts judged again: {reason}")
    row = json.loads((bench.path / "out" / "results.json").read_text())["rows"][0]
    assert row["rejudged_stale"] == 2 and list(row["rejudged_stale_reasons"].values()) == [2]
    for record in records(bench):
        replaced = record["judgements"]["gemini-3-flash"]["replaced"]
        assert replaced["reason"].startswith(reason) and replaced["verdict"] == "FAIL" and replaced["judged_at"]

    # Current verdicts are reused: no call, no download needed (the script is no longer served at all).
    upstream_stub.serve(b"gone")
    upstream_stub.cached().unlink()
    third = run(bench)
    third.assert_outcomes(failed=2)
    assert len(fake_gemini.requests) == 4 and "judged again" not in third.stdout.str()
    assert json.loads((bench.path / "out" / "results.json").read_text())["rows"][0]["rejudged_stale"] == 0


def test_the_fake_takes_what_google_genai_sends_and_does_not_accept_what_the_api_does_not(fake_gemini):
    import httpx
    from genai_fakes.fixtures import FAKE_GEMINI_KEY

    url, headers = f"{fake_gemini.url}/v1beta/models/m:generateContent", {"x-goog-api-key": FAKE_GEMINI_KEY}
    fake_gemini.default = verdict_reply()

    def post(part: dict, config: dict | None = None) -> int:
        body = {"contents": [{"parts": [{"text": "p"}, part]}], "generationConfig": config or {}}
        return httpx.post(url, json=body, headers=headers).status_code

    inline = {"inlineData": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}
    assert post({**inline, "mediaResolution": {"level": "MEDIA_RESOLUTION_HIGH"}}) == 200
    assert post({**inline, "media_resolution": {"level": "MEDIA_RESOLUTION_HIGH"}}) == 200
    assert [seen.parsed["media_resolutions"] for seen in fake_gemini.requests] == [["MEDIA_RESOLUTION_HIGH"]] * 2
    assert post({**inline, "mediaResolution": {"level": "HIGHEST"}}) == 400
    assert post({**inline, "mediaResolutionLevel": "MEDIA_RESOLUTION_HIGH"}) == 400  # an unknown Part field
    assert post(inline, {"thinkingConfig": {"include_thoughts": True, "thinkingLevel": "MEDIUM"}}) == 200
    assert post(inline, {"thinkingConfig": {"thinkingLevel": "medium-ish"}}) == 400
