"""pytester folders where a run buys from a fake: the set-ups several test files share.

:func:`chat_judged_bench`: a fake model (fake_models, each call a line in $CALL_LOG) judged by the real
OpenAI-compatible judge against the loopback chat-completions fake (test_resume_paid, test_stray_files,
test_candidate_bytes: what is on disk around a paid verdict).  :func:`ark_bench`: seedream-4.5 on the ModelArk
fake, judged by a labels file (test_provider_wiring, test_unwritable_outputs)."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from benchdata import make_tasks, write_labels, write_split
from genai_fakes import FakeChat
from providers_fakes.ark import FakeArk


@contextlib.contextmanager
def chat_judged_bench(pytester, monkeypatch, tmp_path, conftest: str, tasks: int, reply: Any) -> Iterator[FakeChat]:
    """``conftest`` in the pytester folder, split "mini" of ``tasks`` tasks, $CALL_LOG and the cache in
    ``tmp_path``, no OpenAI key in the environment; yields the judge's fake, answering ``reply`` by default."""
    pytester.makeconftest(conftest)
    write_split(pytester.path, "mini", make_tasks(tasks), pytester.path / "images")
    monkeypatch.setenv("CALL_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeChat() as judge:
        judge.default = reply
        yield judge


@contextlib.contextmanager
def ark_bench(pytester, monkeypatch, tmp_path, tasks: int, repeats: int,
              passed: Callable[[int, int], bool]) -> Iterator[FakeArk]:
    """Split "mini" of ``tasks`` tasks, r1.json where repeat r of task t of seedream-4.5 passes when
    ``passed(t, r)``, the cache in ``tmp_path``; yields the ModelArk fake, which the run's ARK variables name."""
    write_split(pytester.path, "mini", make_tasks(tasks), pytester.path / "images")
    write_labels(pytester.path / "r1.json", {(f"task-{t:02d}", "seedream-4.5", r): passed(t, r) for t in range(tasks)
                                             for r in range(1, repeats + 1)})
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(tmp_path / "cache"))
    with FakeArk() as fake:
        monkeypatch.setenv("HYPEEDIT_ARK_BASE_URL", fake.base)
        monkeypatch.setenv("ARK_API_KEY", fake.key)
        yield fake
