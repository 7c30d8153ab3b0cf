"""The example GitHub Actions workflow, run locally as written against loopback fakes, so it cannot rot.

examples/github-actions/hypeedit.yml runs one job per model and a merge job, in a team's own repository.
Here its run: steps run with bash on a simulated runner (tests/support/actions_sim.py: only checkout,
setup-python, the install step, the cache and the artifacts are simulated) whose checkout is such a
repository: a copy of the tiny example split and nothing of this one.  The repository's secrets point at
the fake ModelArk (seedream-4.5), the fake OpenAI images API (gpt-image-2) and the fake Gemini API (the
judge); the workflow runs twice: the second run restores the cached outputs and pays for nothing.
PYTEST_ADDOPTS, as a repository would set for a quick trial, points the runs at the tiny split with 2
repeats instead of the public split with 10.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from xml.etree import ElementTree

import pytest
from actions_sim import Runner
from fresh_clone import REPO, keyless_env
from genai_fakes import FakeGemini
from genai_fakes.gemini import verdict_reply
from providers_fakes.ark import FakeArk
from providers_fakes.openai import FakeOpenAI
from upstream_stub import make_script, sha256

WORKFLOW = REPO / "examples" / "github-actions" / "hypeedit.yml"
MODELS = ["seedream-4.5", "gpt-image-2"]
TASKS, REPEATS = 5, 2
GEMINI_KEY = "fake-gemini-key-ci-0123456789"
#: The judge fails the one task that asks to swap a triangle and a square, and passes the other four.
FAILED_INSTRUCTION = "Swap the positions of the triangle and the square."


def judge_reply(request):
    failed = any(FAILED_INSTRUCTION in text for text in request.parsed.get("texts", []))
    return verdict_reply("FAIL" if failed else "PASS", "the swap is missing" if failed else "done")


@pytest.fixture
def fakes():
    with FakeArk() as ark, FakeOpenAI() as openai, FakeGemini(expected_key=GEMINI_KEY) as gemini:
        gemini.default = judge_reply
        yield {"ark": ark, "openai": openai, "gemini": gemini}


@pytest.fixture
def runner(tmp_path, fakes):
    env = keyless_env(tmp_path / "home")
    # The default judge reads its prompt from the upstream script, which is not on this machine: a stub
    # of the same shape stands in, with the pins pointed at it by a test-only plugin.
    script, prompt = make_script()
    (tmp_path / "judge_stub.py").write_bytes(script)
    tests = Path(__file__).resolve().parents[1] / "support"  # the helpers, stub_pins_plugin among them
    env.update(HYPEEDIT_ARK_BASE_URL=fakes["ark"].base, HYPEEDIT_OPENAI_BASE_URL=fakes["openai"].base,
               HYPEEDIT_GEMINI_BASE_URL=fakes["gemini"].url,
               HYPEEDIT_JUDGE_SCRIPT_URL=str(tmp_path / "judge_stub.py"),
               HYPEEDIT_TEST_STUB_PINS=f"{sha256(script)}:{sha256(prompt)}",
               PYTHONPATH=os.pathsep.join(filter(None, [str(tests), env.get("PYTHONPATH")])),
               PYTEST_ADDOPTS=f"-p stub_pins_plugin --tasks tiny-split/tiny.json --repeats {REPEATS}")
    secrets = {"GEMINI_API_KEY": GEMINI_KEY, "ARK_API_KEY": fakes["ark"].key, "OPENAI_API_KEY": fakes["openai"].key}
    return Runner(WORKFLOW, team_repository(tmp_path / "team"), tmp_path / "runner", env, secrets)


def team_repository(root: Path) -> Path:
    """A model team's repository: a split of its own (a copy of the tiny example, images beside its task
    file) and nothing of pytest-hypeedit's."""
    shutil.copytree(REPO / "examples" / "tiny-split", root / "tiny-split")
    return root


def paid_calls(fakes) -> dict[str, int]:
    return {"ark": len(fakes["ark"].seen("/images/generations")), "openai": len(fakes["openai"].seen("/images/edits")),
            "judge": len(fakes["gemini"].requests)}


def run_workflow(runner: Runner):
    """One workflow run: the matrix jobs, then the merge job; returns (matrix results, merge result)."""
    runner.new_run()
    matrix = [runner.run_job("benchmark", entry) for entry in runner.matrix("benchmark")]
    return matrix, runner.run_job("leaderboard")


def merged_tables(results_md: str) -> dict[str, list[str]]:
    """Section title -> the rows of its metrics table (the first table; the intervals follow it)."""
    tables: dict[str, list[str]] = {}
    for section in results_md.split("\n## ")[1:]:
        title, _, body = section.partition("\n")
        table = body.split("\n\n| Model")[1].split("\n\n")[0]
        tables[title.split(" (")[0]] = [line for line in table.splitlines() if line.startswith("| ")][1:]
    return tables


def test_the_workflow_matrix_caches_outputs_and_merges_one_leaderboard(runner, fakes):
    assert [entry["model"] for entry in runner.matrix("benchmark")] == MODELS
    first, merge = run_workflow(runner)
    for job in first + [merge]:
        assert job.ok, job.log()
    candidates = TASKS * REPEATS
    assert paid_calls(fakes) == {"ark": candidates, "openai": candidates, "judge": 2 * candidates}
    results_md = artifact(runner, "hypeedit-leaderboard", "RESULTS.md").read_text()
    check_leaderboard(results_md)
    check_index(runner)
    check_junit(runner)

    second, merge_again = run_workflow(runner)  # the next run: fresh runners, the cache restored
    for job in second + [merge_again]:
        assert job.ok, job.log()
    assert paid_calls(fakes) == {"ark": candidates, "openai": candidates, "judge": 2 * candidates}  # nothing new
    assert merged_tables(artifact(runner, "hypeedit-leaderboard", "RESULTS.md").read_text()) == merged_tables(results_md)
    logs = "\n".join(job.log() for job in first + second + [merge, merge_again]) + all_text(runner.root / "artifacts")
    for key in runner.secrets.values():
        assert key not in logs


