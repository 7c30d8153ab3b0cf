"""pytest fixtures for the fakes.  Import them into a test module:

    from genai_fakes.fixtures import fake_gemini, fake_chat, FAKE_GEMINI_KEY  # noqa: F401
"""

from __future__ import annotations

import pytest

from .chat import FakeChat
from .gemini import FakeGemini

#: Known fake key values: a test asserts they never appear in any error message.
FAKE_GEMINI_KEY = "fake-gemini-key-SECRET-0123456789"
FAKE_OPENAI_KEY = "sk-fake-openai-key-SECRET-9876543210"


@pytest.fixture
def fake_gemini(monkeypatch):
    """A running fake Gemini API; HYPEEDIT_GEMINI_BASE_URL and GEMINI_API_KEY point at it."""
    with FakeGemini(expected_key=FAKE_GEMINI_KEY) as server:
        monkeypatch.setenv("HYPEEDIT_GEMINI_BASE_URL", server.url)
        monkeypatch.setenv("GEMINI_API_KEY", FAKE_GEMINI_KEY)
        for name in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GEMINI_BASE_URL"):
            monkeypatch.delenv(name, raising=False)
        yield server


@pytest.fixture
def fake_chat(monkeypatch):
    """A running fake chat-completions server; HYPEEDIT_OPENAI_BASE_URL and OPENAI_API_KEY point at it."""
    with FakeChat(expected_key=FAKE_OPENAI_KEY) as server:
        monkeypatch.setenv("HYPEEDIT_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", FAKE_OPENAI_KEY)
        yield server
