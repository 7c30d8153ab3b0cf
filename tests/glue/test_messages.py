"""Messages that say what to do, before anything is downloaded or paid for.

- the public split's download failure names --tasks and HYPEEDIT_PUBLIC_SPLIT_URL;
- a local task file without --images-base looks for its images beside it, in images/, and says where it
  looked (never the upstream CDN);
- every key a run needs is checked before any file is fetched (the task file, the judge's script, the
  reference images), all of them in one message; an openai: judge without OPENAI_API_KEY is one of them;
- a corrupt reference image is named without a Python object's repr.

Each run talks to loopback servers that count what was fetched, and a "paid" route that logs its calls.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from benchdata import FileServer, make_tasks, png_bytes, write_labels, write_split
from fake_models import models_conftest

from pytest_hypeedit.judges import JudgeOptions
from pytest_hypeedit.judges.openai_compat import OpenAICompatJudge

PAID_CONFTEST = models_conftest(key_env=("PAID_API_KEY",), cost=0.04, provider_model="paid-v1")

KEYS = ("PAID_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "HYPEEDIT_OPENAI_BASE_URL",
        "HYPEEDIT_JUDGE_SCRIPT_URL", "HYPEEDIT_PUBLIC_SPLIT_URL", "PYTEST_ADDOPTS")


@pytest.fixture
def bench(pytester: pytest.Pytester, monkeypatch, tmp_path):
    pytester.makeconftest(PAID_CONFTEST)
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    return pytester


@pytest.fixture
def server(pytester):
    """Serves a split (split.json), its images (img/<task>/001.png), a stand-in public.json and judge script."""
    tasks = make_tasks(3)
    files = {"/split.json": json.dumps(tasks).encode(), "/public.json": json.dumps(tasks).encode(),
             "/judge.py": b"prompt = ('x')\n"}
    files.update({f"/img/{t['task_id']}/001.png": png_bytes((i * 40, 9, 9)) for i, t in enumerate(tasks)})
    with FileServer(files) as running:
        yield running


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def usage_error(result) -> str:
    """The one ERROR line of a usage error; no traceback, no Python object's repr."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    text = result.stderr.str() + result.stdout.str()
    assert "Traceback" not in text and " object at 0x" not in text, text
    [line] = [line for line in result.stderr.lines if line.startswith("ERROR: ")]
    return line


def labels(pytester, models=("paid", "identity"), tasks=3, repeats=2) -> str:
    write_labels(pytester.path / "r1.json", {(f"task-{t:02d}", m, r): True for t in range(tasks) for m in models
                                             for r in range(1, repeats + 1)})
    return "labels:r1.json"


# --------------------------------------------------------------------------- the public split offline


def test_the_public_splits_download_failure_names_tasks_and_the_url_variable(bench, monkeypatch, tmp_path):
    monkeypatch.setenv("PAID_API_KEY", "paid-key-0123456789")
    monkeypatch.setenv("HYPEEDIT_PUBLIC_SPLIT_URL", "http://127.0.0.1:9/public.json")  # nothing listens there
    line = usage_error(bench.runpytest("--model", "paid", "--judge", labels(bench)))
    assert line.startswith("ERROR: split public: http://127.0.0.1:9/public.json: download failed (ConnectError")
    assert "--tasks PATH for a local copy of the task file" in line
    assert "or set HYPEEDIT_PUBLIC_SPLIT_URL to a mirror of the file" in line
    assert calls(tmp_path) == []


def test_a_task_url_that_fails_names_the_url_and_tasks(bench, server, monkeypatch, tmp_path):
    monkeypatch.setenv("PAID_API_KEY", "paid-key-0123456789")
    line = usage_error(bench.runpytest("--model", "paid", "--judge", labels(bench), "--tasks", f"{server.url}/gone.json"))
    assert f"{server.url}/gone.json: download failed with HTTP 404" in line
    assert "Check the URL given to --tasks, or use --tasks PATH for a local copy" in line
    assert calls(tmp_path) == []


# --------------------------------------------------------------------------- a local task file's images


def test_a_local_task_files_images_are_beside_it_and_a_missing_one_says_where_it_looked(bench, monkeypatch, tmp_path):
    monkeypatch.setenv("PAID_API_KEY", "paid-key-0123456789")
    data = bench.path / "data"
    data.mkdir()
    write_split(data, "priv", make_tasks(3), bench.path / "elsewhere")  # the images are not beside it
    args = ["--model", "paid", "--judge", labels(bench, tasks=3), "--repeats", "2", "--tasks", "data/priv.json"]
    line = usage_error(bench.runpytest(*args))
    # every task's image is missing: the references are fetched in parallel, so the first one named may be any
    assert re.fullmatch(r"ERROR: reference image '001\.png' of task task-0[012] \(split priv\) is missing: the "
                        r"folder data/images does not exist\. --images-base names the folder that holds "
                        r"<task_id>/<image> \(or a URL\); without it, a local task file's images are looked for in "
                        r"images/ beside it", line), line
    (bench.path / "elsewhere").rename(data / "images")  # the rule: images/ beside the task file
    (data / "images" / "task-01" / "001.png").unlink()
    line = usage_error(bench.runpytest(*args))
    assert "reference image '001.png' of task task-01 (split priv) is missing: looked for " \
           "data/images/task-01/001.png." in line
    assert calls(tmp_path) == []
    (data / "images" / "task-01" / "001.png").write_bytes(png_bytes())
    bench.runpytest(*args).assert_outcomes(passed=6)


# --------------------------------------------------------------------------- keys before downloads


