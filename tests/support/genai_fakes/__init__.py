"""Loopback fakes of the Gemini ``generateContent`` API and of an OpenAI-style
``chat/completions`` server, for tests that drive the real clients (google-genai,
httpx) through ``HYPEEDIT_GEMINI_BASE_URL`` / ``HYPEEDIT_OPENAI_BASE_URL``.

Each server answers from a script of ``Reply`` objects (first in, first out),
then from its ``default`` reply, and records every request it saw.  Both bind
to 127.0.0.1 only: no test reaches outside the machine.
"""

from .chat import FakeChat
from .gemini import FakeGemini
from .server import Reply, SeenRequest

__all__ = ["Reply", "SeenRequest", "FakeGemini", "FakeChat"]
