"""The upstream judge's prompt, read out of the upstream judge script: never shipped here.

HYPE-EDIT-1's published figures (the upstream RESULTS.md) were judged by
``src/judge_gemini_3_flash.py`` of github.com/sourceful-official/hype-edit-1-benchmark.
Its prompt is the ``prompt = (...)`` assignment in ``Gemini3FlashJudge.judge``:
one string literal made of implicitly concatenated pieces.

The script is downloaded once into the cache (like the task file: a file lock,
an atomic write), checked against its pinned sha256, and only then parsed with
``ast``; it is never imported or executed.  ``HYPEEDIT_JUDGE_SCRIPT_URL`` names
a mirror (a URL, or a local path); the pin still applies.

The pins live in ``PINNED``, the one place they are written.  They are read at
call time (``upstream.PINNED``, not a copy), so a test can point them at a
script of its own.
"""

from __future__ import annotations

import ast
import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeGuard

from ..errors import InputError, JudgeScriptError

#: Names a mirror of the script: an http(s) URL or a local file.  The sha256 pin still applies.
URL_VARIABLE = "HYPEEDIT_JUDGE_SCRIPT_URL"

#: One ``ast`` parse at a time in this process, and one per script: CPython 3.11's AST constructor keeps
#: process-wide state, and several threads parsing at once (the pool's judges, a panel's jurors) ended an item
#: in one of 500 with "SystemError: AST constructor recursion depth mismatch".
_PARSE_LOCK = threading.Lock()
#: script sha256 -> its prompt, read once per process (the file's bytes are pinned, so its prompt is too).
_PROMPTS: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class ScriptPins:
    """Where the upstream judge script is, what it must hash to, and where its prompt sits."""

    url: str
    script_sha256: str
    prompt_sha256: str  # sha256 of the prompt's UTF-8 text: names the prompt in every verdict
    class_name: str = "Gemini3FlashJudge"
    method: str = "judge"
    variable: str = "prompt"

    @property
    def label(self) -> str:
        return f"{self.class_name}.{self.method}"


#: The upstream judge at the commit splits/public.yaml pins for the task file
#: (268591e7f7e73435cecb1dc5308aa4c1da27d478).  Both sha256 values were computed from that
#: file (10131 bytes): the file's, and that of ``ast.literal_eval`` of its ``prompt = (...)``
#: value (1572 characters) encoded as UTF-8.
PINNED = ScriptPins(
    url="https://raw.githubusercontent.com/sourceful-official/hype-edit-1-benchmark/"
        "268591e7f7e73435cecb1dc5308aa4c1da27d478/src/judge_gemini_3_flash.py",
    script_sha256="a7fb1af90ab57d8e4ce489391c13bf5e55758ad4e98b9895eba41694b250c03e",
    prompt_sha256="e9e150a843c2671c57c7f6c7fa7f9b152f157d08112038729675356452f02895",
)


def script_location(pins: ScriptPins) -> str:
    """``HYPEEDIT_JUDGE_SCRIPT_URL`` when set, else the pinned URL."""
    return os.environ.get(URL_VARIABLE, "").strip() or pins.url


def load_prompt(cache_dir: Path, pins: ScriptPins | None = None, *, fetch: Callable[[str], bytes] | None = None) -> str:
    """The upstream prompt: the script fetched once into ``cache_dir``, checked, parsed; a JudgeScriptError
    naming the file and what to do when it is not the pinned one or holds no prompt."""
    pins = pins or PINNED
    location = script_location(pins)
    path = _script_path(location, Path(cache_dir), pins, fetch)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise JudgeScriptError(f"{path}: cannot read the upstream judge script ({exc.strerror}); "
                               f"check {URL_VARIABLE} or the cache folder") from None
    # Checked again on every load: a cached copy may have been changed since it was downloaded.
    check_script(raw, str(path), location, pins, cached=_is_url(location))
    return extract_prompt(raw, str(path), pins)


