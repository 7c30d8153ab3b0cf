"""The shipped tiny split (examples/tiny-split) run at the batch tier in a pytester folder: the set-up the batch
end-to-end tests of each route share (tests/e2e/test_batch_*.py), and each route pointed at its fake API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml
from benchdata import write_labels
from genai_fakes.gemini_batch import FakeGeminiBatch
from ledger_view import open_call
from providers_fakes.openai_batch import FakeOpenAIBatch

from pytest_hypeedit.glue.stopping import GRACE_ENV
from pytest_hypeedit.registry import load_registry

TINY = Path(__file__).resolve().parents[2] / "examples" / "tiny-split"
#: Lingers and polls short enough for a test.
QUICK = {"batch_linger_s": 0.3, "batch_poll_s": 0.02, "batch_poll_max_s": 0.05}
#: A linger for a test that asserts the run's lines share one batch: on a loaded machine two lines of the same
#: run arrived more than QUICK's 0.3 s apart (CI, once), and the collector rightly made two batches.  The widest gap
#: between two lines of one batch over these tests' runs on two cores under a load of 6 to 8 was 0.45 s (42
#: batches): one second keeps twice that, and each run that gathers waits one second less than with the 2 s it was.
GATHER_LINGER_S = 1.0
#: ``batch_max_wait_s`` of a run whose batch the fake holds: each line waits that long from its arrival, then the run
#: ends with the batch pending.  The batch must be made first (the lines journal its id): its first line came at
#: most 1.2 s before it was submitted in these tests' runs under a load of 6 to 8 on two cores (QUICK's linger
#: included); 3 s keeps more than twice that, and waits 2 s less than the 5 s it was.
PENDING_WAIT_S = 3.0


@contextmanager
def openai_batch_route(monkeypatch: pytest.MonkeyPatch, cache: Path) -> Iterator[FakeOpenAIBatch]:
    """A fake of OpenAI's Files and Batch APIs, the openai route pointed at it with its key, the cache in ``cache``."""
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(cache))
    with FakeOpenAIBatch() as fake:
        monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", fake.base)
        monkeypatch.setenv("OPENAI_API_KEY", fake.key)
        yield fake


@contextmanager
def gemini_batch_route(monkeypatch: pytest.MonkeyPatch, cache: Path, key: str) -> Iterator[FakeGeminiBatch]:
    """A fake of Gemini's Batch mode expecting ``key``, the gemini route pointed at it with that key (and no
    GOOGLE_API_KEY, which would win over it), the cache in ``cache``."""
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(cache))
    with FakeGeminiBatch(expected_key=key) as fake:
        monkeypatch.setenv("HYPEEDIT_GEMINI_BASE_URL", fake.url)
        monkeypatch.setenv("GEMINI_API_KEY", key)
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        yield fake


def tiny_batch_bench(folder: Path, model: str, repeats: int) -> list[str]:
    """quick.yaml (``model``'s own options, lingers and polls made quick) and r1.json (every candidate PASS) in
    ``folder``; the arguments of a run of the tiny split on ``model`` (``--tier`` not among them)."""
    write_options(folder, model, {**load_registry().get(model).options, **QUICK})
    tasks = json.loads((TINY / "tiny.json").read_text())
    write_labels(folder / "r1.json", {(task["task_id"], model, r): True for task in tasks for r in range(1, repeats + 1)})
    return tiny_args(model, repeats)


def tiny_args(model: str, repeats: int) -> list[str]:
    return [f"--tasks={TINY / 'tiny.json'}", f"--images-base={TINY / 'images'}", "--repeats", str(repeats),
            "--outputs", "out", "--model", model, "--models-file", "quick.yaml", "--judge", "labels:r1.json"]


#: The model's requests per minute in these tests.  A batch's creation, polls and result download count against
#: its route's limit (openai 50, gemini 60 a minute); QUICK's polls, 20 a second, used those up within a second
#: whenever a run made a few batches, and the run then waited a minute for the window (an xdist run: 64 s).
QUICK_RPM = 6000


def write_options(folder: Path, model: str, options: dict[str, Any]) -> None:
    entry = {"options": options, "limits": {"rpm": QUICK_RPM}}
    (folder / "quick.yaml").write_text(yaml.safe_dump({"models": {model: entry}}))


def set_options(folder: Path, model: str, **changes: Any) -> None:
    """Change some of ``model``'s options in quick.yaml, keeping the others."""
    options = yaml.safe_load((folder / "quick.yaml").read_text())["models"][model]["options"]
    write_options(folder, model, {**options, **changes})


def results_row(folder: Path) -> dict:
    return json.loads((folder / "out" / "results.json").read_text())["rows"][0]


def records(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in (folder / "out").rglob("0*.json")]



def signal_when(folder: Path, model: str, repeats: int, ready: Callable[[list[dict]], bool], why: str,
                signum: int, env: dict[str, str] | None = None) -> str:
    """Start a batch run of the tiny split on ``model`` in ``folder`` as its own process group (``env`` added to
    its environment), wait until its records are ``ready`` (``why`` says what that means, for the failure), send
    ``signum`` to the group and return what the run printed."""
    args = [*tiny_args(model, repeats), "--tier", "batch", "-p", "no:cacheprovider"]
    process = subprocess.Popen([sys.executable, "-m", "pytest", "-q", *args], cwd=folder,
                               env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _records_are(folder, ready):
        assert process.poll() is None, f"the run ended before it was stopped ({why})"
        time.sleep(0.05)
    assert _records_are(folder, ready), why
    os.killpg(process.pid, signum)
    return str(process.communicate(timeout=120)[0])


def _records_are(folder: Path, ready: Callable[[list[dict]], bool]) -> bool:
    try:
        return ready(records(folder))
    except (OSError, ValueError):
        return False  # a record being replaced right now


#: The grace a stopped run gives its calls in flight ($HYPEEDIT_STOP_GRACE_S) in ``stop_while_gathering``: its lines
#: linger for two minutes, so none ends within any grace and a shorter one changes nothing the tests see; the
#: default 10 s was 10 s of each SIGTERM test spent waiting.
STOP_GRACE_S = "1"


def stop_while_gathering(folder: Path, model: str, repeats: int, candidates: int, signum: int) -> str:
    """A batch run whose lines linger for two minutes, sent ``signum`` once each of its ``candidates`` records
    journals its line (its open entry, gathering: nothing sent to the provider yet); what it printed."""
    set_options(folder, model, batch_linger_s=120.0)  # the lines gather until the signal
    return signal_when(folder, model, repeats, lambda found: len(found) == candidates and all(
        (open_call(r) or {}).get("state") == "gathering" for r in found),
        "every candidate's line is journaled, gathering, before the signal", signum, env={GRACE_ENV: STOP_GRACE_S})