def test_a_missing_model_key_is_reported_before_the_task_file_is_downloaded(bench, server, monkeypatch, tmp_path):
    monkeypatch.setenv("HYPEEDIT_PUBLIC_SPLIT_URL", f"{server.url}/public.json")
    line = usage_error(bench.runpytest("--model", "paid", "--judge", labels(bench)))
    assert line == ("ERROR: route paid needs an API key: set PAID_API_KEY in the environment (or choose a model "
                    "on another route with --model); nothing was downloaded or paid for")
    assert sum(server.hits.values()) == 0 and calls(tmp_path) == []


def test_every_missing_key_in_one_message_before_any_download(bench, server, monkeypatch, tmp_path):
    monkeypatch.setenv("HYPEEDIT_PUBLIC_SPLIT_URL", f"{server.url}/public.json")
    monkeypatch.setenv("HYPEEDIT_JUDGE_SCRIPT_URL", f"{server.url}/judge.py")
    line = usage_error(bench.runpytest("--model", "paid", "--model", "identity"))  # the default judge: Gemini
    assert line == ("ERROR: route paid needs an API key: set PAID_API_KEY in the environment (or choose a model "
                    "on another route with --model); judge gemini-3-flash needs an API key: set GOOGLE_API_KEY or "
                    "GEMINI_API_KEY in the environment (or choose another --judge, e.g. labels:RATER.json); "
                    "nothing was downloaded or paid for")
    assert sum(server.hits.values()) == 0 and calls(tmp_path) == []


def test_a_judge_key_is_checked_before_the_reference_images_are_downloaded(bench, server):
    write_split(bench.path, "mini", make_tasks(3), bench.path / "unused")
    line = usage_error(bench.runpytest("--model", "identity", "--tasks", "mini.json",
                                       "--images-base", f"{server.url}/img"))
    assert "judge gemini-3-flash needs an API key: set GOOGLE_API_KEY or GEMINI_API_KEY" in line
    assert sum(server.hits.values()) == 0


def test_with_candidates_on_disk_the_key_is_checked_once_the_tasks_are_known(bench, server, monkeypatch, tmp_path):
    """A model with something on disk may need no call: its key is checked after the task file, still before
    the reference images are fetched or anything is paid; a run whose candidates are all on disk needs none."""
    monkeypatch.setenv("PAID_API_KEY", "paid-key-0123456789")
    judge = labels(bench, repeats=3)
    args = ["--model", "paid", "--judge", judge, "--tasks", f"{server.url}/split.json", "--images-base",
            f"{server.url}/img", "--outputs", "out"]
    bench.runpytest(*args, "--repeats", "2").assert_outcomes(passed=6)
    monkeypatch.delenv("PAID_API_KEY")
    images = sum(hits for path, hits in server.hits.items() if path.startswith("/img/"))
    bench.runpytest(*args, "--repeats", "2").assert_outcomes(passed=6)  # all on disk: no key needed
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "new-cache"))  # a fresh runner: images not cached
    line = usage_error(bench.runpytest(*args, "--repeats", "3"))  # the third repeats need calls
    assert line == ("ERROR: route paid needs an API key: set PAID_API_KEY in the environment (or choose a model "
                    "on another route with --model); nothing was paid for")
    assert sum(hits for path, hits in server.hits.items() if path.startswith("/img/")) == images
    assert len(calls(tmp_path)) == 6


def test_an_openai_judge_without_its_key_is_a_usage_error(bench, server, monkeypatch, tmp_path):
    monkeypatch.setenv("PAID_API_KEY", "paid-key-0123456789")
    monkeypatch.setenv("HYPEEDIT_PUBLIC_SPLIT_URL", f"{server.url}/public.json")
    line = usage_error(bench.runpytest("--model", "paid", "--judge", "openai:gpt-4.1"))
    assert line == ("ERROR: judge openai:gpt-4.1 needs an API key: set OPENAI_API_KEY in the environment (or "
                    "choose another --judge, e.g. labels:RATER.json); nothing was downloaded or paid for")
    assert sum(server.hits.values()) == 0 and calls(tmp_path) == []


def test_only_openais_own_api_needs_the_key():
    assert OpenAICompatJudge("gpt-4.1", JudgeOptions(), prompt="rubric").key_env == ("OPENAI_API_KEY",)
    local = JudgeOptions(openai_base_url="http://127.0.0.1:8000/v1")
    assert OpenAICompatJudge("qwen", local, prompt="rubric").key_env == ()  # a local vLLM may need none


# --------------------------------------------------------------------------- no Python object reprs


def test_a_corrupt_reference_is_named_without_a_python_repr(bench, server, monkeypatch, tmp_path):
    monkeypatch.setenv("PAID_API_KEY", "paid-key-0123456789")
    write_split(bench.path, "mini", make_tasks(3), bench.path / "images")
    (bench.path / "images" / "task-01" / "001.png").write_bytes(b"not an image at all")
    args = ["--model", "paid", "--judge", labels(bench), "--tasks", "mini.json", "--images-base"]
    line = usage_error(bench.runpytest(*args, "images"))
    assert line == ("ERROR: images/task-01/001.png: reference image of task task-01 (split mini) cannot be decoded "
                    "(cannot identify image file); replace the file")
    server.files["/img/task-01/001.png"] = b"not an image at all"  # the same, downloaded
    line = usage_error(bench.runpytest(*args, f"{server.url}/img"))
    assert line.endswith("/img/task-01/001.png: reference image of task task-01 (split mini) cannot be decoded "
                         "(cannot identify image file); replace the file")
    assert calls(tmp_path) == []