def artifact(runner: Runner, name: str, path: str) -> Path:
    return runner.artifacts[name] / path


def check_leaderboard(results_md: str) -> None:
    tables = merged_tables(results_md)
    assert list(tables) == ["Tiny", "Public", "Private", "Combined"]  # ours, then the paper's splits
    # 4 of 5 tasks pass every time: E = (4 x 1 + 4) / 5, Pass@4 = 0.8, cost = E x (price + $0.2778) / 0.8
    # beside the paper's (human) rows, the run's say they are its judge's, and which release they measured (the
    # provider's model id, where it is not the model's name)
    assert tables["Tiny"] == ["| gpt-image-2 (judge) | 80.0% | 80.0% | 80.0% | 1.60 | $0.94 | 0.0% |",
                              "| seedream-4.5 (release seedream-4-5-251128) (judge) | 80.0% | 80.0% | 80.0% | 1.60 | "
                              "$0.64 | 0.0% |"]
    assert len(tables["Public"]) == 7 and all("(published)" in row for row in tables["Public"])


def check_index(runner: Runner) -> None:
    folder = runner.artifacts["hypeedit-leaderboard"]
    links = re.findall(r'href="([^"]+)"', (folder / "index.html").read_text())
    assert sorted(links) == ["gpt-image-2/report.html", "seedream-4.5/report.html"]
    for link in links:
        assert "HYPE-EDIT-1" in (folder / link).read_text()  # the model's pytest-html report, downloaded


def check_junit(runner: Runner) -> None:
    junit = runner.artifacts["hypeedit-report-seedream-4.5"] / "seedream-4.5" / "junit.xml"
    properties = {p.get("name"): p.get("value") for p in ElementTree.parse(junit).iter("property")}
    assert float(properties["hypeedit.seedream-4.5.tiny.pass_rate"]) == pytest.approx(0.8)
    assert properties["hypeedit.gates"] == "passed"


def all_text(root: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*") if p.is_file())


def test_a_failed_gate_still_saves_the_outputs_and_uploads_the_report(runner, fakes):
    fakes["gemini"].default = lambda request: verdict_reply("FAIL", "nothing was edited")
    runner.new_run()
    seedream = runner.run_job("benchmark", {"model": "seedream-4.5"})
    benchmark = next(step for step in seedream.steps if step.name == "Benchmark seedream-4.5")
    assert benchmark.returncode == 1 and "metric gate FAILED" in benchmark.output
    assert [step.name for step in seedream.steps][-2:] == ["Save the outputs for the next run", "Upload the report"]
    [(key, saved)] = runner.cache.items()
    assert key.startswith("hypeedit-outputs-seedream-4.5-")
    records = [json.loads(p.read_text()) for p in saved.glob("tiny/seedream-4.5/*/*.json")]
    assert len(records) == TASKS * REPEATS and all(r.get("verdict") == "FAIL" for r in records), records[:1]
    merge = runner.run_job("leaderboard")  # the merge job still merges what the failed job left
    assert merge.ok, merge.log()
    assert "| seedream-4.5 (release seedream-4-5-251128) (judge) | 0.0% |" in artifact(runner, "hypeedit-leaderboard", "RESULTS.md").read_text()


def benchmark_job(runner: Runner, **event) -> tuple[object, dict]:
    """One workflow run of seedream-4.5's job for ``event`` (new_run's): (the job, its results file)."""
    runner.new_run(**event)
    job = runner.run_job("benchmark", {"model": "seedream-4.5"})
    assert job.ok, job.log()
    return job, json.loads(artifact(runner, "hypeedit-report-seedream-4.5", "seedream-4.5/results.json").read_text())


def test_each_release_has_its_own_cache_and_is_gated_on_the_last_accepted_one(runner, fakes):
    """A release tag measures its release under the tag and becomes the accepted baseline; a pull request's run
    measures its own release (nothing restored from another release's cache) and is gated on that baseline."""
    candidates = TASKS * REPEATS
    tagged, v1 = benchmark_job(runner, tag="v1.0")
    [(first_key, _)] = [(k, v) for k, v in runner.cache.items() if k.startswith("hypeedit-outputs-")]
    [row] = v1["rows"]
    assert row["release"]["label"] == "v1.0" and row["release"]["id"] in first_key
    assert "baseline" not in row  # no accepted release yet
    assert [k for k in runner.cache if k.startswith("hypeedit-accepted-seedream-4.5-")]

    pr_job, pr = benchmark_job(runner, event="pull_request")
    [pr_row] = pr["rows"]
    assert pr_row["release"]["label"] is None and pr_row["release"]["id"] != row["release"]["id"]
    assert len(fakes["ark"].seen("/images/generations")) == 2 * candidates  # its own candidates, bought once
    assert pr_row["baseline_release"]["id"] == row["release"]["id"]  # compared with the accepted v1.0
    assert pr_row["baseline"]["pass_rate"]["baseline"] == pytest.approx(0.8)
    assert "pass_rate>=baseline-0.05" in pr_job.log() and "compared with itself" not in pr_job.log()
    assert len([k for k in runner.cache if k.startswith("hypeedit-accepted-")]) == 1  # a pull request is not accepted

    _, again = benchmark_job(runner, tag="v1.0")  # the same release again: its own cache, nothing bought
    assert len(fakes["ark"].seen("/images/generations")) == 2 * candidates
    assert again["rows"][0]["release"] == row["release"]
