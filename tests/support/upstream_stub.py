"""A stand-in for the upstream judge script, for tests: the same Python shape, our own prompt text.

The real file is never committed.  ``make_script`` writes a script whose
``Gemini3FlashJudge.judge`` holds ``prompt = (...)`` as implicitly
concatenated literals, as upstream's does, with a module-level statement that
would end the process if the script were ever executed.  The ``upstream_stub``
fixture serves it on loopback and points the pins (``upstream.PINNED``) at it.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest
from benchdata import FileServer

from pytest_hypeedit.judges import upstream

SCRIPT = '''"""A test judge in the upstream judge's shape."""

import os

os._exit(97)  # reading the prompt must never run this file


class Gemini3FlashJudge:
    """Judge that returns PASS/FAIL plus model reasoning."""

    def __init__(self, api_key=None):
        self.api_key = api_key

    def judge(self, reference_images, instruction, output_image):
        if not reference_images:
            raise ValueError("At least one reference image is required")
        parts = []
        prompt = (
            {pieces}
        )
        parts.append(prompt)
        return parts
'''

DEFAULT_PIECES = (
    '"STUB PROMPT {tag}: you judge image edits.\\n\\n"',
    '"Answer ONLY with JSON: "',
    "'{{\"verdict\":\"PASS\"|\"FAIL\",\"reasoning\":\"...\"}}'",
)


def make_script(tag: str = "A", pieces=DEFAULT_PIECES) -> tuple[bytes, str]:
    """(the script's bytes, the prompt it holds)."""
    literal = "\n            ".join(piece.format(tag=tag) for piece in pieces)
    source = SCRIPT.replace("{pieces}", literal)
    return source.encode("utf-8"), ast.literal_eval(f"(\n{literal}\n)")


def sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


@dataclass
class Stub:
    server: FileServer
    script: bytes
    prompt: str
    pins: upstream.ScriptPins
    cache_dir: Path

    PATH = "/sourceful/judge_gemini_3_flash.py"

    def serve(self, data: bytes) -> None:
        """Serve other bytes from now on (a tampered file, or another upstream version)."""
        self.server.files[self.PATH] = data

    @property
    def hits(self) -> int:
        return self.server.hits[self.PATH]

    def pin(self, monkeypatch, script: bytes, prompt: str) -> None:
        """Pin another script (the upstream judge after a new release)."""
        self.script, self.prompt = script, prompt
        self.pins = upstream.ScriptPins(url=self.server.url + self.PATH, script_sha256=sha256(script),
                                        prompt_sha256=sha256(prompt))
        monkeypatch.setattr(upstream, "PINNED", self.pins)
        self.serve(script)

    def cached(self) -> Path:
        return self.cache_dir / "judges" / f"upstream-judge-{self.pins.script_sha256[:16]}.py.txt"


@pytest.fixture
def upstream_stub(monkeypatch, tmp_path):
    """A synthetic upstream script on loopback, the pins pointing at it, HYPEEDIT_CACHE_DIR a fresh folder."""
    script, prompt = make_script()
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("HYPEEDIT_CACHE_DIR", str(cache_dir))
    monkeypatch.delenv(upstream.URL_VARIABLE, raising=False)
    with FileServer({}) as server:
        stub = Stub(server, script, prompt, upstream.PINNED, cache_dir)
        stub.pin(monkeypatch, script, prompt)
        yield stub
