"""Loopback fakes of the image providers' HTTP APIs (ark, openai, bfl, fal, runware,
replicate, dashscope, openrouter), for tests that drive the real adapters through
``HYPEEDIT_<PROVIDER>_BASE_URL``.  Every server binds 127.0.0.1 only."""

from .base import FakeServer, Fault, Reply, Seen, data_url, make_image, truncated

__all__ = ["Fault", "FakeServer", "Reply", "Seen", "data_url", "make_image", "truncated"]
