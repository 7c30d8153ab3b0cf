"""A pytester folder where a fake model (fake_models, each call a line in $CALL_LOG) is bought and the real
OpenAI-compatible judge asks the loopback chat-completions fake: the set-up of the engine tests that check what
is on disk around a paid verdict (test_resume_paid, test_stray_files, test_candidate_bytes)."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from benchdata import make_tasks, write_split
from genai_fakes import FakeChat


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
