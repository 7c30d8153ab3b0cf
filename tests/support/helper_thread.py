"""A call made from a helper thread, as an SDK or a panel's jurors make it, bounded so that a hang fails named."""

from __future__ import annotations

import threading
from typing import Any, Callable


def on_a_helper_thread(fn: Callable[[], Any], bound: float, hung: str) -> Any:
    """``fn()`` run on a daemon thread: its result, or its error raised here; still running after ``bound``
    seconds, the test fails with ``hung`` (what a hang means)."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(bound)
    assert not thread.is_alive(), hung
    if "error" in out:
        raise out["error"]
    return out["value"]