def _script_path(location: str, cache_dir: Path, pins: ScriptPins, fetch: Callable[[str], bytes] | None) -> Path:
    if not _is_url(location):
        return Path(location).expanduser()  # a local copy: read where it is, checked all the same
    from ..fetch import download_once

    # Named by the pin, so a new pin downloads afresh; not ".py", so nothing ever imports or collects it.
    dest = cache_dir / "judges" / f"upstream-judge-{pins.script_sha256[:16]}.py.txt"
    try:
        return download_once(location, dest, fetch=fetch,
                             validate=lambda raw: check_script(raw, location, location, pins))
    except JudgeScriptError:
        raise
    except InputError as exc:  # the download itself failed
        raise JudgeScriptError(f"{exc}. The upstream judge script is needed to judge: set {URL_VARIABLE} to a "
                               "copy of it (a URL or a file), or choose --judge gemini-3-flash-rubric") from None


def _is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def check_script(raw: bytes, where: str, location: str, pins: ScriptPins, *, cached: bool = False) -> None:
    """A JudgeScriptError naming the file, both sha256 values and what to do, unless ``raw`` is the pinned file."""
    actual = hashlib.sha256(raw).hexdigest()
    if actual != pins.script_sha256:
        raise JudgeScriptError(
            f"{where}: the upstream judge script has sha256 {actual}, not the pinned {pins.script_sha256} "
            f"(from {location}); it was not used and nothing was judged. {_what_to_do(where, cached)}"
        )


def _what_to_do(where: str, cached: bool) -> str:
    if cached:
        return f"Delete {where} and rerun to download it again, or choose --judge gemini-3-flash-rubric."
    if os.environ.get(URL_VARIABLE, "").strip():
        return (f"{URL_VARIABLE} must name that exact file (src/judge_gemini_3_flash.py at the pinned commit): "
                "fix the mirror or unset the variable, or choose --judge gemini-3-flash-rubric.")
    return "Check your network or proxy, or set HYPEEDIT_JUDGE_SCRIPT_URL to a copy of that exact file."


def extract_prompt(raw: bytes, where: str, pins: ScriptPins) -> str:
    """The value of ``prompt = (...)`` in ``Gemini3FlashJudge.judge``, by ``ast`` (nothing is executed): parsed
    once per process and script, under a lock, whichever thread asks first (see ``_PARSE_LOCK``)."""
    key = (hashlib.sha256(raw).hexdigest(), repr(pins))
    with _PARSE_LOCK:
        if key not in _PROMPTS:
            _PROMPTS[key] = _parse_prompt(raw, where, pins)
        return _PROMPTS[key]


def _parse_prompt(raw: bytes, where: str, pins: ScriptPins) -> str:
    try:
        tree = ast.parse(raw, filename=where)
    except (SyntaxError, ValueError) as exc:
        raise JudgeScriptError(f"{where}: the upstream judge script is not Python ({exc}); {_no_prompt_hint()}") from None
    values = [node.value for node in _method_body(tree, pins) if _assigns(node, pins.variable)]
    if len(values) != 1:
        raise JudgeScriptError(f"{where}: {len(values)} assignments '{pins.variable} = ...' in {pins.label}, "
                               f"expected one; {_no_prompt_hint()}")
    try:
        prompt = ast.literal_eval(values[0])
    except ValueError:
        prompt = None
    if not isinstance(prompt, str) or not prompt.strip():
        raise JudgeScriptError(f"{where}: '{pins.variable}' in {pins.label} is not a string literal; {_no_prompt_hint()}")
    _check_prompt(prompt, where, pins)
    return prompt


def _method_body(tree: ast.Module, pins: ScriptPins) -> list[ast.stmt]:
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name == pins.class_name:
            for method in cls.body:
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.name == pins.method:
                    return method.body
    return []


def _assigns(node: ast.stmt, name: str) -> TypeGuard[ast.Assign]:
    return (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name)


def _check_prompt(prompt: str, where: str, pins: ScriptPins) -> None:
    # The file's pin already fixes the prompt; this catches pins that disagree with each other.
    actual = prompt_sha256(prompt)
    if actual != pins.prompt_sha256:
        raise JudgeScriptError(f"{where}: the prompt in {pins.label} has sha256 {actual}, not the pinned "
                               f"{pins.prompt_sha256}; the pins disagree, {_no_prompt_hint()}")


def _no_prompt_hint() -> str:
    return "report this to pytest-hypeedit, or choose --judge gemini-3-flash-rubric meanwhile"


def prompt_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
